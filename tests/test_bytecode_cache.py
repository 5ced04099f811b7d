"""The test run's bytecode cache (tests/bytecode_cache.py): used only where the
environment turned bytecode writing off without choosing a place for it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.bytecode_cache import cache_bytecode


def test_bytecode_writing_turned_off_is_redirected_into_the_environments_cache():
    environ = {"PYTHONDONTWRITEBYTECODE": "1", "HOME": "/home/x"}
    cache = cache_bytecode(environ)
    assert cache == str(Path(sys.prefix) / "pycache")
    assert environ == {"PYTHONPYCACHEPREFIX": cache, "HOME": "/home/x"}


def test_an_environment_that_chose_where_bytecode_goes_is_left_alone():
    for environ in (
        {},
        {"PYTHONDONTWRITEBYTECODE": ""},
        {"PYTHONDONTWRITEBYTECODE": "1", "PYTHONPYCACHEPREFIX": "/elsewhere"},
        {"PYTHONPYCACHEPREFIX": "/elsewhere"},
    ):
        before = dict(environ)
        assert cache_bytecode(environ) is None
        assert environ == before


def test_a_child_process_of_the_tests_writes_its_bytecode_into_the_cache_not_the_tree(
    tmp_path: Path,
):
    module = tmp_path / "cached_module_for_the_test.py"
    module.write_text("VALUE = 1\n")
    environ = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    environ.pop("PYTHONPYCACHEPREFIX", None)
    cache = cache_bytecode(environ)
    assert cache is not None
    subprocess.run(
        [sys.executable, "-c", "import cached_module_for_the_test"],
        cwd=tmp_path,
        env={**environ, "PYTHONPATH": str(tmp_path)},
        check=True,
    )
    assert not (tmp_path / "__pycache__").exists()
    compiled = Path(cache + str(tmp_path))  # the source's directory, under the prefix
    assert [p.name.split(".")[0] for p in compiled.iterdir()] == ["cached_module_for_the_test"]
