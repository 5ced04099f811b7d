"""Reading the views page by page: a page reads only its own rows (and keeps nothing of
the rest), and reading a whole view leaves at most a budget of it resident (ADR 0058)."""

from __future__ import annotations

from itertools import islice
from pathlib import Path

import pytest

from costart.lmdbkit.resident import ReadBudget
from costart.projections.view_store import ViewDB, sub_key
from tests.projections.test_views import story_views
from tests.store.test_resident import resident_kb

ROWS = 2_000
ROW_BYTES = 8_192


class CountingGets:
    """Counts the rows a `ViewDB` looks up, by view."""

    def __init__(self, db: ViewDB) -> None:
        self.db = db
        self.get = db.get
        self.by_view: dict[str, int] = {}

    def __call__(self, txn, view: str, key: bytes, type_):
        self.by_view[view] = self.by_view.get(view, 0) + 1
        return self.get(txn, view, key, type_)


@pytest.mark.parametrize(
    "query",
    [{}, {"owner": "alice"}, {"state": "cancelled"}, {"live_only": True}],
    ids=["all", "owner", "state", "live"],
)
def test_groups_from_a_row_on_are_the_rest_of_the_list(tmp_path, query):
    _, views = story_views(tmp_path)
    whole = views.groups(**query)
    for skip in range(len(whole) + 2):
        assert list(views.iter_groups(**query, skip=skip)) == whole[skip:], skip


def test_members_from_a_row_on_are_the_rest_of_the_list(tmp_path):
    _, views = story_views(tmp_path)
    whole = views.members()
    assert len(whole) == 4
    for skip in range(len(whole) + 2):
        assert list(views.iter_members(skip=skip)) == whole[skip:], skip


def test_members_with_their_groups_are_the_members_each_with_its_own_group(tmp_path):
    _, views = story_views(tmp_path)
    whole = views.members()
    groups = {g.id: g for g in views.groups()}
    for skip in range(len(whole) + 2):
        pairs = list(views.iter_members_with_groups(skip=skip))
        assert [m for _, m in pairs] == whole[skip:], skip
        assert all(g == groups[m.group_id] for g, m in pairs), skip


def test_a_page_of_members_with_groups_reads_only_its_own_groups(tmp_path, monkeypatch):
    _, views = story_views(tmp_path)
    counting = CountingGets(views.db)
    monkeypatch.setattr(views.db, "get", counting)
    rows = views.iter_members_with_groups(skip=3)
    assert [m.name for _, m in islice(rows, 1)] == ["big"]
    rows.close()
    assert counting.by_view == {"groups": 1}


def test_a_page_of_groups_reads_no_group_before_it(tmp_path, monkeypatch):
    _, views = story_views(tmp_path)
    counting = CountingGets(views.db)
    monkeypatch.setattr(views.db, "get", counting)
    rows = views.iter_groups(skip=2)
    assert [g.name for g in islice(rows, 1)] == ["g3"]
    rows.close()
    assert counting.by_view == {"groups": 1}


def test_a_page_of_members_decodes_no_member_before_it(tmp_path, monkeypatch):
    _, views = story_views(tmp_path)
    decoded: list[str] = []
    decode = views.db.decode
    monkeypatch.setattr(
        views.db, "decode", lambda view, *rest: decoded.append(view) or decode(view, *rest)
    )
    rows = views.iter_members(skip=3)
    assert [m.name for m in islice(rows, 1)] == ["big"]
    rows.close()
    assert decoded.count("members") == 1


def filled_views(path: Path) -> tuple[ViewDB, list[bytes]]:
    """Views holding ``ROWS`` timeline rows of ``ROW_BYTES`` (16 MB) under one group."""
    db = ViewDB(path, map_size=2**30)
    keys = [sub_key("g", i.to_bytes(8, "big")) for i in range(ROWS)]
    with db.write() as txn:
        for i, key in enumerate(keys):
            db.put(txn, "timeline", key, bytes([i % 251]) * ROW_BYTES)
    return db, keys


BUDGET_BYTES = 4 * 2**20  # a quarter of what the rows' pages take (24 MB)


def budgeted(db: ViewDB, path: Path) -> ViewDB:
    """``db`` with a smaller budget than the default (16 MB), so the test need not
    write several times that."""
    db.budget = ReadBudget(path / "data.mdb", BUDGET_BYTES)
    return db


def test_scanning_a_whole_view_leaves_at_most_a_budget_of_it_resident(tmp_path):
    db = budgeted(filled_views(tmp_path)[0], tmp_path)
    data_file = (tmp_path / "data.mdb").resolve()
    highest_kb = 0
    with db.read() as txn:
        for i, (_, payload) in enumerate(db.scan(txn, "timeline", b"g/")):
            assert db.decode("timeline", b"", payload, bytes) == bytes([i % 251]) * ROW_BYTES
            highest_kb = max(highest_kb, resident_kb(data_file)) if i % 20 == 0 else highest_kb
    assert i == ROWS - 1
    assert 0 < highest_kb <= BUDGET_BYTES // 1024
    db.close()


def test_looking_up_every_row_leaves_at_most_a_budget_of_the_view_resident(tmp_path):
    db, keys = filled_views(tmp_path)
    db = budgeted(db, tmp_path)
    data_file = (tmp_path / "data.mdb").resolve()
    highest_kb = 0
    with db.read() as txn:
        for i, key in enumerate(keys):
            assert db.get(txn, "timeline", key, bytes) == bytes([i % 251]) * ROW_BYTES
            highest_kb = max(highest_kb, resident_kb(data_file)) if i % 20 == 0 else highest_kb
    assert 0 < highest_kb <= BUDGET_BYTES // 1024
    db.close()


def test_growing_the_views_map_keeps_every_row(tmp_path):
    db, keys = filled_views(tmp_path)
    db.grow()
    with db.read() as txn:
        assert [db.get(txn, "timeline", k, bytes)[0] for k in keys] == [
            i % 251 for i in range(ROWS)
        ]
    db.close()
