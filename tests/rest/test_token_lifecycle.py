"""A tokens file's life: a warning when others can read raw tokens, an optional
``expires`` (401 naming it), and a real `costart serve` reading the file again on SIGHUP."""

from __future__ import annotations

import signal
import time
from pathlib import Path

import httpx
import pytest

from costart.rest.auth import TokenError, Tokens, token_hash
from tests.rest.serving import DEADLINE_S, POLL_S, serving

ALICE = "alice-token-0123456789"
BOB = "bob-token-0123456789abc"
NOW_NS = 1_800_000_000 * 10**9  # 2027-01-15T08:00:00Z


def _file(tmp_path: Path, text: str, mode: int) -> Path:
    path = tmp_path / "tokens.toml"
    path.write_text(text)
    path.chmod(mode)
    return path


@pytest.mark.parametrize(
    ("mode", "warned"),
    [(0o600, None), (0o640, "its group"), (0o604, "others"), (0o644, "its group and others")],
)
def test_raw_tokens_readable_by_others_are_warned_about(tmp_path, mode, warned):
    tokens = Tokens.from_toml(_file(tmp_path, f'[tokens.{ALICE}]\nuser = "alice"\n', mode))
    if warned is None:
        assert tokens.warnings == ()
    else:
        (warning,) = tokens.warnings
        assert f"(mode {mode:04o}) is readable by {warned} and holds 1 raw token(s)" in warning


def test_hashed_tokens_are_no_secret_whoever_reads_the_file(tmp_path):
    text = f'[tokens."{token_hash(ALICE)}"]\nuser = "alice"\n'
    assert Tokens.from_toml(_file(tmp_path, text, 0o644)).warnings == ()


def test_an_expired_token_is_refused_naming_when_it_expired(tmp_path):
    text = (
        f'[tokens.{ALICE}]\nuser = "alice"\nexpires = "2027-01-15T07:59:59Z"\n'
        f'[tokens.{BOB}]\nuser = "bob"\nexpires = "2027-01-15T10:00:01+02:00"\n'
    )
    path = _file(tmp_path, text, 0o600)
    tokens = Tokens(*_entries(path), clock=lambda: NOW_NS)
    assert tokens.user_for_header(f"Bearer {ALICE}") is None
    assert tokens.refusal(f"Bearer {ALICE}") == "the bearer token expired at 2027-01-15T07:59:59Z"
    bob = tokens.user_for_header(f"Bearer {BOB}")
    assert bob is not None and bob.name == "bob"  # good until 08:00:01Z
    later = Tokens(*_entries(path), clock=lambda: NOW_NS + 10**9)
    assert later.user_for_header(f"Bearer {BOB}") is None
    assert later.refusal("Bearer not-a-known-token-at-all") == "missing or unknown bearer token"


def _entries(path: Path) -> tuple[dict, dict]:
    loaded = Tokens.from_toml(path)
    raw, hashed = loaded._entries
    return {t.decode(): u for t, u in raw}, {d.decode(): u for d, u in hashed}


@pytest.mark.parametrize("expires", ["2027-01-15", "2027-01-15T08:00:00", "soon", ""])
def test_an_expiry_without_a_zone_or_not_a_time_is_refused(tmp_path, expires):
    text = f'[tokens.{ALICE}]\nuser = "alice"\nexpires = "{expires}"\n'
    with pytest.raises(TokenError, match="'expires' must be an ISO-8601 time with a zone"):
        Tokens.from_toml(_file(tmp_path, text, 0o600))


def _status(url: str, token: str) -> int:
    headers = {"Authorization": f"Bearer {token}"}
    return httpx.get(f"{url}/v1/groups", headers=headers, timeout=10).status_code


def _until(check, what: str) -> None:
    deadline = time.monotonic() + DEADLINE_S
    while not check():
        assert time.monotonic() < deadline, what
        time.sleep(POLL_S)


def test_serve_reads_the_tokens_file_again_on_sighup(tmp_path):
    processes: list = []
    first = f'[tokens.{ALICE}]\nuser = "alice"\n'
    with serving(tmp_path, first, processes=processes) as (url, log_path, _):
        (tokens_file,) = tmp_path.glob("tokens-*.toml")
        assert (_status(url, ALICE), _status(url, BOB)) == (200, 401)
        # Bob in, Alice expired: both take effect on the signal, not before.
        tokens_file.write_text(
            f'[tokens.{BOB}]\nuser = "bob"\n'
            f'[tokens.{ALICE}]\nuser = "alice"\nexpires = "2001-01-01T00:00:00Z"\n'
        )
        assert _status(url, BOB) == 401
        processes[0].send_signal(signal.SIGHUP)
        _until(lambda: _status(url, BOB) == 200, "bob's token never took effect")
        refused = httpx.get(f"{url}/v1/groups", headers={"Authorization": f"Bearer {ALICE}"})
        assert refused.status_code == 401
        assert refused.json()["detail"] == "the bearer token expired at 2001-01-01T00:00:00Z"
        # A file that no longer reads keeps the tokens in use, and says why in the log.
        tokens_file.write_text("[tokens\n")
        processes[0].send_signal(signal.SIGHUP)
        _until(lambda: "tokens not reloaded" in log_path.read_text(), "no log line")
        assert _status(url, BOB) == 200
        assert processes[0].poll() is None
