"""Write the log kept in ``schema4_log/``: a store whose snapshots are of snapshot
schema 4 (the compact World of ADR 0088, without the runtime history schema 5 added,
ADR 0113).

``python -m tests.compat.write_schema4_log DIR`` runs the same story as
`tests.compat.write_release_log` (the multi-group story and the rl-post-training demo,
a snapshot every 8 events) and writes a compacted copy of the store to DIR.

The fixture is never re-made: it stands for snapshots already written in production.
This script is the record of how it was made: run at the commit before schema 5 it
writes schema 4 snapshots; run today, it writes the current schema's.
"""

from __future__ import annotations

import sys
from pathlib import Path

from tests.compat.write_release_log import write

if __name__ == "__main__":
    write(Path(sys.argv[1]))
