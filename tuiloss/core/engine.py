"""The headless watch engine: discovery plus incremental reading of every run.

The driver (:mod:`tuiloss.core.driver`) runs :meth:`Engine.read` on its thread
and whoever receives its batches hands the resulting :class:`Update` objects to
:func:`apply_updates` on their own: the viewer follows changes that way, and
:func:`load` (``tuiloss report``, the tests) reads until nothing is left.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
from collections import Counter
import queue
import threading
import time
from dataclasses import dataclass, field

from typing import TYPE_CHECKING, Callable

from tuiloss.core.driver import IngestFailed, Ingested, Ingestor, LoadFinished, NoWatcher
from tuiloss.core.model import Batch, Notice, RunSpec, SegmentEvent
from tuiloss.core.remote import is_url
from tuiloss.core.store import Run, Store
from tuiloss.core.tail import HOLD_SECONDS

if TYPE_CHECKING:
    from tuiloss.core.sources.base import Source

# Discovery and the parsers behind the sources (a few dozen milliseconds of imports and regex
# compilation) load when the first scan needs them, on the driver's thread, so the viewer draws
# its first frame without waiting for them (the start-up row of ``python -m benchmarks``).
# The layers they belong to are the same either way (import-linter sees these imports).


@dataclass(frozen=True, slots=True)
class Options:
    """How to read: forced format, user pattern, primary metric, step axis (``--step``)."""

    format: str | None = None
    pattern: str | None = None
    metric: str | None = None
    step: str | None = None
    poll: float | None = None  # seconds between polls of a changing remote root (--poll)


@dataclass(slots=True)
class Update:
    """What one read produced for one run, in order."""

    run_id: str
    items: list = field(default_factory=list)


@dataclass(slots=True)
class ReadResult:
    new_runs: list[RunSpec] = field(default_factory=list)
    updates: list[Update] = field(default_factory=list)
    notices: list[Notice] = field(default_factory=list)
    ignored: list[tuple[str, str]] = field(default_factory=list)
    #: Runs found moved (a renamed run folder): their spec as it is now, with the id they had.
    moved: list[RunSpec] = field(default_factory=list)
    more: bool = False

    @property
    def empty(self) -> bool:
        return not (self.new_runs or self.updates or self.notices or self.moved)

    def merge(self, other: "ReadResult") -> None:
        """Add what ``other`` found (a scan made while reading) to this result."""
        self.new_runs += other.new_runs
        self.updates += other.updates
        self.notices += other.notices
        self.ignored += other.ignored
        self.moved += other.moved
        self.more = self.more or other.more

    def parts(self, most: int) -> list["ReadResult"]:
        """This read as reads of at most ``most`` updates each that, applied in order, store what it
        does: the first holds its new and moved runs, its notices and what it ignored."""
        updates = self.updates
        if len(updates) <= most:
            return [self]
        first = ReadResult(self.new_runs, updates[:most], self.notices, self.ignored, self.moved, self.more)
        return [first, *(ReadResult(updates=updates[at:at + most], more=self.more)
                         for at in range(most, len(updates), most))]


#: Reads of a log with more behind them (a full chunk) that one read gathers at most: a
#: folder of many big logs is parsed and stored a few chunks at a time, not a chunk of each.
MAX_FULL_READS = 1


class Engine:
    """Finds runs under ``roots`` and reads what is new in them."""

    def __init__(self, roots: list[str], options: Options = Options(), *, hold: float = HOLD_SECONDS) -> None:
        self.roots = [root if is_url(root) else os.path.abspath(root) for root in roots]
        self.options = options
        urls = [root for root in roots if is_url(root)]
        self.remote = None  # URL roots, polled by the driver (tuiloss.core.remote)
        if urls:
            from tuiloss.core.remote.roots import RemoteRoots

            self.remote = RemoteRoots(urls, options.poll)
        self.hold = hold  # how long a last line without a newline waits (0 for a finished file)
        self._turn = 0  # where the next read of many big logs begins
        self.specs: dict[str, RunSpec] = {}
        self.sources: dict[str, Source] = {}
        self.ignored: dict[str, str] = {}
        self.configs: list[str] = []
        self._by_path: dict[str, list[str]] = {}  # a file or folder -> the runs read from it
        self._reported_notices: set[str] = set()
        self._sniffed: dict = {}
        self._sweep_at = 0  # where the next sweep goes on from (see sweep)
        self._read_at = 0  # where the next read with a budget goes on from (see read)
        self._pass_left = self._pass_more = self._pass_runs = 0  # of the pass it is in

    # -- discovery -------------------------------------------------------------

    def scan(self) -> ReadResult:
        """Look for runs not seen before.

        A new one that holds the very files of a run gone from where it was (a renamed run
        folder: same inodes, same bytes read) is that run, moved: it keeps its id (and so its
        colour and number in the viewer) and is listed in ``moved`` with its new place.
        """
        from tuiloss.core.discover import discover
        from tuiloss.core.sources import make_source

        local = [root for root in self.roots if not is_url(root)] if self.remote else self.roots
        found = discover(local, format=self.options.format, known=self._known(), sniffed=self._sniffed)
        if self.remote is not None:
            self.remote.discover(found, format=self.options.format, known=self._known())
        result = ReadResult(ignored=[item for item in found.ignored if item[0] not in self.ignored])
        for path, why in result.ignored:
            self.ignored[path] = why
        self.configs = found.configs
        for notice in found.notices:
            if notice.message not in self._reported_notices:
                self._reported_notices.add(notice.message)
                result.notices.append(notice)
        gone = self._gone_runs() if found.runs else []
        for spec in found.runs:
            run_id = self._moved_here(spec, gone)
            if run_id is not None:
                gone.remove(run_id)
                result.moved.append(self._follow_move(run_id, spec))
                result.updates.append(Update(run_id, [Notice("info", f"moved to {spec.source}; read on there")]))
                continue
            if spec.id in self.specs:  # a new file where a moved run used to be
                spec = dataclasses.replace(spec, id=_free_id(spec.id, self.specs))
            self.specs[spec.id] = spec
            if self.remote is not None and is_url(spec.path):
                self.sources[spec.id] = self.remote.make_source(spec, pattern=self.options.pattern, hold=self.hold)
            else:
                self.sources[spec.id] = make_source(spec, pattern=self.options.pattern, hold=self.hold,
                                                   copies=_copies_finder(spec))
            for path in {spec.path, *self.sources[spec.id].paths()}:
                self._by_path.setdefault(path, []).append(spec.id)  # the runs of one store share its files
            result.new_runs.append(spec)
        return result

    def in_store(self, run_ids: list[str]) -> bool:
        """Whether the runs are a tracker's store's (a database of runs, where a change may be a
        run not seen yet as well as points of those known)."""
        return any(self.specs[i].id.startswith(self.specs[i].path + os.sep) for i in run_ids if i in self.specs)

    def _known(self) -> set[str]:
        """What discovery passes over: the paths read from (where a moved run is now, not where it
        was), but a tracker's store by the ids of its runs, so that it is looked at for new ones."""
        stores = {spec.id: spec.path for spec in self.specs.values() if self.in_store([spec.id])}
        return (set(self._by_path) - set(stores.values())) | set(stores)

    def _gone_runs(self) -> list[str]:
        """Runs whose file or folder is no longer where it was found."""
        return [run_id for run_id, spec in self.specs.items() if not is_url(spec.path) and not os.path.lexists(spec.path)]

    def _moved_here(self, spec: RunSpec, gone: list[str]) -> str | None:
        """The gone run whose files ``spec`` holds, moved (a renamed run folder), if one is."""
        for run_id in gone:
            old = self.specs[run_id]
            if old.format == spec.format and self.sources[run_id].relocate(old.path, spec.path):
                return run_id
        return None

    def _follow_move(self, run_id: str, spec: RunSpec) -> RunSpec:
        """The run ``run_id`` is now at ``spec``'s path: the same run, under the id it has."""
        for path, run_ids in list(self._by_path.items()):
            if run_id in run_ids:
                run_ids.remove(run_id)
                if not run_ids:
                    del self._by_path[path]
        moved = dataclasses.replace(spec, id=run_id)
        self.specs[run_id] = moved
        for path in {spec.path, *self.sources[run_id].paths()}:
            self._by_path.setdefault(path, []).append(run_id)
        return moved

    def runs_for_path(self, path: str) -> list[str]:
        """The runs a changed path belongs to (a file, a file inside a run folder, a store's file)."""
        if is_url(path):
            return self._by_path.get(path, [])
        path = os.path.abspath(path)
        while True:
            run_ids = self._by_path.get(path)
            if run_ids:
                return run_ids
            parent = os.path.dirname(path)
            if parent == path:
                return []
            path = parent

    def sweep(self, budget: float, clock=time.perf_counter) -> list[str]:
        """The runs whose files changed, among the next ones in turn that ``budget`` seconds of
        cheap checks allow (at least one; all of them when they fit).

        The safety poll behind file events: its cost per wake stays the same however many runs
        are idle, and a sweep of every run is spread over as many wakes as it needs.
        """
        ids = list(self.sources)
        if not ids:
            return []
        began, out, checked = clock(), [], 0
        start = self._sweep_at % len(ids)
        while checked < len(ids):
            run_id = ids[(start + checked) % len(ids)]
            checked += 1
            if self.sources[run_id].changed():
                out.append(run_id)
            if clock() - began > budget:
                break
        self._sweep_at = (start + checked) % len(ids)
        return out

    def watched_files(self) -> list[str]:
        return [p for source in self.sources.values() for p in source.paths()]

    # -- reading ---------------------------------------------------------------

    def read(self, run_ids=None, *, check_all: bool = False, budget: float | None = None) -> ReadResult:
        """Read what is new in ``run_ids`` (default: every run whose files changed).

        A run found gone from where it was is looked for first (one scan per call): moved
        with its folder, it is read on at its new place (see :meth:`scan`), not said deleted.
        With a ``budget`` (seconds) and every run to look at, the read stops once it is spent
        (``more`` is then set) and the next goes on from the run after the last one read: a
        first load of thousands of runs comes in parts, and the first points show early.
        """
        result = ReadResult()
        if budget is not None and run_ids is None and self.sources:
            return self._read_in_turn(result, check_all, budget)
        targets = list(self.sources.keys() if run_ids is None else run_ids)
        turn = self._turn % len(targets) if targets else 0
        targets = targets[turn:] + targets[:turn]  # each big log in its turn (see MAX_FULL_READS)
        looked = False
        full = 0
        for k, run_id in enumerate(targets):
            more, looked = self._read_one(run_id, run_ids is None and not check_all, result, looked)
            result.more = result.more or more
            full += more
            if full >= MAX_FULL_READS:
                self._turn += k + 1
                result.more = True
                break
        return result

    def _read_in_turn(self, result: ReadResult, check_all: bool, budget: float) -> ReadResult:
        """:meth:`read` of every run within ``budget`` seconds, on from where the last stopped.

        A pass goes once round every run; ``more`` stays set until a whole pass read nothing
        that had more to come (and no run was found meanwhile).
        """
        ids = list(self.sources)
        count = len(ids)
        if not 0 < self._pass_left <= count:
            self._pass_left, self._pass_more, self._pass_runs = count, False, count
        start, began, looked, k = self._read_at % count, time.perf_counter(), False, 0
        full = 0
        while self._pass_left > 0 and not (k and time.perf_counter() - began > budget) and full < MAX_FULL_READS:
            more, looked = self._read_one(ids[(start + k) % count], not check_all, result, looked)
            k += 1
            self._pass_left -= 1
            self._pass_more = self._pass_more or more
            full += more
        self._read_at = (start + k) % count
        result.more = self._pass_left > 0 or self._pass_more or len(self.sources) != self._pass_runs
        return result

    def _read_one(self, run_id: str, only_changed: bool, result: ReadResult, looked: bool) -> tuple[bool, bool]:
        """Read one run into ``result`` (unless ``only_changed`` and its files did not change);
        (whether it has more to read, whether a scan looked for moved runs yet)."""
        source = self.sources.get(run_id)
        if source is None or (only_changed and not source.changed()):
            return False, looked
        if not looked and not is_url(self.specs[run_id].path) and not os.path.lexists(self.specs[run_id].path):
            # Gone from where it was: perhaps moved (its folder renamed) and not deleted.
            # A scan finds out before the read would say "deleted".
            looked = True
            result.merge(self.scan())
        try:
            items, more = source.read()
        except Exception as exc:  # a reader bug must not take the viewer down
            items, more = [Notice("error", f"{self.specs[run_id].source}: reader failed: {exc!r}")], False
        if items:
            result.updates.append(Update(run_id, items))
        return more, looked


