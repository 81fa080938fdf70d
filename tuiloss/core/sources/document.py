"""A file rewritten whole at each save (HF ``trainer_state.json``), re-read when it changes."""

from __future__ import annotations

import os
import stat as stat_module

from tuiloss.core.formats.base import DocumentParser
from tuiloss.core.model import Notice, SegmentEvent
from tuiloss.core.sources.base import Item, Source
from tuiloss.core.tail import OPEN_FLAGS

MAX_DOCUMENT = 512 * 1024 * 1024


class DocumentSource(Source):
    """A file rewritten whole at each save; re-read when it changes."""

    def __init__(self, path: str, parser: DocumentParser) -> None:
        self.path = path
        self.parser = parser
        self._seen: tuple[int, int, int] | None = None
        self._unparsed: tuple[int, int, int] | None = None  # a version that was not valid (yet)
        self._error: str | None = None
        self._deleted = False

    def paths(self) -> list[str]:
        return [self.path]

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
        self._deleted = False
        self._error = None
        batch, rewritten = self.parser.parse(data)
        if batch is None:  # half-written: try again when it changes
            self._unparsed = key
            return items, False
        self._seen = key
        if rewritten:
            items.append(SegmentEvent("replaced", "history was rewritten"))
        items.append(batch)
        return items, False

    def _failed(self, items: list[Item], message: str) -> list[Item]:
        if message != self._error:
            self._error = message
            items.append(Notice("error", f"cannot read {self.path}: {message}"))
        return items
