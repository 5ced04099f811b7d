"""The agent's answers to log reads (ADR 0084): the task owns its log's directory, so
whatever it plants there (a symlink to the agent's secrets, on the file or a directory
on its way, a hard link, a FIFO, another account's file) is refused, never read nor
waited on; the tail counts lines from the file's end; pieces are bounded."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from costart.agent import confine
from costart.agent.agent import _batches
from costart.agent.log_reads import answer, tail_start
from costart.agent.model import Refused
from costart.rest.log_routes import whole_characters
from costart.rest.log_wire import (
    LOG_BATCH_BYTES,
    LOG_PIECE_BYTES,
    LogPiece,
    LogRead,
    base64_text,
)
from tests.agent.root import ALICE_UID, BOB_UID, require_root

SECRET = b"agent-token-do-not-read\n"


def read(path: str, offset: int | None = 0, tail: int | None = None) -> LogRead:
    return LogRead(
        id=7,
        group="grpo",
        group_id="gid",
        member="trainer",
        task=0,
        attempt=1,
        owner="alice",
        path=path,
        offset=offset,
        tail=tail,
    )


def mine(_: str) -> int:
    return os.geteuid()


@pytest.fixture
def work(tmp_path: Path) -> Path:
    (tmp_path / "work" / "logs").mkdir(parents=True)
    (tmp_path / "secret").write_bytes(SECRET)
    return tmp_path / "work"


def test_a_plain_log_is_read_from_an_offset(work: Path) -> None:
    (work / "logs" / "t.log").write_bytes(b"one\ntwo\nthree\n")
    piece = answer(work, read("logs/t.log", 4), mine, running=True)
    assert (piece.id, piece.offset, piece.size, piece.running) == (7, 4, 14, True)
    assert piece.raw() == b"two\nthree\n"
    past = answer(work, read("logs/t.log", 99), mine, running=False)
    assert (past.raw(), past.size, past.running) == (b"", 99, False)


def test_the_tail_is_the_last_lines(work: Path) -> None:
    (work / "logs" / "t.log").write_bytes(b"a\nb\nc\nd")  # the last line has no newline
    assert answer(work, read("logs/t.log", None, 2), mine, True).raw() == b"c\nd"
    assert answer(work, read("logs/t.log", None, 9), mine, True).raw() == b"a\nb\nc\nd"
    assert answer(work, read("logs/t.log", None, 0), mine, True).raw() == b""
    assert tail_start(b"x\ny\n", 1, whole=True) == 2
    # A window that is not the whole file starts at its first whole line at most.
    assert tail_start(b"cut line\nwhole\n", 5, whole=False) == 9


def test_a_large_file_is_read_in_bounded_pieces(work: Path) -> None:
    (work / "logs" / "t.log").write_bytes(b"z" * (LOG_PIECE_BYTES * 2 + 5))
    piece = answer(work, read("logs/t.log", 0), mine, True)
    assert len(piece.raw()) == LOG_PIECE_BYTES and piece.size == LOG_PIECE_BYTES * 2 + 5
    tail = answer(work, read("logs/t.log", None, 3), mine, True)
    assert len(tail.raw()) <= LOG_PIECE_BYTES
    text = base64_text(b"q" * 200_000)
    pieces = [LogPiece(id=i, offset=0, size=0, running=True, data=text) for i in range(7)]
    batches = _batches(pieces)
    assert [len(b) for b in batches] == [2, 2, 2, 1]
    assert all(sum(len(p.raw()) for p in b) <= LOG_BATCH_BYTES for b in batches)


@pytest.mark.parametrize(
    "plant",
    ["symlink", "directory-symlink", "hardlink", "fifo", "directory"],
)
def test_what_a_task_plants_in_place_of_its_log_is_refused_never_read(
    work: Path, plant: str
) -> None:
    secret = work.parent / "secret"
    log = work / "logs" / "t.log"
    if plant == "symlink":
        log.symlink_to(secret)
    elif plant == "directory-symlink":
        (work / "logs").rmdir()
        elsewhere = work.parent / "elsewhere"
        elsewhere.mkdir()
        (elsewhere / "t.log").symlink_to(secret)
        os.link(secret, elsewhere / "copy")
        (work / "logs").symlink_to(elsewhere)
    elif plant == "hardlink":
        os.link(secret, log)
    elif plant == "fifo":
        os.mkfifo(log)  # opening it to read must not wait for a writer
    else:
        log.mkdir()
    for offset, tail in ((0, None), (None, 5)):
        piece = answer(work, read("logs/t.log", offset, tail), mine, True)
        assert piece.refused is not None and piece.data == "", piece
        assert SECRET not in piece.refused.encode()


def test_another_accounts_file_is_refused_the_agents_own_is_read(work: Path) -> None:
    require_root()
    log = work / "logs" / "t.log"
    log.write_bytes(b"output\n")  # made by the agent (as `open_log` makes it)
    assert answer(work, read("logs/t.log"), lambda owner: ALICE_UID, True).raw() == b"output\n"
    os.chown(log, ALICE_UID, ALICE_UID)  # the task's account's own
    assert answer(work, read("logs/t.log"), lambda owner: ALICE_UID, True).raw() == b"output\n"
    os.chown(log, BOB_UID, BOB_UID)  # another account's file, planted (say, a copy)
    refused = answer(work, read("logs/t.log"), lambda owner: ALICE_UID, True)
    assert refused.refused and f"owned by uid {BOB_UID}" in refused.refused
    assert refused.data == ""


def test_no_file_yet_and_no_account_are_said(work: Path) -> None:
    missing = answer(work, read("logs/none.log"), mine, True)
    assert missing.missing and missing.refused is None
    assert answer(work, read("nodir/none.log"), mine, True).missing

    def nobody(owner: str) -> int:
        raise Refused(f"no OS account for owner {owner!r} on this node")

    (work / "logs" / "t.log").write_bytes(b"x\n")
    refused = answer(work, read("logs/t.log"), nobody, True)
    assert refused.refused and "no OS account for owner 'alice'" in refused.refused
    escape = answer(work, read("../secret"), mine, True)
    assert escape.refused and escape.data == ""


def test_open_log_to_read_gives_a_read_only_descriptor(work: Path) -> None:
    (work / "logs" / "t.log").write_bytes(b"x\n")
    fd = confine.open_log_to_read(work, "logs/t.log", os.geteuid())
    try:
        with pytest.raises(OSError):
            os.write(fd, b"no")
    finally:
        os.close(fd)


def test_a_character_cut_by_a_chunk_end_is_left_for_the_next_read() -> None:
    text = "loss 0.5 → ok ✓ 🚀\n".encode()
    for cut in range(len(text) + 1):
        head = whole_characters(text[:cut])
        head.decode("utf-8")  # never a cut character
        assert cut - len(head) <= 3
    assert whole_characters(b"\xff\xfe") == b"\xff\xfe"  # invalid bytes are not held
