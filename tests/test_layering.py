"""The dependency rule of docs/design.md §2, and the determinism rule of the pure layers.

Imports point inward: domain <- placement <- ...; only bootstrap.py wires everything
(tests/test_bootstrap.py holds every entry point to it); `server` composes the running
service and `cli` parses flags and calls it; `_lazy` is the packages' shared helper for
lazy public names. Every package and top-level module declares what it may import, each
arrow with its reason; a log backend is imported by no layer but itself. An import is
an import statement, a module named to ``import_module`` or an entry of a `_lazy` table. Code in domain/, placement/ and projections/ never reads a clock,
makes a random id or draws unseeded randomness.

Inside placement a wall stands around the speed-ups that keep state across sessions
(`costart.placement.incremental`, ADR 0052): they import the plain policy, and neither
the plain policy nor the domain (nor any other layer but the simulator) imports them.
The tick's index (`costart.deadline_index`, ADR 0062) stands behind its own wall: only
the Controller imports it, never the domain whose plain scan it is compared with.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "costart"
STDLIB = set(sys.stdlib_module_names)

# Which costart layers (and third-party packages) each layer may import. Every layer a
# host embeds logs through `logging_setup.library_logger` (the host chooses where lines go).
ALLOWED: dict[str, tuple[set[str], set[str]]] = {
    # `_lazy`: the package's names resolve on first use (ADR 0078).
    "domain": ({"domain", "_lazy"}, {"msgspec"}),
    # How people read times and reasons: pure words over domain facts.
    "display": ({"domain", "display"}, set()),
    "placement": ({"domain", "placement", "files", "gc_pause"}, {"msgspec"}),
    # The backend-neutral log services: no backend, no lmdb, no psycopg.
    "eventlog": (
        {"domain", "eventlog", "logging_setup", "_lazy", "gc_pause"},
        {"msgspec", "eventsourcing", "structlog"},
    ),
    # What every LMDB environment shares (the log's and the views'): data-file checks,
    # their errors (backend-neutral ones, from `eventlog.errors`), page release.
    "lmdbkit": ({"eventlog", "lmdbkit", "logging_setup"}, {"lmdb", "structlog"}),
    # Each backend imports the services, never the other backend.
    "store": (
        {"domain", "eventlog", "lmdbkit", "store", "logging_setup"},
        {"msgspec", "eventsourcing", "lmdb", "structlog"},
    ),
    "pgstore": (
        {"domain", "eventlog", "pgstore"},
        {"msgspec", "eventsourcing", "psycopg", "structlog"},
    ),
    # The views live in their own LMDB environment: they share the LMDB kit's data-file
    # checks with the log store, never the log store itself.
    "projections": (
        {"domain", "display", "eventlog", "lmdbkit", "projections", "logging_setup", "_lazy"},
        {"msgspec", "eventsourcing", "lmdb", "structlog"},
    ),
    # Forensics over a log each backend opens read-only (`eventlog.open_replay_log`).
    # What-if replay (`replay.whatif`) re-runs a log's recorded inputs in the simulator.
    "replay": (
        {"domain", "display", "placement", "eventlog", "projections", "replay", "sim", "_lazy"},
        {"msgspec", "eventsourcing", "structlog"},
    ),
    "sim": (
        {
            "domain",
            "display",
            "placement",
            "eventlog",
            "projections",
            "replay",
            "sim",
            "_lazy",
            "files",
        },
        # matplotlib only in costart/sim/report.py (the PNG plot).
        {"msgspec", "eventsourcing", "lmdb", "structlog", "matplotlib"},
    ),
}
# Sub-packages that reach further than their layer: (path under costart/, the extra
# layers, the extra third-party packages), each with its reason.
SUBPACKAGE_EXTRA: dict[str, tuple[set[str], set[str]]] = {
    # A log's outcomes are the simulator's own accounting fed from the log, and its plot
    # is drawn with the simulator's pieces (ADR 0134).
    "replay/outcomes/": ({"sim"}, {"matplotlib"}),
    # The shadow planner's index of capacity in time reads every node at once; the
    # plain profile beside it stays pure Python (ADR 0143).
    "placement/shadow/indexed.py": (set(), {"numpy"}),
    "placement/shadow/step_maxima.py": (set(), {"numpy"}),
    # The in-memory allocator's whole reading by class computes the nodes in use at
    # once; the plain per-node tables stay beside it (ADR 0158).
    "placement/whole_reading.py": (set(), {"numpy"}),
    # A cold start's per-node lists made from each node's class by an object array's
    # take; the plain comprehension beside it is the reference (ADR 0159).
    "placement/incremental/by_class.py": (set(), {"numpy"}),
    # A whole reading's per-node use list made from the World's own tuples by an object
    # array's take, each name's node index looked up once for it and the reading
    # (ADR 0159).
    "placement/incremental/used.py": (set(), {"numpy"}),
    # Many node names' indexes found at once by the interned names' identity, the plain
    # dict lookup beside it (ADR 0160).
    "placement/incremental/node_index.py": (set(), {"numpy"}),
    # Counts kept in bytes summed per domain in one vectorised pass; a list of counts is
    # summed run by run, the reference (ADR 0159).
    "placement/incremental/domain_sums.py": (set(), {"numpy"}),
}
# The service layer (ADR 0054): rest -> service -> controller/domain; the CLI uses it too;
# it never imports rest (HTTP), nor the stand-ins it may be handed (adapters).
ALLOWED["service"] = (
    {"domain", "display", "projections", "controller", "log_writer", "service", "_lazy"}
    | {"logging_setup"}
    | {"placement"},  # the start estimator plans the queue ahead (ADR 0136)
    {"msgspec", "structlog"},
)
# Hosts' adapters: the stand-ins, and the Slurm adapter (issue 37), which speaks to
# `costart serve` as a node agent does (REST's client, ADR 0096) and runs each owner's
# jobs under the account the agent's owner table maps (`agent.accounts`).
ALLOWED["adapters"] = (
    {"domain", "controller", "adapters", "_lazy", "logging_setup", "rest", "agent"}
    | {"projections"}  # the member rows and holds it reads from `serve`
    | {"placement"},  # Slurm's other work as a `HostLoad` (`SessionReadings`)
    {"structlog", "msgspec", "httpx"},
)
ALLOWED["rest"] = (
    {"domain", "display", "projections", "log_writer", "service", "rest", "_lazy", "files"}
    | {"logging_setup"},
    {"litestar", "msgspec", "structlog", "anyio", "httpx", "prometheus_client"},
)
# The board (docs/design.md §10): pages over the API's tokens, rules and watch stream, and
# the replay timeline's lanes.
ALLOWED["board"] = (
    {"board", "domain", "display", "projections", "replay", "rest", "service", "_lazy"},
    {"litestar"},
)
# The service as it runs (`costart serve` without a command line): it composes the
# layers below into a leader or standby with its views and web app.
ALLOWED["server"] = (
    {
        "server",
        "_lazy",
        "bootstrap",  # the Controller and the standby, built by the composition root
        "controller",  # the Controller it leads: its lease, hand-over snapshot, stop
        "domain",  # `Conflict`: a store led by a running server refuses a second writer
        "eventlog",  # leases, the backend registry, the log the views fold, its errors
        "logging_setup",  # the views process configures its own logging
        "projections",  # the views it checks, folds and serves
        "service",  # the service layer the web app answers from
        "rest",  # the web app, tokens, the standby's "not leader" answer
        "board",  # the board's pages, served beside the API
        "adapters",  # the simulated claim driver `--simulate-claims` chooses (ADR 0054)
    },
    {"msgspec", "structlog", "uvicorn"},
)
# The CLI parses flags and calls the layers that do the work; never the web framework,
# never a log backend (stores are chosen by configuration, `eventlog.backends`).
ALLOWED["cli"] = (
    {
        "cli",
        "_lazy",
        "server",  # `serve` runs `costart.server`; the direct CLI checks views and lease
        "bootstrap",  # every command's Controller and Settings (ADR 0023)
        "settings",  # the settings alone, for a command that only reads (ADR 0078)
        "controller",  # the direct CLI (`--store`) commands a Controller it bootstrapped
        "log_writer",  # a stopped controller's error, mapped to its cause's exit code
        "service",  # the answers it shares with REST (`why_not_running`)
        "rest",  # the REST client of `--server`, and the tokens `costart token` makes
        "agent",  # `costart agent` runs the node agent
        "adapters",  # the walkthrough plays a well-behaved agent (`stand_in`)
        "sim",  # `costart sim` and `costart demo` run the simulator
        "replay",  # `costart replay`: the forensics commands
        "projections",  # the views every read prints
        "display",  # times and reasons as people read them
        "placement",  # `ClusterError`: a bad cluster file is a usage error
        "eventlog",  # the backend registry (`--store` as given), the store's errors
        "domain",  # specs, selectors, errors
        "logging_setup",  # `--log-level`
        "files",  # a file the user named that cannot be read: one line, exit 2
    },
    {"msgspec", "structlog", "rich", "typer", "yaml", "httpx"},
)
ALLOWED["agent"] = (
    {"domain", "display", "projections", "rest", "agent"},
    {"msgspec", "httpx", "structlog"},
)
# The top-level modules, each a layer of its own.
# The composition root (ADR 0023) builds the Controller for every entry point.
ALLOWED["bootstrap"] = (
    {
        "bootstrap",
        "settings",  # what a controller is built from, re-exported
        "controller",  # the one place that constructs it
        "log_session",  # and the log session it is given
        "domain",  # a standby's warm `World`
        "eventlog",  # the backend registry, the lease, the standby, rollback checks
        "projections",  # the views' anchor, checked against the log (ADR 0048)
        "placement",  # the step the settings name (`DEFAULT_PLACEMENT`, by import_module)
        "logging_setup",  # logging configured once for an entry point
        # The simulator's port of the controller (`sim.ports`): the simulator may not
        # import the Controller, so the root hands it a factory typed by that port.
        "sim",
    },
    {"msgspec", "structlog", "eventsourcing"},
)
# What a controller is built from, without the root that builds it (ADR 0078): the
# backend registry loads when a store is named.
ALLOWED["settings"] = ({"settings", "eventlog"}, {"msgspec"})
# The typed client for users' scripts: REST's client under a short name.
ALLOWED["client"] = ({"client", "rest"}, set())
ALLOWED["logging_setup"] = ({"logging_setup"}, {"structlog"})
# The tick's index (ADR 0062): a speed-up over the domain's plain scan, nothing else.
ALLOWED["deadline_index"] = ({"deadline_index", "domain"}, set())
# The Controller commands over its log session; the session restores and appends
# through the log services alone (ADR 0053).
ALLOWED["controller"] = (
    {"controller", "domain", "eventlog", "log_session", "log_writer", "deadline_index"}
    | {"logging_setup"},
    {"eventsourcing", "structlog"},
)
ALLOWED["log_session"] = (
    {"log_session", "domain", "eventlog", "log_writer", "logging_setup"},
    {"eventsourcing", "structlog"},
)
ALLOWED["log_writer"] = (
    {"log_writer", "domain", "eventlog", "logging_setup"},
    {"eventsourcing", "structlog"},
)
# Reading a file the user named, with one error naming it (no costart imports).
ALLOWED["files"] = ({"files"}, set())
# Pausing the cyclic garbage collector around work that makes no cycles (no imports).
ALLOWED["gc_pause"] = ({"gc_pause"}, set())
# The packages' shared helper for lazy public names.
ALLOWED["_lazy"] = ({"_lazy"}, set())
# The core's top-level modules, by what they may never import: the forensics package or
# a backend (stated again beside `ALLOWED`, as the wall ADR 0053 draws).
CORE_MODULES: dict[str, set[str]] = {
    "controller.py": {"replay", "store", "pgstore", "sim", "cli", "rest", "projections"},
    "log_session.py": {"replay", "store", "pgstore", "sim", "cli", "rest", "projections"},
    "log_writer.py": {"replay", "store", "pgstore", "sim", "cli", "rest", "projections"},
}
# A log backend is imported by itself alone: every other layer reaches it through the
# registry (`eventlog.backends`: its lease, replay log and page release), so the
# forensics, the views, the command line and the server name none (issue 30).
BACKENDS = {"store", "pgstore"}
BACKEND_FREE = ("replay", "projections", "cli", "server")
# What a backend's recorder can do is declared (`costart.eventlog.capabilities`), never
# probed: these names in a getattr/hasattr are a probe.
CAPABILITY_NAMES = {
    "capabilities",
    "claim_term",
    "insert_events_deferred",
    "iter_records",
    "record_hash",
    "stored_term",
    "verifies_checksums",
}
# Backends are chosen by configuration through one registry (`backend_for`), never by
# comparing persistence module names or factory types.
MODULE_NAMES = {"costart.store", "costart.pgstore", "costart.eventlog.memory", "eventsourcing.popo"}
PURE_LAYERS = ("domain", "display", "placement", "projections")
BANNED_IN_DOMAIN = {
    "time",
    "datetime",
    "random",
    "os",
    "logging",
    "structlog",
    "uuid.uuid4",
    "secrets",
}
BANNED_CALLS = {
    ("time", "time"),
    ("time", "time_ns"),
    ("time", "monotonic"),
    ("time", "monotonic_ns"),
    ("time", "perf_counter"),
    ("datetime", "now"),
    ("datetime", "utcnow"),
    ("date", "today"),
    ("uuid", "uuid4"),
    ("uuid", "uuid1"),
    ("os", "getenv"),
    ("os", "urandom"),
    ("random", "random"),
    ("random", "randint"),
    ("random", "choice"),
    ("random", "shuffle"),
    ("random", "uniform"),
    ("random", "sample"),
    ("random", "randrange"),
}


# Walled-off packages: the package (dotted, under costart) and the modules (paths
# relative to costart/, a trailing "/" for a whole package) that may import it.
WALLS: dict[str, tuple[str, ...]] = {
    # The speed-ups: imported by themselves, the simulator and the composition root,
    # which run them; never by the plain policy they are compared with, nor the domain.
    "placement.incremental": ("placement/incremental/", "sim/", "bootstrap.py"),
    # The tick's index (ADR 0062): the Controller runs it; the plain scan it is compared
    # with (`domain.scheduling.due_groups`) and the rest of the domain never import it.
    "deadline_index": ("deadline_index.py", "controller.py"),
}


def _modules(layer: str) -> list[Path]:
    """A package's modules, or the one module of a top-level module's layer."""
    module = PACKAGE / f"{layer}.py"
    return [module] if module.exists() else sorted((PACKAGE / layer).rglob("*.py"))


def _layers() -> set[str]:
    """Every package and top-level module of the package (the root's `__init__` aside)."""
    return {
        p.stem
        for p in PACKAGE.iterdir()
        if (p / "__init__.py").exists() or (p.suffix == ".py" and p.stem != "__init__")
    }


def _absolute(path: Path, level: int, module: str | None) -> str:
    """A relative import's module as an absolute name (``from .x import y`` in
    costart/placement/step.py -> costart.placement.x)."""
    # The package a module is in (for __init__.py, the package it makes): "." is it,
    # each further dot one package up.
    package = ["costart", *path.relative_to(PACKAGE).parent.parts]
    base = package[: len(package) - (level - 1)]
    return ".".join([*base, module] if module else base)


def _called(node: ast.Call) -> str:
    """The name a call calls: ``f`` for ``f(...)`` and ``importlib.f(...)``."""
    func = node.func
    return func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")


def _named_modules(node: ast.Call) -> list[tuple[int, str]]:
    """The modules a call imports by name: ``import_module("costart.x")`` (or
    ``__import__``), and the values of a package's `_lazy` table
    (``lazy_exports(__name__, {"Name": "costart.x.y"})``), imported on first use."""
    called = _called(node)
    if called in {"import_module", "__import__"} and node.args:
        names = [node.args[0]]
    elif called == "lazy_exports" and len(node.args) >= 2 and isinstance(node.args[1], ast.Dict):
        names = list(node.args[1].values)
    else:
        return []
    return [
        (n.lineno, n.value)
        for n in names
        if isinstance(n, ast.Constant) and isinstance(n.value, str)
    ]


def _imports(path: Path) -> list[tuple[int, str]]:
    """Every module ``path`` imports: its import statements, the modules it imports by
    name (`_named_modules`), relative imports made absolute."""
    tree = ast.parse(path.read_text())
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            found += _named_modules(node)
        elif isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            module = node.module if node.level == 0 else _absolute(path, node.level, node.module)
            if not module:
                continue
            found += [(node.lineno, module)]
            found += [(node.lineno, f"{module}.{alias.name}") for alias in node.names]
    return found


def wall_violations() -> list[str]:
    """Imports of a walled-off package (`WALLS`) from a module not allowed to."""
    problems: set[str] = set()
    for path in sorted(PACKAGE.rglob("*.py")):
        where = path.relative_to(PACKAGE).as_posix()
        for line, name in _imports(path):
            for walled, allowed in WALLS.items():
                target = f"costart.{walled}"
                if (name == target or name.startswith(target + ".")) and not any(
                    where == a or (a.endswith("/") and where.startswith(a)) for a in allowed
                ):
                    problems.add(f"{where}:{line} imports {target}")
    return sorted(problems)


def import_cycles(package: str) -> list[list[str]]:
    """Modules of ``package`` (its ``__init__`` aside) that import each other in a
    circle, counting every import: type-only ones, and ones deferred into a function."""
    modules = {
        ".".join(["costart", *path.relative_to(PACKAGE).with_suffix("").parts]): path
        for path in sorted((PACKAGE / package).rglob("*.py"))
        if path.name != "__init__.py"
    }
    edges = {
        module: sorted({name for _, name in _imports(path) if name in modules} - {module})
        for module, path in modules.items()
    }
    cycles, done = [], set()  # a depth-first walk; a path back to itself is a cycle
    for start in sorted(modules):
        stack = [(start, [start])]
        while stack:
            module, path = stack.pop()
            for target in edges[module]:
                if target == start:
                    cycle = sorted(path)
                    if cycle not in cycles:
                        cycles.append(cycle)
                elif target not in path and target not in done:
                    stack.append((target, [*path, target]))
        done.add(start)
    return cycles


def layering_violations(layer: str) -> list[str]:
    problems: set[str] = set()
    for path in _modules(layer):
        own, third_party = ALLOWED[layer]
        where = path.relative_to(PACKAGE).as_posix()
        for prefix, (layers, packages) in SUBPACKAGE_EXTRA.items():
            if where.startswith(prefix):
                own, third_party = own | layers, third_party | packages
        for line, name in _imports(path):
            parts = name.split(".")
            if parts[0] == "costart":
                target = parts[1] if len(parts) > 1 else ""
                is_layer = (PACKAGE / target).is_dir() or (PACKAGE / f"{target}.py").exists()
                if target and target not in own and is_layer:
                    problems.add(f"{path.relative_to(PACKAGE)}:{line} imports costart.{target}")
            elif parts[0] not in STDLIB | third_party | {"__future__"}:
                problems.add(f"{path.relative_to(PACKAGE)}:{line} imports {parts[0]}")
    return sorted(problems)


def core_module_violations() -> list[str]:
    """Imports of the top-level core modules that `CORE_MODULES` forbids."""
    problems = []
    for module, forbidden in sorted(CORE_MODULES.items()):
        path = PACKAGE / module
        for line, name in _imports(path):
            parts = name.split(".")
            if parts[0] == "costart" and len(parts) > 1 and parts[1] in forbidden:
                problems.append(f"{module}:{line} imports costart.{parts[1]}")
    return sorted(set(problems))


def backend_choice_violations() -> list[str]:
    """Capabilities probed with getattr/hasattr, and backends chosen by comparing module
    names or factory types, anywhere in the package."""
    problems = []
    for path in sorted(PACKAGE.rglob("*.py")):
        where = path.relative_to(PACKAGE)
        for node in ast.walk(ast.parse(path.read_text())):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id in {"getattr", "hasattr"}
                and len(node.args) >= 2
                and isinstance(node.args[1], ast.Constant)
                and node.args[1].value in CAPABILITY_NAMES
            ):
                problems.append(f"{where}:{node.lineno} probes {node.args[1].value!r}")
            if isinstance(node, ast.Compare):
                sides = [node.left, *node.comparators]
                if any(isinstance(n, ast.Constant) and n.value in MODULE_NAMES for n in sides):
                    problems.append(f"{where}:{node.lineno} compares a persistence module name")
                if any(
                    isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "type"
                    for n in sides
                ) and any(isinstance(n, ast.Name) and n.id.endswith("Factory") for n in sides):
                    problems.append(f"{where}:{node.lineno} compares a factory type")
    return sorted(set(problems))


