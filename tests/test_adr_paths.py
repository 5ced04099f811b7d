"""Every repository path an accepted ADR quotes exists (ADR 0069).

What counts as a path: a word inside an inline code span (single backticks) that holds a
``/`` and whose first segment is a top-level directory of the repository (``costart/``,
``tests/``, ``bench/``, ``scripts/``, ``ADR/``, ``scenarios/``) or a package of
``costart/`` (``store/``, ``rest/``, ...: ADRs write those relative to ``costart/``).
Words in a code span are split on spaces, so ``python bench/bench_store.py --quick``
quotes one path. A trailing ``.``, ``,``, ``;`` or ``)`` and a pytest ``::test`` suffix
are dropped. It exists if, from the repository root or from ``costart/``, the word
names a file or directory, or the word plus ``.py`` does (``cli/leadership``), or the
word up to the first dot of its last segment plus ``.py`` does (``bench/common.Clock``:
a module and a name in it; the name is not checked).

Not checked: bare file names (``app.py``, no directory to resolve them against), words
with glob or template characters (``bench/results/*.json``, ``<base>``), words with a
``:`` (``BRANCH:path``, URLs), and code spans struck through (``~~`rest/app.py`~~``):
that is how an accepted ADR writes the old side of a rename or a file it says is gone.
Superseded ADRs (``Status: superseded ...``) are history and are skipped whole.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
ADRS = sorted((ROOT / "ADR").glob("[0-9][0-9][0-9][0-9]-*.md"))
TOP_DIRS = frozenset(p.name for p in ROOT.iterdir() if p.is_dir() and not p.name.startswith("."))
PACKAGES = frozenset(p.parent.name for p in (ROOT / "costart").glob("*/__init__.py"))
# A code span not struck through: `x`, but not ~~`x`~~ (and never part of ``x``).
CODE_SPAN = re.compile(r"(?<!`)(?<!~~)`([^`\n]+)`(?!`)(?!~~)")
NOT_A_PATH = re.compile(r"[*?<>{}\[\]$=\"'|\\:@]")


def quoted_paths(text: str) -> Iterator[str]:
    """The words of ``text``'s code spans that count as repository paths (module doc)."""
    for span in CODE_SPAN.finditer(text):
        for raw in span.group(1).split():
            word = raw.split("::")[0].lstrip("(").rstrip(".,;)")
            if "/" not in word or NOT_A_PATH.search(word):
                continue
            if word.split("/")[0] in TOP_DIRS | PACKAGES:
                yield word


def path_exists(word: str, root: Path = ROOT) -> bool:
    """Whether ``word`` names something in the tree, read from the root or ``costart/``."""
    word = word.rstrip("/")
    head, _, last = word.rpartition("/")
    module = f"{head}/{last.split('.')[0]}"
    forms = (word, f"{word}.py", f"{module}.py", module)
    return any((base / form).exists() for base in (root, root / "costart") for form in forms)


def status_of(text: str) -> str:
    return next(line for line in text.splitlines() if line.startswith("Status:"))


def accepted(path: Path) -> bool:
    return not status_of(path.read_text()).removeprefix("Status:").strip().startswith("superseded")


@pytest.mark.parametrize("adr", [a for a in ADRS if accepted(a)], ids=lambda a: a.name[:4])
def test_every_path_an_accepted_adr_quotes_exists(adr: Path):
    missing = sorted({w for w in quoted_paths(adr.read_text()) if not path_exists(w)})
    assert not missing, (
        f"{adr.name} names paths that do not exist: {missing}. Correct them to where the "
        "code lives now, strike them through (~~`old/path.py`~~) if the ADR records that "
        "they went, or supersede the ADR (ADR/README.md, ADR 0069)."
    )


def test_every_adr_has_a_status_line():
    assert ADRS and all(status_of(a.read_text()) for a in ADRS)


def test_the_rule_sees_paths_in_prose_commands_and_test_ids_and_not_in_struck_or_globbed_spans():
    text = (
        "See `costart/store/anchor.py` and `store/rollback.py`; run "
        "`python bench/bench_store.py --quick` or `tests/test_x.py::test_y`. "
        "Renamed: ~~`rest/app.py`~~. Not paths: `app.py`, `bench/results/*.json`, "
        "`a/b`, `BRANCH:bench/x.json`, ``tests/y.py``."
    )
    assert list(quoted_paths(text)) == [
        "costart/store/anchor.py",
        "store/rollback.py",
        "bench/bench_store.py",
        "tests/test_x.py",
    ]


def test_a_moved_file_is_missing_and_a_module_with_a_name_is_found(tmp_path: Path):
    (tmp_path / "costart" / "eventlog").mkdir(parents=True)
    (tmp_path / "costart" / "eventlog" / "anchor.py").write_text("")
    assert path_exists("eventlog/anchor.py", tmp_path)
    assert path_exists("costart/eventlog/anchor", tmp_path)
    assert path_exists("eventlog/anchor.Anchor", tmp_path)
    assert path_exists("costart/eventlog/", tmp_path)
    assert not path_exists("store/anchor.py", tmp_path)
