"""What every LMDB environment of costart shares, the log's (`costart.store`) and the
views' (`costart.projections`): its data file checked before it is mapped (ADR 0028),
the errors of its files, and its mapped pages given back (ADR 0050, ADR 0058).

It holds no log: a layer below both users, so the views need not import the log store.
"""

from costart.lmdbkit.datafile import (
    DATA_FILE,
    LOCK_FILE,
    check_data_file,
    check_not_lost,
    forget_new_environment,
    free_bytes,
    is_space_error,
    reserve_lock_file,
    short_write_without_room,
)
from costart.lmdbkit.errors import DataFileError, StoreFullError
from costart.lmdbkit.resident import ReadBudget, release_mapped_pages

__all__ = [
    "DATA_FILE",
    "LOCK_FILE",
    "DataFileError",
    "ReadBudget",
    "StoreFullError",
    "check_data_file",
    "check_not_lost",
    "forget_new_environment",
    "free_bytes",
    "is_space_error",
    "release_mapped_pages",
    "reserve_lock_file",
    "short_write_without_room",
]