def determinism_violations(layer: str) -> list[str]:
    problems = []
    for path in _modules(layer):
        tree = ast.parse(path.read_text())
        where = path.relative_to(PACKAGE)
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                owner = node.func.value
                owner_name = owner.id if isinstance(owner, ast.Name) else getattr(owner, "attr", "")
                if (owner_name, node.func.attr) in BANNED_CALLS:
                    problems.append(f"{where}:{node.lineno} calls {owner_name}.{node.func.attr}()")
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                if node.func.id in {"uuid4", "uuid1", "urandom", "getenv"}:
                    problems.append(f"{where}:{node.lineno} calls {node.func.id}()")
                if node.func.id == "Random" and not node.args:
                    problems.append(f"{where}:{node.lineno} makes an unseeded Random()")
            if isinstance(node, ast.Attribute) and node.attr == "environ":
                problems.append(f"{where}:{node.lineno} reads the environment")
        if layer == "domain":
            for line, name in _imports(path):
                if name.split(".")[0] in BANNED_IN_DOMAIN or name in BANNED_IN_DOMAIN:
                    problems.append(f"{where}:{line} imports {name} into the domain")
    return sorted(set(problems))


@pytest.mark.parametrize("layer", sorted(ALLOWED))
def test_imports_point_inward(layer):
    assert layering_violations(layer) == []


