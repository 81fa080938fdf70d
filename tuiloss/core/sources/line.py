"""An append-only text log, tailed and parsed line by line.

Reads hand whole lines to a :class:`~tuiloss.core.formats.base.LineParser`; a
partial last line waits for the rest of it. Lines holding NUL bytes or longer
than :data:`MAX_LINE` are blanked out before the parser sees them and counted.

When the file is rewritten (truncated, replaced, rewritten in place) it is
re-read from its start, and the points it yields are checked against a running
hash of every point read so far, metric by metric. A rewrite that keeps them all
(Lightning's CSVLogger rewriting ``metrics.csv`` with a wider header, an
atomic save of a longer file) is a continuation: only the points past them are
passed on, and no new segment starts. Anything else is the segment event the
tailer saw, with every point of the new content. A re-read that finds fewer
points than before waits (as a last line does, below) in case the rewrite is
still under way.

Rotated copies of the log (``train.log.1``, ``metrics.csv.2.gz``) are read first,
oldest first, each an earlier segment. They are looked for right after the log's
first read, so a copy made before the bytes read were written (logrotate's
copytruncate between the scan that found the log and its first read) is found,
and a copy the log starts with (not emptied yet, a backup) is not read twice.

A last line without a newline may be a line still being written. ``report``
(``hold=0``) reads it as it is; the viewer holds it back until the file has
not changed for :data:`HOLD_SECONDS`, says so once, then reads it. Should the
writer finish that line later, the rest of it is skipped and counted.
"""

from __future__ import annotations

import os
import re
import stat as stat_module
import time
import zlib
from collections import Counter
from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import xxhash

from tuiloss.core.formats.base import LineParser
from tuiloss.core.formats.base import PatternTooSlow
from tuiloss.core.model import Batch, Notice, SegmentEvent
from tuiloss.core.sources.base import Item, Source
from tuiloss.core.tail import DEFAULT_MAX_READ, HOLD_SECONDS, OPEN_FLAGS, Tailer, TailRead, moved_path

MAX_LINE = 1024 * 1024  # longer lines are skipped without being held in memory
#: Seconds a last line without a newline must stay unchanged before the viewer reads it.
_BOM = b"\xef\xbb\xbf"
_BINARY = re.compile(rb"[\x00-\x08\x0e-\x1f\x7f]")  # control bytes plain text does not hold


#: Segment events after which the file is re-read from 0 and checked against what was read.
_REWRITES = ("truncated", "replaced", "recreated")


