"""A closed public surface: each package lists what other packages may import from it
(``__all__``), and no module imports a name another package does not list."""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ROOT / "costart"
PACKAGES = sorted(
    ".".join(init.parent.relative_to(ROOT).parts) for init in SOURCE.rglob("__init__.py")
)


def declared_all(package: str) -> list[str] | None:
    """The package's ``__all__`` as written (None when it declares none)."""
    init = ROOT.joinpath(*package.split(".")) / "__init__.py"
    for node in ast.parse(init.read_text()).body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets
        ):
            return list(ast.literal_eval(node.value))
    return None


# Sub-packages behind a wall (`tests/test_layering.py`, ``WALLS``), and the one that may
# reach further than its layer (``SUBPACKAGE_EXTRA``), are a surface of their own: their parent does not list (nor import) their names, and they may use its inside.
OWN_SURFACES = ("costart.placement.incremental", "costart.replay.outcomes")


def top_package(module: str) -> str | None:
    """``costart.eventlog.codec`` -> ``costart.eventlog``; a top-level module -> None; a
    module of a walled sub-package -> that sub-package."""
    for surface in OWN_SURFACES:
        if module == surface or module.startswith(surface + "."):
            return surface
    parts = module.split(".")
    if len(parts) >= 2 and (SOURCE / parts[1]).is_dir():
        return ".".join(parts[:2])
    return None


def module_name(path: Path) -> str:
    return ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")


def unlisted_imports(path: Path, module: str) -> list[str]:
    """Names ``module`` (at ``path``) imports from another package that the other
    package's ``__all__`` does not list."""
    own = top_package(module)
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if not (isinstance(node, ast.ImportFrom) and node.level == 0 and node.module):
            continue
        target = top_package(node.module)
        if target is None or target == own or (own or "").startswith(target + "."):
            continue
        listed = declared_all(target) or []
        found += [
            f"{module}: {node.module}.{alias.name} (not in {target}.__all__)"
            for alias in node.names
            if alias.name not in listed
        ]
    return found


def test_every_package_declares_its_public_names() -> None:
    assert [p for p in PACKAGES if declared_all(p) is None] == []


@pytest.mark.parametrize("package", PACKAGES)
def test_every_listed_name_resolves(package: str) -> None:
    imported = importlib.import_module(package)
    missing = [n for n in declared_all(package) or [] if not hasattr(imported, n)]
    assert missing == []


def test_no_package_imports_a_name_another_does_not_list() -> None:
    found = [
        problem
        for path in sorted(SOURCE.rglob("*.py"))
        for problem in unlisted_imports(path, module_name(path))
    ]
    assert found == []


def test_the_check_sees_an_unlisted_import(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text(
        "from costart.eventlog.codec import MsgspecMapper\n"  # listed
        "from costart.store.lmdbenv import grow_map_size\n"  # not listed
    )
    assert unlisted_imports(probe, "costart.replay.probe") == [
        "costart.replay.probe: costart.store.lmdbenv.grow_map_size (not in costart.store.__all__)"
    ]
    # Within its own package a module may import anything.
    assert unlisted_imports(probe, "costart.store.probe") == []


def test_a_walled_sub_package_is_a_surface_of_its_own(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text(
        "from costart.placement.incremental import IncrementalStep\n"  # listed there
        "from costart.placement.incremental.carried import StartCache\n"  # not listed
        "from costart.placement.capacity import CapacityView\n"  # not in costart.placement's list
    )
    assert unlisted_imports(probe, "costart.sim.probe") == [
        "costart.sim.probe: costart.placement.incremental.carried.StartCache"
        " (not in costart.placement.incremental.__all__)",
        "costart.sim.probe: costart.placement.capacity.CapacityView (not in costart.placement.__all__)",
    ]
    # The walled package may use its own inside and its parent's.
    assert unlisted_imports(probe, "costart.placement.incremental.probe") == []


def test_the_embedding_surface_imports_from_the_top_package() -> None:
    from costart import Controller, Settings, parse_spec
    from costart.bootstrap import bootstrap

    controller = bootstrap(Settings(cluster=None))
    assert isinstance(controller, Controller)
    assert callable(parse_spec)


def test_importing_the_domain_does_not_import_the_application() -> None:
    code = "import sys, costart.domain; print('costart.controller' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_the_backends_do_not_re_export_the_log_services() -> None:
    """A service has one public home, `costart.eventlog`; the backends list their own."""
    services = set(declared_all("costart.eventlog") or [])
    assert services >= {"MsgspecMapper", "SnapshotStore", "RecorderSource", "Standby"}
    for backend in ("costart.store", "costart.pgstore"):
        assert services & set(declared_all(backend) or []) == set()


def test_importing_the_controller_imports_neither_replay_nor_a_backend() -> None:
    code = (
        "import sys, costart.controller; "
        "print(sorted({m.split('.')[1] for m in sys.modules if m.startswith('costart.')}))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded = set(ast.literal_eval(out.stdout.strip()))
    assert "eventlog" in loaded
    assert loaded.isdisjoint({"replay", "store", "pgstore", "projections", "sim", "cli", "rest"})
