"""The domain's failure-policy decision against the reference model on random specs and
histories; and the reference model's own rules, stated as examples (so a bug in the
oracle cannot hide a bug in the domain)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from costart.domain.policy import decide_action
from costart.domain.spec_types import FAILURE_REASONS
from tests.builders import a_group
from tests.domain.test_stateful import group_specs
from tests.reference_model import action_for, below_floor, rule_that_applies, succeeded


@given(
    spec=group_specs("g1"),
    member=st.sampled_from(["trainer", "rollout"]),
    reason=st.sampled_from(FAILURE_REASONS),
    member_restarts=st.integers(0, 4),
    group_restarts=st.integers(0, 3),
)
def test_the_domain_decides_every_failure_as_the_reference_model(
    spec, member, reason, member_restarts, group_restarts
):
    assert decide_action(spec, member, reason, member_restarts, group_restarts) == action_for(
        spec, member, reason, member_restarts, group_restarts
    )


def spec_with_rules():
    return (
        a_group()
        .with_member("trainer")
        .with_member("rollout", replicas=4, min_start=3, min_running=2)
        .with_rule("restart-member", members=("trainer",), reasons=("oom",), max_restarts=2)
        .with_rule("tolerate", reasons=("any",))
        .with_failure(default="restart-group", max_group_restarts=1)
        .build()
    )


def test_the_reference_model_says_what_the_design_says():
    spec = spec_with_rules()
    assert rule_that_applies(spec, "trainer", "oom") is spec.failure.rules[0]
    assert rule_that_applies(spec, "rollout", "oom") is spec.failure.rules[1]
    # budgets: 2 counted restarts, then fail-group; budget-free reasons never escalate
    assert action_for(spec, "trainer", "oom", 1, 0) == "restart-member"
    assert action_for(spec, "trainer", "oom", 2, 0) == "fail-group"
    only_default = (
        a_group()
        .with_member("a")
        .with_failure(default="restart-group", max_group_restarts=1)
        .build()
    )
    assert action_for(only_default, "a", "error", 0, 1) == "fail-group"
    assert action_for(only_default, "a", "preempted", 0, 5) == "restart-group"
    assert below_floor(spec.member("rollout"), 1) and not below_floor(spec.member("rollout"), 2)
    assert not below_floor(spec.member("trainer"), 0)
    jobs = a_group().with_member("a").with_member("b").with_member("r", replicas=1).build()
    assert not succeeded(jobs, {"a": "SUCCEEDED", "b": "RUNNING", "r": "RUNNING"})
    assert succeeded(jobs, {"a": "SUCCEEDED", "b": "FAILED", "r": "RUNNING"})
    assert not succeeded(jobs, {"a": "FAILED", "b": "STOPPED", "r": "RUNNING"})