def test_every_package_and_top_level_module_declares_what_it_may_import():
    assert sorted(_layers() - set(ALLOWED)) == []
    assert sorted(set(ALLOWED) - _layers()) == []


def test_the_walled_off_speed_ups_are_imported_only_where_allowed():
    assert wall_violations() == []


def test_the_wall_check_fails_when_the_plain_step_or_the_domain_imports_the_speed_ups(
    tmp_path, monkeypatch
):
    """Probes: a copy of the package where the plain step imports the incremental
    package (absolutely, and relatively), and a domain module imports it, and where the
    domain's plain timer scan imports the tick's index; the wall check must name each,
    and only those (the Controller importing the index is allowed)."""
    fake = tmp_path / "costart"
    (fake / "placement" / "incremental").mkdir(parents=True)
    (fake / "domain").mkdir()
    (fake / "sim").mkdir()
    (fake / "placement" / "incremental" / "__init__.py").write_text(
        "from costart.placement.step import CoPlacementStep\n"  # inward: allowed
    )
    (fake / "placement" / "step.py").write_text(
        "from costart.placement.incremental import IncrementalStep\n"
    )
    (fake / "placement" / "gangs.py").write_text("from .incremental import journal\n")
    (fake / "domain" / "world.py").write_text("import costart.placement.incremental.journal\n")
    (fake / "sim" / "engine.py").write_text(
        "from costart.placement.incremental import IncrementalStep\n"  # allowed
    )
    (fake / "domain" / "scheduling.py").write_text("from ..deadline_index import DeadlineIndex\n")
    (fake / "controller.py").write_text("from costart.deadline_index import DeadlineIndex\n")
    monkeypatch.setattr(sys.modules[__name__], "PACKAGE", fake)
    assert wall_violations() == [
        "domain/scheduling.py:1 imports costart.deadline_index",
        "domain/world.py:1 imports costart.placement.incremental",
        "placement/gangs.py:1 imports costart.placement.incremental",
        "placement/step.py:1 imports costart.placement.incremental",
    ]
    assert layering_violations("domain") == ["domain/world.py:1 imports costart.placement"]


