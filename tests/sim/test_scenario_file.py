"""A bad simulation scenario gets one clear error naming the field."""

from __future__ import annotations

import pytest

from costart.sim.scenario import ScenarioError, parse_scenario
from tests.sim.helpers import SCENARIOS

GOOD = """
name = "t"
cluster = "cluster-demo.toml"
[[workloads]]
name = "w"
arrivals = { count = 2, every = "1m" }
[workloads.group]
owner = "o"
members = [{ name = "job", kind = "job", shape = { gpu = 1 } }]
"""


def _parse(text: str):
    return parse_scenario(text, SCENARIOS)


def test_a_good_scenario_parses():
    assert _parse(GOOD).specs[0].members[0].name == "job"


@pytest.mark.parametrize(
    ("change", "path"),
    [
        (('name = "t"', 'name = "t"\ncolour = "red"'), "colour"),
        (('name = "t"', 'name = "t"\nhorizon = "soon"'), "horizon"),
        (('name = "t"', 'name = "t"\nsession_interval = "0s"'), "session_interval"),
        (('every = "1m"', 'every = "1m", rate_per_hour = 2.0'), "workloads[0].arrivals"),
        (("count = 2", "count = -1"), "workloads[0].arrivals.count"),
        (
            ('every = "1m" }', 'every = "1m" }\nclaim_delay = { dist = "exp", mean = "x" }'),
            "workloads[0].claim_delay.mean",
        ),
        (
            ('every = "1m" }', 'every = "1m" }\nclaim_delay = { dist = "gamma", mean = "1s" }'),
            "workloads[0].claim_delay.dist",
        ),
        (('every = "1m" }', 'every = "1m" }\nclaim_fail = 1.5'), "workloads[0].claim_fail"),
        (('kind = "job"', 'kind = "batch"'), "workloads[0].group.members[0].kind"),
        (
            ("shape = { gpu = 1 }", "shape = { gpu = 1 }, tasks = 0"),
            "workloads[0].group.members[0].tasks",
        ),
        (('cluster = "cluster-demo.toml"', 'cluster = "nope.toml"'), "cluster"),
        (
            ("gpu = 1 } }]", "gpu = 1 } }]\n[workloads.runs.other]\nfail = 0.1"),
            "workloads[0].runs.other",
        ),
        (
            (
                'members = [{ name = "job", kind = "job", shape = { gpu = 1 } }]',
                'members = [{ name = "svc", kind = "replica-set", shape = { gpu = 1 } }]',
            ),
            "workloads[0].lifetime",
        ),
        (('name = "w"', 'name = "W!"'), "workloads[0].name"),
        (
            ("gpu = 1 } }]", "gpu = 1 } }]\n[outside_load]\nutilization = 2.0"),
            "outside_load.utilization",
        ),
        (("gpu = 1 } }]", "gpu = 1 } }]\n[outside_load]\nrace = -0.1"), "outside_load.race"),
        (("gpu = 1 } }]", "gpu = 1 } }]\n[outside_load]\ngpus = [4, 0]"), "outside_load.gpus"),
        (
            (
                "gpu = 1 } }]",
                'gpu = 1 } }]\n[outside_load]\nruntime = { dist = "exp", mean = "0s" }',
            ),
            "outside_load.runtime.mean",
        ),
        (("gpu = 1 } }]", "gpu = 1 } }]\n[outside_load]\ncolour = 1"), "outside_load.colour"),
    ],
)
def test_errors_name_the_field(change, path):
    old, new = change
    assert old in GOOD
    with pytest.raises(ScenarioError) as caught:
        _parse(GOOD.replace(old, new, 1))
    assert caught.value.path == path, str(caught.value)


def test_a_missing_field_is_named():
    with pytest.raises(ScenarioError) as caught:
        _parse(GOOD.replace('cluster = "cluster-demo.toml"\n', ""))
    assert caught.value.path == "cluster"
    assert "missing" in caught.value.reason
