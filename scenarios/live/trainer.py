"""The trainer: after the start, waits for the rollout replicas' and the reward model's
HTTP endpoints (its own rendezvous: a member's readiness is the application's business,
not a claim), then trains for a few steps and exits 0.

A step asks the rollout replicas for samples (the next replica that answers: one being
relaunched is skipped), scores them with the reward model and "updates" the policy.
``TRAIN_STEPS`` and ``TRAIN_STEP_S`` (the spec's ``run.env``) set how long it trains;
``TRAIN_RENDEZVOUS_S`` how long it waits for its peers before it gives up (exit 1).
"""

from __future__ import annotations

import sys
import time
from itertools import cycle

import live_task


def main() -> int:
    me = live_task.identity()
    live_task.record_start(me)
    rollouts = me.peers.get("rollout", [])
    rewards = me.peers.get("reward", [])
    if not rollouts or not rewards:
        live_task.say(me, f"no rollout or reward peers in COSTART_PEERS ({me.peers})")
        return 1
    if not live_task.rendezvous(
        me, rollouts + rewards, live_task.setting("TRAIN_RENDEZVOUS_S", 60)
    ):
        return 1
    steps = int(live_task.setting("TRAIN_STEPS", 6))
    step_s = live_task.setting("TRAIN_STEP_S", 1.0)
    replicas = cycle(rollouts)
    for step in range(1, steps + 1):
        batch = None
        for _ in range(len(rollouts) * 20):  # every replica, for a while: one may be relaunching
            replica = next(replicas)
            batch = live_task.get_json(replica, f"/generate?step={step}")
            if batch is not None:
                break
            time.sleep(0.1)
        if batch is None:
            live_task.say(me, f"step {step}: no rollout replica answers")
            return 1
        scored = live_task.get_json(rewards[step % len(rewards)], f"/score?{batch['samples'][0]}")
        if scored is None:
            live_task.say(me, f"step {step}: the reward model does not answer")
            return 1
        live_task.say(
            me,
            f"step {step}/{steps}: samples from {batch['replica']} (attempt {batch['attempt']}),"
            f" reward {scored['score']:.3f}",
        )
        time.sleep(step_s)
    live_task.say(me, "training done")
    return 0


if __name__ == "__main__":
    sys.exit(main())
