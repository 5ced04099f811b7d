"""A FUSE passthrough filesystem that loses what was not synced, in the manner of LazyFS.

``python -m tests.powerloss.lazyfs BACKING MOUNTPOINT`` mounts BACKING at MOUNTPOINT (in
the foreground, single-threaded). File contents written through the mount stay in this
process's memory, page by page, until the file is fsync'ed (or was opened O_SYNC or
O_DSYNC); only then do they reach BACKING. A power cut is killing this process: every
unsynced write is gone, and BACKING holds exactly what was synced. Metadata (create,
rename, unlink, mkdir) goes to BACKING at once -- this models lost data, not lost
directory entries.
"""

from __future__ import annotations

import errno
import os
import sys
from typing import Any

import mfusepy as fuse

PAGE = 4096
SYNC_FLAGS = os.O_SYNC | os.O_DSYNC


class Pending:
    """One file's unsynced state: dirty pages over the backing file, and its size."""

    def __init__(self, backing_size: int) -> None:
        self.pages: dict[int, bytearray] = {}
        self.size = backing_size


class LazyFS(fuse.Operations):  # type: ignore[misc]
    use_ns = True  # times as integer nanoseconds

    def __init__(self, backing: str) -> None:
        self.backing = os.path.realpath(backing)
        self.pending: dict[str, Pending] = {}
        self.handles: dict[int, int] = {}  # fh -> open flags
        self.next_fh = 1

    def _real(self, path: str) -> str:
        return os.path.join(self.backing, path.lstrip("/"))

    # --- data: kept until fsync --------------------------------------------------------

    def _state(self, path: str) -> Pending:
        state = self.pending.get(path)
        if state is None:
            state = self.pending[path] = Pending(os.path.getsize(self._real(path)))
        return state

    def _backing_page(self, path: str, index: int) -> bytearray:
        with open(self._real(path), "rb") as f:
            f.seek(index * PAGE)
            data = f.read(PAGE)
        return bytearray(data.ljust(PAGE, b"\0"))

    def _page(self, path: str, state: Pending, index: int) -> bytearray:
        page = state.pages.get(index)
        if page is None:
            page = state.pages[index] = self._backing_page(path, index)
            # Bytes past the file's current size read as zeros (a truncate may be pending).
            start = max(state.size - index * PAGE, 0)
            if start < PAGE:
                page[start:] = bytes(PAGE - start)
        return page

    def read(self, path: str, size: int, offset: int, fh: int) -> bytes:
        state = self.pending.get(path)
        if state is None:
            with open(self._real(path), "rb") as f:
                f.seek(offset)
                return f.read(size)
        end = min(offset + size, state.size)
        out = bytearray()
        position = offset
        while position < end:
            index, within = divmod(position, PAGE)
            take = min(PAGE - within, end - position)
            page = state.pages.get(index)
            if page is None:
                page = self._backing_page(path, index)
            out += page[within : within + take]
            position += take
        return bytes(out)

    def write(self, path: str, data: bytes, offset: int, fh: int) -> int:
        state = self._state(path)
        position, view = offset, memoryview(data)
        while view:
            index, within = divmod(position, PAGE)
            take = min(PAGE - within, len(view))
            self._page(path, state, index)[within : within + take] = view[:take]
            view = view[take:]
            position += take
        state.size = max(state.size, offset + len(data))
        if self.handles.get(fh, 0) & SYNC_FLAGS:
            self._sync(path)
        return len(data)

    def truncate(self, path: str, length: int, fh: int | None = None) -> int:
        state = self._state(path)
        for index in [i for i in state.pages if i * PAGE >= length]:
            del state.pages[index]
        last = length // PAGE
        if last in state.pages:
            state.pages[last][length - last * PAGE :] = bytes(PAGE - (length - last * PAGE))
        state.size = length
        return 0

    def _sync(self, path: str) -> None:
        state = self.pending.pop(path, None)
        if state is None:
            return
        fd = os.open(self._real(path), os.O_WRONLY)
        try:
            for index in sorted(state.pages):
                start = index * PAGE
                if start < state.size:
                    os.pwrite(fd, state.pages[index][: state.size - start], start)
            os.ftruncate(fd, state.size)
            os.fsync(fd)
        finally:
            os.close(fd)

    def fsync(self, path: str, datasync: int, fh: int) -> int:
        self._sync(path)
        return 0

    def flush(self, path: str, fh: int) -> int:
        return 0  # close() is not a sync

    # --- files and metadata: straight to the backing directory ---------------------------

    def _handle(self, flags: int) -> int:
        fh = self.next_fh
        self.next_fh += 1
        self.handles[fh] = flags
        return fh

    def open(self, path: str, flags: int) -> int:
        if not os.path.exists(self._real(path)):
            raise fuse.FuseOSError(errno.ENOENT)
        return self._handle(flags)

    def create(self, path: str, mode: int, fi: Any = None) -> int:
        os.close(os.open(self._real(path), os.O_CREAT | os.O_WRONLY, mode))
        return self._handle(os.O_WRONLY)

    def release(self, path: str, fh: int) -> int:
        self.handles.pop(fh, None)
        return 0

    def getattr(self, path: str, fh: int | None = None) -> dict[str, Any]:
        try:
            st = os.lstat(self._real(path))
        except FileNotFoundError:
            raise fuse.FuseOSError(errno.ENOENT) from None
        attrs = {
            key: getattr(st, key)
            for key in (
                "st_mode", "st_nlink", "st_uid", "st_gid", "st_size",
                "st_atime", "st_mtime", "st_ctime",
            )
        }  # fmt: skip
        state = self.pending.get(path)
        if state is not None:
            attrs["st_size"] = state.size
        return attrs

    def readdir(self, path: str, fh: int) -> list[str]:
        return [".", "..", *sorted(os.listdir(self._real(path)))]

    def access(self, path: str, amode: int) -> int:
        if not os.path.exists(self._real(path)):
            raise fuse.FuseOSError(errno.ENOENT)
        return 0

    def mkdir(self, path: str, mode: int) -> int:
        os.mkdir(self._real(path), mode)
        return 0

    def rmdir(self, path: str) -> int:
        os.rmdir(self._real(path))
        return 0

    def unlink(self, path: str) -> int:
        os.unlink(self._real(path))
        self.pending.pop(path, None)
        return 0

    def rename(self, old: str, new: str) -> int:
        os.rename(self._real(old), self._real(new))
        if old in self.pending:
            self.pending[new] = self.pending.pop(old)
        return 0

    def chmod(self, path: str, mode: int) -> int:
        os.chmod(self._real(path), mode)
        return 0

    def chown(self, path: str, uid: int, gid: int) -> int:
        os.chown(self._real(path), uid, gid)
        return 0

    def utimens(self, path: str, times: Any = None) -> int:
        return 0

    def statfs(self, path: str) -> dict[str, int]:
        st = os.statvfs(self.backing)
        return {
            key: getattr(st, key)
            for key in (
                "f_bsize",
                "f_frsize",
                "f_blocks",
                "f_bfree",
                "f_bavail",
                "f_files",
                "f_ffree",
                "f_namemax",
            )
        }


def main() -> None:
    backing, mountpoint = sys.argv[1:3]
    fuse.FUSE(LazyFS(backing), mountpoint, foreground=True, nothreads=True)


if __name__ == "__main__":
    main()
