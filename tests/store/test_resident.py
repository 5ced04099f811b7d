"""`release_mapped_pages`: the pages a scan of an LMDB file made resident leave the
process's resident set, and every value reads back the same afterwards."""

from __future__ import annotations

from pathlib import Path

import lmdb

from costart.store.resident import _mappings, release_mapped_pages

VALUES = 2_000
VALUE_BYTES = 8_192


def resident_kb(data_file: Path) -> int:
    """Resident kB of this process's mappings of ``data_file`` (from smaps)."""
    total, inside = 0, False
    for line in Path("/proc/self/smaps").read_text().splitlines():
        first = line.split(maxsplit=1)[0]
        if "-" in first and not first.endswith(":"):
            inside = line.split(maxsplit=5)[-1] == str(data_file)
        elif inside and first == "Rss:":
            total += int(line.split()[1])
    return total


def test_a_scanned_file_leaves_the_resident_set_and_still_reads_the_same(tmp_path):
    env = lmdb.open(str(tmp_path), map_size=2**30)
    with env.begin(write=True) as txn:
        for i in range(VALUES):
            txn.put(b"%08d" % i, bytes([i % 251]) * VALUE_BYTES)
    data_file = (tmp_path / "data.mdb").resolve()
    with env.begin() as txn:
        before = [bytes(v) for _, v in txn.cursor()]
    scanned = resident_kb(data_file)
    assert scanned > VALUES * VALUE_BYTES // 1024 // 2  # the scan made the file resident
    assert release_mapped_pages(data_file) > 0
    assert resident_kb(data_file) < scanned // 10
    with env.begin() as txn:
        assert [bytes(v) for _, v in txn.cursor()] == before
    env.close()


def test_only_the_named_files_mappings_are_found():
    maps = (
        "7f00-7f10 r--s 00000000 08:01 1 /data/store/data.mdb\n"
        "7f10-7f20 rw-p 00000000 00:00 0 \n"
        "7f20-7f40 r--s 00000000 08:01 2 /data/store/views/data.mdb\n"
        "7f40-7f50 r--s 00000000 08:01 1 /data/store/data.mdb (deleted)\n"
    )
    assert _mappings(Path("/data/store/data.mdb"), maps) == [(0x7F00, 0x7F10)]


def test_a_file_not_mapped_releases_nothing(tmp_path):
    assert release_mapped_pages(tmp_path / "data.mdb") == 0
