"""`costart replay whatif`: the recorded workload of the log in use, re-run through the
simulator under another policy, cluster or placement settings (ADRs 0131-0133).

It reads the log read-only (`--log DIR` or the global `--store`), writes the re-run's
log to a new directory of its own (a temporary one, or `--keep DIR`), and prints what it
ran — policy, clusters, settings changed, every assumption — and the recorded log
beside the what-if one: groups started and ended, decisions, and where they first part.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, cast

import typer

from costart.cli.commands import console
from costart.cli.exits import UsageError, reported
from costart.cli.replay_logs import LogOption, opened_log
from costart.cli.target import Target
from costart.display import duration
from costart.domain.durations import parse_duration_ns
from costart.placement.cluster import ClusterError
from costart.placement.cluster_file import ClusterDefinition, load_cluster
from costart.replay.time_base import TimeBase
from costart.replay.whatif.changes import SPEC_SETTINGS, Change, parse_changes
from costart.replay.whatif.options import DEFAULT_TAIL, RECORDED_POLICY, WhatIfError
from costart.settings import backend_at

if TYPE_CHECKING:
    from costart.placement.cluster import Cluster
    from costart.replay.source import ReplaySource
    from costart.replay.whatif.decisions import Decision
    from costart.replay.whatif.rerun import WhatIfRun
    from costart.replay.whatif.summary import Compared
    from costart.sim.engine import Engine


def policies() -> tuple[str, ...]:
    """Every policy a what-if runs: the recorded one and every one `costart sim` has
    (loaded with the simulator, when the command runs)."""
    from costart.sim.recommended_policy import RECOMMENDED_POLICY  # noqa: PLC0415
    from costart.sim.results import ALL_POLICIES  # noqa: PLC0415

    return (RECORDED_POLICY, *ALL_POLICIES, RECOMMENDED_POLICY)


def _cluster(path: Path, what: str) -> ClusterDefinition:
    try:
        return load_cluster(path)
    except ClusterError as error:
        raise UsageError(f"{what} {path}: {error}") from None
    except OSError as error:
        raise UsageError(f"{what} {path}: cannot read it ({error.strerror})") from None


def _checked(
    policy: str, sets: list[str], keep: Path | None, tail: str, out: Path | None
) -> tuple[list[Change], int]:
    """Every option checked before anything is read or written."""
    known = policies()
    if policy not in known:
        raise UsageError(f"--policy {policy}: unknown (one of {', '.join(known)})")
    try:
        changes = parse_changes(sets)
    except WhatIfError as error:
        raise UsageError(str(error)) from None
    try:
        tail_ns = parse_duration_ns(tail)
    except ValueError as error:
        raise UsageError(f"--tail {tail}: {error}") from None
    if keep is not None and keep.exists() and (not keep.is_dir() or any(keep.iterdir())):
        raise UsageError(
            f"--keep {keep} is not an empty directory: the what-if log needs a new one"
        )
    if out is not None and out.exists() and not out.is_dir():
        raise UsageError(f"--out {out} is not a directory: the report needs a folder")
    return changes, tail_ns


@contextmanager
def _log_dir(keep: Path | None) -> Iterator[Path]:
    if keep is not None:
        keep.mkdir(parents=True, exist_ok=True)
        yield keep
        return
    with tempfile.TemporaryDirectory(prefix="costart-whatif-") as scratch:
        yield Path(scratch) / "store"


def whatif_cmd(
    ctx: typer.Context,
    policy: Annotated[
        str,
        typer.Option(help=f"the policy to re-run under (default {RECORDED_POLICY}: as recorded)"),
    ] = RECORDED_POLICY,
    cluster: Annotated[
        Path | None,
        typer.Option(help="another cluster file (default: the global --cluster, as recorded)"),
    ] = None,
    sets: Annotated[
        list[str] | None,
        typer.Option(
            "--set",
            help=f"KEY=VALUE for every group, repeatable; KEY one of {', '.join(SPEC_SETTINGS)}",
        ),
    ] = None,
    keep: Annotated[
        Path | None, typer.Option(help="write the what-if log to this new directory and keep it")
    ] = None,
    tail: Annotated[
        str, typer.Option(help="how long the re-run may go on after the log's last event")
    ] = DEFAULT_TAIL,
    out: Annotated[
        Path | None,
        typer.Option(help="a folder for the side-by-side report: outcomes.json and outcomes.png"),
    ] = None,
    log_dir: LogOption = None,
) -> None:
    """Re-run the log's recorded workload (arrivals, claim delays, run times, failures,
    node reports, cancels) under another policy, cluster or placement settings, and
    print it beside what was recorded: the decisions, then the figures (time to start,
    wasted GPU-hours, deadlocks, utilization) and the groups whose fate changed most,
    which --out also writes as outcomes.json and outcomes.png. The log is only read."""
    # The simulator and the controller load only when the command runs (not when the
    # replay commands' group is built).
    from costart.bootstrap import Settings, sim_controller_factory  # noqa: PLC0415
    from costart.controller import Controller  # noqa: PLC0415
    from costart.replay.outcomes.accounting import read_figures  # noqa: PLC0415
    from costart.replay.whatif.extract import recorded_workload  # noqa: PLC0415
    from costart.replay.whatif.rerun import WhatIfRun, run_whatif, whatif_setup  # noqa: PLC0415
    from costart.replay.whatif.summary import compare as compare_decisions  # noqa: PLC0415

    target: Target = ctx.obj
    with reported():
        changes, tail_ns = _checked(policy, sets or [], keep, tail, out)
        if target.cluster is None:
            raise UsageError("name the recorded cluster with the global --cluster FILE")
        recorded_cluster = _cluster(target.cluster, "--cluster")
        used = recorded_cluster if cluster is None else _cluster(cluster, "--cluster")
        with opened_log(ctx, log_dir) as log:
            location = str(log_dir) if log_dir is not None else str(target.store)
            shown = backend_at(location).describe(location)  # a URL without its password
            try:
                recorded = recorded_workload(log.source, shown)
            except WhatIfError as error:
                raise UsageError(str(error)) from None
            before = list(log.source.read_events())
            try:  # the recorded log must have run on the recorded cluster
                read_figures(log.source, recorded_cluster.build(), label="recorded")
            except ValueError as error:
                raise UsageError(f"--cluster {target.cluster}: {error}") from None
            try:
                setup, assumptions = whatif_setup(recorded, used, changes, tail_ns)
            except WhatIfError as error:
                raise UsageError(str(error)) from None
            with _log_dir(keep) as store:
                _, engine = run_whatif(
                    setup, policy, sim_controller_factory(Settings(store=str(store), cluster=None))
                )
                after = list(engine.controller.read_events())
                cast(Controller, engine.controller).close()
                run = WhatIfRun(
                    recorded_log=shown,
                    log=str(store),
                    recorded_cluster=str(target.cluster),
                    cluster=str(cluster or target.cluster),
                    policy=policy,
                    changes=[str(c) for c in changes],
                    assumptions=assumptions,
                    first_ns=recorded.first_ns,
                    end_ns=recorded.end_ns,
                    session_interval_ns=recorded.session_interval_ns,
                    start_ns=recorded.start_ns,
                    first_session_ns=recorded.first_session_ns,
                    horizon_ns=setup.options.horizon_ns,
                    rejected=list(engine.embedder.rejected),
                    inputs_refused=list(engine.embedder.inputs_refused),
                )
                compared = compare_decisions(before, after, engine.embedder.originals)
                _print(
                    run,
                    compared,
                    kept=keep is not None,
                    sessions=len(recorded.session_times),
                    task_groups=_task_groups(engine),
                )
                _show_figures(log.source, recorded_cluster.build(), engine, run, out)


def _show_figures(
    recorded_log: ReplaySource,
    recorded_cluster: Cluster,
    engine: Engine,
    run: WhatIfRun,
    out: Path | None,
) -> None:
    """What happened and what would have, in figures, on the one clock both logs keep
    (ADR 0132), carried to the later of their ends; ``out`` also gets them as files."""
    from costart.cli.outcomes_cmd import print_comparison  # noqa: PLC0415
    from costart.replay.outcomes.accounting import read_figures, run_figures  # noqa: PLC0415
    from costart.replay.outcomes.compare import compare  # noqa: PLC0415
    from costart.replay.outcomes.figures import Window  # noqa: PLC0415
    from costart.replay.outcomes.report import write_outcomes  # noqa: PLC0415

    window = Window(run.first_ns, max(run.end_ns, engine.now_ns))
    comparison = compare(
        read_figures(
            recorded_log,
            recorded_cluster,
            label="recorded",
            start_ns=window.start_ns,
            end_ns=window.end_ns,
        ),
        run_figures(engine, "what-if", window),
        assumptions=run.assumptions,
    )
    print_comparison(comparison, said=run.assumptions)
    for path in write_outcomes(comparison, out):
        console().print(f"wrote {path}", highlight=False, markup=False)


def _task_groups(engine: Engine) -> dict[str, str]:
    """Under a policy that runs each task as a group of its own (``independent`` and the
    peers that place task by task), each such group's name as people know it: the
    recorded group, member and task it stands for."""
    return {
        name: f"{unit.original.name}/{unit.member} task {unit.task} (run as group {name})"
        for name, unit in engine.embedder.units_by_name.items()
        if unit.member is not None
    }


def _print(
    run: WhatIfRun,
    compared: Compared,
    *,
    kept: bool,
    sessions: int,
    task_groups: Mapping[str, str],
) -> None:
    out = console()

    def say(text: str) -> None:
        out.print(text, highlight=False, markup=False, soft_wrap=True)

    base = TimeBase(run.first_ns, "the log's first event")
    say(base.said())
    say(f"what-if of {run.recorded_log}, {base.at(run.first_ns)} to {base.at(run.end_ns)}")
    mode = " (each group in its recorded mode)" if run.policy == RECORDED_POLICY else ""
    say(f"  policy: {run.policy}{mode}")
    same = run.cluster == run.recorded_cluster
    said = " (as recorded)" if same else f" (recorded: {run.recorded_cluster})"
    say(f"  cluster: {run.cluster}{said}")
    say(f"  settings changed: {', '.join(run.changes) or 'none'}")
    first = (
        "" if run.first_session_ns is None else f", the first at {base.at(run.first_session_ns)}"
    )
    say(
        f"  sessions: every {duration(run.session_interval_ns)}, on the grid of the "
        f"{sessions} recorded sessions that wrote something{first}"
    )
    say(f"  the re-run stops by {base.at(run.start_ns + run.horizon_ns)} at the latest")
    for name in run.rejected:
        say(f"  refused (can never fit the cluster): {name}")
    for text in run.inputs_refused:
        say(f"  a recorded input this run refused: {text}")
    say(f"  assumptions ({len(run.assumptions)}):")
    for text in run.assumptions:
        say(f"    - {text}")
    say(f"  what-if log: {run.log}" + ("" if kept else " (temporary, removed)"))
    rows = [
        ("groups submitted", compared.recorded.submitted, compared.whatif.submitted),
        ("groups started", compared.recorded.started, compared.whatif.started),
        ("succeeded", compared.recorded.succeeded, compared.whatif.succeeded),
        ("failed", compared.recorded.failed, compared.whatif.failed),
        ("cancelled", compared.recorded.cancelled, compared.whatif.cancelled),
        ("refused (never fit)", compared.recorded.refused, compared.whatif.refused),
        ("decisions", compared.recorded_decisions, compared.whatif_decisions),
    ]
    say(f"{'':24}{'recorded':>10}{'what-if':>10}")
    for label, left, right in rows:
        say(f"{label:24}{left:>10}{right:>10}")
    divergence = compared.divergence
    if divergence is None:
        say("every recorded decision is made again, at the same time: no divergence")
        return
    say(f"decisions in one log and not the other: {compared.differing}")
    say(f"first divergence, decision #{divergence.index + 1}:")
    say(f"  recorded: {_decision(divergence.recorded, base)}")
    say(f"  what-if:  {_decision(divergence.whatif, base, task_groups)}")


def _decision(
    decision: Decision | None, base: TimeBase, task_groups: Mapping[str, str] | None = None
) -> str:
    if decision is None:
        return "(no more decisions)"
    who = (task_groups or {}).get(decision.group)
    return f"{base.at(decision.at_ns)} {decision.text(who)}"
