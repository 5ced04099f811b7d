"""The README's "## Layout" section lists every package and top-level module of
`costart/`, one line each, and names nothing that does not exist.

A package is a directory under ``costart/`` holding an ``__init__.py`` (written
``costart/a/b/``); a top-level module is a ``.py`` file directly in ``costart/`` (written
``costart/x.py``). The section's list items each start with one of those names in
backticks; any other ``costart/...`` name the section quotes must exist too.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "costart"
ITEM = re.compile(r"^- `(costart/[^`]*)`", re.MULTILINE)
QUOTED = re.compile(r"`(costart/[^`\s]*)`")


def layout_section(readme: str) -> str:
    """The text from ``## Layout`` to the next second-level heading (or the end)."""
    start = readme.index("\n## Layout\n")
    end = readme.find("\n## ", start + 1)
    return readme[start : end if end != -1 else len(readme)]


def packages_and_modules(package: Path = PACKAGE) -> set[str]:
    """Every package (``costart/a/b/``) and top-level module (``costart/x.py``)."""
    root = package.parent
    packages = {
        f"{init.parent.relative_to(root).as_posix()}/" for init in package.rglob("__init__.py")
    }
    packages.discard(f"{package.name}/")  # the root package is its __init__.py, a module
    modules = {f"{py.relative_to(root).as_posix()}" for py in package.glob("*.py")}
    return packages | modules


def test_the_layout_lists_every_package_and_top_level_module_once():
    section = layout_section((ROOT / "README.md").read_text())
    listed = ITEM.findall(section)
    assert len(listed) == len(set(listed)), "a name is listed twice"
    expected = packages_and_modules()
    missing, extra = sorted(expected - set(listed)), sorted(set(listed) - expected)
    assert not missing, f"add a line to the README's Layout section for: {missing}"
    assert not extra, f"the README's Layout section lists what is no package or module: {extra}"


def test_every_costart_name_in_the_layout_exists():
    section = layout_section((ROOT / "README.md").read_text())
    gone = [name for name in QUOTED.findall(section) if not (ROOT / name).exists()]
    assert not gone, gone


def test_a_package_without_an_init_is_not_one_and_subpackages_count(tmp_path: Path):
    package = tmp_path / "costart"
    for path in ("__init__.py", "x.py", "a/__init__.py", "a/b/__init__.py", "a/m.py"):
        (package / path).parent.mkdir(parents=True, exist_ok=True)
        (package / path).write_text("")
    (package / "data").mkdir()
    assert packages_and_modules(package) == {
        "costart/__init__.py",
        "costart/x.py",
        "costart/a/",
        "costart/a/b/",
    }
