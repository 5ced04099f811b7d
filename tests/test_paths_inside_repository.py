"""The tests read nothing outside the repository: a fresh clone anywhere passes them.

Two checks, each able to fail on its own:

* every path a test module holds at module level (``ROOT``, ``SCENARIOS``, ``TRACES``,
  fixtures' data folders ...) resolves inside the repository, whatever the environment
  says (``COSTART_TRACES`` is set to a folder outside while the modules are imported);
* no test source builds a path above the repository root: ``Path(__file__).parents[k]``
  past the root, ``.parent`` of a name that holds the root, ``ROOT / ".."``, a path
  naming ``shared/traces``, or a read of ``COSTART_TRACES``. (Test inputs such as
  ``"../etc/shadow"`` handed to a confinement check are data, not paths the tests read.)
"""

from __future__ import annotations

import ast
import importlib
import os
import subprocess
import sys
from pathlib import Path, PurePath

ROOT = Path(__file__).resolve().parents[1]
TESTS = ROOT / "tests"


def _modules() -> list[Path]:
    return sorted(TESTS.rglob("*.py"))


def _module_name(path: Path) -> str:
    return ".".join(path.relative_to(ROOT).with_suffix("").parts)


def outside_paths(modules: list[str]) -> list[str]:
    """``module.NAME -> path`` for every module-level path outside the repository."""
    found = []
    for name in modules:
        module = importlib.import_module(name)
        for attribute, value in vars(module).items():
            if isinstance(value, PurePath):
                resolved = Path(value).resolve()
                if not resolved.is_relative_to(ROOT):
                    found.append(f"{name}.{attribute} -> {resolved}")
    return found


def test_every_module_level_path_of_the_tests_is_inside_the_repository(tmp_path: Path):
    """Imported in a fresh interpreter with ``COSTART_TRACES`` pointing outside, so a
    module that would follow it (or any other way out) is caught."""
    names = [_module_name(p) for p in _modules()]
    code = (
        "import sys; from tests.test_paths_inside_repository import outside_paths; "
        "found = outside_paths(sys.argv[1:]); print('\\n'.join(found)); sys.exit(bool(found))"
    )
    env = {**os.environ, "COSTART_TRACES": str(tmp_path), "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", code, *names],
        check=False,
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, f"paths outside the repository:\n{done.stdout}{done.stderr}"


def _depth(path: Path) -> int:
    """How many ``parents`` steps from ``path`` reach the repository root."""
    return len(path.relative_to(ROOT).parts) - 1


def _is_file_path(node: ast.expr) -> bool:
    """``Path(__file__)``, possibly followed by ``.resolve()`` / ``.absolute()``."""
    while isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        if node.func.attr not in ("resolve", "absolute"):
            return False
        node = node.func.value
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "Path"
        and len(node.args) == 1
        and isinstance(node.args[0], ast.Name)
        and node.args[0].id == "__file__"
    )


def ways_out(path: Path, source: str) -> list[str]:
    """Every construction in ``source`` (the file at ``path``) that leaves the repository."""
    tree = ast.parse(source)
    depth = _depth(path)
    roots: set[str] = set()  # names bound to the repository root
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Assign)
            and isinstance(node.value, ast.Subscript)
            and _parents_index(node.value) == depth
        ):
            roots |= {t.id for t in node.targets if isinstance(t, ast.Name)}
    found = []
    for node in ast.walk(tree):
        where = f"{path.relative_to(ROOT)}:{getattr(node, 'lineno', '?')}"
        index = _parents_index(node)
        if index is not None and index > depth:
            found.append(f"{where}: parents[{index}] is above the repository root")
        if (
            isinstance(node, ast.Attribute)
            and node.attr == "parent"
            and isinstance(node.value, ast.Name)
            and node.value.id in roots
        ):
            found.append(f"{where}: {node.value.id}.parent is above the repository root")
        if (
            isinstance(node, ast.BinOp)
            and isinstance(node.op, ast.Div)
            and isinstance(node.left, ast.Name)
            and node.left.id in roots
            and isinstance(node.right, ast.Constant)
            and str(node.right.value).startswith("..")
        ):
            found.append(f"{where}: {node.left.id} / {node.right.value!r} leaves the repository")
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            text = node.value
            if "shared/traces" in text:
                found.append(f"{where}: {text!r} names the traces outside the repository")
        if _reads_traces_env(node):
            found.append(f"{where}: reads COSTART_TRACES (the full traces are not for tests)")
    return found


def _reads_traces_env(node: ast.AST) -> bool:
    """``os.environ.get("COSTART_TRACES")``, ``os.getenv(...)`` or ``os.environ[...]``
    (setting it, as a test of the CLI does, reads nothing)."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        named = node.args[:1] and isinstance(node.args[0], ast.Constant)
        return bool(
            node.func.attr in ("get", "getenv") and named and node.args[0].value == "COSTART_TRACES"  # type: ignore[attr-defined]
        )
    return (
        isinstance(node, ast.Subscript)
        and isinstance(node.value, ast.Attribute)
        and node.value.attr == "environ"
        and isinstance(node.slice, ast.Constant)
        and node.slice.value == "COSTART_TRACES"
    )


def _parents_index(node: ast.AST) -> int | None:
    """``k`` of ``Path(__file__)...parents[k]``, else None."""
    if (
        isinstance(node, ast.Subscript)
        and isinstance(node.value, ast.Attribute)
        and node.value.attr == "parents"
        and _is_file_path(node.value.value)
        and isinstance(node.slice, ast.Constant)
        and isinstance(node.slice.value, int)
    ):
        return node.slice.value
    return None


def test_no_test_source_builds_a_path_outside_the_repository():
    here = Path(__file__)
    found = [
        way
        for path in _modules()
        if path != here  # this file names what it looks for
        for way in ways_out(path, path.read_text())
    ]
    assert not found, "\n".join(found)


def test_the_source_check_finds_each_way_out():
    """The check itself: each way out in a file two levels down is named."""
    path = TESTS / "sim" / "example.py"
    source = "\n".join(
        [
            "from pathlib import Path",
            "ROOT = Path(__file__).resolve().parents[2]",
            "OUT = Path(__file__).resolve().parents[3]",
            "SHARED = ROOT.parent / 'shared'",
            "UP = ROOT / '../elsewhere'",
            "TRACES = ROOT / 'tests' / 'data' / 'traces'",
            "import os; os.environ.get('COSTART_TRACES')",
        ]
    )
    found = ways_out(path, source)
    assert sorted(line.split(":")[1] for line in found) == ["3", "4", "5", "7"], found
    assert ways_out(path, "from pathlib import Path\nR = Path(__file__).parents[2]\n") == []
