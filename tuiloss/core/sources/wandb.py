"""One W&B run folder (``wandb/offline-run-*`` or ``wandb/run-*``), read as one run.

The run's ``run-<id>.wandb`` file is tailed from its byte offset; only whole
records are consumed, so the partial record a live writer leaves at the end of
each flush is read again, complete, once the rest arrives.
"""

from __future__ import annotations

import os

from tuiloss.core.formats import wandb as wb
from tuiloss.core.model import Batch, Notice, SegmentEvent
from tuiloss.core.sources.base import Item, Source, append_batch
from tuiloss.core.tail import DEFAULT_MAX_READ, Tailer


class WandbRunSource(Source):
    """A W&B run folder (or its ``.wandb`` file itself), read as one run."""

    format = "wandb"

    def __init__(self, path: str | os.PathLike, *, max_read: int = DEFAULT_MAX_READ) -> None:
        max_read = max(max_read, 2 * wb.BLOCK)
        path = os.fspath(path)
        self.folder = path if os.path.isdir(path) else os.path.dirname(path)
        self.path = (wb.run_file(path) if os.path.isdir(path) else path) or ""
        self.max_read = max_read
        self.tailer = self._tailer(self.path) if self.path else None
        self.framing = wb.RecordReader()
        self.decoder: wb.HistoryDecoder | None = None
        self.record = 1  # number of the next record
        self._disabled = False
        self._waiting: tuple[int, int] | None = None  # (inode, size) of a read that ended in a partial record
        self._missing = False
        self._status = "running"

    def _tailer(self, path: str):
        """The reader of the run file's bytes (a remote run's reads them through its root)."""
        return Tailer(path, max_read=self.max_read)

    def _wait(self, size: int) -> None:
        """The read ended inside a record at ``size``: nothing is new until the file changes from it."""
        try:
            self._waiting = (os.stat(self.path).st_ino, size)
        except OSError:
            pass

    @property
    def meta(self) -> wb.RunMeta | None:
        """Name, config, summary and exit code read so far."""
        return self.decoder.meta if self.decoder is not None else None

    def paths(self) -> list[str]:
        return [self.path] if self.path else []

    def changed(self) -> bool:
        if self._disabled:
            return False
        if self.tailer is None:
            return wb.run_file(self.folder) is not None
        if self.decoder is None:
            return True
        if self._waiting is not None:
            try:
                st = os.stat(self.path)
            except OSError:
                return not self._missing
            return (st.st_ino, st.st_size) != self._waiting
        return self.tailer.changed()

    def read(self) -> tuple[list[Item], bool]:
        items: list[Item] = []
        if self._disabled:
            return items, False
        if self.decoder is None:
            record_class = wb.load_record_class()
            if record_class is None:
                self._disabled = True
                items.append(Notice("error", wb.MISSING_EXTRA))
                return items, False
            self.decoder = wb.HistoryDecoder(record_class)
        if self.tailer is None:
            self.path = wb.run_file(self.folder) or ""
            if not self.path:
                return items, False
            self.tailer = self._tailer(self.path)
        self._waiting = None
        chunk = self.tailer.read_noting(items)
        if chunk is None:
            return items, False
        if chunk.event is not None:
            if chunk.event.reason == "deleted":
                if not self._missing:
                    self._missing = True
                    items.append(SegmentEvent("deleted", "the run file is gone"))
                    items.append(Notice("warning", f"{self.path} was deleted; its points are kept"))
                return items, False
            self._missing = False
            self.record = 1
            self.decoder.rows = 0
            items.append(SegmentEvent(chunk.event.reason, f"{os.path.basename(self.path)}: {chunk.event.detail}"))
        if not chunk.data:
            return items, chunk.more
        framed = self.framing.feed(chunk.data, chunk.offset, final=chunk.final)
        if framed.broken_at is not None:
            self._disabled = True
            items.append(Notice("error", f"{self.path}: not a W&B run file (its header is not W&B's)"))
            return items, False
        batch = Batch()
        self.decoder.feed(framed.records, batch, self.record)
        self.record += len(framed.records)
        if framed.bad:
            batch.skip("bad record", None, count=framed.bad)
        consumed = framed.consumed
        if not consumed and framed.partial and chunk.more:
            # a record longer than a whole read (never a history row): pass over its blocks
            consumed = (chunk.offset + len(chunk.data)) // wb.BLOCK * wb.BLOCK - chunk.offset
            batch.skip("oversized record", None)
        self.tailer.consume(consumed)
        if framed.partial and not chunk.more:
            self._wait(chunk.offset + len(chunk.data))
        status = self.decoder.meta.status
        if status != self._status:
            self._status = batch.meta["status"] = status
            if status == "failed":
                items.append(Notice("warning", f"W&B recorded the run as failed (exit code {self.decoder.meta.exit_code})"))
        if batch.series or batch.skipped or batch.meta:
            append_batch(items, batch)
        return items, chunk.more
