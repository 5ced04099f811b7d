"""A member's ``slurm`` table (ADR 0119): validated whole with errors naming the field,
stored canonically, Slurm's time limit from the member's max_runtime plus its grace."""

from __future__ import annotations

from typing import Any

import pytest

from costart.domain.errors import SpecError
from costart.domain.slurm_table import ALLOWED_OPTIONS, SlurmSpec
from costart.domain.spec import spec_from_object


def spec(slurm: dict[str, Any], max_runtime: str | None = None) -> dict[str, Any]:
    member: dict[str, Any] = {
        "name": "trainer",
        "kind": "job",
        "tasks": 1,
        "shape": {"gpu": 1},
        "run": {"argv": ["train"], "grace": "30s", "slurm": slurm},
    }
    if max_runtime is not None:
        member["max_runtime"] = max_runtime
    return {"name": "g", "owner": "alice", "members": [member]}


def slurm_of(document: dict[str, Any]) -> SlurmSpec | None:
    run = spec_from_object(document).members[0].run
    assert run is not None
    return run.slurm


def test_a_full_table_is_stored_and_slurms_limit_is_max_runtime_plus_grace() -> None:
    table = {
        "partition": "gpu",
        "account": "physics",
        "qos": "high",
        "options": ["--comment=exp-42", "--nice=10", "--mail-type=END,FAIL", "--tmp=10G"],
    }
    stored = slurm_of(spec(table, max_runtime="1h"))
    assert stored == SlurmSpec(
        partition="gpu",
        account="physics",
        qos="high",
        options=("--comment=exp-42", "--nice=10", "--mail-type=END,FAIL", "--tmp=10G"),
        time_limit_ns=(3600 + 30) * 10**9,
    )
    assert slurm_of(spec({})) == SlurmSpec()  # an empty table: the adapter's defaults


@pytest.mark.parametrize(
    ("table", "field", "words"),
    [
        ({"partition": "gpu queue"}, "slurm.partition", "letters, digits"),
        ({"partition": "gpu\n"}, "slurm.partition", "letters, digits"),
        ({"account": "physics;rm -rf"}, "slurm.account", "letters, digits"),
        ({"qos": "$(id)"}, "slurm.qos", "letters, digits"),
        ({"qos": "-x"}, "slurm.qos", "letters, digits"),
        ({"options": ["--uid=0"]}, "slurm.options[0]", "--uid is not an option"),
        ({"options": ["--nodelist=n9"]}, "slurm.options[0]", "--nodelist is not an option"),
        ({"options": ["--wrap=rm -rf /"]}, "slurm.options[0]", "--wrap is not an option"),
        ({"options": ["--nice=10", "--comment=a b"]}, "slurm.options[1]", "must match"),
        ({"options": ["--comment=a;id"]}, "slurm.options[0]", "must match"),
        ({"options": ["--nice=-5"]}, "slurm.options[0]", "must match"),
        ({"options": ["--nice"]}, "slurm.options[0]", "must match"),
        ({"options": ["--nice=1\n"]}, "slurm.options[0]", "must match"),
        ({"options": ["-p gpu"]}, "slurm.options[0]", "one sbatch option"),
        ({"options": ["--nice=1", "--nice=2"]}, "slurm.options[1]", "given twice"),
        ({"options": ["--nice=1"] * 17}, "slurm.options", "the limit is 16"),
        ({"time": "1:00"}, "slurm.time", "unknown field"),  # max_runtime says it
    ],
)
def test_a_bad_table_is_refused_naming_the_field(
    table: dict[str, Any], field: str, words: str
) -> None:
    with pytest.raises(SpecError) as refused:
        spec_from_object(spec(table))
    assert refused.value.path == f"members[0].run.{field}", refused.value
    assert words in str(refused.value), refused.value


def test_every_allowed_option_has_a_value_it_accepts() -> None:
    examples = {
        "comment": "exp-42",
        "licenses": "matlab:2,fluent",
        "mail-type": "BEGIN,TIME_LIMIT_80",
        "mail-user": "alice@example.org",
        "nice": "100",
        "reservation": "maint-1",
        "signal": "B:USR1@120",
        "tmp": "20G",
        "wckey": "proj_a",
    }
    assert set(examples) == set(ALLOWED_OPTIONS)
    options = [f"--{name}={value}" for name, value in examples.items()]
    stored = slurm_of(spec({"options": options}))
    assert stored is not None and stored.options == tuple(options)