def test_the_controller_imports_neither_the_forensics_package_nor_a_backend():
    assert core_module_violations() == []


def test_backends_declare_capabilities_and_are_chosen_by_the_registry():
    assert backend_choice_violations() == []


def test_the_service_layer_check_fails_on_service_importing_rest(tmp_path, monkeypatch):
    """A probe: the service layer importing HTTP (or a stand-in adapter) is refused, and
    REST reaching past the service for a stand-in is too."""
    fake = tmp_path / "costart"
    for layer in ("service", "rest", "adapters", "domain"):
        (fake / layer).mkdir(parents=True)
    (fake / "controller.py").write_text("")
    (fake / "service" / "bad.py").write_text(
        "from costart.rest.watch import WatchHub\n"
        "from costart.adapters.simulated_claims import ClaimDriver\n"
        "from costart.controller import Controller\nimport litestar\n"
    )
    (fake / "rest" / "bad.py").write_text(
        "from costart.service.controller_service import Service\n"
        "from costart.adapters.simulated_claims import ClaimDriver\n"
    )
    monkeypatch.setattr(sys.modules[__name__], "PACKAGE", fake)
    assert layering_violations("service") == [
        "service/bad.py:1 imports costart.rest",
        "service/bad.py:2 imports costart.adapters",
        "service/bad.py:4 imports litestar",
    ]
    assert layering_violations("rest") == ["rest/bad.py:2 imports costart.adapters"]