@dataclass(slots=True)
class _Digest:
    """Points read from the current content of the file: per metric, a count and hashes (xxh3)."""

    counts: dict[str, int] = field(default_factory=dict)
    steps: dict[str, xxhash.xxh3_64] = field(default_factory=dict)
    values: dict[str, xxhash.xxh3_64] = field(default_factory=dict)
    skipped: Counter = field(default_factory=Counter)
    unmatched: int = 0
    first: dict[str, tuple[list[float], list[float]]] = field(default_factory=dict)  # the first points

    FIRST = 8

    def add(self, batch: Batch) -> None:
        # the metrics of a row share its steps (and, read alike, their hash)
        shared: dict[tuple[int, int | None], xxhash.xxh3_64] = {}
        for metric, (steps, values) in batch.series.items():
            kept = self.first.setdefault(metric, ([], []))
            if len(kept[0]) < self.FIRST:
                room = self.FIRST - len(kept[0])
                kept[0].extend(steps[:room].tolist())
                kept[1].extend(values[:room].tolist())
            self.counts[metric] = self.counts.get(metric, 0) + len(steps)
            before = self.steps.get(metric)
            key = (id(steps), before.intdigest() if before is not None else None)
            if key not in shared:
                shared[key] = summed = before.copy() if before is not None else xxhash.xxh3_64()
                summed.update(_data(steps))
            self.steps[metric] = shared[key].copy()
            self.values.setdefault(metric, xxhash.xxh3_64()).update(_data(values))
        self.skipped.update(batch.skipped)
        self.unmatched += batch.unmatched

    def covered_by(self, batch: Batch) -> bool:
        """Whether ``batch`` holds at least as many points as this digest, metric by metric."""
        return all(len(batch.series.get(m, ((), ()))[0]) >= n for m, n in self.counts.items() if n)

    def differs_from(self, batch: Batch) -> bool:
        """Whether ``batch``, which may not hold all the points yet, already starts otherwise."""
        if batch.series and not any(metric in batch.series for metric in self.counts):
            return True  # points, but of none of the metrics read before
        for metric, (steps, values) in self.first.items():
            series = batch.series.get(metric)
            if series is None:
                continue
            n = min(len(steps), len(series[0]))
            got_steps, got_values = series[0][:n].tolist(), series[1][:n].tolist()
            if not (np.array_equal(got_steps, steps[:n], equal_nan=True)
                    and np.array_equal(got_values, values[:n], equal_nan=True)):
                return True
        return False

    def is_prefix_of(self, batch: Batch) -> bool:
        """Whether ``batch`` starts with exactly the points summed here, metric by metric."""
        for metric, n in self.counts.items():
            if not n:
                continue
            series = batch.series.get(metric)
            if series is None or len(series[0]) < n:
                return False
            if (xxhash.xxh3_64_intdigest(_data(series[0][:n])) != self.steps[metric].intdigest()
                    or xxhash.xxh3_64_intdigest(_data(series[1][:n])) != self.values[metric].intdigest()):
                return False
        return True

    def rest_of(self, batch: Batch) -> Batch:
        """``batch`` without the points (and skipped lines) summed here."""
        rest = Batch(lines=None, backlog=batch.backlog, meta=batch.meta)
        for group in batch.row_groups():
            cut = {m: self.counts.get(m, 0) for m in group.metrics}
            if len(set(cut.values())) == 1:
                n = next(iter(cut.values()))
                if len(group.steps) > n:
                    steps = group.steps[n:]
                    rest.add_rows(steps, {m: batch.series[m][1][n:] for m in group.metrics})
                continue
            for metric in group.metrics:
                n = cut[metric]
                steps, values = batch.series[metric]
                rest.add(metric, steps[n:], values[n:])
        rest.skipped = batch.skipped - self.skipped
        rest.unmatched = max(batch.unmatched - self.unmatched, 0)
        seen = sum(self.skipped.values())
        rest.examples = batch.examples[seen:] if seen < len(batch.examples) else []
        return rest


def _data(values: np.ndarray) -> memoryview:
    """The bytes of ``values`` as float64s, for a hash of the points."""
    return np.ascontiguousarray(values, dtype=np.float64).data


