"""What happened in a log, and what would have: the figures of any log, and two logs
side by side (issue 36, ADR 0134-0135).

Figures of one log (a real cluster's, a simulated run's, a what-if re-run's), read
with the simulator's own accounting so an actual and a what-if are measured alike; the
cluster is the one the log ran on (`costart.placement.cluster.Cluster`):

    figures = read_figures(log.source, cluster, label="actual")
    figures = run_figures(engine, "what-if")  # a finished simulated run, any policy

Two logs side by side, each figure for both with the difference, and the groups whose
fate changed most (started in one and not the other, wait changed most, wasted
accelerator-hours changed most), in a stable order:

    comparison = compare(actual, whatif, assumptions=["..."])

or, reading both logs over windows of one length (each from its own first event, for
the longer of the two spans: a log that went quiet still counts what it held, and the
comparison's ``assumptions`` say so):

    comparison = compare_logs(
        actual_source, cluster, whatif_source, whatif_cluster,
        labels=("actual", "what-if"), assumptions=whatif_assumptions,
    )

The report: ``write_outcomes(comparison, out)`` writes ``outcomes.json`` (canonical,
sorted keys; `comparison_json`) and ``outcomes.png`` into the folder ``out`` (None:
nothing written) and returns the paths. The terminal tables are the CLI's
(`costart.cli.outcomes_view`): ``comparison_table(comparison)`` (every figure, both
logs, the change), ``changes_table(comparison)`` (the groups whose fate changed most;
print it when ``comparison.changed``), ``window_text(figures)`` (a log's line above
them), and for one log ``figures_table`` and ``fates_table``. ``costart replay
outcomes`` prints them.
"""

from costart._lazy import lazy_exports

__all__ = [
    "Comparison",
    "FateChange",
    "FigureRow",
    "GroupFate",
    "LogFigures",
    "Window",
    "capacity_of",
    "compare",
    "compare_logs",
    "comparison_json",
    "figures_json",
    "read_figures",
    "run_figures",
    "write_outcomes",
]

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "Comparison": "costart.replay.outcomes.compare",
        "FateChange": "costart.replay.outcomes.compare",
        "FigureRow": "costart.replay.outcomes.compare",
        "compare": "costart.replay.outcomes.compare",
        "compare_logs": "costart.replay.outcomes.side_by_side",
        "GroupFate": "costart.replay.outcomes.figures",
        "LogFigures": "costart.replay.outcomes.figures",
        "Window": "costart.replay.outcomes.figures",
        "capacity_of": "costart.replay.outcomes.accounting",
        "read_figures": "costart.replay.outcomes.accounting",
        "run_figures": "costart.replay.outcomes.accounting",
        "figures_json": "costart.replay.outcomes.report",
        "comparison_json": "costart.replay.outcomes.report",
        "write_outcomes": "costart.replay.outcomes.report",
    },
)