@pytest.mark.parametrize("layer", PURE_LAYERS)
def test_pure_layers_never_read_a_clock_or_draw_randomness(layer):
    assert determinism_violations(layer) == []


def test_the_checks_catch_a_violation(tmp_path, monkeypatch):
    """The checker itself must fail on bad code (a test that cannot fail is no test)."""
    fake = tmp_path / "costart"
    (fake / "domain").mkdir(parents=True)
    (fake / "controller.py").write_text("")
    (fake / "domain" / "bad.py").write_text(
        "import time\nimport lmdb\nfrom costart.controller import Controller\n"
        "from uuid import uuid4\nx = uuid4()\ny = time.time()\n"
    )
    monkeypatch.setattr(sys.modules[__name__], "PACKAGE", fake)
    assert len(layering_violations("domain")) == 2
    assert determinism_violations("domain") == [
        "domain/bad.py:1 imports time into the domain",
        "domain/bad.py:4 imports uuid.uuid4 into the domain",
        "domain/bad.py:5 calls uuid4()",
        "domain/bad.py:6 calls time.time()",
    ]


def _fake_package(tmp_path, monkeypatch, files: dict[str, str]):  # type: ignore[no-untyped-def]
    fake = tmp_path / "costart"
    for layer in (
        "domain",
        "eventlog",
        "store",
        "pgstore",
        "replay",
        "projections",
        "cli",
        "server",
    ):
        (fake / layer).mkdir(parents=True)
    for name in CORE_MODULES:
        (fake / name).write_text("")
    for name, text in files.items():
        (fake / name).write_text(text)
    monkeypatch.setattr(sys.modules[__name__], "PACKAGE", fake)