class LineSource(Source):
    """An append-only text log, parsed line by line."""

    def __init__(self, path: str, parser: LineParser, max_read: int | None = None, *,
                 hold: float = HOLD_SECONDS, copies: Callable[[str], list[str]] | None = None,
                 tailer: Tailer | None = None) -> None:
        self.path = path
        # Finds the rotated copies of the log (train.log.1, metrics.csv.2.gz), oldest first. They
        # are looked for when the log is first read, not when it was found: a copy made between
        # the two (logrotate's copytruncate) holds what the log no longer does, a CSV's header too.
        self.copies = copies
        self._copies_seen: set[str] = set()  # names of the copies read, or found to be the log's own bytes
        self._live_started = copies is None  # the log's first bytes were read after a look for copies
        # copies still to read, oldest first, each an earlier segment of the run
        self.earlier: list[str] = []
        self._earlier_chunks = None
        self._earlier_rest = b""
        self._earlier_started = False
        self.hold = hold  # seconds an unterminated last line waits; 0 reads it at once
        self.clock = time.monotonic
        self.parser = parser
        # A read must be able to hold a whole line of the longest length we accept.
        # A live reader (one that holds a last line back) pins the file between reads, so a
        # replacement is never handed its inode (see tuiloss.core.tail).
        # ``tailer`` is given for a file read otherwise (a remote one: tuiloss.core.remote.tail).
        self.tailer = tailer or Tailer(path, max_read=max(max_read or DEFAULT_MAX_READ, 2 * MAX_LINE),
                                       skip_holes=True, pin=hold > 0)
        self.line_no = 1  # number of the next line
        self._skipping_long = False
        self._not_text: str | None = None  # why the file is no text log, once said
        self._too_slow = False  # the user's pattern took too long on its lines: read no further
        self._digest = _Digest()  # what the current content of the file yielded so far
        # While a rewritten file is re-read: the event, what was read before, what the re-read found.
        self._check: tuple[SegmentEvent, _Digest, Batch] | None = None
        self._held: tuple[int, float] | None = None  # end of the file and when a last line began to wait
        self._held_told = False
        self._took_unterminated = False  # the last line read had no newline: its rest may follow
        self._rest_of_taken = False
        self._check_since = 0.0  # when the re-read of a rewritten file last found points

    def paths(self) -> list[str]:
        return [self.path]

    def relocate(self, old: str, new: str) -> bool:
        """Read on at ``new`` if the file there is this log, moved (its folder renamed)."""
        if not self.tailer.holds(new):
            return False
        self.path = self.tailer.path = new
        self.earlier = [moved_path(path, os.path.dirname(old), os.path.dirname(new)) for path in self.earlier]
        return True

    def changed(self) -> bool:
        if self._too_slow:
            return False
        # copies to read, or the log's first bytes offered before them and still to be read
        return bool(self.earlier) or not self._live_started or self.tailer.changed() or self._held_due()

    def _held_due(self) -> bool:
        if self._check is not None:
            return self.clock() - self._check_since >= self.hold
        return self._held is not None and self._held_long_enough(self._held[1])

    def _held_long_enough(self, since: float) -> bool:
        """Whether the file has been seen unchanged for the hold since ``since``. A remote file is seen
        only through its root's listings (``listed_at``, on the same monotonic clock): a listing asked
        for once the hold is over must show it, as a poll may come late (a slow server, a failed one)."""
        if self.clock() - since < self.hold:
            return False
        listed_at = getattr(self.tailer, "listed_at", None)
        if listed_at is None:
            return True  # a local file, stat-ed at each read
        listed = listed_at()
        return listed is not None and listed - since >= self.hold

    def read(self) -> tuple[list[Item], bool]:
        if self._too_slow:
            return [], False
        try:
            return self._read_checked()
        except PatternTooSlow as exc:
            # Read again, the same lines would take as long: this log is read no further.
            self._too_slow = True
            return [Notice("error", f"{self.path}: --pattern is too slow: {exc}; this log is not read "
                                    "further (its points so far are kept); simplify the pattern")], False

    def _read_checked(self) -> tuple[list[Item], bool]:
        if self.earlier:
            return self._read_earlier(), True
        items, more = self._read()
        if self._check is None:
            for item in items:
                if isinstance(item, Batch):
                    self._digest.add(item)
            return items, more
        event, before, found = self._check
        kept: list[Item] = []
        for k, item in enumerate(items):
            if isinstance(item, Batch):
                found.merge(item)
                found.backlog = item.backlog
            elif isinstance(item, SegmentEvent):
                # the re-read itself was interrupted: what was read before is gone, and what
                # follows the event is read as usual
                self._check = None
                settled = self._settle(event, before, found, kept, continued=False)
                rest = items[k:]
                self._digest = _Digest()  # the file as it is since that event
                for later in rest:
                    if isinstance(later, Batch):
                        self._digest.add(later)
                return settled + rest, more
            else:
                kept.append(item)
        if not before.covered_by(found):
            if any(isinstance(item, Batch) for item in items):
                self._check_since = self.clock()
            if before.differs_from(found):
                self._check = None
                return self._settle(event, before, found, kept, continued=False), more
            if more or self.clock() - self._check_since < self.hold:
                return kept, more  # not enough re-read to tell yet: it may still be being written
        self._check = None
        return self._settle(event, before, found, kept, continued=before.is_prefix_of(found)), more

    def _copies_to_read(self, chunk: TailRead) -> list[str]:
        """The rotated copies not read yet that are earlier parts of the log, oldest first.

        A copy whose bytes the log starts with (a copy made and the log not emptied yet, a
        backup) is the log's own content, read with it: it is not read a second time.
        """
        assert self.copies is not None
        found = []
        for path in self.copies(self.path):
            name = os.path.basename(path)
            if name in self._copies_seen:
                continue
            self._copies_seen.add(name)
            if chunk.offset == 0 and getattr(self.tailer, "starts_with_copy", _starts_with_copy)(chunk, path):
                continue
            found.append(path)
        return found

    def _read_earlier(self) -> list[Item]:
        """The next chunk of the oldest rotated copy not read yet: whole lines, the last one too."""
        items: list[Item] = []
        path = self.earlier[0]
        name = os.path.basename(path)
        if self._earlier_chunks is None:
            if self._earlier_started:
                items.append(SegmentEvent("rotated", f"continued from {name}"))
                self.parser.restart()
                self.line_no = 1
            self._earlier_started = True
            # a remote tailer reads its copies itself (tuiloss.core.remote.tail)
            self._earlier_chunks, self._earlier_rest = getattr(self.tailer, "copy_chunks", _chunks)(path), b""
        try:
            block = next(self._earlier_chunks, None)
        except (OSError, EOFError, ValueError, zlib.error, _Unreadable) as exc:
            items.append(Notice("warning", f"{path}: skipped: {exc}"))
            block, self._earlier_rest = None, b""
        data = self._earlier_rest + (block or b"")
        if block is None:
            self.earlier.pop(0)
            self._earlier_chunks = None
            if data and not data.endswith(b"\n"):
                data += b"\n"  # a finished file: its last line is whole
        end = data.rfind(b"\n") + 1
        self._earlier_rest = data[end:]
        if end:
            parsed = self._parse(data, 0, end, self.line_no, Batch())
            self.line_no += data.count(b"\n", 0, end) if parsed.lines is None else parsed.lines
            items.append(parsed)
        if len(self._earlier_rest) > MAX_LINE:  # no newline for too long: dropped, and counted
            batch = Batch()
            batch.skip("line longer than 1 MiB", self.line_no)
            items.append(batch)
            self._earlier_rest = b""
        if block is None and not self.earlier:  # the live file is next
            items.append(SegmentEvent("rotated", f"continued from {name} in {os.path.basename(self.path)}"))
            self.parser.restart()
            self.line_no = 1
        return items

    def _settle(self, event: SegmentEvent, before: _Digest, found: Batch, notes: list[Item],
                continued: bool) -> list[Item]:
        """End a check of a rewritten file: a continuation, or the event with the new content."""
        if continued:
            rest = before.rest_of(found)
            self._digest = before
            self._digest.add(rest)
            return [*notes, rest] if rest.series or rest.skipped else notes
        self._digest = _Digest()
        self._digest.add(found)
        return [event, *notes, found] if found.series or found.skipped else [event, *notes]

    def _read(self) -> tuple[list[Item], bool]:
        items: list[Item] = []
        chunk = self.tailer.read_noting(items)
        if chunk is None:
            return items, False
        if not self._live_started and chunk.event is None:
            # Looked for after this read, so a copy made before the bytes read were written over
            # is found: it is read first, and these bytes again after it (none is consumed).
            self.earlier = self._copies_to_read(chunk)
            if self.earlier:
                return items, True
            self._live_started = True
        if chunk.event is not None:
            if chunk.event.reason in _REWRITES and self._check is None and self._digest.counts:
                self._check = (chunk.event, self._digest, Batch())
                self._check_since = self.clock()
                self._digest = _Digest()
            else:
                items.append(chunk.event)
            if chunk.event.reason == "deleted":
                items.append(Notice("warning", f"{self.path} was deleted; its points are kept"))
                return items, False
            if chunk.event.reason == "rotated":
                self._digest = _Digest()
            self.parser.restart()
            self.line_no = 1
            self._skipping_long = False
            self._held, self._took_unterminated = None, False
        data = chunk.data
        if chunk.offset == 0 and data:
            not_text = not_a_text_log(data)
            if not_text:  # never parsed: random bytes would be read as numbers here and there
                self.tailer.consume(len(data))
                if not_text != self._not_text:
                    self._not_text = not_text
                    items.append(Notice("error", f"{self.path}: {not_text}, not a text log; not read"))
                return items, chunk.more
        if chunk.offset == 0 and data.startswith(_BOM):  # a UTF-8 byte order mark is no part of line 1
            self.tailer.consume(len(_BOM))
            data = data[len(_BOM):]
            chunk = TailRead(data, len(_BOM), None, chunk.final, chunk.more, chunk.unread)
        if self._took_unterminated and data:
            self._took_unterminated = False
            if data[:1] == b"\n":
                self.tailer.consume(1)  # the newline of the line already read
                data = data[1:]
                chunk = TailRead(data, chunk.offset + 1, None, chunk.final, chunk.more, chunk.unread)
            else:
                self._skipping_long = True  # the writer went on with that line: skip the rest of it
                self._rest_of_taken = True
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
            if self._rest_of_taken:
                self._rest_of_taken = False
                batch.skip("rest of a line read before its newline", self.line_no - 1)
            else:
                self.line_no += 1
        end = data.rfind(b"\n") + 1
        if end == len(data):
            self._held = None
        if end < len(data) and not chunk.more and self._take_unterminated(chunk, consumed, end, items):
            data, end = data + b"\n", len(data) + 1
            self._took_unterminated = not chunk.final
        elif chunk.final and end < len(data):
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
                if batch.skipped:
                    items.append(batch)
            return items, chunk.more
        parsed = self._parse(data, consumed, end, self.line_no, batch)
        parsed.backlog = (chunk.unread + max(len(chunk.data) - end, 0)) / (end - consumed)
        items.append(parsed)
        self.line_no += data.count(b"\n", consumed, end) if parsed.lines is None else parsed.lines
        self.tailer.consume(min(end, len(chunk.data)))
        self._rest(chunk.more)
        return items, chunk.more

    def _take_unterminated(self, chunk: TailRead, consumed: int, end: int, items: list[Item]) -> bool:
        """Whether to read the last line of the file, which has no newline, as it is now."""
        if chunk.final or len(chunk.data) - max(consumed, end) >= MAX_LINE:
            return False  # taken anyway, or skipped as too long
        if not chunk.data[max(consumed, end):].strip():
            self._held = None
            return False  # only blanks so far
        if self.hold <= 0:
            return True
        size = chunk.offset + len(chunk.data)
        now = self.clock()
        if self._held is None or self._held[0] != size:
            self._held = (size, now)
            if not self._held_told:
                self._held_told = True
                items.append(Notice("info", f"{self.path}: the last line has no newline yet; it is shown "
                                            f"once it has not changed for {self.hold:g} s"))
            return False
        if not self._held_long_enough(self._held[1]):
            return False
        self._held = None
        return True

    def _rest(self, more: bool) -> None:
        """Tell a parser that keeps things for big reads that the file is read to its end."""
        if not more:
            self.parser.rest()

    def _parse(self, data: bytes, start: int, end: int, first_line: int, batch: Batch) -> Batch:
        """Parse the whole lines ``data[start:end]``, blanking out lines no parser should see."""
        if data.find(b"\x00", start, end) >= 0 or _has_long_line(data, start, end):
            parsed = self.parser.feed(_drop_bad_lines(data[start:end], first_line, batch), first_line)
        else:
            parsed = self.parser.feed_range(data, start, end, first_line)  # in place where it can
        if batch.skipped:
            dropped = sum(batch.skipped.values())
            parsed.unmatched = max(parsed.unmatched - dropped, 0)
            parsed.skipped.update(batch.skipped)
            parsed.examples[:0] = batch.examples
        return parsed


