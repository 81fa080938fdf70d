"""A run's files on disk, read incrementally.

A source turns what changed on disk into an ordered list of items: parsed
:class:`Batch` objects, :class:`SegmentEvent` discontinuities and
:class:`Notice` messages. Sources do no storage and touch no UI; the engine
hands their items to the store.
"""

from __future__ import annotations

import os
import re
import stat as stat_module
from typing import Protocol, Union

from tuiloss.core.formats.base import DocumentParser, LineParser
from tuiloss.core.model import Batch, Notice, SegmentEvent
from tuiloss.core.tail import DEFAULT_MAX_READ, OPEN_FLAGS, TailError, Tailer

Item = Union[Batch, SegmentEvent, Notice]

MAX_LINE = 1024 * 1024  # longer lines are skipped without being held in memory
MAX_DOCUMENT = 512 * 1024 * 1024
_BINARY = re.compile(rb"[\x00-\x08\x0e-\x1f\x7f]")  # control bytes plain text does not hold


class Source(Protocol):
    """The interface the engine drives."""

    def paths(self) -> list[str]:
        """Files this source reads (for the watcher)."""

    def changed(self) -> bool:
        """Cheap check: could :meth:`read` return something?"""

    def read(self) -> tuple[list[Item], bool]:
        """Read what is new. Returns the items and whether more is pending."""


class LineSource:
    """An append-only text log, parsed line by line."""

    def __init__(self, path: str, parser: LineParser, max_read: int | None = None) -> None:
        self.path = path
        self.parser = parser
        # A read must be able to hold a whole line of the longest length we accept.
        self.tailer = Tailer(path, max_read=max(max_read or DEFAULT_MAX_READ, 2 * MAX_LINE), skip_holes=True)
        self.line_no = 1  # number of the next line
        self._skipping_long = False
        self._error: str | None = None

    def paths(self) -> list[str]:
        return [self.path]

    def changed(self) -> bool:
        return self.tailer.changed()

    def read(self) -> tuple[list[Item], bool]:
        items: list[Item] = []
        try:
            chunk = self.tailer.read()
        except TailError as exc:
            message = str(exc)
            if message != self._error:
                self._error = message
                items.append(Notice("error", f"cannot read {self.path}: {message}"))
            return items, False
        if self._error is not None:
            self._error = None
            items.append(Notice("info", f"{self.path} is readable again"))
        if chunk.event is not None:
            items.append(chunk.event)
            if chunk.event.reason == "deleted":
                items.append(Notice("warning", f"{self.path} was deleted; its points are kept"))
                return items, False
            self.parser.restart()
            self.line_no = 1
            self._skipping_long = False
        data = chunk.data
        if not data:
            self._rest(chunk.more)
            return items, chunk.more
        batch = Batch()
        consumed = 0
        if self._skipping_long:
            newline = data.find(b"\n")
            if newline < 0:
                self.tailer.consume(len(data))
                return items, chunk.more
            consumed = newline + 1
            self._skipping_long = False
            self.line_no += 1
        end = data.rfind(b"\n") + 1
        if chunk.final and end < len(data):
            data, end = data + b"\n", len(data) + 1
        if end <= consumed:
            # No complete line: a partial line waits, unless it is too long to hold.
            if len(data) - consumed >= MAX_LINE:
                batch.skip("line longer than 1 MiB", self.line_no)
                self._skipping_long = True
                self.tailer.consume(len(chunk.data))
                items.append(batch)
            else:
                self.tailer.consume(consumed)
            return items, chunk.more
        parsed = self._parse(data, consumed, end, self.line_no, batch)
        parsed.backlog = (chunk.unread + max(len(chunk.data) - end, 0)) / (end - consumed)
        items.append(parsed)
        self.line_no += data.count(b"\n", consumed, end) if parsed.lines is None else parsed.lines
        self.tailer.consume(min(end, len(chunk.data)))
        self._rest(chunk.more)
        return items, chunk.more

    def _rest(self, more: bool) -> None:
        """Tell a parser that keeps things for big reads that the file is read to its end."""
        rest = getattr(self.parser, "rest", None)
        if rest is not None and not more:
            rest()

    def _parse(self, data: bytes, start: int, end: int, first_line: int, batch: Batch) -> Batch:
        """Parse the whole lines ``data[start:end]``, blanking out lines no parser should see."""
        feed_range = getattr(self.parser, "feed_range", None)
        if data.find(b"\x00", start, end) >= 0 or _has_long_line(data, start, end):
            parsed = self.parser.feed(_drop_bad_lines(data[start:end], first_line, batch), first_line)
        elif feed_range is not None:
            parsed = feed_range(data, start, end, first_line)  # no copy of a whole read
        else:
            parsed = self.parser.feed(data[start:end], first_line)
        if batch.skipped:
            dropped = sum(batch.skipped.values())
            parsed.unmatched = max(parsed.unmatched - dropped, 0)
            parsed.skipped.update(batch.skipped)
            parsed.examples[:0] = batch.examples
        return parsed


def _has_long_line(body: bytes, start: int = 0, end: int | None = None) -> bool:
    """Whether a line of ``body[start:end]`` (whole lines) is longer than ``MAX_LINE`` bytes.

    Jumps from newline to newline at most ``MAX_LINE`` bytes apart: a handful of
    C-level searches per chunk, since this runs on every chunk.
    """
    end = len(body) if end is None else end
    while end - start > MAX_LINE + 1:
        newline = body.rfind(b"\n", start, start + MAX_LINE + 1)
        if newline < 0:
            return True
        start = newline + 1
    return False


def _drop_bad_lines(body: bytes, first_line: int, batch: Batch) -> bytes:
    """Blank out lines holding NUL bytes or over 1 MiB, counting them.

    Lines are replaced by empty lines, not removed, so line numbers stay right.
    NUL bytes before a line of plain text are padding, not data: a file truncated
    under a writer that kept its offset is zero-filled up to the writer's next
    line, which is read.
    """
    kept = []
    for number, line in enumerate(body.split(b"\n")[:-1], start=first_line):
        if b"\x00" in line:
            unpadded = line.lstrip(b"\x00")
            if not unpadded or _BINARY.search(unpadded):
                batch.skip("binary data", number)
                kept.append(b"")
                continue
            line = unpadded
        if len(line) > MAX_LINE:
            batch.skip("line longer than 1 MiB", number)
            kept.append(b"")
        else:
            kept.append(line)
    kept.append(b"")
    return b"\n".join(kept)


class DocumentSource:
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
