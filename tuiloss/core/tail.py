"""Read what is new in a file from a remembered byte offset.

The tailer trusts no watch event: on every read it compares the file's identity
(device and inode), its size, its first bytes and the bytes just before the
offset with what it saw before, and reports truncation, replacement, rotation,
deletion and re-creation itself. A running hash of every byte consumed tells a
same-size rewrite from a touch, and a replacement that only extends what was
read (rsync's temp file renamed over the log, an atomic save) from a new file:
the former continues at the offset with no event. Only whole units (lines,
records) are consumed; a partial tail waits.

Every decision about a read is taken from the open file itself (``fstat`` and
``pread`` on one descriptor), so a file replaced while a read is under way is
either the old file or the new one, never a mix; one rewritten in place meanwhile
(its fingerprint changed between the checks and the read) is read again, not
taken as more of the old one. The descriptor is closed before
:meth:`Tailer.read` returns, unless the tailer ``pin``s: a live reader keeps the
file it read open until its next read, so the file system cannot hand that file's
inode to a replacement meanwhile (ext4 does, at once), which would make a replaced
file look like the same file rewritten. At most :data:`PINNED_FILES` files are
pinned at once, the most recently read ones: a tree of thousands of logs holds
no more open files than that.
"""

from __future__ import annotations

import os
import stat as stat_module
import threading
import weakref
from collections import OrderedDict
from dataclasses import dataclass

import xxhash

from tuiloss.core.model import Notice, SegmentEvent

#: How long a last line without a newline must stay unchanged before a live reader takes it.
HOLD_SECONDS = 2.0

HEAD_BYTES = 64
#: Bytes just before the offset kept as its fingerprint, checked on every read: a
#: file rewritten from the start past the old size (a restarted job) no longer holds them.
TAIL_BYTES = 64
#: Bytes read at a time when a whole prefix is checked against the running hash.
CHECK_BLOCK = 4 * 1024 * 1024
#: Reads are capped below the C allocator's largest mmap threshold (32 MiB), so one
#: read's buffer is reused by the next instead of being mapped, and page-faulted in,
#: fresh each time (a large share of a big file's load time otherwise). What a load holds
#: beside the points grows with it, about four reads' worth: the read, the parse buffers,
#: the parsed columns, the batches waiting to be stored (34 MB less at 8 MiB than at 16,
#: and no slower: the per-read cost is small beside a read's 300,000 lines).
DEFAULT_MAX_READ = 8 * 1024 * 1024
#: Most bytes of a read kept past what was consumed (a partial last line) once the rest is
#: consumed: copied out, so the read's whole buffer is let go.
_KEPT_REST = 1024 * 1024
#: Holes smaller than this are read as the zeros they are.
HOLE_BYTES = 1024 * 1024
_SEEK_DATA = getattr(os, "SEEK_DATA", None)

#: Flags of every open: non-blocking, so a FIFO put where a log was cannot hang the reader.
OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NONBLOCK", 0)


