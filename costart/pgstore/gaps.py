"""The PostgreSQL log's own integrity check: positions run 1..n without a hole.

PostgreSQL keeps page checksums and its WAL; what costart adds on top is the gapless
numbering (`schema.gapless_insert`). A hole means rows were deleted behind the
Controller's back, so replay refuses such a log and names the first missing position.
"""

from __future__ import annotations

from psycopg.sql import SQL, Identifier

from costart.pgstore.recorder import CostartApplicationRecorder


def first_gap(recorder: CostartApplicationRecorder) -> int | None:
    """The first missing position of the log, or None if it is 1..max without holes."""
    table = Identifier(recorder.datastore.schema, recorder.events_table_name)
    with recorder.datastore.transaction(commit=False) as curs:
        row = curs.execute(
            SQL("SELECT count(*) AS n, coalesce(max(notification_id), 0) AS last FROM {t}").format(
                t=table
            )
        ).fetchone()
        assert row is not None
        if row["n"] == row["last"]:
            return None
        # The first id whose predecessor is missing, or 1 itself.
        found = curs.execute(
            SQL(
                "SELECT coalesce(("
                "SELECT notification_id - 1 FROM ("
                "SELECT notification_id, lag(notification_id, 1, 0::bigint) "
                "OVER (ORDER BY notification_id) AS previous FROM {t}) AS s "
                "WHERE notification_id <> previous + 1 ORDER BY notification_id LIMIT 1"
                "), 1) AS gap"
            ).format(t=table)
        ).fetchone()
    assert found is not None
    return int(found["gap"])
