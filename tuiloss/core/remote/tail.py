"""Read what is new in a remote file from a remembered offset: the local tailer's semantics over fsspec.

A :class:`RemoteTailer` has :class:`~tuiloss.core.tail.Tailer`'s interface, so the line
source reads a remote log exactly as a local one. Its facts come from its root's last
listing (:class:`~tuiloss.core.remote.tree.RemoteTree`): the size, and the ETag or mtime.
A file grown since the last read costs one ranged read, which starts a few bytes before
the offset: those bytes, compared with the ones consumed there, tell more of the same
file from one rewritten meanwhile. There is no inode over S3 or SFTP, and an object store
changes a file only by writing a new object, so a truncation cannot be told from a
replacement: both are said "replaced" (with what was seen), and read again from 0:

* smaller than the offset: replaced, unless a rotated copy beside it (``train.log.1``,
  in the listing) ends with the bytes read last, which is then drained first (rotated);
* grown, but the bytes before the offset changed: replaced (truncated and written past
  the old size, or a longer file renamed over it);
* same size, new ETag or mtime: a same-size rewrite when its last bytes or first bytes
  differ (two small ranged reads), else a touch;
* gone from the listing: deleted (or rotated away, as above); back again: recreated, or
  the same file read on when it starts with what was read (tested on the bytes before the offset).

Only whole units are consumed (the source's :meth:`consume`); a partial line waits.
"""

from __future__ import annotations

import posixpath
import time
import zlib

from tuiloss.core.model import SegmentEvent
from tuiloss.core.remote.fs import Entry, RemoteError
from tuiloss.core.remote.tree import RemoteTree
from tuiloss.core.tail import DEFAULT_MAX_READ, HEAD_BYTES, Tailer, TailError, TailRead

#: Bytes before the offset re-read with every read, as its fingerprint.
TAIL_BYTES = 64
#: A file without an ETag whose mtime is this close to the last look at its bytes has its first
#: and last bytes checked at each poll: SFTP's mtimes are whole seconds (a rewrite in the second
#: of the last read changes nothing listed), and the server's clock may be a little off ours.
UNSURE_SECONDS = 2.0


