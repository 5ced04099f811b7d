"""What `sbatch` is given (no daemons): a member's slurm table after costart's own
options, a probe job billed as the member's jobs, and a probe's check as shell words
that carry its argv and path literally."""

from __future__ import annotations

import shlex
import subprocess

import pytest

from costart.adapters.slurm.identity import JobIdentity
from costart.adapters.slurm.probe_jobs import check_command
from costart.adapters.slurm.submission import probe_options, sbatch_options
from costart.agent.accounts import Account
from costart.domain.capacity import Capacity
from costart.domain.run_table import Probe
from costart.domain.slurm_table import SlurmSpec

NOBODY = Account("alice", 65534, 65534, (), "nobody", None, False)
TABLE = SlurmSpec(
    partition="gpu",
    account="physics",
    qos="high",
    options=("--comment=exp-42",),
    time_limit_ns=(600 + 20) * 10**9,
)


def test_the_members_table_follows_costarts_own_options_and_overrides_the_partition() -> None:
    identity = JobIdentity("0a1b", "sim", 0, 1)
    options = list(
        sbatch_options(
            identity,
            "n2",
            Capacity(1, 2, 3),
            NOBODY,
            output="/dev/null",
            partition="main",
            slurm=TABLE,
        )
    )
    assert options[0] == "--hold"
    assert options[-5:] == [
        "--partition=gpu",
        "--account=physics",
        "--qos=high",
        "--time=11",  # 10m20s, in whole minutes rounded up
        "--comment=exp-42",
    ]
    plain = sbatch_options(
        identity, "n2", Capacity(1, 2, 3), NOBODY, output="/dev/null", partition="main"
    )
    assert plain[-1] == "--partition=main"  # no table: the adapter's partition, nothing else


def test_a_probe_job_is_pinned_small_short_and_billed_as_the_members_jobs() -> None:
    options = list(probe_options("costart-probe.0a1b.sim.w", "n3", NOBODY, 2 * 10**9, slurm=TABLE))
    for expected in (
        "--nodelist=n3",
        "--uid=65534",
        "--cpus-per-task=1",
        "--mem=64M",
        "--time=1",
        "--partition=gpu",
        "--account=physics",
        "--qos=high",
        "--no-requeue",
    ):
        assert expected in options, (expected, options)
    assert "--hold" not in options and "--comment=exp-42" not in options


def probe(kind: str, **fields: object) -> Probe:
    return Probe(claim="w", kind=kind, period_ns=10**9, timeout_ns=1_500_000_000, **fields)  # type: ignore[arg-type]


def test_a_checks_words_carry_its_argv_and_path_literally() -> None:
    argv = ("/bin/sh", "-c", 'test "$(printf %s \'a b\')" = "a b"; exit 7')
    words = check_command(probe("exec", argv=argv))
    assert words.startswith("exec timeout -s KILL 2 ")  # 1.5s, rounded up
    assert shlex.split(words)[5:] == list(argv)
    ran = subprocess.run(["/bin/sh", "-c", words], check=False, timeout=10)
    assert ran.returncode == 7
    assert shlex.split(check_command(probe("file", target="w eights;x"))) == [
        "exec", "test", "-e", "w eights;x",
    ]  # fmt: skip
    with pytest.raises(ValueError, match="http probe does not run as a Slurm job"):
        check_command(probe("http", target="http://db:80/"))