@pytest.mark.parametrize(
    ("layer", "source", "imported"),
    [
        ("store", "from costart.pgstore.recorder import CostartApplicationRecorder\n", "pgstore"),
        ("pgstore", "from costart.store.record_layout import GENESIS\n", "store"),
        ("eventlog", "import costart.store.lmdbenv\n", "store"),
        ("eventlog", "from costart.pgstore import Factory\n", "pgstore"),
        ("eventlog", "from costart.replay.rebuild import rebuild\n", "replay"),
        ("cli", "from costart.store import release_mapped_pages\n", "store"),
        ("cli", "from costart.pgstore import Factory\n", "pgstore"),
        ("server", "from costart.cli.exits import EXIT_USAGE\n", "cli"),
    ],
)
def test_the_walls_between_services_and_backends_catch_a_crossing(
    tmp_path, monkeypatch, layer, source, imported
):
    _fake_package(tmp_path, monkeypatch, {f"{layer}/bad.py": source})
    assert layering_violations(layer) == [f"{layer}/bad.py:1 imports costart.{imported}"]


def test_only_a_backend_may_import_a_backend():
    importing = {layer: ALLOWED[layer][0] & BACKENDS for layer in ALLOWED}
    assert {layer: found for layer, found in importing.items() if found} == {
        "store": {"store"},
        "pgstore": {"pgstore"},
    }
    assert set(BACKEND_FREE) <= set(ALLOWED)