class RemoteTailer:
    """Incremental reader of one remote file (the :class:`~tuiloss.core.tail.Tailer` interface)."""

    pin = False

    def __init__(self, tree: RemoteTree, fs_path: str, max_read: int = DEFAULT_MAX_READ) -> None:
        self.tree = tree
        self.fs_path = fs_path
        self.path = tree.url.url_of(fs_path)
        self.max_read = max_read
        self.offset = 0
        self.error: str | None = None
        self._seen: Entry | None = None  # the listing's entry at the last read
        self._head = b""
        self._tail = b""
        self._missing = False
        self._known = False  # read at least once
        self._pending_event: SegmentEvent | None = None
        self._last_data = b""
        self._last_used = 0
        self._offered_end = 0
        # A rotated copy still to drain: its fs path, where to read from, its listed size.
        self._drain: list | None = None
        self._reading_drain = False
        self._looked: float | None = None  # wall-clock time the bytes were last read or checked

    @property
    def exists(self) -> bool:
        return not self._missing

    def holds(self, path: str) -> bool:
        return False  # a remote run is never found moved with its folder

    def changed(self) -> bool:
        """From the last listing, no request: could a read return something new?"""
        if self._drain is not None or self._pending_event is not None:
            return True
        entry = self.tree.entries.get(self.fs_path)
        if entry is None:
            return not self._missing and self.tree.listed
        return (entry != self._seen or entry.size > max(self.offset, self._offered_end) or self._missing
                or self._unsure(entry))

    def _unsure(self, entry: Entry) -> bool:
        """Whether a rewrite of the same size could hide behind an unchanged listing: a file with no
        ETag whose mtime (whole seconds over SFTP, from the server's clock) is within
        :data:`UNSURE_SECONDS` of the last look at its bytes."""
        return (entry.token.startswith("|") and entry.mtime is not None and self._looked is not None
                and entry.mtime >= self._looked - UNSURE_SECONDS and entry.size == self.offset and self.offset > 0)

    def listed_at(self) -> float | None:
        """When (the root's clock) the listing this file's size comes from was asked for: a last line
        without a newline is known unchanged only by a listing made once its hold is over."""
        return self.tree.listed_at

    read_noting = Tailer.read_noting  # a failure said once as an error notice, and its end

    def consume(self, n: int) -> None:
        if n <= 0:
            return
        if self._reading_drain:
            assert self._drain is not None
            self._drain[1] += n
            return
        used = self._last_data[self._last_used : self._last_used + n]
        self._last_used += n
        self._tail = (self._tail + used)[-TAIL_BYTES:]
        if self.offset < HEAD_BYTES:
            self._head = (self._head + used)[:HEAD_BYTES]
        self.offset += n

    # -- rotated copies, read before the log as its earlier segments (see LineSource) ----------

    def copies(self) -> list[str]:
        """The rotated copies of this file beside it (``train.log.1``), oldest first, from a listing of its
        folder made now.

        The line source asks right after the file's first read, so that a copy made before the bytes
        read were written is found (logrotate's copytruncate between the scan that found the log and its
        first read). The root's last listing is older than that read: its folder is listed again (one
        request per log, once).
        """
        from tuiloss.core.discover import _age_rank, rotated_base

        folder, name = posixpath.split(self.fs_path)
        self.tree.relist(folder)
        found = []
        for path, entry in self.tree.entries.items():
            other = posixpath.basename(path)
            if posixpath.dirname(path) == folder and other != name and rotated_base(other) == name:
                found.append((entry.mtime or 0.0, _age_rank(other, name), path))
        return [path for _, _, path in sorted(found)]

    def starts_with_copy(self, chunk: TailRead, path: str) -> bool:
        """Whether the copy at ``path`` holds this file's own bytes, whose first ones are ``chunk``
        (one ranged read of the copy, as long as the chunk): the file starts with every byte of it (a
        copy made and the file not emptied yet), or the file is the start of a longer copy listed no
        earlier than it. An uploader PUTs a rotated copy before the log it emptied, so a listing between
        the two shows the log's older version beside a copy that goes on from it: the rest is drained
        from the copy once the log is listed emptied (see :meth:`_rotated`), and nothing is read twice.
        """
        entry = self.tree.entries.get(path)
        if entry is None or path.endswith((".gz", ".zst")):
            return False
        if entry.size > len(chunk.data) + chunk.unread:
            log = self.tree.entries.get(self.fs_path)
            if (chunk.unread or b"\n" not in chunk.data or log is None
                    or (log.mtime or 0.0) > (entry.mtime or 0.0)):
                return False  # an empty log, or one written after the copy: the copy is an earlier part
        size = min(entry.size, len(chunk.data))
        try:
            return self.tree.remote.read(path, 0, size) == chunk.data[:size] if size else True
        except (OSError, RemoteError):
            return False

    def copy_chunks(self, path: str, size: int = 4 * 1024 * 1024):
        """The bytes of a rotated copy, read once in ranged reads (a ``.gz`` one decompressed)."""
        entry = self.tree.entries.get(path)
        if entry is None:
            raise OSError("gone")
        if path.endswith(".zst"):
            raise ValueError("a remote .zst copy is not read")
        inflate = zlib.decompressobj(wbits=31) if path.endswith(".gz") else None
        at = 0
        while at < entry.size:
            try:
                block = self.tree.remote.read(path, at, min(entry.size, at + size))
            except RemoteError as exc:
                raise OSError(str(exc)) from None
            if not block:
                break
            at += len(block)
            yield inflate.decompress(block) if inflate is not None else block
        if inflate is not None:
            yield inflate.flush()

    # -- reading -------------------------------------------------------------------

    def read(self) -> TailRead:
        self._reading_drain = False
        self._last_data, self._last_used = b"", 0
        self._relisted = False
        try:
            return self._read()
        except RemoteError as exc:
            raise TailError(str(exc).replace(f"{self.tree.url.shown}: ", "", 1)) from None

    def _read(self) -> TailRead:
        if self._drain is not None:
            drained = self._read_drain()
            if drained is not None:
                return drained
        entry = self.tree.entries.get(self.fs_path)
        if entry is None:
            return self._gone()
        event, self._pending_event = self._pending_event, None
        if self._missing:
            self._missing = False
            if self._known and self.offset and entry.size >= self.offset and self._same_tail(entry):
                pass  # deleted and written again with what was read and more: read on
            else:
                if self._known or event is not None:
                    event = event or SegmentEvent("recreated", "the file was deleted and created again")
                self._restart()
        elif self._seen is not None and self._known:
            if entry.size < self.offset:
                rotated = self._rotated(entry) or self._retry(event)
                if rotated is not None:
                    return rotated
                event = SegmentEvent("replaced", f"shrank from {self.offset} to {entry.size} bytes")
                self._restart()
            elif entry.size == self.offset and self.offset and (entry.token != self._seen.token or self._unsure(entry)):
                self._looked = time.time()
                if not self._same_tail(entry) or not self._same_head(entry):
                    rotated = self._rotated(entry) or self._retry(event)
                    if rotated is not None:
                        return rotated
                    event = SegmentEvent("replaced", "rewritten in place, same size")
                    self._restart()
        self._seen = entry
        if entry.size > self.offset and self._known or not self._known:
            return self._read_on(entry, event)
        return TailRead(b"", self.offset, event)

    def _read_on(self, entry: Entry, event: SegmentEvent | None) -> TailRead:
        """One ranged read from a few bytes before the offset to the listed size (capped)."""
        keep = len(self._tail) if self.offset else 0
        start = self.offset - keep
        end = min(entry.size, self.offset + self.max_read)
        try:
            data = self.tree.remote.read(self.fs_path, start, end) if end > start else b""
        except FileNotFoundError:
            self._seen = None
            return self._gone()
        self._known = True
        self._looked = time.time()
        if keep and len(data) < keep:
            again = self._retry(event)  # shorter than listed: changed since
            if again is not None:
                return again
            self._seen = None  # the next listing tells
            return TailRead(b"", self.offset, event)
        if keep and data[:keep] != self._tail:
            # The bytes before the offset are no longer those read: the file was rewritten
            # (truncated and written past the old size, or replaced by a longer one).
            rotated = self._rotated(entry) or self._retry(event)
            if rotated is not None:
                return rotated
            self._restart()
            event = event or SegmentEvent("replaced", "rewritten: the bytes read before changed")
            self._seen = entry
            return self._read_on(entry, event)
        short = len(data) < end - start  # the file is shorter than listed: it changed since
        data = data[keep:]
        if data:
            self.tree.mark_active()
        self._last_data, self._last_used = data, 0
        self._offered_end = self.offset + len(data)
        if short:
            self._seen = None  # looked at again after the next listing, which tells what it is now
            return TailRead(data, self.offset, event)
        unread = max(entry.size - self.offset - len(data), 0)
        return TailRead(data, self.offset, event, more=unread > 0, unread=unread)

    def _retry(self, event: SegmentEvent | None) -> TailRead | None:
        """The file's bytes contradict the listing (it shrank, changed or vanished): list its folder
        again and read with what it shows now, once per read; None when already done. A listing made
        between a rename and the write of what replaced it (logrotate, an atomic save) shows the old
        size and no rotated copy yet: the new one tells a rotation from a rewrite."""
        if self._relisted:
            return None
        self._relisted = True
        self._pending_event = event
        self.tree.relist(posixpath.dirname(self.fs_path))
        return self._read()

    def _same_tail(self, entry: Entry) -> bool:
        if not self._tail or entry.size < self.offset:
            return not self._tail
        try:
            return self.tree.remote.read(self.fs_path, self.offset - len(self._tail), self.offset) == self._tail
        except FileNotFoundError:
            return False

    def _same_head(self, entry: Entry) -> bool:
        if not self._head or len(self._head) >= self.offset - len(self._tail):
            return True  # the tail already covers it
        try:
            return self.tree.remote.read(self.fs_path, 0, len(self._head)) == self._head
        except FileNotFoundError:
            return False

    def _gone(self) -> TailRead:
        """Not in the listing: drain a rotated copy if it went there, then say it is gone."""
        if self._missing:
            return TailRead(b"", self.offset)
        if self._known:
            rotated = self._rotated(None) or self._retry(None)
            if rotated is not None:
                return rotated
        self._missing = True
        self._seen = None
        return TailRead(b"", self.offset, SegmentEvent("deleted", "the file is gone"))

    def _rotated(self, entry: Entry | None) -> TailRead | None:
        """The file read so far renamed to a rotated copy beside it: its unread rest, or None."""
        if not self.offset or not self._tail:
            return None
        from tuiloss.core.discover import rotated_base

        folder, name = posixpath.split(self.fs_path)
        for path, other in sorted(self.tree.entries.items()):
            if path == self.fs_path or posixpath.dirname(path) != folder or other.size < self.offset:
                continue
            if rotated_base(posixpath.basename(path)) != name:
                continue
            try:
                if self.tree.remote.read(path, self.offset - len(self._tail), self.offset) != self._tail:
                    continue
            except (FileNotFoundError, RemoteError):
                continue
            self._drain = [path, self.offset, other.size]
            rotated = SegmentEvent("rotated", f"moved to {posixpath.basename(path)}")
            self._restart()
            self._seen = entry
            drained = self._read_drain()
            if drained is None:
                return TailRead(b"", 0, rotated, more=True)
            self._pending_event = rotated
            return drained
        return None

    def _read_drain(self) -> TailRead | None:
        assert self._drain is not None
        path, at, size = self._drain[:3]
        if len(self._drain) > 3 and self._drain[3] == at:
            self._drain = None  # the last chunk was not used at all: it never will be
            return None
        end = min(size, at + self.max_read)
        try:
            data = self.tree.remote.read(path, at, end) if end > at else b""
        except (FileNotFoundError, RemoteError):
            data = b""
        if not data:
            self._drain = None
            return None
        del self._drain[3:]
        self._drain.append(at)
        self._reading_drain = True
        unread = max(size - at - len(data), 0) if len(data) == end - at else 0  # short: the copy ends there
        return TailRead(data, at, None, final=unread == 0, more=True, unread=unread)

    def _restart(self) -> None:
        self.offset = 0
        self._head = b""
        self._tail = b""
        self._offered_end = 0
        self._last_data, self._last_used = b"", 0