def _free_id(run_id: str, taken) -> str:
    """``run_id`` made unique: ``path#2``, ``path#3``, ..."""
    n = 2
    while f"{run_id}#{n}" in taken:
        n += 1
    return f"{run_id}#{n}"


def _copies_finder(spec: RunSpec):
    """What finds the rotated copies read before a line log (``train.log.1``), oldest first."""
    if spec.format not in ("csv", "jsonl", "text") or not os.path.isfile(spec.path):
        return None
    from tuiloss.core.discover import rotated_copies

    return rotated_copies


def new_run(spec: RunSpec, options: Options = Options()) -> Run:
    return Run(
        id=spec.id,
        label=spec.source,
        source=spec.source,
        format=spec.format,
        config=dict(spec.config),
        metric_override=options.metric,
        path=spec.path,
        step_override=options.step,
    )


def apply_result(store: Store, result: ReadResult, options: Options = Options(), now: float | None = None) -> int:
    """Store what a read produced; return how many points were added."""
    for spec in result.moved:
        run = store.runs.get(spec.id)
        if run is not None:
            run.path, run.source, run.config, run.deleted = spec.path, spec.source, dict(spec.config), False
    if result.new_runs:
        for spec in result.new_runs:
            store.add(new_run(spec, options))
    if result.new_runs or result.moved:
        relabel(store)
    return apply_updates(store, result.updates, now)


