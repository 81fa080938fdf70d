"""The headless watch engine: discovery plus incremental reading of every run.

The driver (:mod:`tuiloss.core.driver`) runs :meth:`Engine.read` on its thread
and whoever receives its batches hands the resulting :class:`Update` objects to
:func:`apply_updates` on their own: the viewer follows changes that way, and
:func:`load` (``tuiloss report``, the tests) reads until nothing is left.
"""

from __future__ import annotations

import os
import queue
import threading
import time
from dataclasses import dataclass, field

from typing import TYPE_CHECKING

from tuiloss.core.driver import IngestFailed, Ingested, Ingestor, LoadFinished, NoWatcher
from tuiloss.core.model import Batch, Notice, RunSpec, SegmentEvent
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
    more: bool = False

    @property
    def empty(self) -> bool:
        return not (self.new_runs or self.updates or self.notices)


class Engine:
    """Finds runs under ``roots`` and reads what is new in them."""

    def __init__(self, roots: list[str], options: Options = Options(), *, hold: float = HOLD_SECONDS) -> None:
        self.roots = [os.path.abspath(root) for root in roots]
        self.options = options
        self.hold = hold  # how long a last line without a newline waits (0 for a finished file)
        self.specs: dict[str, RunSpec] = {}
        self.sources: dict[str, Source] = {}
        self.ignored: dict[str, str] = {}
        self.configs: list[str] = []
        self._by_path: dict[str, str] = {}
        self._reported_notices: set[str] = set()
        self._sniffed: dict = {}

    # -- discovery -------------------------------------------------------------

    def scan(self) -> ReadResult:
        """Look for runs not seen before."""
        from tuiloss.core.discover import discover
        from tuiloss.core.sources import make_source

        found = discover(
            self.roots, format=self.options.format, known=self.specs.keys(), sniffed=self._sniffed
        )
        result = ReadResult(ignored=[item for item in found.ignored if item[0] not in self.ignored])
        for path, why in result.ignored:
            self.ignored[path] = why
        self.configs = found.configs
        for notice in found.notices:
            if notice.message not in self._reported_notices:
                self._reported_notices.add(notice.message)
                result.notices.append(notice)
        for spec in found.runs:
            self.specs[spec.id] = spec
            self.sources[spec.id] = make_source(spec, pattern=self.options.pattern, hold=self.hold,
                                               earlier=_earlier_files(spec))
            self._by_path[spec.path] = spec.id
            result.new_runs.append(spec)
        return result

    def run_for_path(self, path: str) -> str | None:
        """The run a changed path belongs to (a file, or a file inside a run folder)."""
        path = os.path.abspath(path)
        while True:
            run_id = self._by_path.get(path)
            if run_id is not None:
                return run_id
            parent = os.path.dirname(path)
            if parent == path:
                return None
            path = parent

    def watched_files(self) -> list[str]:
        return [p for source in self.sources.values() for p in source.paths()]

    # -- reading ---------------------------------------------------------------

    def read(self, run_ids=None, *, check_all: bool = False) -> ReadResult:
        """Read what is new in ``run_ids`` (default: every run whose files changed)."""
        result = ReadResult()
        targets = self.sources.keys() if run_ids is None else run_ids
        for run_id in list(targets):
            source = self.sources.get(run_id)
            if source is None:
                continue
            if run_ids is None and not check_all and not source.changed():
                continue
            try:
                items, more = source.read()
            except Exception as exc:  # a reader bug must not take the viewer down
                items, more = [Notice("error", f"{self.specs[run_id].source}: reader failed: {exc!r}")], False
            if items:
                result.updates.append(Update(run_id, items))
            result.more = result.more or more
        return result


def _earlier_files(spec: RunSpec) -> list[str]:
    """Rotated copies read before a line log (``train.log.1``), oldest first."""
    if spec.format not in ("csv", "jsonl", "text") or not os.path.isfile(spec.path):
        return []
    from tuiloss.core.discover import rotated_copies

    return rotated_copies(spec.path)


def new_run(spec: RunSpec, options: Options = Options()) -> Run:
    return Run(
        id=spec.id,
        label=spec.source,
        source=spec.source,
        format=spec.format,
        config=dict(spec.config),
        metric_override=options.metric,
        step_override=options.step,
    )


def apply_result(store: Store, result: ReadResult, options: Options = Options(), now: float | None = None) -> int:
    """Store what a read produced; return how many points were added."""
    if result.new_runs:
        for spec in result.new_runs:
            store.add(new_run(spec, options))
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
    return added


def relabel(store: Store) -> None:
    from tuiloss.core.discover import make_labels

    logs = list(store.runs.values())  # the logs as read; the runs split out of one follow its label
    labels = make_labels([(run.id, run.source, run.config) for run in logs])
    for run in logs:
        run.label = labels.get(run.id, run.source)


def load(paths: list[str], options: Options = Options()) -> tuple[Store, Engine, list[Notice]]:
    """Read every run under ``paths`` to its current end.

    The viewer's driver does the reading, with :class:`~tuiloss.core.driver.NoWatcher`
    and up to the end of what is on disk, where a last line without a newline is read
    as it is. As in the viewer, reading and storing overlap:
    it reads and parses the next chunks on a thread while this one stores the last. What
    a read raised is raised here, and the reader thread is gone when this returns.
    """
    engine = Engine(paths, options, hold=0.0)
    store = Store()
    notices: list[Notice] = []
    posted: queue.SimpleQueue = queue.SimpleQueue()
    driver = Ingestor(engine, NoWatcher(), posted.put)
    thread = threading.Thread(target=_drive, args=(driver, posted), name="tuiloss-load", daemon=True)
    thread.start()
    try:
        while not isinstance(event := posted.get(), LoadFinished):
            if isinstance(event, BaseException):
                raise event
            if isinstance(event, IngestFailed) and event.error is not None:
                raise event.error
            if isinstance(event, Ingested):
                apply_result(store, event.result, options, now=time.time())
                notices.extend(event.result.notices)
                driver.ack()
    finally:
        driver.stop()
        thread.join()
    return store, engine, notices


def _drive(driver: Ingestor, posted: queue.SimpleQueue) -> None:
    """The driver to the end of the backlog; whatever escapes it is handed to the caller."""
    try:
        driver.run(follow=False)
    except BaseException as exc:  # raised by the caller
        posted.put(exc)
