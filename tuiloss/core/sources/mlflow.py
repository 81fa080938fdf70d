"""One MLflow file-store run folder, read as one run.

Every ``metrics/<name>`` file is tailed from its byte offset by a
:class:`~tuiloss.core.sources.line.LineSource`; new metric files are picked up
when the ``metrics/`` folders change.
"""

from __future__ import annotations

import os
import time

from tuiloss.core.formats.mlflow import MlflowMetricParser, walk_files
from tuiloss.core.model import Batch, Notice, SegmentEvent
from tuiloss.core.sources.base import Item, Source, append_batch
from tuiloss.core.sources.line import LineSource
from tuiloss.core.tail import moved_path

# A folder listing is trusted only once this many seconds have passed since the
# folder's mtime: a file created in the same mtime tick would not change it.
_MTIME_SLACK = 2.0


class MlflowRunSource(Source):
    """One MLflow run folder: every metric file tailed, new metric files picked up."""

    format = "mlflow"

    def __init__(self, run_dir: str | os.PathLike, *, max_read: int | None = None) -> None:
        self.run_dir = os.fspath(run_dir)
        self.metrics_dir = os.path.join(self.run_dir, "metrics")
        self.max_read = max_read
        self._metrics: dict[str, LineSource] = {}
        self._folders: dict[str, int] = {}  # folder under metrics/ -> mtime_ns when listed
        self._listed_at: float | None = None
        self._gone = False
        self._list_error = False
        self._refresh()

    def paths(self) -> list[str]:
        return [source.path for _, source in sorted(self._metrics.items())]

    def metrics(self) -> list[str]:
        """Names of the metrics found so far."""
        return sorted(self._metrics)

    def relocate(self, old: str, new: str) -> bool:
        """Read on in the folder ``old`` moved to if every metric file read is there, moved with it."""
        moves = {name: moved_path(source.path, old, new) for name, source in self._metrics.items()}
        read = [name for name, source in self._metrics.items() if source.tailer.offset]
        if not read or not all(self._metrics[name].tailer.holds(moves[name]) for name in read):
            return False  # not these files, or nothing read yet to tell them from others
        for name, source in self._metrics.items():
            source.path = source.tailer.path = moves[name]
        self.run_dir = moved_path(self.run_dir, old, new)
        self.metrics_dir = os.path.join(self.run_dir, "metrics")
        self._folders, self._listed_at, self._gone = {}, None, False
        return True

    def changed(self) -> bool:
        if self._gone:
            return self._present()
        if self._listing_stale():
            return True
        return any(source.changed() for source in self._metrics.values())

    def read(self) -> tuple[list[Item], bool]:
        items: list[Item] = []
        if not self._present():
            if not self._gone:
                self._gone = True
                items.append(SegmentEvent("deleted", "the run folder is gone"))
                items.append(Notice("warning", f"{self.run_dir} was deleted; its points are kept"))
            return items, False
        self._gone = False
        if self._listing_stale() and not self._refresh():
            if not self._list_error:
                self._list_error = True
                items.append(Notice("error", f"cannot list {self.metrics_dir}"))
        more = False
        for name in sorted(self._metrics):
            source = self._metrics[name]
            if not source.changed():
                continue
            got, pending = source.read()
            more = more or pending
            for item in got:
                if isinstance(item, Batch):
                    append_batch(items, item)
                elif isinstance(item, SegmentEvent):
                    if item.reason != "deleted":  # a lone metric file gone: the notice says it
                        items.append(SegmentEvent(item.reason, f"metrics/{name}: {item.detail}"))
                else:
                    items.append(item)
        return items, more

    # -- internals -------------------------------------------------------------

    def _present(self) -> bool:
        """Whether the run's ``metrics/`` folder is there."""
        return os.path.isdir(self.metrics_dir)

    def _listing_stale(self) -> bool:
        if self._listed_at is None:
            return True
        newest = 0
        for folder, mtime in self._folders.items():
            try:
                current = os.stat(folder).st_mtime_ns
            except OSError:
                return True
            if current != mtime:
                return True
            newest = max(newest, current)
        return self._listed_at - newest / 1e9 < _MTIME_SLACK

    def _refresh(self) -> bool:
        """Pick up new metric files; False when metrics/ cannot be listed (tried again later)."""
        listed_at = time.time()
        folders: dict[str, int] = {}
        files = walk_files(self.metrics_dir, folders)
        if not folders:
            return False
        self._list_error = False
        self._folders = folders
        self._listed_at = listed_at
        for name, path in files:
            if name not in self._metrics:
                self._metrics[name] = LineSource(path, MlflowMetricParser(name), self.max_read)
        return True
