"""A folder of TensorBoard event files, read incrementally as one run.

A run is a folder holding one or more event files directly inside it (a resumed
run writes a new file next to the old one). Files are read in order of file name,
so the events of a later file continue those of an earlier one; tags from every
file merge into one set of series. A Keras log dir whose ``train`` and
``validation`` folders each hold event files is one run too (:class:`SplitRunSource`).
"""

from __future__ import annotations

import os
import time

from tuiloss.core.formats import tfevents as events
from tuiloss.core.formats.tfrecord import NO_CRC, load_crc
from tuiloss.core.model import Batch, Notice, RowGroup, SegmentEvent
from tuiloss.core.sources.base import Item, Source, append_batch
from tuiloss.core.tail import DEFAULT_MAX_READ, Tailer, moved_path

# A folder listing is trusted only once this many seconds have passed since the
# folder's mtime: a file created in the same mtime tick would not change it.
_MTIME_SLACK = 2.0


class _EventFile:
    """One event file of a run: its tailer and where reading stands."""

    __slots__ = (
        "path", "name", "tailer", "record", "skip", "stopped", "missing", "waiting"
    )

    def __init__(self, path: str, max_read: int) -> None:
        self.path = path
        self.name = os.path.basename(path)
        self.tailer = Tailer(path, max_read=max_read)
        self.record = 1  # number of the next record
        self.skip = 0  # bytes of an oversized record still to pass over
        self.stopped: int | None = None  # inode, once a damaged header stopped reading
        self.missing = False
        # (inode, size) when the last read ended in a partial record: until the
        # file changes from that, reading again would find the same partial record.
        self.waiting: tuple[int, int] | None = None

    def restart(self) -> None:
        self.record = 1
        self.skip = 0
        self.stopped = None

    def stop(self) -> None:
        try:
            self.stopped = os.stat(self.path).st_ino
        except OSError:
            self.stopped = -1

    def wait(self, size: int) -> None:
        try:
            ino = os.stat(self.path).st_ino
        except OSError:
            return
        self.waiting = (ino, size)

    def changed(self) -> bool:
        if self.stopped is None and self.waiting is None:
            return self.tailer.changed()
        try:
            st = os.stat(self.path)
        except OSError:
            return not self.missing
        if self.stopped is not None:
            # Stopped at a damaged header: only a new file or a truncation matters.
            return st.st_ino != self.stopped or st.st_size < self.tailer.offset
        return (st.st_ino, st.st_size) != self.waiting


