"""The damage suite (ADR 0028): for each class of damage, every reader of the store
either answers correctly or fails with a clear message and a non-zero exit -- none
answers wrongly with exit 0 -- and where the log is intact (only a snapshot or the views
damaged) every reader but the verifier still answers, after a loud fallback or rebuild.

The readers run in child processes: `readers` (replay verify, get, describe, the
Controller, the standby; one process for every store) and a real ``costart serve`` per
class, asked for its groups over HTTP.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.damage.base_store import GROUP, build_views, cut_log, last_known_path
from tests.damage.base_store import ROOT as REPO
from tests.damage.classes import (
    ANSWER,
    CLASSES,
    EITHER,
    OLD_END,
    OLDER,
    READERS,
    SERVE_IN_CI,
    DamageClass,
)

SERVE_DEADLINE_S = 60.0
SERVE_POLL_S = 0.02  # a refused connection costs nothing; a serve answers sooner
TOKEN = "damage-suite-admin-token"


def _run(args: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run(
        [sys.executable, *args], capture_output=True, text=True, env=env, check=False, **kwargs
    )


def _copy(base: Path, to: Path) -> Path:
    shutil.copytree(base, to)
    return to


def _views_behind(store: Path, scratch: Path) -> None:
    """Views built on an older copy of the log, then the whole log given back."""
    whole = scratch / "whole-data.mdb"
    shutil.copy(store / "data.mdb", whole)
    cut_log(store, OLD_END)
    shutil.rmtree(store / "views")
    build_views(store)
    shutil.copy(whole, store / "data.mdb")


@pytest.fixture(scope="module")
def suite(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The base store, one damaged copy per class, and every reader's result on each."""
    tmp = tmp_path_factory.mktemp("damage")
    base = tmp / "base"
    built = _run(["-m", "tests.damage.base_store", str(base)])
    assert built.returncode == 0, built.stderr
    stores = {"intact": _copy(base, tmp / "intact")}
    older = stores["older"] = _copy(base, tmp / "older")
    shutil.rmtree(older / "views")
    cut_log(older, OLD_END)
    for damage_class in CLASSES:
        store = _copy(base, tmp / damage_class.name)
        if damage_class.views_behind:
            _views_behind(store, tmp)
        damage_class.damage(store)
        stores[damage_class.name] = store
    known = str(last_known_path(base))
    ran = _run(["-m", "tests.damage.readers", GROUP, known, *map(str, stores.values())])
    assert ran.returncode == 0, f"the readers died (exit {ran.returncode}): {ran.stderr[-3000:]}"
    by_path = json.loads(ran.stdout)
    results = {name: by_path[str(path)] for name, path in stores.items()}
    return {"tmp": tmp, "stores": stores, "results": results}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def serve_reader(store: Path, tmp: Path) -> dict[str, Any]:
    """Start ``costart serve`` on the store: its groups over HTTP, or its exit and message."""
    tokens = tmp / "tokens.toml"
    tokens.write_text(f'[tokens.{TOKEN}]\nuser = "root"\nrole = "admin"\n')
    port = _free_port()
    err_path = tmp / f"serve-{store.name}.err"
    args = [
        "-m", "costart.cli.main", "--store", str(store), "serve", "--tokens", str(tokens),
        "--port", str(port), "--interval", "3600", "--no-simulate-claims",
    ]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    with err_path.open("w") as err:
        process = subprocess.Popen(
            [sys.executable, *args], env=env, stdout=subprocess.DEVNULL, stderr=err
        )
        try:
            deadline = time.monotonic() + SERVE_DEADLINE_S
            while time.monotonic() < deadline:
                if process.poll() is not None:
                    return {"code": process.returncode, "out": "", "err": err_path.read_text()}
                try:
                    response = httpx.get(
                        f"http://127.0.0.1:{port}/v1/groups",
                        headers={"Authorization": f"Bearer {TOKEN}"},
                        timeout=2,
                    )
                except httpx.HTTPError:
                    time.sleep(SERVE_POLL_S)
                    continue
                code = 0 if response.status_code == 200 else response.status_code
                return {"code": code, "out": response.text, "err": err_path.read_text()}
            raise AssertionError(f"serve neither answered nor exited: {err_path.read_text()}")
        finally:
            if process.poll() is None:
                process.terminate()
                process.wait(timeout=20)


