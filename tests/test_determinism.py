"""The same commands give the same log bytes, whatever the process's hash seed."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console

from costart.cli.walkthrough import run_demo
from costart.domain.world import World
from costart.store.codec import canonical_encode
from tests.hash_seed import stdout_lines

ROOT = Path(__file__).resolve().parents[1]
DEMO_SPEC = ROOT / "scenarios" / "rl-post-training.toml"

SCRIPT = f"""
import hashlib
from rich.console import Console
from costart.cli.walkthrough import run_demo
controller = run_demo(__import__("pathlib").Path({str(DEMO_SPEC)!r}), Console(file=open("/dev/null", "w")))
digest = hashlib.sha256()
for n in controller.recorder.select_notifications(start=1, limit=10_000):
    digest.update(n.topic.encode()); digest.update(n.state)
print(digest.hexdigest())
"""


def _log_digest(hash_seed: str) -> str:
    return stdout_lines(SCRIPT, hash_seed)[-1]


def test_same_commands_same_log_bytes_across_hash_seeds():
    digests = {_log_digest(seed) for seed in ("0", "1", "12345")}
    assert len(digests) == 1


def test_the_demo_runs_to_success_and_its_log_replays(tmp_path):
    controller = run_demo(DEMO_SPEC, Console(file=(tmp_path / "out.txt").open("w")))
    assert controller.group("grpo-run-42").status == "SUCCEEDED"
    rollout = controller.members("grpo-run-42")[1]
    assert rollout.restarts == 1
    assert controller.recorder.max_notification_id() == 47
    rebuilt = World()
    for position, event in controller.read_events():
        rebuilt.apply(event)
        rebuilt.position = position
    assert canonical_encode(rebuilt) == canonical_encode(controller.world)
