"""The deterministic discrete-event simulator: scenarios, trace importers, the
embedded controller's ports, policies compared, and the report (DESIGN §7)."""

from costart._lazy import lazy_exports

__all__ = [
    "POLICIES",
    "TRACE_KINDS",
    "ControllerFactory",
    "Engine",
    "PlacementStepLike",
    "PolicyResult",
    "Report",
    "ScenarioError",
    "SimController",
    "SimSetup",
    "TraceKind",
    "TraceOptions",
    "build_report",
    "describe_setup",
    "draw_setup",
    "load_scenario",
    "report_json",
    "run_policy",
    "trace_setup",
    "write_plot",
]

# Resolved on first use: importing one light module must not import the heavy ones.
__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "ControllerFactory": "costart.sim.ports",
        "Engine": "costart.sim.engine",
        "POLICIES": "costart.sim.results",
        "PlacementStepLike": "costart.sim.ports",
        "PolicyResult": "costart.sim.results",
        "Report": "costart.sim.report",
        "ScenarioError": "costart.sim.scenario",
        "SimController": "costart.sim.ports",
        "SimSetup": "costart.sim.setup",
        "TRACE_KINDS": "costart.sim.trace_setup",
        "TraceKind": "costart.sim.trace_setup",
        "TraceOptions": "costart.sim.trace_setup",
        "build_report": "costart.sim.report",
        "describe_setup": "costart.sim.setup",
        "draw_setup": "costart.sim.setup",
        "load_scenario": "costart.sim.scenario",
        "report_json": "costart.sim.report",
        "run_policy": "costart.sim.results",
        "trace_setup": "costart.sim.trace_setup",
        "write_plot": "costart.sim.report",
    },
)
