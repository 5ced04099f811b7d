"""``python -m tests.server.file_size_limited BYTES ARGS...``: ``costart ARGS...`` under
``RLIMIT_FSIZE`` (the kernel refuses writes past BYTES with EFBIG, which the store meets
as it meets ENOSPC): a full disk for a real `costart serve`, as root or not, with no
filesystem to mount. SIGXFSZ is ignored: a refused write, not a killed process."""

from __future__ import annotations

import resource
import signal
import sys

from costart.cli.main import main

if __name__ == "__main__":
    limit = int(sys.argv[1])
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    sys.argv = ["costart", *sys.argv[2:]]
    main()
