"""The ingest worker: one thread that reads what is new and posts it in batches.

It waits on the watcher's event (the timeout is a safety poll, or the poll
itself in polling mode), maps changed paths to runs, reads only those, and
hands each :class:`~tuiloss.core.engine.ReadResult` to ``post``. It never
touches the store or a widget: the UI thread applies what it posts. When the
UI has not yet applied the last batches, it waits (back-pressure): unread
bytes simply stay on disk until the next read.

No Textual import here, so the worker is tested with a plain list as ``post``.
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass, field
from typing import Callable

from tuiloss.core.engine import Engine, ReadResult

#: Seconds between safety polls when file events are on.
SAFETY_POLL = 2.0
#: Shortest gap between two discovery scans triggered by file events.
SCAN_GAP = 0.3


@dataclass(frozen=True, slots=True)
class WatchStarted:
    """How the tree is watched, and why."""

    mode: str  # inotify | polling | fsevents | ...
    reason: str
    interval: float


@dataclass(slots=True)
class Ingested:
    """One batch of what was read."""

    result: ReadResult
    initial: bool = False  # part of the first load
    progress: float | None = None  # 0..1 while the first load runs
    files: int = 0  # files watched
    activity: dict[str, float] = field(default_factory=dict)  # new run id -> newest file mtime


@dataclass(frozen=True, slots=True)
class LoadFinished:
    seconds: float


@dataclass(frozen=True, slots=True)
class IngestFailed:
    message: str


class Ingestor:
    """Reads new data for the UI. Run :meth:`run` on a thread; :meth:`stop` ends it.

    Args:
        engine: the core engine (discovery and incremental reading).
        watcher: a :class:`~tuiloss.ui.watcher.Watcher` or anything with the same
            ``start/stop/wait/take/wake/mode/reason/interval/uses_events``.
        post: called with each :class:`WatchStarted`, :class:`Ingested`,
            :class:`LoadFinished` or :class:`IngestFailed`, from the worker thread.
        max_inflight: batches posted but not yet acknowledged before the worker waits.
    """

    def __init__(self, engine: Engine, watcher, post: Callable[[object], None], *, max_inflight: int = 2) -> None:
        self.engine = engine
        self.watcher = watcher
        self.post = post
        self.max_inflight = max_inflight
        self._stopped = threading.Event()
        self._running = threading.Event()
        self._running.set()
        self._inflight = 0
        self._cond = threading.Condition()
        self._external_stop: Callable[[], bool] = lambda: False
        self.scan_interval = 30.0
        self.scan_gap = SCAN_GAP
        self._total_bytes = 0

    # -- control (any thread) ------------------------------------------------------------

    def stop(self) -> None:
        self._stopped.set()
        self._running.set()
        self.watcher.wake()
        with self._cond:
            self._cond.notify_all()

    def pause(self) -> None:
        self._running.clear()

    def resume(self) -> None:
        self._running.set()
        self.watcher.wake()

    @property
    def paused(self) -> bool:
        return not self._running.is_set()

    def ack(self) -> None:
        """The UI applied one posted batch."""
        with self._cond:
            self._inflight = max(0, self._inflight - 1)
            self._cond.notify_all()

    def stopping(self) -> bool:
        return self._stopped.is_set() or self._external_stop()

    # -- the loop ----------------------------------------------------------------------------

    def run(self, should_stop: Callable[[], bool] | None = None) -> None:
        """Watch, load everything once, then follow changes until stopped."""
        if should_stop is not None:
            self._external_stop = should_stop
        try:
            self.watcher.start()  # before the first read, so nothing written meanwhile is missed
        except Exception as exc:
            self.post(IngestFailed(f"watching failed: {exc}"))
        self.post(WatchStarted(self.watcher.mode, self.watcher.reason, self.watcher.interval))
        began = time.monotonic()
        try:
            self._scan(initial=True)
            self._read(None, initial=True)
        except Exception as exc:
            self.post(IngestFailed(f"loading failed: {type(exc).__name__}: {exc}"))
        if self.stopping():
            self.watcher.stop()
            return
        self.post(LoadFinished(time.monotonic() - began))
        self._follow()
        self.watcher.stop()

    def _follow(self) -> None:
        last_scan = time.monotonic()
        scan_pending = False
        while not self.stopping():
            if not self._running.is_set():
                self._running.wait(0.25)
                continue
            events = self.watcher.uses_events
            timeout = SAFETY_POLL if events else self.watcher.interval
            if scan_pending:
                timeout = max(0.0, min(timeout, self.scan_gap - (time.monotonic() - last_scan)))
            woken = self.watcher.wait(timeout)
            if self.stopping():
                return
            if not self._running.is_set():
                continue  # paused: changes stay marked until resumed
            try:
                if self.watcher.recheck():
                    self.post(WatchStarted(self.watcher.mode, self.watcher.reason, self.watcher.interval))
                    scan_pending, last_scan = True, 0.0
                changes = self.watcher.take()
                targets: set[str] = set()
                for path in changes.paths:
                    run_id = self.engine.run_for_path(path)
                    if run_id is not None:
                        targets.add(run_id)
                    elif not _is_config(path):
                        scan_pending = True
                if changes.structure:
                    scan_pending = True
                now = time.monotonic()
                due = now - last_scan >= self.scan_interval
                if due or (scan_pending and now - last_scan >= self.scan_gap):
                    targets |= self._scan()
                    last_scan = time.monotonic()
                    scan_pending = False
                if woken and events:
                    if targets:
                        self._read(sorted(targets))
                else:
                    self._read(None)  # poll: each source's cheap changed() check
            except Exception as exc:
                self.post(IngestFailed(f"{type(exc).__name__}: {exc}"))
                self._stopped.wait(1.0)

    def _scan(self, initial: bool = False) -> set[str]:
        began = time.monotonic()
        result = self.engine.scan()
        took = time.monotonic() - began
        # A scan walks the whole tree: on a big one, scan less often.
        self.scan_interval = max(30.0 if self.watcher.uses_events else 5.0, 50 * took)
        self.scan_gap = max(SCAN_GAP, 5 * took)
        if result.empty:
            return set()
        activity = {}
        for spec in result.new_runs:
            activity[spec.id] = _newest_mtime(self.engine, spec.id)
        if initial:
            self._total_bytes = sum(_size(p) for p in self.engine.watched_files())
        self._post(Ingested(result, initial=initial, files=len(self.engine.watched_files()), activity=activity,
                            progress=0.0 if initial else None))
        return {spec.id for spec in result.new_runs}

    def _read(self, targets, initial: bool = False) -> None:
        while not self.stopping():
            if initial:
                result = self.engine.read(check_all=True)
            else:
                result = self.engine.read(targets)
            if not result.empty:
                progress = self._progress() if initial else None
                self._post(Ingested(result, initial=initial, progress=progress,
                                    files=len(self.engine.watched_files())))
            if not result.more:
                return

    def _post(self, message: Ingested) -> None:
        with self._cond:
            while self._inflight >= self.max_inflight and not self.stopping():
                self._cond.wait(0.1)
            self._inflight += 1
        self.post(message)

    def _progress(self) -> float | None:
        if not self._total_bytes:
            return None
        done = 0
        for source in list(self.engine.sources.values()):
            tailer = getattr(source, "tailer", None)
            offset = getattr(tailer, "offset", None)
            if isinstance(offset, int):
                done += offset
            else:
                done += sum(_size(p) for p in source.paths())
        return min(1.0, done / self._total_bytes)


def _size(path: str) -> int:
    try:
        return os.stat(path).st_size
    except OSError:
        return 0


def _newest_mtime(engine: Engine, run_id: str) -> float:
    source = engine.sources.get(run_id)
    newest = 0.0
    for path in source.paths() if source is not None else ():
        try:
            newest = max(newest, os.stat(path).st_mtime)
        except OSError:
            pass
    return newest


def _is_config(path: str) -> bool:
    from tuiloss.core.discover import CONFIG_NAMES

    return os.path.basename(path).lower() in CONFIG_NAMES