def apply_updates(store: Store, updates: list[Update], now: float | None = None) -> int:
    added = 0
    for update in updates:
        run = store.runs.get(update.run_id)
        if run is None:
            continue
        for item in update.items:
            if isinstance(item, Batch):
                added += run.apply(item, now)
            elif isinstance(item, SegmentEvent):
                if item.reason == "deleted":
                    run.deleted = True
                else:
                    run.deleted = False
                    run.mark(item)
            elif isinstance(item, Notice):
                run.notices.append(item)
                del run.notices[:-50]
                run.changed()  # edited in place: no field set
    return added


def relabel(store: Store) -> None:
    from tuiloss.core.discover import make_labels

    # A run is named after where it is now (a moved run keeps its id); the runs of one store
    # share its file, so they go by their ids. The runs split out of one log follow its label.
    logs = list(store.runs.values())
    shared = Counter(run.path for run in logs if run.path)
    keys = {run.id: run.path if run.path and shared[run.path] == 1 else run.id for run in logs}
    labels = make_labels([(keys[run.id], run.source, run.config) for run in logs])
    for run in logs:
        run.label = labels.get(keys[run.id], run.source)


def load(paths: list[str], options: Options = Options(),
         stored: Callable[[Store], None] | None = None) -> tuple[Store, Engine, list[Notice]]:
    """Read every run under ``paths`` to its current end.

    The viewer's driver does the reading, with :class:`~tuiloss.core.driver.NoWatcher`
    and up to the end of what is on disk, where a last line without a newline is read
    as it is. As in the viewer, reading and storing overlap:
    it reads and parses the next chunks on a thread while this one stores the last. What
    a read raised is raised here, and the reader thread is gone when this returns.
    ``stored(store)``, if given, is called on this thread after each batch is stored, or after
    all that were read meanwhile, when it was slower than the reads.
    """
    engine = Engine(paths, options, hold=0.0)
    store = Store()
    notices: list[Notice] = []
    posted: queue.SimpleQueue = queue.SimpleQueue()
    driver = Ingestor(engine, NoWatcher(), posted.put)
    from tuiloss.core.formats.csv import release_freed_memory, yielding_to_caller

    # the caller's work on each batch comes first: the parsing takes what CPU it leaves
    with yielding_to_caller() if stored is not None else contextlib.nullcontext():
        _load(driver, posted, store, notices, options, stored)
    release_freed_memory()  # what the reads and parses freed, given back before the store is used
    return store, engine, notices