#: Magic numbers of compressed data, which no text log starts with.
_COMPRESSED = {b"\x1f\x8b": "gzip-compressed data", b"\x28\xb5\x2f\xfd": "zstd-compressed data",
               b"BZh": "bzip2-compressed data", b"\xfd7zXZ": "xz-compressed data", b"PK\x03\x04": "a zip archive"}
#: Share of a file's first bytes that may be neither text nor UTF-8 before it is binary.
BINARY_SHARE = 0.3
#: Fewest first bytes the decision is taken on.
BINARY_SAMPLE = 256
_NUL_RUNS = re.compile(rb"\x00{16,}")
_TEXT_CONTROLS = bytes(range(32)).translate(None, b"\t\n\r\f\b\x1b") + b"\x7f"


def not_a_text_log(head: bytes, sample: int = 64 * 1024) -> str | None:
    """Why the first bytes of a file are no text log (compressed, or mostly binary), or None.

    A log with a few binary lines is a text log (those lines are skipped and counted); a
    file whose start is mostly control bytes, NULs and invalid UTF-8 is not.
    """
    for magic, what in _COMPRESSED.items():
        if head.startswith(magic):
            return what
    part = _NUL_RUNS.sub(b"", head[:sample])  # zero-filled holes (a truncation under its writer) are no data
    if len(part) < BINARY_SAMPLE:
        return None  # too few bytes to tell (a character may be cut at the end): a later read decides
    controls = len(part) - len(part.translate(None, _TEXT_CONTROLS))
    invalid = part[:-4].decode("utf-8", "replace").count("\ufffd")  # not a character cut at the end
    if (controls + invalid) > BINARY_SHARE * len(part):
        return "binary data"
    return None


