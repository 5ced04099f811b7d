"""What a valid spec may still get wrong: plain ``env`` values that look like secrets, a
restart budget of zero, a ``min_running`` the failure rules never keep, a barrier that
times out before a probe has looked once (ADR 0071). Budgets left to their defaults are
warned about from the document (`costart.domain.spec.defaulted_budgets`).

``run.env`` is stored in the log for ever and shown to the group's owner and admins
(ADR 0064, 0065): an API key there cannot be taken back. A name shaped like a
credential (``*_TOKEN``, ``*_KEY``, ``*PASSWORD*``, ``*_SECRET``, ...) with a value is
warned about, naming the field and the way out (``env_secrets``). A warning never
refuses the spec: ``SSH_KEY_PATH=/etc/...`` or ``MONKEY=1`` are someone's real intent.
"""

from __future__ import annotations

import re
from typing import Final

from costart.domain.durations import format_duration_ns
from costart.domain.policy import decide_action
from costart.domain.spec_types import FAILURE_REASONS, GroupSpec, MemberSpec

# Whole-name match, case-insensitive: a credential word at the end or alone.
SECRET_SHAPED: Final = re.compile(
    r"(?:.*_)?(?:TOKEN|KEY|SECRET|PASSWORD|PASSWD|PASS|CREDENTIALS?|API_?KEY|AUTH)",
    re.IGNORECASE,
)


def spec_warnings(spec: GroupSpec) -> list[str]:
    """One line per likely mistake, each naming its field."""
    return [
        *_secret_shaped_env(spec),
        *_zero_budgets(spec),
        *_min_running_never_kept(spec),
        *_barrier_before_probes(spec),
    ]


def _secret_shaped_env(spec: GroupSpec) -> list[str]:
    """Plain ``env`` values whose names look like secrets."""
    found = []
    for index, member in enumerate(spec.members):
        run = member.run
        if run is None:
            continue
        for name, value in run.env:
            if value and SECRET_SHAPED.fullmatch(name):
                found.append(
                    f"members[{index}].run.env.{name}: looks like a secret; plain env values "
                    "are stored in the log for ever: name it in env_secrets instead "
                    "(its value then stays on the node)"
                )
    return found


def _zero_budgets(spec: GroupSpec) -> list[str]:
    """A restart rule whose budget is 0 restarts nothing: it acts as fail-group."""
    found = []
    for i, rule in enumerate(spec.failure.rules):
        if rule.action == "restart-member" and rule.max_restarts == 0:
            found.append(
                f"failure.rules[{i}].max_restarts: 0 allows no restart: the first failure "
                "this rule catches fails the group (as fail-group would)"
            )
    if spec.failure.default == "restart-member" and spec.failure.default_max_restarts == 0:
        found.append(
            "failure.default_max_restarts: 0 allows no restart: a failure no rule catches "
            "fails the group (as fail-group would)"
        )
    actions = (spec.failure.default, *(r.action for r in spec.failure.rules))
    if "restart-group" in actions and spec.failure.max_group_restarts == 0:
        found.append(
            "failure.max_group_restarts: 0 allows no restart: restart-group fails the "
            "group at its first failure"
        )
    return found


def _tolerated(spec: GroupSpec, member: MemberSpec) -> bool:
    """Whether some failure of ``member`` (before any budget is spent) is tolerated."""
    return any(
        decide_action(spec, member.name, reason, 0, 0) == "tolerate" for reason in FAILURE_REASONS
    )


def _min_running_never_kept(spec: GroupSpec) -> list[str]:
    """A replica set runs below its desired count only when a failure is tolerated: a
    ``min_running`` below ``replicas`` with no tolerate rule is a margin never used, and
    a tolerate rule on a set whose ``min_running`` is all of it fails the group anyway."""
    found = []
    for i, member in enumerate(spec.members):
        if member.kind != "replica-set":
            continue
        tolerated = _tolerated(spec, member)
        if member.min_running < member.count and not tolerated:
            found.append(
                f"members[{i}].min_running: {member.min_running} of {member.count} replicas, "
                f"but no failure rule tolerates a failure of {member.name}: it never runs "
                "with fewer; a failure restarts it or fails the group (add a rule with "
                "action = 'tolerate' to keep running with fewer)"
            )
        elif member.min_running == member.count and tolerated:
            found.append(
                f"members[{i}].min_running: all {member.count} replicas, so a tolerated "
                f"failure of {member.name} leaves it below min_running and fails the group "
                "(set min_running lower to tolerate it)"
            )
    return found


def _barrier_before_probes(spec: GroupSpec) -> list[str]:
    """A claim probed less often than the barrier waits gets one look at most: a probe
    that misses once leaves every attempt to be released at the barrier."""
    found = []
    barrier = spec.barrier.timeout_ns
    for i, member in enumerate(spec.members):
        for probe in member.run.probes if member.run is not None else ():
            if barrier < probe.period_ns:
                found.append(
                    f"barrier.timeout: {format_duration_ns(barrier)} is shorter than the "
                    f"period of members[{i}].run.probes.{probe.claim} "
                    f"({format_duration_ns(probe.period_ns)}): the probe looks at most once "
                    "before the barrier times out and releases the group"
                )
    return found
