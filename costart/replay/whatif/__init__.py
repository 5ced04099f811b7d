"""What-if replay: the recorded workload of a log (only its inputs), re-run through the
simulator under another policy, cluster or settings (ADRs 0131-0133)."""

from costart._lazy import lazy_exports

__all__ = [
    "RECORDED_POLICY",
    "Change",
    "Decision",
    "Divergence",
    "RecordedWorkload",
    "WhatIfError",
    "WhatIfRun",
    "decisions",
    "differing",
    "first_divergence",
    "parse_changes",
    "recorded_workload",
    "run_whatif",
    "whatif_setup",
]

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "RECORDED_POLICY": "costart.replay.whatif.options",
        "Change": "costart.replay.whatif.changes",
        "Decision": "costart.replay.whatif.decisions",
        "Divergence": "costart.replay.whatif.decisions",
        "RecordedWorkload": "costart.replay.whatif.workload",
        "WhatIfError": "costart.replay.whatif.options",
        "WhatIfRun": "costart.replay.whatif.rerun",
        "decisions": "costart.replay.whatif.decisions",
        "differing": "costart.replay.whatif.decisions",
        "first_divergence": "costart.replay.whatif.decisions",
        "parse_changes": "costart.replay.whatif.changes",
        "recorded_workload": "costart.replay.whatif.extract",
        "run_whatif": "costart.replay.whatif.rerun",
        "whatif_setup": "costart.replay.whatif.rerun",
    },
)