#: Bytes compared at a time when a rotated copy is checked against the start of its log.
_COMPARE_BLOCK = 1024 * 1024


def _starts_with_copy(chunk: TailRead, path: str) -> bool:
    """Whether the log, whose first bytes are ``chunk``, starts with every byte of the copy at
    ``path`` (compared up to what the chunk holds). A compressed copy never is its log's start."""
    if path.endswith((".gz", ".zst")):
        return False
    try:
        with os.fdopen(os.open(path, OPEN_FLAGS), "rb") as handle:
            st = os.fstat(handle.fileno())
            size = st.st_size
            if not stat_module.S_ISREG(st.st_mode) or size > len(chunk.data) + chunk.unread:
                return False  # longer than the log: older content, or the log was emptied since
            at, end = 0, min(size, len(chunk.data))
            view = memoryview(chunk.data)
            while at < end:
                block = handle.read(min(_COMPARE_BLOCK, end - at))
                if not block or view[at : at + len(block)] != block:
                    return False
                at += len(block)
            return True
    except OSError:
        return False  # read as an earlier part, where it is said skipped


class _Unreadable(Exception):
    """A rotated copy that cannot be read here (compressed with a codec that is not installed)."""


def _chunks(path: str, size: int = 4 * 1024 * 1024):
    """The bytes of a finished file, decompressed if it is a ``.gz`` or ``.zst`` rotated copy."""
    st = os.stat(path)
    if not stat_module.S_ISREG(st.st_mode):
        raise _Unreadable("not a regular file")
    if path.endswith(".gz"):
        import gzip

        handle = gzip.open(path, "rb")
    elif path.endswith(".zst"):
        try:
            import zstandard
        except ImportError:
            raise _Unreadable("a .zst file, and the zstandard package is not installed") from None
        handle = zstandard.ZstdDecompressor().stream_reader(open(path, "rb"), closefd=True)
    else:
        handle = open(path, "rb")
    with handle:
        while block := handle.read(size):
            yield block


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
