"""The dependency rule of DESIGN §2, and the determinism rule of the pure layers.

Imports point inward: domain <- placement <- ...; only bootstrap.py wires everything
(tests/test_bootstrap.py holds every entry point to it); `_lazy` is the packages' shared
helper for lazy public names. Code in domain/, placement/ and projections/ never reads a clock, makes a
random id or draws unseeded randomness.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "costart"
STDLIB = set(sys.stdlib_module_names)

# Which costart layers (and third-party packages) each layer may import.
ALLOWED: dict[str, tuple[set[str], set[str]]] = {
    "domain": ({"domain"}, {"msgspec"}),
    # How people read times and reasons: pure words over domain facts.
    "display": ({"domain", "display"}, set()),
    "placement": ({"domain", "placement"}, {"msgspec"}),
    "store": ({"domain", "store"}, {"msgspec", "eventsourcing", "lmdb", "structlog"}),
    "pgstore": (
        {"domain", "store", "pgstore"},
        {"msgspec", "eventsourcing", "psycopg", "structlog"},
    ),
    "projections": (
        {"domain", "display", "store", "projections"},
        {"msgspec", "eventsourcing", "lmdb", "structlog"},
    ),
    "replay": (
        {"domain", "display", "placement", "store", "pgstore", "projections", "replay", "_lazy"},
        {"msgspec", "eventsourcing", "lmdb", "structlog"},
    ),
    "sim": (
        {"domain", "display", "placement", "store", "projections", "replay", "sim", "_lazy"},
        # matplotlib only in costart/sim/report.py (the PNG plot).
        {"msgspec", "eventsourcing", "lmdb", "structlog", "matplotlib"},
    ),
}
# The service layer (ADR 0054): rest -> service -> controller/domain; the CLI uses it too;
# it never imports rest (HTTP), nor the stand-ins it may be handed (adapters).
ALLOWED["service"] = (
    {"domain", "display", "projections", "controller", "log_writer", "service", "_lazy"},
    {"msgspec", "structlog"},
)
ALLOWED["adapters"] = ({"domain", "controller", "adapters", "_lazy"}, {"structlog"})
ALLOWED["rest"] = (
    {"domain", "display", "projections", "log_writer", "service", "rest", "_lazy"},
    {"litestar", "msgspec", "structlog", "anyio", "httpx", "prometheus_client"},
)
# The CLI is the outermost entry point: any layer (the service layer's answers; HTTP only
# through rest's client, and `serve`, which hosts the app), but never the web framework.
ALLOWED["cli"] = (
    {p.stem for p in PACKAGE.iterdir() if (p / "__init__.py").exists() or p.suffix == ".py"},
    {"msgspec", "structlog", "rich", "typer", "yaml", "uvicorn", "httpx"},
)
ALLOWED["agent"] = (
    {"domain", "display", "projections", "rest", "agent"},
    {"msgspec", "httpx", "structlog"},
)
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


def _modules(layer: str) -> list[Path]:
    return sorted((PACKAGE / layer).rglob("*.py"))


def _imports(path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text())
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found += [(node.lineno, node.module)]
            found += [(node.lineno, f"{node.module}.{alias.name}") for alias in node.names]
    return found


def layering_violations(layer: str) -> list[str]:
    own, third_party = ALLOWED[layer]
    problems: set[str] = set()
    for path in _modules(layer):
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