def _load(driver: Ingestor, posted: queue.SimpleQueue, store: Store, notices: list[Notice], options: Options,
          stored: Callable[[Store], None] | None) -> None:
    """:func:`load`'s reading thread driven, and its batches stored and handed on, to the end."""
    thread = threading.Thread(target=_drive, args=(driver, posted), name="tuiloss-load", daemon=True)
    thread.start()

    def take(event) -> bool:
        """Store one posted event; False when it says the load is over."""
        if isinstance(event, LoadFinished):
            return False
        if isinstance(event, BaseException):
            raise event
        if isinstance(event, IngestFailed) and event.error is not None:
            raise event.error
        if isinstance(event, Ingested):
            apply_result(store, event.result, options, now=time.time())
            notices.extend(event.result.notices)
            driver.ack()
        return True

    try:
        going = take(posted.get())
        while going:
            if stored is not None:
                # Batches parsed meanwhile are stored first, and handed on as one: the
                # caller's work on them (an analysis) then pays its per-call costs once.
                while going:
                    try:
                        going = take(posted.get_nowait())
                    except queue.Empty:
                        break
                stored(store)
            if going:
                going = take(posted.get())
    finally:
        driver.stop()
        thread.join()


def _drive(driver: Ingestor, posted: queue.SimpleQueue) -> None:
    """The driver to the end of the backlog; whatever escapes it is handed to the caller."""
    try:
        driver.run(follow=False)
    except BaseException as exc:  # raised by the caller
        posted.put(exc)