class TfeventsRunSource(Source):
    """A folder of TensorBoard event files, read as one run.

    ``folder`` may also be a single event file, which is then the whole run.
    Set ``check_crc=False`` to skip CRC checks (they cost about a third of the
    reading time).
    """

    format = "tfevents"

    def __init__(
        self,
        folder: str | os.PathLike,
        *,
        check_crc: bool = True,
        max_read: int = DEFAULT_MAX_READ,
    ) -> None:
        self.folder = os.fspath(folder)
        self.check_crc = check_crc
        self.max_read = max(max_read, events.MAX_RECORD + 64)
        self.single_file = os.path.isfile(self.folder)
        self._files: dict[str, _EventFile] = {}
        self._decoder: events.EventDecoder | None = None
        self._disabled = False
        self._listed: tuple[int, float] | None = None  # (folder mtime_ns, when listed)
        self._gone = False
        self._refresh()

    def paths(self) -> list[str]:
        return sorted(self._files, key=events.file_order)

    def relocate(self, old: str, new: str) -> bool:
        """Read on in ``new`` if its event files are this run's, moved (the folder renamed)."""
        folder = moved_path(self.folder, old, new)
        moves = {path: moved_path(path, self.folder, folder) for path in self._files}
        read = [path for path, file in self._files.items() if file.tailer.offset]
        if not read or not all(self._files[path].tailer.holds(moves[path]) for path in read):
            return False  # not these files, or nothing read yet to tell them from others
        for path, file in list(self._files.items()):
            file.path = file.tailer.path = moves[path]
            file.name = os.path.basename(file.path)
        self._files = {file.path: file for file in self._files.values()}
        self.folder = folder
        self._listed, self._gone = None, False
        return True

    def changed(self) -> bool:
        if self._disabled:
            return False
        if self._decoder is None or self._listing_stale():
            return True
        if self._gone:
            return False
        return any(f.changed() for f in self._files.values())

    def read(self) -> tuple[list[Item], bool]:
        items: list[Item] = []
        if self._disabled:
            return items, False
        if self._decoder is None and not self._start(items):
            return items, False
        if not self._refresh(items):
            return items, False
        more = False
        for path in sorted(self._files, key=events.file_order):
            file = self._files[path]
            if not file.changed():
                continue
            more = self._read_file(file, items)
            if more:
                break  # later files continue this one: finish it first
        return items, more

    # -- internals -------------------------------------------------------------

    def _start(self, items: list[Item]) -> bool:
        event_class = events.load_event_class()
        if event_class is None:
            self._disabled = True
            items.append(Notice("error", events.MISSING_EXTRA))
            return False
        crc = load_crc() if self.check_crc else None
        if crc is None and self.check_crc:
            items.append(Notice("warning", NO_CRC))
        self._decoder = events.EventDecoder(event_class, crc)
        return True

    def _listing_stale(self) -> bool:
        if self.single_file:
            return False
        try:
            st = os.stat(self.folder)
        except OSError:
            return not self._gone
        if self._listed is None:
            return True
        mtime, listed_at = self._listed
        return st.st_mtime_ns != mtime or listed_at - mtime / 1e9 < _MTIME_SLACK

    def _refresh(self, items: list[Item] | None = None) -> bool:
        """Pick up new event files; False when the folder is gone."""
        if self.single_file:
            if self.folder not in self._files:
                self._files[self.folder] = self._event_file(self.folder)
            return True
        if not self._listing_stale():
            return not self._gone
        try:
            st = os.stat(self.folder)
            listed_at = time.time()
            with os.scandir(self.folder) as entries:
                found = [
                    entry.path
                    for entry in entries
                    if "tfevents" in entry.name and entry.is_file()
                ]
        except FileNotFoundError:
            if not self._gone and items is not None:
                self._gone = True
                self._listed = None
                items.append(SegmentEvent("deleted", "the run folder is gone"))
                items.append(Notice("warning", f"{self.folder} was deleted; its points are kept"))
            return False
        except OSError as exc:
            if items is not None:
                items.append(Notice("error", f"cannot list {self.folder}: {exc.strerror or exc}"))
            return False
        self._gone = False
        self._listed = (st.st_mtime_ns, listed_at)
        for path in found:
            if path not in self._files:
                self._files[path] = self._event_file(path)
        return True

    def _event_file(self, path: str) -> _EventFile:
        """The reader of one event file of the run (a remote run's reads its bytes through its root)."""
        return _EventFile(path, self.max_read)

    def _read_file(self, file: _EventFile, items: list[Item]) -> bool:
        """Read what is new in one file into ``items``; True when more is pending."""
        decoder = self._decoder
        assert decoder is not None
        file.waiting = None
        chunk = file.tailer.read_noting(items)
        if chunk is None:
            return False
        if chunk.event is not None:
            if chunk.event.reason == "deleted":
                file.missing = True
                self._report_deleted(file, items)
                return False
            file.missing = False
            file.restart()
            items.append(SegmentEvent(chunk.event.reason, f"{file.name}: {chunk.event.detail}"))
        elif file.stopped is not None:
            return False
        data = chunk.data
        if not data:
            return chunk.more
        if file.skip:
            passed = min(file.skip, len(data))
            file.skip -= passed
            file.tailer.consume(passed)
            if file.skip or passed == len(data):
                return chunk.more
            data = data[passed:]
        batch = Batch()
        result = decoder.feed(data, batch, file.record, final=chunk.final)
        file.record += result.records
        file.skip = result.skip
        file.tailer.consume(result.consumed)
        if result.consumed < len(data) and not chunk.more and not chunk.final:
            file.wait(chunk.offset + len(chunk.data))
        if batch.series or batch.skipped:
            append_batch(items, batch)
        if result.broken_at is not None:
            file.stop()
            offset = chunk.offset + (len(chunk.data) - len(data)) + result.broken_at
            items.append(
                Notice(
                    "error",
                    f"{file.path}: the record header at byte {offset} is damaged; "
                    "the rest of this file cannot be read",
                )
            )
            return False
        return chunk.more

    def _report_deleted(self, file: _EventFile, items: list[Item]) -> None:
        if all(f.missing for f in self._files.values()):
            items.append(SegmentEvent("deleted", "every event file of the run is gone"))
            items.append(Notice("warning", f"{self.folder}: the event files were deleted; their points are kept"))
        else:
            items.append(Notice("warning", f"{file.path} was deleted; its points are kept"))


class SplitRunSource(Source):
    """Several event folders read as one run, each with its metric prefix (``make`` reads one folder)."""

    format = "tfevents"

    def __init__(self, folders: dict[str, str], make=None) -> None:
        make = make or TfeventsRunSource
        self.parts = [(make(path), prefix) for path, prefix in sorted(folders.items())]

    def paths(self) -> list[str]:
        return [p for source, _ in self.parts for p in source.paths()]

    def changed(self) -> bool:
        return any(source.changed() for source, _ in self.parts)

    def relocate(self, old: str, new: str) -> bool:
        return all(source.relocate(old, new) for source, _ in self.parts)

    def read(self) -> tuple[list[Item], bool]:
        items: list[Item] = []
        more = False
        for source, prefix in self.parts:
            got, pending = source.read()
            more = more or pending
            for item in got:
                if prefix and isinstance(item, Batch):
                    item = _prefixed(item, prefix)
                items.append(item)
        return items, more


def _prefixed(batch: Batch, prefix: str) -> Batch:
    """``batch`` with every metric named ``prefix + name``; all else it says (row groups, what it
    learnt of the axis in ``meta``, the lines and backlog) is kept."""
    return Batch(
        series={prefix + name: pair for name, pair in batch.series.items()},
        skipped=batch.skipped,
        unmatched=batch.unmatched,
        examples=batch.examples,
        lines=batch.lines,
        backlog=batch.backlog,
        groups=[RowGroup(group.steps, tuple(prefix + name for name in group.metrics)) for group in batch.groups],
        meta=dict(batch.meta),
    )
