"""Read what is new in a file from a remembered byte offset.

The tailer trusts no watch event: on every read it compares the file's identity
(device and inode), its size and its first bytes with what it saw before, and
reports truncation, replacement, rotation, deletion and re-creation itself.
Only whole units (lines, records) are consumed; a partial tail waits.
"""

from __future__ import annotations

import os
import stat as stat_module
from dataclasses import dataclass

from tuiloss.core.model import SegmentEvent

HEAD_BYTES = 64
DEFAULT_MAX_READ = 32 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class TailRead:
    """What one read returned.

    ``data`` starts at byte ``offset`` of the file. ``event`` is set when the file
    changed identity since the last read (the data then starts at 0). ``final``
    means no more bytes will follow these (a rotated-away file being drained), so a
    last unterminated line is complete. ``more`` means the read was capped.
    """

    data: bytes
    offset: int
    event: SegmentEvent | None = None
    final: bool = False
    more: bool = False


class TailError(Exception):
    """The file cannot be read (permission denied, not a regular file, ...)."""


class Tailer:
    """Incremental reader of one growing file."""

    def __init__(self, path: str | os.PathLike, max_read: int = DEFAULT_MAX_READ) -> None:
        self.path = os.fspath(path)
        self.max_read = max_read
        self.offset = 0
        self._ident: tuple[int, int] | None = None
        self._head = b""
        self._head_source = b""
        self._last_stat: tuple[int, int, int] | None = None
        self._missing = False
        self._pending_event: SegmentEvent | None = None
        self._drain_path: str | None = None  # rotated-away file still holding unread bytes
        self._drain_offset = 0
        self._reading_drain = False

    @property
    def exists(self) -> bool:
        return not self._missing

    def changed(self) -> bool:
        """Cheap check (one stat): could a read return something new?"""
        if self._drain_path is not None or self._pending_event is not None:
            return True
        try:
            st = os.stat(self.path)
        except OSError:
            return not self._missing
        key = (st.st_ino, st.st_size, st.st_mtime_ns)
        return key != self._last_stat or st.st_size > self.offset

    def read(self) -> TailRead:
        """Return the bytes past the offset; call :meth:`consume` with what was used."""
        self._reading_drain = False
        if self._drain_path is not None:
            drained = self._drain()
            if drained is not None:
                return drained
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            return self._gone()
        except PermissionError as exc:
            raise TailError(f"permission denied: {exc.filename or self.path}") from None
        except OSError as exc:
            raise TailError(f"cannot read: {exc.strerror or exc}") from None
        if not stat_module.S_ISREG(st.st_mode):
            raise TailError("not a regular file")
        event, self._pending_event = self._pending_event, None
        ident = (st.st_dev, st.st_ino)
        if self._missing:
            self._missing = False
            if self._ident is not None:
                event = SegmentEvent("recreated", "the file was deleted and created again")
                self._restart(ident)
        if self._ident is None:
            self._ident = ident
        elif ident != self._ident:
            moved_to = self._find_moved(self._ident)
            if moved_to is not None:
                self._drain_path, self._drain_offset = moved_to, self.offset
                self._pending_event = SegmentEvent(
                    "rotated", f"moved to {os.path.basename(moved_to)}"
                )
                self._restart(ident)
                return self.read()
            event = SegmentEvent("replaced", "a new file took its place")
            self._restart(ident)
        elif st.st_size < self.offset:
            event = SegmentEvent("truncated", f"shrank from {self.offset} to {st.st_size} bytes")
            self._restart(ident)
        self._last_stat = (st.st_ino, st.st_size, st.st_mtime_ns)
        return self._read_tail(st.st_size, event)

    def consume(self, n: int) -> None:
        """Advance past ``n`` bytes of the last read's data."""
        if n <= 0:
            return
        if self._reading_drain:
            self._drain_offset += n
            return
        self.offset += n
        if len(self._head) < HEAD_BYTES:
            self._head = self._head_source[: min(HEAD_BYTES, self.offset)]

    # -- internals -------------------------------------------------------------

    def _restart(self, ident: tuple[int, int]) -> None:
        self._ident = ident
        self.offset = 0
        self._head = b""
        self._head_source = b""

    def _gone(self) -> TailRead:
        if self._missing:
            return TailRead(b"", self.offset)
        self._missing = True
        self._last_stat = None
        return TailRead(b"", self.offset, SegmentEvent("deleted", "the file is gone"))

    def _read_tail(self, size: int, event: SegmentEvent | None) -> TailRead:
        try:
            fd = os.open(self.path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
        except FileNotFoundError:
            return self._gone()
        except PermissionError:
            raise TailError("permission denied") from None
        except OSError as exc:
            raise TailError(f"cannot open: {exc.strerror or exc}") from None
        try:
            if event is None and self._head:
                if os.pread(fd, len(self._head), 0) != self._head:
                    event = SegmentEvent("replaced", "the file was overwritten in place")
                    self.offset = 0
                    self._head = b""
            size = max(size, os.fstat(fd).st_size)
            want = min(max(size - self.offset, 0), self.max_read)
            data = os.pread(fd, want, self.offset) if want else b""
            if len(self._head) < HEAD_BYTES:
                self._head_source = os.pread(fd, HEAD_BYTES, 0)
        except OSError as exc:
            raise TailError(f"read failed: {exc.strerror or exc}") from None
        finally:
            os.close(fd)
        return TailRead(data, self.offset, event, more=size - self.offset > len(data))

    def _find_moved(self, ident: tuple[int, int]) -> str | None:
        """Where the file we were reading went, if it was moved within its folder."""
        folder = os.path.dirname(self.path) or "."
        try:
            with os.scandir(folder) as entries:
                for entry in entries:
                    try:
                        if entry.inode() == ident[1] and entry.is_file(follow_symlinks=False):
                            if entry.stat(follow_symlinks=False).st_dev == ident[0]:
                                return entry.path
                    except OSError:
                        continue
        except OSError:
            return None
        return None

    def _drain(self) -> TailRead | None:
        """Unread bytes of the rotated-away file, or None once it is exhausted."""
        path = self._drain_path
        assert path is not None
        data = b""
        more = False
        try:
            with open(path, "rb") as handle:
                size = os.fstat(handle.fileno()).st_size
                handle.seek(self._drain_offset)
                data = handle.read(min(max(size - self._drain_offset, 0), self.max_read))
                more = size - self._drain_offset > len(data)
        except OSError:
            data = b""
        if not data:
            self._drain_path = None
            return None
        self._reading_drain = True
        return TailRead(data, self._drain_offset, None, final=not more, more=more)