def _pin_budget() -> int:
    try:
        import resource

        soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    except (ImportError, OSError, ValueError):
        return 64
    return 128 if soft == resource.RLIM_INFINITY else max(8, min(128, soft // 8))


#: Most files kept open at once between two reads, to pin their inodes (an eighth of the
#: process's file limit, at most 128).
PINNED_FILES = _pin_budget()


class _Pins:
    """The descriptors pinning files between reads, by tailer, the least recently read dropped first."""

    def __init__(self, most: int) -> None:
        self.most = most
        self._fds: OrderedDict[int, int] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._fds)

    def hold(self, owner: int, fd: int) -> None:
        """``fd`` is now ``owner``'s pin: its previous one, and the oldest beyond the budget, are closed."""
        closing = []
        with self._lock:
            previous = self._fds.pop(owner, None)
            if previous is not None:
                closing.append(previous)
            self._fds[owner] = fd
            while len(self._fds) > self.most:
                closing.append(self._fds.popitem(last=False)[1])
        for old in closing:
            os.close(old)

    def holds_file(self, owner: int, ident: tuple[int, int]) -> bool:
        """Whether ``owner``'s pin is the file ``ident``: open, its inode cannot be another file's."""
        with self._lock:
            fd = self._fds.get(owner)
            try:
                st = os.fstat(fd) if fd is not None else None
            except OSError:
                st = None
        return st is not None and (st.st_dev, st.st_ino) == ident

    def release(self, owner: int) -> None:
        with self._lock:
            fd = self._fds.pop(owner, None)
        if fd is not None:
            os.close(fd)


_PINS = _Pins(PINNED_FILES)


@dataclass(frozen=True, slots=True)
class TailRead:
    """What one read returned.

    ``data`` starts at byte ``offset`` of the file. ``event`` is set when the file
    changed identity since the last read (the data then starts at 0). ``final``
    means no more bytes will follow these (a rotated-away file being drained), so a
    last unterminated line is complete. ``more`` means read again at once: the
    read was capped, or the tail of a rotated-away file was returned and the new
    file waits. ``unread`` is how many bytes the file held past ``data``.
    """

    data: bytes
    offset: int
    event: SegmentEvent | None = None
    final: bool = False
    more: bool = False
    unread: int = 0


class TailError(Exception):
    """The file cannot be read (permission denied, not a regular file, ...)."""


class Tailer:
    """Incremental reader of one growing file.

    With ``skip_holes``, a hole (a sparse region, all zero bytes) at the offset
    and followed by data is passed over without reading it: a 5 GB sparse file
    costs one ``lseek``, and a log truncated under a writer that kept its offset
    resumes at the writer's next line. The offset then moves by itself, so only
    readers that need not count every byte (text lines) ask for it.
    """

    def __init__(self, path: str | os.PathLike, max_read: int = DEFAULT_MAX_READ, *,
                 skip_holes: bool = False, pin: bool = False) -> None:
        self.path = os.fspath(path)
        self.max_read = max_read
        self.skip_holes = skip_holes
        self.pin = pin  # keep the file read open until the next read (see the module's doc)
        if pin:
            weakref.finalize(self, _PINS.release, id(self))
        self.offset = 0
        self._ident: tuple[int, int] | None = None
        self._head = b""
        self._head_source = b""
        self._tail = b""  # the last TAIL_BYTES consumed, i.e. just before the offset
        self._sum: xxhash.xxh3_64 | None = xxhash.xxh3_64()  # hash of bytes [0, offset); None once a hole was skipped
        self._last_data: bytes = b""  # the data of the last read, which consume() advances over
        self._last_used = 0
        self._offered_end = 0  # end of the data the last read returned
        self._last_stat: tuple[int, int, int] | None = None
        self._missing = False
        self._pending_event: SegmentEvent | None = None
        # A rotated-away file still holding unread bytes: path, identity, offset.
        self._drain_path: str | None = None
        self._drain_ident: tuple[int, int] | None = None
        self._drain_offset = 0
        self._drain_offered: int | None = None  # offset of the last drain chunk handed out
        self._drain_event: SegmentEvent | None = None  # said with the first chunk drained
        self._reading_drain = False
        self.error: str | None = None  # why the last read failed, once said

    @property
    def exists(self) -> bool:
        return not self._missing

    def changed(self) -> bool:
        """Cheap check (one stat): could a read return something new?"""
        if self._drain_path is not None:
            return True
        try:
            st = os.stat(self.path)
        except OSError:
            return not self._missing
        if self._pending_event is not None:
            return True
        key = (st.st_ino, st.st_size, st.st_mtime_ns)
        # bytes already offered and left unconsumed (a partial line) are not news
        return key != self._last_stat or st.st_size > max(self.offset, self._offered_end)

    def read(self) -> TailRead:
        """Return the bytes past the offset; call :meth:`consume` with what was used."""
        self._reading_drain = False
        self._last_data, self._last_used = b"", 0  # freed before the next buffer is read
        if self._drain_path is not None:
            drained = self._drain()
            if drained is not None:
                return drained
        try:
            fd = os.open(self.path, OPEN_FLAGS)
        except FileNotFoundError:
            return self._path_gone()
        except NotADirectoryError:
            return self._path_gone()  # a folder on the way became a file
        except PermissionError as exc:
            raise TailError(f"permission denied: {exc.filename or self.path}") from None
        except OSError as exc:
            raise TailError(f"cannot open: {exc.strerror or exc}") from None
        try:
            read = self._read_open(fd)
        except OSError as exc:
            os.close(fd)
            raise TailError(f"read failed: {exc.strerror or exc}") from None
        except BaseException:
            os.close(fd)
            raise
        if self.pin:
            _PINS.hold(id(self), fd)  # the file read before is let go only now that this one is open
        else:
            os.close(fd)
        return read

    def read_noting(self, items: list) -> TailRead | None:
        """:meth:`read`, or None when it failed: a failure is said once as an error notice in
        ``items``, and so is the first read that works again."""
        try:
            chunk = self.read()
        except TailError as exc:
            message = str(exc)
            if message != self.error:
                self.error = message
                items.append(Notice("error", f"cannot read {self.path}: {message}"))
            return None
        if self.error is not None:
            self.error = None
            items.append(Notice("info", f"{self.path} is readable again"))
        return chunk

    def consume(self, n: int) -> None:
        """Advance past ``n`` bytes of the last read's data."""
        if n <= 0:
            return
        if self._reading_drain:
            self._drain_offset += n
            return
        used = memoryview(self._last_data)[self._last_used : self._last_used + n]
        self._last_used += n
        if self._sum is not None:
            self._sum.update(used)
        if len(used) >= TAIL_BYTES:
            self._tail = bytes(used[-TAIL_BYTES:])
        else:
            self._tail = (self._tail + bytes(used))[-TAIL_BYTES:]
        self.offset += n
        if len(self._head) < HEAD_BYTES:
            self._head = self._head_source[: min(HEAD_BYTES, self.offset)]
        self._let_go()

    def _let_go(self) -> None:
        """Hold no more of the last read than is left to consume: a finished log's last read
        (up to ``max_read`` bytes) would otherwise stay in memory until the file changes."""
        left = len(self._last_data) - self._last_used
        if not left:
            self._last_data, self._last_used = b"", 0
        elif left <= _KEPT_REST and left * 4 <= len(self._last_data):
            self._last_data, self._last_used = self._last_data[self._last_used :], 0

    def holds(self, path: str) -> bool:
        """Whether the file at ``path`` is the one being read (moved with its folder, say).

        It must be the same file (device and inode: a pinned file's cannot have been
        handed on) with the same first bytes and bytes before the offset, and not one
        this tailer saw deleted (its inode may since be another file's, even one with
        the same bytes). With ``path`` set to it, the next read goes on from the offset.
        """
        if self._ident is None or self._missing:
            return False
        try:
            fd = os.open(path, OPEN_FLAGS)
        except OSError:
            return False
        try:
            st = os.fstat(fd)
            if not stat_module.S_ISREG(st.st_mode) or (st.st_dev, st.st_ino) != self._ident:
                return False
            if st.st_size < self.offset:
                return False
            if self._fingerprint_changed(fd):
                return False
        except OSError:
            return False
        finally:
            os.close(fd)
        return True

    # -- internals -------------------------------------------------------------

    def _read_open(self, fd: int) -> TailRead:
        st = os.fstat(fd)
        if not stat_module.S_ISREG(st.st_mode):
            raise TailError("not a regular file")
        ident = (st.st_dev, st.st_ino)
        event, self._pending_event = self._pending_event, None
        if self._missing:
            self._missing = False
            if event is None and self._ident is not None and self.offset and self._extends(fd, st.st_size):
                self._ident = ident  # deleted and written again with what was read and more
            else:
                if self._ident is not None or event is not None:
                    event = event or SegmentEvent("recreated", "the file was deleted and created again")
                self._restart(ident)
        elif self._ident is None:
            self._ident = ident
        elif ident != self._ident:
            moved = self._find_moved(self._ident)
            if moved is not None:
                moved_to, rewritten = moved
                rotated = SegmentEvent("rotated", f"moved to {os.path.basename(moved_to)}")
                self._start_drain(moved_to, self._ident, rewritten)
                self._restart(ident)
                drained = self._drain()
                if drained is not None:
                    self._pending_event = rotated
                    return drained
                event = rotated
            elif not self.offset or self._extends(fd, st.st_size):
                # A new file holding what was read and more: read on. Or nothing of the file
                # before was read (a rotation's new file, replaced while the old one drained):
                # no boundary, and the change that led here (a pending "rotated") stands.
                self._ident = ident
            else:
                event = SegmentEvent("replaced", "a new file took its place")
                self._restart(ident)
        elif st.st_size < self.offset:
            event = SegmentEvent("truncated", f"shrank from {self.offset} to {st.st_size} bytes")
            self._restart(ident)
        elif self._head and os.pread(fd, len(self._head), 0) != self._head:
            event = SegmentEvent("replaced", "the file was overwritten in place")
            self._restart(ident)
        elif self._tail and os.pread(fd, len(self._tail), self.offset - len(self._tail)) != self._tail:
            if st.st_size == self.offset:
                event = SegmentEvent("replaced", "rewritten in place, same size")
            else:
                event = SegmentEvent("truncated", "rewritten from the start: the bytes read before changed")
            self._restart(ident)
        elif (st.st_size == self.offset and self._last_stat is not None and self.offset
              and st.st_mtime_ns != self._last_stat[2] and not self._extends(fd, st.st_size)):
            event = SegmentEvent("replaced", "rewritten in place, same size")
            self._restart(ident)
        self._last_stat = (st.st_ino, st.st_size, st.st_mtime_ns)
        size = st.st_size
        if self.skip_holes and size - self.offset > HOLE_BYTES:
            self._skip_hole(fd, size)
        want = min(max(size - self.offset, 0), self.max_read)
        data = os.pread(fd, want, self.offset) if want else b""
        if data and event is None and self._fingerprint_changed(fd):
            # Rewritten in place while this read was under way (after the checks above): the
            # bytes may be the new file's, not more of the old one. Read again from the checks.
            self._last_stat = None
            return TailRead(b"", self.offset, None, more=True, unread=max(size - self.offset, 0))
        self._last_data, self._last_used = data, 0
        self._offered_end = self.offset + len(data)
        if len(self._head) < HEAD_BYTES:
            self._head_source = os.pread(fd, HEAD_BYTES, 0)
        unread = max(size - self.offset - len(data), 0)
        return TailRead(data, self.offset, event, more=unread > 0, unread=unread)

    def _fingerprint_changed(self, fd: int) -> bool:
        """Whether the first bytes or the bytes before the offset are no longer those read."""
        if self._head and os.pread(fd, len(self._head), 0) != self._head:
            return True
        return bool(self._tail) and os.pread(fd, len(self._tail), self.offset - len(self._tail)) != self._tail

    def _skip_hole(self, fd: int, size: int) -> None:
        if _SEEK_DATA is None:
            return
        try:
            data_at = os.lseek(fd, self.offset, _SEEK_DATA)
        except OSError:
            return  # no data after the offset (a hole at the end may yet be written), or unsupported
        if self.offset < data_at < size:
            self._tail = b"\0" * min(TAIL_BYTES, data_at - self.offset)
            self._sum = None  # the zeros skipped are not summed
            self.offset = data_at

    def _restart(self, ident: tuple[int, int] | None) -> None:
        self._ident = ident
        self.offset = 0
        self._head = b""
        self._head_source = b""
        self._tail = b""
        self._sum = xxhash.xxh3_64()
        self._last_data, self._last_used = b"", 0

    def _extends(self, fd: int, size: int) -> bool:
        """Whether the open file starts with exactly the bytes consumed so far."""
        if self._sum is None or size < self.offset or not self.offset:
            return False
        if self._fingerprint_changed(fd):
            return False
        found, at = xxhash.xxh3_64(), 0
        while at < self.offset:
            block = os.pread(fd, min(CHECK_BLOCK, self.offset - at), at)
            if not block:
                return False
            found.update(block)
            at += len(block)
        return found.intdigest() == self._sum.intdigest()

    def _path_gone(self) -> TailRead:
        """Nothing at the path: drain the file if it was only moved, then say it is gone."""
        if self._missing:
            return TailRead(b"", self.offset)
        if self._ident is not None and self._drain_path is None:
            moved = self._find_moved(self._ident)
            if moved is not None:
                # Rotated, and the new file is not there yet: read the old one to its end.
                moved_to, rewritten = moved
                self._start_drain(moved_to, self._ident, rewritten)
                self._pending_event = SegmentEvent("rotated", f"moved to {os.path.basename(moved_to)}")
                self._restart(None)
                drained = self._drain()
                if drained is not None:
                    return drained
        self._missing = True
        self._last_stat = None
        _PINS.release(id(self))  # a deleted file's space is freed
        return TailRead(b"", self.offset, SegmentEvent("deleted", "the file is gone"))

    def _find_moved(self, ident: tuple[int, int]) -> tuple[str, bool] | None:
        """Where the file we were reading went, if it was moved within its folder, and whether
        its bytes before the offset changed since they were read (rewritten, then moved).

        A match must have the same device and inode, and the same first bytes unless this
        tailer pins the file: a freed inode number is soon given to another file, whose bytes
        are not this log's, but one held open is no other file's (Lightning's CSVLogger
        rewrites ``metrics.csv`` under a wider header, and logrotate may move it next).
        """
        folder = os.path.dirname(self.path) or "."
        pinned = _PINS.holds_file(id(self), ident)
        try:
            with os.scandir(folder) as entries:
                for entry in entries:
                    try:
                        if entry.inode() != ident[1] or entry.path == self.path:
                            continue
                        if not entry.is_file(follow_symlinks=False):
                            continue
                        if entry.stat(follow_symlinks=False).st_dev != ident[0]:
                            continue
                        fd = os.open(entry.path, OPEN_FLAGS)
                        try:
                            head_kept = not self._head or os.pread(fd, len(self._head), 0) == self._head
                            if not head_kept and not pinned:
                                continue
                            return entry.path, not head_kept or self._fingerprint_changed(fd)
                        finally:
                            os.close(fd)
                    except OSError:
                        continue
        except OSError:
            return None
        return None

    def _start_drain(self, path: str, ident: tuple[int, int], rewritten: bool = False) -> None:
        """Read the rotated-away file at ``path`` on from the offset; from its start, as a rewrite
        (which the reader checks against what it read), when its bytes before the offset changed."""
        self._drain_path, self._drain_ident = path, ident
        self._drain_offset = 0 if rewritten else self.offset
        self._drain_offered = None
        self._drain_event = SegmentEvent("replaced", "rewritten in place, then moved away") if rewritten else None

    def _drain(self) -> TailRead | None:
        """Unread bytes of the rotated-away file, or None once it is exhausted."""
        path = self._drain_path
        assert path is not None
        if self._drain_offered == self._drain_offset:
            # The last chunk was not used at all: it never will be. Stop draining.
            self._drain_path = None
            return None
        data = b""
        capped = False
        unread = 0
        try:
            fd = os.open(path, OPEN_FLAGS)
        except OSError:
            fd = None
        if fd is not None:
            try:
                st = os.fstat(fd)
                if (st.st_dev, st.st_ino) == self._drain_ident and stat_module.S_ISREG(st.st_mode):
                    want = min(max(st.st_size - self._drain_offset, 0), self.max_read)
                    data = os.pread(fd, want, self._drain_offset) if want else b""
                    unread = max(st.st_size - self._drain_offset - len(data), 0)
                    capped = unread > 0
            except OSError:
                data = b""
            finally:
                os.close(fd)
        if not data:
            self._drain_path, self._drain_event = None, None
            return None
        self._reading_drain = True
        self._drain_offered = self._drain_offset
        event, self._drain_event = self._drain_event, None
        return TailRead(data, self._drain_offset, event, final=not capped, more=True, unread=unread)


def moved_path(path: str, old: str, new: str) -> str:
    """``path`` after the folder ``old`` it is in (at any depth) was renamed to ``new``."""
    if path == old:
        return new
    if path.startswith(old.rstrip(os.sep) + os.sep):
        return new.rstrip(os.sep) + path[len(old.rstrip(os.sep)):]
    return path