@pytest.mark.parametrize("backend", sorted(BACKENDS))
@pytest.mark.parametrize("layer", BACKEND_FREE)
@pytest.mark.parametrize(
    "source",
    [
        "from costart.{backend}.factory import Factory\n",
        "import costart.{backend}\n",
        "from .. import {backend}\n",
        "import importlib\nfactory = importlib.import_module('costart.{backend}.factory')\n",
        "from importlib import import_module\nimport_module('costart.{backend}')\n",
        "__getattr__, __dir__ = lazy_exports(\n    __name__, {{'Factory': 'costart.{backend}'}}\n)\n",
    ],
    ids=["from", "import", "relative", "import_module", "bare_import_module", "lazy_table"],
)
def test_a_backend_imported_from_above_the_registry_is_caught(
    tmp_path, monkeypatch, layer, backend, source
):
    """Probes: each way a module can load a backend (an import statement, absolute or
    relative, ``import_module`` with the module's name, a `_lazy` table's entry) is
    named, on the line that names the backend."""
    text = source.format(backend=backend)
    line = next(i for i, t in enumerate(text.splitlines(), 1) if backend in t)
    _fake_package(tmp_path, monkeypatch, {f"{layer}/bad.py": text})
    assert layering_violations(layer) == [f"{layer}/bad.py:{line} imports costart.{backend}"]


