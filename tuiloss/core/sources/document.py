"""A file rewritten whole at each save (HF ``trainer_state.json``), re-read when it changes."""

from __future__ import annotations

import os
import stat as stat_module
import zlib

from tuiloss.core.formats.base import DocumentParser
from tuiloss.core.model import Notice, SegmentEvent
from tuiloss.core.sources.base import Item, Source
from tuiloss.core.tail import OPEN_FLAGS, moved_path

MAX_DOCUMENT = 512 * 1024 * 1024


class DocumentSource(Source):
    """A file rewritten whole at each save; re-read when it changes."""

    def __init__(self, path: str, parser: DocumentParser) -> None:
        self.path = path
        self.parser = parser
        self._seen: tuple[int, int, int] | None = None
        self._read_as: tuple[int, int] | None = None  # device and CRC-32 of the version read
        self._unparsed: tuple[int, int, int] | None = None  # a version that was not valid (yet)
        self._error: str | None = None
        self._deleted = False

    def paths(self) -> list[str]:
        return [self.path]

    def relocate(self, old: str, new: str) -> bool:
        """Read on at the place ``old`` moved to if the file there is the one read: the same
        file (device and inode) holding the very bytes read (a freed inode may be another's)."""
        if self._seen is None or self._read_as is None or self._deleted:
            return False
        path = moved_path(self.path, old, new)
        try:
            fd = os.open(path, OPEN_FLAGS)
        except OSError:
            return False
        try:
            with os.fdopen(fd, "rb") as handle:
                st = os.fstat(handle.fileno())
                if not stat_module.S_ISREG(st.st_mode) or (st.st_dev, st.st_ino) != (self._read_as[0], self._seen[0]):
                    return False
                if st.st_size != self._seen[1] or zlib.crc32(handle.read(st.st_size + 1)) != self._read_as[1]:
                    return False  # written since: what it holds is told by a read, not taken as moved
        except OSError:
            return False
        self.path = path
        return True

    def changed(self) -> bool:
        try:
            st = os.stat(self.path)
        except OSError:
            return not self._deleted
        key = (st.st_ino, st.st_size, st.st_mtime_ns)
        return key != self._seen and key != self._unparsed

    def read(self) -> tuple[list[Item], bool]:
        items: list[Item] = []
        try:
            fd = os.open(self.path, OPEN_FLAGS)
        except FileNotFoundError:
            if not self._deleted:
                self._deleted = True
                items.append(SegmentEvent("deleted", "the file is gone"))
                items.append(Notice("warning", f"{self.path} was deleted; its points are kept"))
            return items, False
        except OSError as exc:
            return self._failed(items, exc.strerror or str(exc)), False
        try:
            with os.fdopen(fd, "rb") as handle:
                st = os.fstat(handle.fileno())
                key = (st.st_ino, st.st_size, st.st_mtime_ns)
                if not stat_module.S_ISREG(st.st_mode):
                    return self._failed(items, "not a regular file"), False
                if key == self._seen or key == self._unparsed:
                    return items, False
                if st.st_size > MAX_DOCUMENT:
                    items.append(Notice("error", f"{self.path} is larger than 512 MiB; not read"))
                    self._seen = key
                    return items, False
                data = handle.read(MAX_DOCUMENT + 1)
        except OSError as exc:
            return self._failed(items, exc.strerror or str(exc)), False
        self._take(data, key, st.st_dev, items)
        return items, False

    def _take(self, data: bytes, key: tuple, device: int, items: list[Item]) -> None:
        """Parse the version ``key`` of the document (its bytes ``data``) into ``items``."""
        self._deleted = False
        self._error = None
        batch, rewritten = self.parser.parse(data)
        if batch is None:  # half-written: try again when it changes
            self._unparsed = key
            return
        self._seen = key
        self._read_as = (device, zlib.crc32(data))
        if rewritten:
            items.append(SegmentEvent("replaced", "history was rewritten"))
        items.append(batch)

    def _failed(self, items: list[Item], message: str) -> list[Item]:
        if message != self._error:
            self._error = message
            items.append(Notice("error", f"cannot read {self.path}: {message}"))
        return items
