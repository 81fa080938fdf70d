"""The one driver loop: read what is new, post it in batches; ``watch`` and ``report`` share it.

The :class:`Ingestor` waits on a :class:`Watcher`'s event (the timeout is a
safety poll, or the poll itself in polling mode), maps changed paths to runs,
reads only those, and hands each :class:`~tuiloss.core.engine.ReadResult` to
``post``. It never touches the store or a widget: whoever receives the posts
applies them, on its own thread. When they have not yet applied the last
batches, it waits (back-pressure): unread bytes simply stay on disk until the
next read.

The viewer runs it with a file-system watcher (:mod:`tuiloss.ui.watcher`) and
follows changes until stopped; :func:`tuiloss.core.engine.load` runs it with
:class:`NoWatcher` to the end of what is on disk. Nothing here imports the UI,
so the loop is tested with a plain list as ``post``.
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Protocol, runtime_checkable


from tuiloss.core.remote import is_url, modified

if TYPE_CHECKING:
    from tuiloss.core.engine import Engine, ReadResult

#: Seconds between safety polls when file events are on.
SAFETY_POLL = 2.0
#: Shortest gap between two discovery scans triggered by file events.
SCAN_GAP = 0.3
#: Seconds of checks one safety poll may spend (see :meth:`Engine.sweep`): with file events on,
#: the idle cost stays about 0.2% of a core however many runs are watched.
SWEEP_BUDGET = 0.004
#: With file events on (or a watcher that looks at its folders' times when polling), the periodic
#: rescan may take this share of the time: new runs come as changes, the rescan only catches what
#: they missed (0.1% of a core: a thousand run folders are walked every 11 s, ten thousand every
#: eight minutes). A watcher that sees no new files leaves it to rescans, which may take more.
SCAN_SHARE_EVENTS, SCAN_SHARE_POLLING = 1 / 1000, 1 / 50
#: Polling: the share of the time that the checks of idle runs may take, and as much again the
#: checks of their folders' times (a run that grew within :data:`HOT_SECONDS` is checked at every
#: poll; the others in turn, as many as this allows: a thousand idle runs every 3-4 s). With the
#: rescan's share, polling a thousand idle runs costs 0.3% of a core besides the viewer's own.
POLL_SHARE = 0.001
HOT_SECONDS = 30.0
#: With file events on, reads follow one another at least this far apart: a log written line by
#: line (a hundred writes a second) is read in a few batches a second, each holding what came
#: meanwhile, not once per write; a lone write is read at once.
READ_GAP = 0.05
#: A log whose writes keep coming before the last read is :data:`READ_GAP` old (more than twenty
#: lines a second) is read at most this often, each read holding what came meanwhile: a viewer
#: draws each read at once, a point waits at most this long for its read, and a hundred lines a
#: second cost four reads (and frames) a second instead of twenty: following such a log takes
#: ~4.5% of a core, ~5.5% at 0.15 s. Writes further apart are read at once again.
FOLLOW_GAP = 0.25
#: Wakes within :data:`READ_GAP` of the last read, one after another, that make a log busy.
BUSY_WAKES = 2
#: Polling rescans the tree at least this often (seconds), its folders' times or not (see :meth:`Ingestor._scan`).
POLL_RESCAN = 5.0

#: Seconds of reading in one batch of the first load: thousands of runs are posted in parts,
#: so the first points are on screen before the last run is read.
LOAD_BUDGET = 0.25


@dataclass(slots=True)
class Changes:
    """What a watcher saw since the last :meth:`Watcher.take`."""

    paths: set[str] = field(default_factory=set)
    structure: bool = False  # something was created, moved or deleted: look for new runs


@runtime_checkable
class Watcher(Protocol):
    """What the loop needs from a watcher: how it watches, a wake-up event, what changed.

    Attributes:
        mode: how the tree is watched (``inotify``, ``polling``, ``fsevents``, ...).
        reason: why, when it is not the obvious choice (e.g. ``nfs4 file system``).
        interval: seconds between polls when no file events come.
    """

    mode: str
    reason: str
    interval: float

    @property
    def uses_events(self) -> bool:
        """Whether file events wake the loop (otherwise each wait is a poll)."""
        ...

    @property
    def sees_new_files(self) -> bool:
        """Whether :meth:`take` tells of files created, moved or deleted (as ``structure``), so
        that rescans are only a safety net."""
        ...

    def start(self) -> None:
        """Start watching (before the first read, so nothing written meanwhile is missed)."""
        ...

    def stop(self) -> None:
        """Stop watching and wake a waiting loop."""
        ...

    def wake(self) -> None:
        """End the current :meth:`wait` early (any thread)."""
        ...

    def wait(self, timeout: float) -> bool:
        """Block until something changed or ``timeout`` passed; True if woken."""
        ...

    def take(self) -> Changes:
        """What changed since the last call, forgotten once taken."""
        ...

    def recheck(self) -> bool:
        """Follow a watched folder that vanished or came back; True if the mode changed."""
        ...


class Wakeup:
    """The half of a :class:`Watcher` the driver sleeps on: woken by a change, a stop or a timeout."""

    def __init__(self) -> None:
        self._event = threading.Event()

    def wake(self) -> None:
        self._event.set()

    def wait(self, timeout: float) -> bool:
        """Block until woken or ``timeout`` passed; True if woken."""
        woken = self._event.wait(timeout)
        self._event.clear()
        return woken


class NoWatcher(Wakeup):
    """A watcher of nothing: for reading what is on disk once (``tuiloss report``)."""

    def __init__(self) -> None:
        super().__init__()
        self.mode, self.reason, self.interval = "none", "", 1.0

    @property
    def uses_events(self) -> bool:
        return False

    @property
    def sees_new_files(self) -> bool:
        return False

    def start(self) -> None:
        pass

    def stop(self) -> None:
        self._event.set()

    def take(self) -> Changes:
        return Changes()

    def recheck(self) -> bool:
        return False


@dataclass(frozen=True, slots=True)
class WatchStarted:
    """How the tree is watched, and why."""

    mode: str  # inotify | polling | fsevents | ...
    reason: str
    interval: float


@dataclass(frozen=True, slots=True)
class Ingested:
    """One batch of what was read."""

    result: ReadResult
    initial: bool = False  # part of the first load
    progress: float | None = None  # 0..1 while the first load runs
    files: int = 0  # files watched
    activity: dict[str, float] = field(default_factory=dict)  # new run id -> newest file mtime
    #: read at the follow pace (:data:`FOLLOW_GAP`): a log is written more than twenty lines a second
    busy: bool = False


@dataclass(frozen=True, slots=True)
class LoadFinished:
    seconds: float


@dataclass(frozen=True, slots=True)
class IngestFailed:
    """Reading failed; the loop goes on. ``error`` is what a read or scan raised, if one did."""

    message: str
    error: Exception | None = None


#: Everything the loop posts.
Event = WatchStarted | Ingested | LoadFinished | IngestFailed


class ReadPace:
    """When the read of a file event happens: :data:`READ_GAP` after the last read at the soonest,
    :data:`FOLLOW_GAP` while the log is busy (:data:`BUSY_WAKES` wakes in a row came within
    :data:`READ_GAP` of the read before them); a wake that finds the last read older is read at once."""

    def __init__(self) -> None:
        self.last = float("-inf")  # when the last read began
        self._early = 0  # wakes in a row that came within READ_GAP of the read before them

    def due(self, woken_at: float) -> float:
        """When the read of a wake at ``woken_at`` may begin."""
        self._early = self._early + 1 if woken_at - self.last < READ_GAP else 0
        return self.last + (FOLLOW_GAP if self.busy else READ_GAP)

    @property
    def busy(self) -> bool:
        """Whether the last wake found the log busy: its read waits out :data:`FOLLOW_GAP`."""
        return self._early >= BUSY_WAKES

    def read(self, at: float) -> None:
        """A read began at ``at``."""
        self.last = at


class Ingestor:
    """Reads new data for whoever applies it. Run :meth:`run` on a thread; :meth:`stop` ends it.

    Args:
        engine: the core engine (discovery and incremental reading).
        watcher: what tells the loop that something changed.
        post: called with each :data:`Event`, from the loop's thread.
        max_inflight: batches posted but not yet acknowledged (:meth:`ack`) before the loop waits.
    """

    def __init__(self, engine: Engine, watcher: Watcher, post: Callable[[Event], None], *,
                 max_inflight: int = 2) -> None:
        self.engine = engine
        self.watcher = watcher
        self.post = post
        self.max_inflight = max_inflight
        self._stopped = threading.Event()
        self._running = threading.Event()
        self._running.set()
        self._inflight = 0
        self._waiting = False
        self._cond = threading.Condition()
        self._external_stop: Callable[[], bool] = lambda: False
        self.scan_interval = 30.0
        self.scan_gap = SCAN_GAP
        self._total_bytes = 0
        self._pace = ReadPace()  # when the reads of file events happen
        self._grew: dict[str, float] = {}  # polling: run id -> when a read last found something in it

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

    @property
    def idle(self) -> bool:
        """Waiting for changes (or paused) with every posted batch acknowledged."""
        return self._waiting and self._inflight == 0

    def ack(self) -> None:
        """The receiver applied one posted batch."""
        with self._cond:
            self._inflight = max(0, self._inflight - 1)
            self._cond.notify_all()

    def stopping(self) -> bool:
        return self._stopped.is_set() or self._external_stop()

    # -- the loop ----------------------------------------------------------------------------

    def run(self, should_stop: Callable[[], bool] | None = None, *, follow: bool = True) -> None:
        """Watch, load everything once, then (if ``follow``) follow changes until stopped."""
        if should_stop is not None:
            self._external_stop = should_stop
        try:
            self.watcher.start()  # before the first read, so nothing written meanwhile is missed
        except Exception as exc:
            self.post(IngestFailed(f"watching failed: {exc}", exc))
        self.post(WatchStarted(self.watcher.mode, self.watcher.reason, self.watcher.interval))
        began = time.monotonic()
        try:
            try:
                self._scan(initial=True)
                self._read(None, initial=True)
            except Exception as exc:
                self.post(IngestFailed(f"loading failed: {type(exc).__name__}: {exc}", exc))
            if self.stopping():
                return
            self.post(LoadFinished(time.monotonic() - began))
            if follow:
                self._follow()
        finally:
            self.watcher.stop()

    def _follow(self) -> None:
        last_scan = time.monotonic()
        scan_pending = False
        remote = getattr(self.engine, "remote", None)  # URL roots: polled here, no watcher sees them
        last_poll = 0.0  # when every source was last checked (the safety poll, or the poll itself)
        while not self.stopping():
            if not self._running.is_set():
                self._waiting = True
                self._running.wait(0.25)
                continue
            events = self.watcher.uses_events
            timeout = SAFETY_POLL if events else self.watcher.interval
            if remote is not None:
                timeout = min(timeout, remote.due_in())
            if scan_pending:
                timeout = max(0.0, min(timeout, self.scan_gap - (time.monotonic() - last_scan)))
            self._waiting = True
            woken = self.watcher.wait(timeout)
            if woken and events:  # writes close together: let the next ones join this read
                self._stopped.wait(max(0.0, self._pace.due(time.monotonic()) - time.monotonic()))
            if self.stopping():
                return
            if not self._running.is_set():
                continue  # paused: changes stay marked until resumed
            self._waiting = False
            # The watcher's own calls stay outside the guard below: a watcher that breaks
            # its Protocol fails loudly instead of being reported as a read failure.
            if self.watcher.recheck():
                self.post(WatchStarted(self.watcher.mode, self.watcher.reason, self.watcher.interval))
                scan_pending, last_scan = True, 0.0
            changes = self.watcher.take()
            targets: set[str] = set()
            for path in changes.paths:
                run_ids = self.engine.runs_for_path(path)
                if run_ids:
                    targets.update(run_ids)
                    scan_pending = scan_pending or self.engine.in_store(run_ids)  # a new run, maybe
                elif not _is_config(path):
                    scan_pending = True
            if changes.structure:
                scan_pending = True
            polled = False
            if remote is not None and remote.due_in() <= 0:
                urls, new_files = remote.poll()  # one listing per due root; raises nothing
                polled = True
                for url in urls:
                    targets.update(self.engine.runs_for_path(url))
                scan_pending = scan_pending or new_files
            try:
                now = time.monotonic()
                due = now - last_scan >= self.scan_interval
                if due or (scan_pending and now - last_scan >= self.scan_gap):
                    targets |= self._scan()
                    last_scan = time.monotonic()
                    scan_pending = False
                if (woken and events) or (polled and events and now - last_poll < SAFETY_POLL):
                    if targets:
                        self._pace.read(time.monotonic())
                        self._read(sorted(targets), busy=self._pace.busy)
                elif events:  # the safety poll: the next runs in turn, within a budget
                    targets |= set(self.engine.sweep(SWEEP_BUDGET))
                    if targets:
                        self._read(sorted(targets))
                else:  # poll: the runs that grew lately, the idle ones in turn
                    targets |= self._polled(now)
                    if targets:
                        self._read(sorted(targets))
                    last_poll = now
            except Exception as exc:  # a scan or read failing on a file must not end the watch
                self.post(IngestFailed(f"{type(exc).__name__}: {exc}", exc))
                self._stopped.wait(1.0)

    def _polled(self, now: float) -> set[str]:
        """The runs whose files changed: among those that grew within :data:`HOT_SECONDS`, all of
        them; among the others, the next ones in turn that :data:`POLL_SHARE` of a poll allows
        (all of them when they fit). A poll's cost does not grow with the number of idle runs."""
        sources, out = self.engine.sources, set()
        for run_id, when in list(self._grew.items()):
            source = sources.get(run_id)
            if source is None or now - when > HOT_SECONDS:
                del self._grew[run_id]
            elif source.changed():
                out.add(run_id)
        # A remote run's check answers from its root's listing, which the remote poller keeps
        # to its own pace (and a same-size rewrite is only seen by it): each of them, each poll.
        if getattr(self.engine, "remote", None) is not None:
            out.update(run_id for run_id, spec in list(self.engine.specs.items())
                       if is_url(spec.path) and run_id in sources and sources[run_id].changed())
        out.update(self.engine.sweep(POLL_SHARE * self.watcher.interval))
        return out

    def _scan(self, initial: bool = False) -> set[str]:
        began = time.monotonic()
        result = self.engine.scan()
        took = time.monotonic() - began
        # A scan walks the whole tree: on a big one, scan less often.
        events = self.watcher.uses_events
        told = events or self.watcher.sees_new_files
        # Polling keeps a rescan every 5 s at least: the folders' times miss a change made within
        # their clock's tick of the last look, and only a rescan then finds the new file.
        self.scan_interval = max(30.0 if events else POLL_RESCAN, took / (SCAN_SHARE_EVENTS if told else SCAN_SHARE_POLLING))
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

    def _read(self, targets: list[str] | None, initial: bool = False, busy: bool = False) -> None:
        while not self.stopping():
            if initial:
                result = self.engine.read(check_all=True, budget=LOAD_BUDGET)
            else:
                result = self.engine.read(targets)
            if not result.empty:
                if not initial and not self.watcher.uses_events:
                    now = time.monotonic()
                    self._grew.update((update.run_id, now) for update in result.updates)
                progress = self._progress() if initial else None
                self._post(Ingested(result, initial=initial, progress=progress,
                                    files=len(self.engine.watched_files()), busy=busy))
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
        if is_url(path):
            newest = max(newest, modified(path) or 0.0)  # as its root's listing says
            continue
        try:
            newest = max(newest, os.stat(path).st_mtime)
        except OSError:
            pass
    return newest


def _is_config(path: str) -> bool:
    from tuiloss.core.discover import CONFIG_NAMES  # with discovery, on this thread (see engine.py)

    return os.path.basename(path).lower() in CONFIG_NAMES
