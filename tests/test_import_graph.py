"""`bench/import_graph.py`: the package import graph the structural notes show before and
after a change, checked on a small made-up package whose graph is known."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[1]


def _tool() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "import_graph", ROOT / "bench" / "import_graph.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def _package(tmp_path: Path) -> Path:
    return _write(
        tmp_path / "pkg",
        {
            "__init__.py": (
                "from pkg._lazy import lazy_exports\n"
                "__getattr__, __dir__ = lazy_exports(__name__, {'Core': 'pkg.core.model'})\n"
            ),
            "_lazy.py": "def lazy_exports(name, exports): ...\n",
            "core/__init__.py": "",
            "core/model.py": "import json\nfrom . import rules\n",
            "core/rules.py": "from pkg.core.model import X\n",
            "service/__init__.py": "",
            "service/commands.py": (
                "from pkg.core import model\nfrom pkg.core.rules import R\n"
                "from ..core.model import Y\n"
            ),
            "service/queries.py": "def f():\n    from pkg.web.routes import r\n",
            "web/__init__.py": "",
            "web/routes.py": "import pkg.service.commands\nfrom pkg import Core\n",
            "main.py": "from pkg.web import routes\nfrom pkg.service.queries import f\n",
        },
    )


def test_the_graph_counts_module_pairs_between_packages(tmp_path: Path):
    text = _tool().render(_package(tmp_path))
    assert text == (
        "import graph of pkg: 11 modules in 6 packages, 9 cross-package imports\n"
        "(package [modules] -> imported package: module-to-module imports)\n"
        "\n"
        "_lazy [1]\n"
        "  -> (nothing)\n"
        "core [3]\n"
        "  -> (nothing)\n"
        "main [1]\n"
        "  -> service: 1\n"
        "  -> web: 1\n"
        "pkg [1]\n"
        "  -> _lazy: 1\n"
        "  -> core: 1\n"
        "service [3]\n"
        "  -> core: 2\n"
        "  -> web: 1\n"
        "web [2]\n"
        "  -> pkg: 1\n"
        "  -> service: 1\n"
        "\n"
        "packages that import each other:\n"
        "  service <-> web\n"
    )


def test_a_relative_import_counts_once_with_its_absolute_twin(tmp_path: Path):
    """`from ..core.model import Y` and `from pkg.core import model` are one pair, and
    importing a submodule by name is not also an import of its package."""
    tool = _tool()
    _, edges = tool.module_edges(_package(tmp_path))
    assert ("pkg.service.commands", "pkg.core.model") in edges
    assert ("pkg.core.model", "pkg.core.rules") in edges
    assert sorted(e for e in edges if e[0] == "pkg.service.commands") == [
        ("pkg.service.commands", "pkg.core.model"),
        ("pkg.service.commands", "pkg.core.rules"),
    ]


def test_a_directory_that_is_no_package_is_refused(tmp_path: Path, capsys):
    tool = _tool()
    try:
        tool.main(["--root", str(tmp_path)])
    except SystemExit as exit_:
        assert exit_.code == 2
    else:
        raise AssertionError("a directory without __init__.py was accepted")
    assert "is not a package (no __init__.py)" in capsys.readouterr().err


def test_the_recorded_before_graph_is_the_tools_own_format():
    """The committed before-graph reads like the tool's output (same header), so the
    after-graph of a later run diffs against it line by line."""
    before = (ROOT / "bench" / "results" / "import_graph_before.txt").read_text()
    now = _tool().render(ROOT / "costart")
    assert before.splitlines()[1] == now.splitlines()[1]
    assert before.startswith("import graph of costart: ")