@pytest.mark.parametrize("package", ["eventlog", "lmdbkit", "store", "pgstore"])
def test_the_log_packages_modules_import_each_other_without_a_cycle(package):
    """A module deferring an import into a function, or importing only for types, to
    get round a cycle hides the cycle; the parts of a store are typed by the port they
    use (`store.environment_port`) instead."""
    assert import_cycles(package) == []


def test_the_cycle_check_sees_a_type_only_and_a_deferred_import(tmp_path, monkeypatch):
    _fake_package(
        tmp_path,
        monkeypatch,
        {
            "store/owner.py": "from costart.store.part import Part\n",
            "store/part.py": "if TYPE_CHECKING:\n    from costart.store.owner import Owner\n",
            "store/recorders.py": "def subscribe():\n    from .tail import Tail\n",
            "store/tail.py": "from costart.store.recorders import Recorder\n",
            "store/alone.py": "from costart.store.part import Part\n",
        },
    )
    assert import_cycles("store") == [
        ["costart.store.owner", "costart.store.part"],
        ["costart.store.recorders", "costart.store.tail"],
    ]


def test_the_check_reads_a_top_level_module_and_the_cli_may_not_host_the_web_framework(
    tmp_path, monkeypatch
):
    _fake_package(
        tmp_path,
        monkeypatch,
        {
            "bootstrap.py": "from costart.cli.exits import EXIT_USAGE\n",
            "cli/serve.py": "import uvicorn\n",
        },
    )
    assert layering_violations("bootstrap") == ["bootstrap.py:1 imports costart.cli"]
    assert layering_violations("cli") == ["cli/serve.py:1 imports uvicorn"]


def test_the_wall_catches_the_controller_importing_the_forensics_package(tmp_path, monkeypatch):
    _fake_package(
        tmp_path, monkeypatch, {"controller.py": "from costart.replay.rebuild import restore\n"}
    )
    assert core_module_violations() == ["controller.py:1 imports costart.replay"]


def test_the_check_catches_a_probed_capability_and_a_backend_chosen_by_if(tmp_path, monkeypatch):
    _fake_package(
        tmp_path,
        monkeypatch,
        {
            "store/probe.py": (
                "def f(recorder, env, factory):\n"
                "    queue = getattr(recorder, 'insert_events_deferred', None)\n"
                "    cursor = hasattr(recorder, 'iter_records')\n"
                "    pg = env.get('PERSISTENCE_MODULE') == 'costart.pgstore'\n"
                "    popo = type(factory) is POPOFactory\n"
                "    fine = getattr(recorder, 'name', None)\n"
            )
        },
    )
    assert backend_choice_violations() == [
        "store/probe.py:2 probes 'insert_events_deferred'",
        "store/probe.py:3 probes 'iter_records'",
        "store/probe.py:4 compares a persistence module name",
        "store/probe.py:5 compares a factory type",
    ]
