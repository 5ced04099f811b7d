"""Reading the views: what the CLI and the REST API show, from one LMDB snapshot each.

`Views` owns an open `ViewDB`. Readers call `catch_up(source)` first (cheap when nothing
is new: it reads the log only after the tracked position), then query. Every query reads
in one read transaction, so it sees one consistent position.
"""

from __future__ import annotations

from collections.abc import Generator, Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

from costart.domain.errors import NotFound
from costart.domain.labels import Selector, matches
from costart.domain.states import GROUP_TERMINAL
from costart.projections import view_builder
from costart.projections.models import (
    GroupDetail,
    GroupView,
    Histogram,
    HoldView,
    MemberView,
    PendEntry,
    TimelineEntry,
)
from costart.projections.view_store import DEFAULT_MAP_SIZE, ViewDamagedError, ViewDB, sub_key

RECENT_EVENTS = 20


class Views:
    """The display views of one controller log, stored in LMDB under ``path``."""

    def __init__(
        self, path: Path | str, map_size: int = DEFAULT_MAP_SIZE, *, readonly: bool = False
    ) -> None:
        self.db = ViewDB(path, map_size, readonly=readonly)

    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> Views:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    # --- keeping up with the log --------------------------------------------------------

    def catch_up(
        self, source: view_builder.EventSource, batch_size: int = view_builder.DEFAULT_BATCH
    ) -> int:
        return view_builder.catch_up(self.db, source, batch_size)

    def rebuild(
        self, source: view_builder.EventSource, batch_size: int = view_builder.DEFAULT_BATCH
    ) -> int:
        return view_builder.rebuild(self.db, source, batch_size)

    def position(self) -> int:
        with self.db.read() as txn:
            return self.db.position(txn)

    # --- queries ------------------------------------------------------------------------

    def _group_id(self, txn: Any, name: str) -> str:
        gid = self.db.get(txn, "names", name.encode(), str)
        if gid is None:
            # Before saying "no such group": a damaged key would hide the group, and
            # every key of the names view is covered by its value's checksum.
            for _ in self.db.scan(txn, "names"):
                pass
            raise NotFound(f"no group named {name!r}")
        return str(gid)

    def _row(self, txn: Any, db: str, key: bytes, type_: type[Any]) -> Any:
        """A row another view refers to: its absence is damage, not an empty answer."""
        row = self.db.get(txn, db, key, type_)
        if row is None:
            raise ViewDamagedError(db, key, "missing, although another view refers to it")
        return row

    def _rows(self, txn: Any, db: str, gid: str, type_: type[Any]) -> Iterator[Any]:
        for key, raw in self.db.scan(txn, db, sub_key(gid, b"")):
            yield self.db.decode(db, key, raw, type_)

    def groups(
        self,
        owner: str | None = None,
        state: str | None = None,
        live_only: bool = False,
        selector: Selector = (),
    ) -> list[GroupView]:
        """Groups in submission order, optionally filtered by owner, state and a label
        selector."""
        with closing(self.iter_groups(owner, state, live_only, selector)) as rows:
            return list(rows)

    def iter_groups(
        self,
        owner: str | None = None,
        state: str | None = None,
        live_only: bool = False,
        selector: Selector = (),
        skip: int = 0,
    ) -> Generator[GroupView, None, None]:
        """`groups` one at a time, from the ``skip``-th match on (a page of a list): keeps
        nothing, and with no filter reads no group before the page. Its read transaction
        lasts until the generator ends or is closed (close it in the thread that read)."""
        unfiltered = owner is None and state is None and not live_only and not selector
        with self.db.read() as txn:
            for key, gid in self.db.scan(txn, "order"):
                if unfiltered and skip:
                    skip -= 1
                    continue
                group_id: str = self.db.decode("order", key, gid, str)
                row = self._row(txn, "groups", group_id.encode(), GroupView)
                if owner is not None and row.owner != owner:
                    continue
                if state is not None and row.state != state.upper():
                    continue
                if live_only and row.state in GROUP_TERMINAL:
                    continue
                if not matches(row.labels, selector):
                    continue
                if skip:
                    skip -= 1
                    continue
                yield row

    def group(self, name: str) -> GroupView:
        """The live group of that name, else the newest ended one; `NotFound` otherwise."""
        with self.db.read() as txn:
            gid = self._group_id(txn, name)
            row: GroupView = self._row(txn, "groups", gid.encode(), GroupView)
            return row

    def members(self, name: str | None = None) -> list[MemberView]:
        """A group's members in spec order; every group's (submission order) if no name."""
        if name is None:
            with closing(self.iter_members()) as rows:
                return list(rows)
        with self.db.read() as txn:
            return list(self._rows(txn, "members", self._group_id(txn, name), MemberView))

    def iter_members(self, skip: int = 0) -> Generator[MemberView, None, None]:
        """Every group's members (as `members`) one at a time, from the ``skip``-th on,
        decoding none before it; the read transaction as in `iter_groups`."""
        with self.db.read() as txn:
            for key, gid in self.db.scan(txn, "order"):
                group_id = self.db.decode("order", key, gid, str)
                for member_key, raw in self.db.scan(txn, "members", sub_key(group_id, b"")):
                    if skip:
                        skip -= 1
                        continue
                    yield self.db.decode("members", member_key, raw, MemberView)

    def iter_members_with_groups(
        self, skip: int = 0
    ) -> Generator[tuple[GroupView, MemberView], None, None]:
        """`iter_members`, each row with its group's row from the same read (a reader
        that decides per group, e.g. who may see a run table's env values). A group's
        row is read once, and only for groups that have a row on the page."""
        with self.db.read() as txn:
            for key, gid in self.db.scan(txn, "order"):
                group_id = self.db.decode("order", key, gid, str)
                group: GroupView | None = None
                for member_key, raw in self.db.scan(txn, "members", sub_key(group_id, b"")):
                    if skip:
                        skip -= 1
                        continue
                    if group is None:
                        group = self._row(txn, "groups", group_id.encode(), GroupView)
                    yield group, self.db.decode("members", member_key, raw, MemberView)

    def pend_history(self, name: str) -> list[PendEntry]:
        with self.db.read() as txn:
            return list(self._rows(txn, "pend", self._group_id(txn, name), PendEntry))

    def timeline(self, name: str, last: int | None = None) -> list[TimelineEntry]:
        """The group's events in log order (only the ``last`` N if given)."""
        with self.db.read() as txn:
            rows = list(self._rows(txn, "timeline", self._group_id(txn, name), TimelineEntry))
        return rows if last is None else rows[-last:]

    def holds(self, group: str | None = None) -> list[HoldView]:
        """Capacity held or used on each node, by node then group, member and task."""
        with self.db.read() as txn:
            rows = [
                self.db.decode("holds", key, raw, HoldView)
                for key, raw in self.db.scan(txn, "holds")
            ]
            if group is not None:
                gid = self._group_id(txn, group)
                rows = [r for r in rows if r.group_id == gid]
        return rows

    def describe(self, name: str, recent: int = RECENT_EVENTS) -> GroupDetail:
        """The group, its members, holds, pend-reason history and recent events."""
        with self.db.read() as txn:
            gid = self._group_id(txn, name)
            group = self._row(txn, "groups", gid.encode(), GroupView)
            members = tuple(self._rows(txn, "members", gid, MemberView))
            pend = tuple(self._rows(txn, "pend", gid, PendEntry))
            events = tuple(self._rows(txn, "timeline", gid, TimelineEntry))
            keys = self.db.get(txn, "gholds", gid.encode(), list[bytes]) or []
            holds = tuple(self._row(txn, "holds", key, HoldView) for key in keys)
        return GroupDetail(
            group=group,
            members=members,
            holds=holds,
            pend_history=pend,
            events=events[-recent:] if recent else events,
        )

    def node_status(self) -> dict[str, str]:
        """Nodes reported drained or down (absent: up), from the cluster's stream."""
        with self.db.read() as txn:
            return {
                key.decode(): self.db.decode("nodes", key, value, str)
                for key, value in self.db.scan(txn, "nodes")
            }

    def counters(self) -> dict[str, int]:
        """Event counts (see `view_builder.counter_key`): ``member_failures:REASON``,
        ``member_restarts``, ``group_restarts``, ``reservation_timeouts``,
        ``barrier_timeouts``, ``releases``; absent ones have not happened."""
        with self.db.read() as txn:
            return self.db.get(txn, "stats", view_builder.COUNTS.encode(), dict[str, int]) or {}

    def histograms(self) -> dict[str, Histogram]:
        with self.db.read() as txn:
            return {
                name: self.db.get(txn, "stats", name.encode(), Histogram)
                or view_builder.new_histogram()
                for name in view_builder.HISTOGRAMS
            }