def _groups(body: str) -> list[tuple[str, str, int]]:
    """What a list of groups says, as CLI JSON or REST JSON (the same rows)."""
    return [(g["name"], g["state"], g["submitted_at_ns"]) for g in json.loads(body)]


def _same_answer(reader: str, got: dict[str, Any], expected: dict[str, Any]) -> bool:
    if reader == "verify":
        return bool(got["out"].startswith("ok:"))
    if reader in ("get", "serve"):
        return _groups(got["out"]) == _groups(expected["out"])
    return bool(got["out"] == expected["out"])


def _clear_failure(result: dict[str, Any]) -> bool:
    err = str(result["err"])
    return (
        result["code"] != 0
        and "Traceback" not in err
        and ("error" in err.lower() or "DIVERGENCE" in err)
    )


def check(reader: str, outcome: str | int, got: dict[str, Any], suite: dict[str, Any]) -> None:
    intact = suite["results"]["intact"][reader] if reader != "serve" else suite["serve_intact"]
    shown = f"{reader}: exit {got['code']}\nout: {str(got['out'])[:400]}\nerr: {got['err'][-1500:]}"
    if outcome == ANSWER:
        assert got["code"] == 0 and _same_answer(reader, got, intact), shown
    elif outcome == OLDER:
        older = suite["results"]["older"][reader if reader != "serve" else "get"]
        same = _groups(got["out"]) == _groups(older["out"]) if reader in ("get", "serve") else None
        assert got["code"] == 0 and (same or got["out"] == older["out"]), shown
    elif outcome == EITHER:
        if got["code"] == 0:
            assert _same_answer(reader, got, intact), shown
        else:
            assert _clear_failure(got), shown
    else:
        assert got["code"] == outcome and _clear_failure(got), shown


@pytest.fixture(scope="module")
def with_serve(suite: dict[str, Any]) -> dict[str, Any]:
    suite["serve_intact"] = serve_reader(suite["stores"]["intact"], suite["tmp"])
    assert suite["serve_intact"]["code"] == 0, suite["serve_intact"]
    return suite


def test_every_reader_answers_the_intact_store(suite: dict[str, Any]) -> None:
    intact = suite["results"]["intact"]
    assert all(intact[reader]["code"] == 0 for reader in READERS if reader != "serve"), intact
    assert _groups(intact["get"]["out"])[0][:2] == (GROUP, "SUCCEEDED")
    assert intact["controller"]["out"] == intact["standby"]["out"] == intact["host"]["out"]


@pytest.mark.parametrize("damage_class", CLASSES, ids=lambda c: c.name)
def test_no_reader_answers_wrongly(damage_class: DamageClass, suite: dict[str, Any]) -> None:
    results = suite["results"][damage_class.name]
    for reader in READERS:
        if reader != "serve":
            check(reader, damage_class.expect.get(reader, EITHER), results[reader], suite)
    # A fallback past damage is loud: the readers that answered past it said so.
    for reader, needle in damage_class.loud.items():
        if reader != "serve":
            assert needle in results[reader]["err"], (reader, results[reader])


@pytest.mark.parametrize(
    "damage_class",
    [
        pytest.param(c, id=c.name, marks=() if c.name in SERVE_IN_CI else pytest.mark.slow)
        for c in CLASSES
    ],
)
def test_serve_answers_or_refuses(damage_class: DamageClass, with_serve: dict[str, Any]) -> None:
    got = serve_reader(with_serve["stores"][damage_class.name], with_serve["tmp"])
    check("serve", damage_class.expect.get("serve", EITHER), got, with_serve)
    if "serve" in damage_class.loud:
        assert damage_class.loud["serve"] in got["err"], got
