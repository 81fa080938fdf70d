"""Chaos: writer processes torment many logs while the viewer's watch engine follows them.

What runs is exactly the viewer's code without Textual: :class:`~tuiloss.core.driver.Ingestor`
reading through :class:`~tuiloss.core.engine.Engine`, woken by a real
:class:`~tuiloss.ui.watcher.Watcher` (inotify, or polling), posting to a plain
callable; a "UI thread" applies each batch with :func:`~tuiloss.core.engine.apply_result`
and acknowledges it, as the app does.

Each trial starts three writer processes (``chaos_writer.py``) over a fresh tree
holding CSV, JSON-lines, nanoGPT stdout, MLflow and TensorBoard runs and a
trainer_state.json. They append with random chunk boundaries (partial lines,
numbers split in two), random pauses, NaN and Inf, garbage and binary lines,
step resets, truncations, rotations (rename + recreate), atomic replacements,
deletions and re-creations, and history rewrites.

**Ground truth.** Bytes that are destroyed before anyone could read them cannot
be required, so each writer makes destruction knowable: before truncating,
replacing or deleting a file (or rewriting trainer_state.json's history) it asks
the test to wait until tuiloss holds everything written so far to that run, and
after deleting it waits until tuiloss has seen the deletion. A rotation waits
only for the tailer to be on the current file: lines written after that are in
the renamed file, and tuiloss must drain them. Everything else races freely. The
writers' journals then say exactly, per run and metric, which points must be
held, in which segments, with which reasons, and how many lines must be counted
as rejected; a rotated-away file is drained into its run.

After the writers stop, the test waits (with a deadline) until the store matches
the journals, then compares: zero points lost, zero invented, every segment
where it must be with an allowed reason, every rejected line counted.

The writers also change files without waiting, as real tools do (a restarted job,
copytruncate, rsync, Lightning's header rewrite, a same-size rewrite in place: see
chaos_writer.py). Where that
destroys bytes, what came before may be held as a prefix only; what follows must
be held exactly. A rotated copy is an earlier part of its run, never a run.
"""

from __future__ import annotations

import json
import os
import queue
import random
import subprocess
import sys
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tuiloss.core.driver import IngestFailed, Ingested, Ingestor, LoadFinished, WatchStarted
from tuiloss.core.engine import Engine, Options, apply_result
from tuiloss.core.store import Store
from tuiloss.ui.watcher import Watcher

WRITER = Path(__file__).with_name("chaos_writer.py")
#: Which segment reasons a writer's action may show up as.
ACCEPT = {
    "truncate": {"truncated", "replaced"},  # "replaced" when the new content outgrew the old first
    "rotate": {"rotated", "recreated"},  # "recreated" when the tailer looked between rename and create
    "replace": {"replaced"},
    "recreate": {"recreated"},
    "rewrite": {"replaced"},
    # a change that did not wait; "rotated" when the copy was read first, as an earlier segment
    "copytruncate": {"truncated", "replaced", "rotated"},
    # "truncated" when the tailer had not read to the end: the bytes before its offset changed
    "samesize": {"replaced", "truncated"},
}
SYNC_DEADLINE = 45.0
SETTLE_DEADLINE = 40.0  # polling discovers new files every 5 s: ample
#: Trials at once: polling trials mostly wait for the 5 s discovery scan, so more of them overlap.
CONCURRENT_TRIALS = {"inotify": 2, "polling": 5}


# -- the plan of a trial ---------------------------------------------------------------------


def plan(seed: int, root: Path, stage: Path, seconds: float) -> list[dict]:
    """Three writers' specs: which logs each one owns, where, and for how long."""
    rng = random.Random(seed)
    kinds = ["csv", "jsonl", "text", "csv", "jsonl", "text", "mlflow", "hf_trainer", "tfevents"]
    rng.shuffle(kinds)
    folders = [root / f"exp{k}" for k in range(4)]
    writers = [{"seed": rng.randrange(1 << 32), "seconds": seconds, "stage": str(stage), "logs": [], "late": []}
               for _ in range(3)]
    names = {"csv": "metrics.csv", "jsonl": "metrics.jsonl", "text": "train.log", "hf_trainer": "trainer_state.json"}
    used: set[Path] = set()
    for index, kind in enumerate(kinds):
        if kind == "mlflow":
            path = root / "mlruns" / "0" / f"run{index}"
        elif kind == "tfevents":
            path = root / "tb" / f"run{index}"
        else:
            folder = rng.choice(folders)
            path = folder / names[kind]
            while path in used:
                path = path.with_name(f"{index}_{names[kind]}")
        used.add(path)
        writers[index % 3]["logs"].append({"kind": kind, "path": str(path)})
    for k, writer in enumerate(writers):
        kind = rng.choice(["csv", "jsonl", "text"])
        writer["late"].append({"kind": kind, "path": str(root / f"late{k}" / names[kind])})
    return writers


# -- what tuiloss holds and what it must hold ------------------------------------------------------


def point(step, value) -> tuple[str, str]:
    return repr(float(step)), repr(float(value))


#: Series the readers derive beside the points written: a text log's checkpoint-save and overflow
#: lines as events, a TensorBoard log's event times. Checked apart (see :func:`derived_problems`).
DERIVED = ("_checkpoint", "_overflow", "_timestamp")


def held(run) -> dict:
    """{metric: [(reason, [(step, value), ...]), ...]} of one stored run (its derived series left out)."""
    out = {}
    for name, series in run.series.items():
        if name in DERIVED:
            continue
        steps, values = series.steps.view, series.values.view
        out[name] = [
            (seg.reason, [point(s, v) for s, v in zip(steps[seg.start:end], values[seg.start:end])])
            for seg, end in series.segment_bounds()
        ]
    return out


def expected(entries: list) -> tuple[dict, Counter, Counter]:
    """Replay a journal with the store's rules: ({metric: [(reasons, points)]}, rejected, rejected at least).

    A change that did not wait (``["u", kind]``) leaves a marker segment ``(None, [])``:
    what came before it may be held in part only. The rejected lines after the last
    marker must all be counted; those before it may be, so ``rejected`` is an upper bound
    and ``at_least`` a lower one (equal in a journal without a marker).
    """
    series: dict[str, list] = {}
    pending: dict[str, set] = {}
    descending: dict[str, bool] = {}  # the last point of the metric went back
    rejected: Counter = Counter()
    at_least: Counter = Counter()
    for kind, body in entries:
        if kind == "u":
            for name, segments in series.items():
                segments.append((None, []))
                pending[name] = ACCEPT[body]
            at_least = Counter()
        elif kind == "e":
            for name in series:
                pending[name] = ACCEPT[body]
        elif kind == "r":
            rejected[body] += 1
            at_least[body] += 1
        else:
            for name, points in body.items():
                segments = series.setdefault(name, [])
                for step, value in points:
                    went_back = False
                    if not segments:
                        segments.append(({"start"}, []))
                    elif name in pending:
                        segments.append((pending.pop(name), []))
                    elif segments[-1][0] is None:
                        segments.append(({"start"}, []))  # a new metric after a marker
                    elif float(step) < float(segments[-1][1][-1][0]):
                        went_back = True
                        if not descending.get(name):
                            segments.append(({"reset"}, []))
                        elif segments[-1][0] == {"reset"}:  # back twice in a row: the counter runs backwards
                            segments[-1] = ({"backwards"}, segments[-1][1])
                    descending[name] = went_back
                    segments[-1][1].append(point(step, value))
    return series, rejected, at_least


def differences(store: Store, journals: dict) -> list[str]:
    """Everything where the store and the journals disagree (empty when they agree)."""
    problems = []
    for run_id in sorted(set(store.runs) - set(journals)):
        problems.append(f"{run_id}: a run nobody wrote ({store.runs[run_id].points} points)")
    for run_id, journal in sorted(journals.items()):
        run = store.runs.get(run_id)
        if run is None:
            problems.append(f"{run_id}: never became a run")
            continue
        if run.format != journal["format"]:
            problems.append(f"{run_id}: read as {run.format}, written as {journal['format']}")
        want, rejected, at_least = expected(journal["entries"])
        have = held(run)
        for name in sorted(set(want) | set(have)):
            problems += _compare_series(run_id, name, want.get(name, []), have.get(name, []))
        problems += derived_problems(run_id, run, want)
        unmatched, fewest = rejected.pop("unmatched", 0), at_least.pop("unmatched", 0)
        if not fewest <= run.unmatched <= unmatched:
            problems.append(f"{run_id}: {run.unmatched} unmatched lines counted, {fewest}..{unmatched} written")
        counted = Counter(run.skipped)
        if any(not at_least[r] <= counted[r] <= rejected[r] for r in set(counted) | set(rejected)):
            problems.append(f"{run_id}: skipped {dict(run.skipped)}, written {dict(rejected)}"
                            + (f" (at least {dict(at_least)})" if at_least != rejected else ""))
        if run.deleted:
            problems.append(f"{run_id}: marked deleted, but the file is there")
    return problems


def derived_problems(run_id: str, run, want: dict) -> list[str]:
    """A derived series sits at steps points were written at: an event at the step the log had
    reached, a clock at the step of its event."""
    written = {step for segments in want.values() for _, points in segments for step, _ in points}
    problems = []
    for name in DERIVED:
        series = run.series.get(name)
        if series is None:
            continue
        steps = {point(s, 0.0)[0] for s in series.steps.view}
        if not steps <= written:
            problems.append(f"{run_id} [{name}]: at steps no point was written at: {sorted(steps - written)[:3]}")
    return problems


def _compare_series(run_id: str, name: str, want: list, have: list) -> list[str]:
    where = f"{run_id} [{name}]"
    if any(reasons is None for reasons, _ in want):
        return _compare_unwaited(where, want, have)
    want_points = [p for _, points in want for p in points]
    have_points = [p for _, points in have for p in points]
    if want_points != have_points:
        lost = Counter(want_points) - Counter(have_points)
        invented = Counter(have_points) - Counter(want_points)
        first = next((i for i, (a, b) in enumerate(zip(want_points, have_points)) if a != b),
                     min(len(want_points), len(have_points)))
        return [f"{where}: {len(have_points)} points held, {len(want_points)} written; "
                f"lost {sum(lost.values())} {list(lost)[:3]}, invented {sum(invented.values())} "
                f"{list(invented)[:3]}; first difference at point {first}"]
    problems = []
    if len(want) != len(have):
        problems.append(f"{where}: {len(have)} segments {[r for r, _ in have]}, "
                        f"written {len(want)} {[sorted(r) for r, _ in want]}")
        return problems
    for k, ((reasons, points), (reason, got)) in enumerate(zip(want, have)):
        if reason not in reasons or len(points) != len(got):
            problems.append(f"{where}: segment {k} is {reason!r} with {len(got)} points; "
                            f"written {sorted(reasons)} with {len(points)}")
    return problems


def _prefixes(held: list, epochs: list[list]) -> bool:
    """Whether ``held`` is a prefix of the first epoch, then one of the next, and so on (any
    of them empty). Tried every way: an epoch may start with the very points the next one does."""
    ends = {0}
    for points in epochs:
        reach = set()
        for at in ends:
            n = 0
            reach.add(at)
            while n < len(points) and at + n < len(held) and held[at + n] == points[n]:
                n += 1
                reach.add(at + n)
        ends = reach
    return len(held) in ends


def _compare_unwaited(where: str, want: list, have: list) -> list[str]:
    """Before each marker, any prefix of what was written; after the last, exactly what was."""
    epochs: list[list] = [[]]
    for reasons, points in want:
        if reasons is None:
            epochs.append([])
        else:
            epochs[-1].append((reasons, points))
    have_points = [p for _, points in have for p in points]
    final = epochs[-1]
    final_points = [p for _, points in final for p in points]
    earlier = [[p for _, points in epoch for p in points] for epoch in epochs[:-1]]
    at = len(have_points) - len(final_points)
    if at < 0 or have_points[at:] != final_points or not _prefixes(have_points[:at], earlier):
        at = 0  # where a greedy match of the earlier epochs ends, to say what differs
        for points in earlier:
            for p in points:
                if at < len(have_points) and have_points[at] == p:
                    at += 1
                else:
                    break
        rest = have_points[at:]
        lost = Counter(final_points) - Counter(rest)
        invented = Counter(rest) - Counter(final_points)
        return [f"{where}: after a change that did not wait, {len(rest)} points held, {len(final_points)} "
                f"written; lost {sum(lost.values())} {list(lost)[:3]}, invented {sum(invented.values())} "
                f"{list(invented)[:3]} ({at} points held from before it); held segments "
                f"{[(r, len(p)) for r, p in have]}, written epochs {[sum(len(p) for _, p in e) for e in epochs]}"]
    if not final_points:
        return []
    starts, total = [], 0
    for reason, points in have:
        starts.append((total, reason))
        total += len(points)
    held_final = [(start, reason) for start, reason in starts if start >= at]
    if not held_final or held_final[0][0] != at or len(held_final) != len([f for f in final if f[1]]):
        return [f"{where}: after a change that did not wait, segments {[r for _, r in held_final]} from "
                f"point {at}, written {[sorted(r) for r, _ in final]}"]
    problems = []
    for k, ((reasons, _), (_, reason)) in enumerate(zip([f for f in final if f[1]], held_final)):
        allowed = set(reasons)
        if k == 0:
            # the first may carry the reason of an earlier change whose points were never read
            allowed |= set().union(*ACCEPT.values()) | ({"start"} if at == 0 else set())
        if reason not in allowed:
            problems.append(f"{where}: segment {reason!r} after a change that did not wait; written {sorted(allowed)}")
    return problems


# -- one trial -----------------------------------------------------------------------------------


@dataclass
class Outcome:
    seed: int
    mode: str
    problems: list[str] = field(default_factory=list)
    points: int = 0
    runs: int = 0
    seconds: float = 0.0
    events: Counter = field(default_factory=Counter)

    def line(self) -> str:
        state = "ok" if not self.problems else f"FAILED ({len(self.problems)} problems)"
        return (f"chaos seed={self.seed} mode={self.mode}: {state}, {self.runs} runs, {self.points} points, "
                f"events {dict(self.events)}, {self.seconds:.1f}s")


class WriterProcess:
    """A chaos_writer.py child: its messages arrive on a queue, answers go to its stdin."""

    def __init__(self, spec: dict, inbox: queue.Queue, index: int) -> None:
        self.index = index
        self.proc = subprocess.Popen(
            [sys.executable, str(WRITER), json.dumps(spec)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        )
        self.stderr = b""
        self._reader = threading.Thread(target=self._read, args=(inbox,), daemon=True)
        self._reader.start()

    def _read(self, inbox: queue.Queue) -> None:
        for line in self.proc.stdout:
            inbox.put((self.index, json.loads(line)))
        self.stderr = self.proc.stderr.read()
        inbox.put((self.index, {"exited": self.proc.wait()}))

    def say(self, word: str) -> None:
        self.proc.stdin.write(word.encode() + b"\n")
        self.proc.stdin.flush()

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(timeout=10)
        self._reader.join(timeout=10)


def run_trial(seed: int, mode: str, base: Path, seconds: float) -> Outcome:
    began = time.monotonic()
    outcome = Outcome(seed, mode)
    root, stage = base / "tree", base / "stage"
    root.mkdir(parents=True)
    stage.mkdir()
    specs = plan(seed, root, stage, seconds)
    inbox: queue.Queue = queue.Queue()
    writers = [WriterProcess(spec, inbox, k) for k, spec in enumerate(specs)]
    posted: queue.Queue = queue.Queue()
    ingestor = None
    thread = None
    try:
        _wait_ready(writers, inbox)
        engine = Engine([str(root)], Options())
        watcher = Watcher([str(root)], poll=0.2 if mode == "polling" else None, mounts=[])
        ingestor = Ingestor(engine, watcher, posted.put)
        thread = threading.Thread(target=ingestor.run, name=f"ingest-{seed}", daemon=True)
        thread.start()
        store = Store()
        ui = _Applier(store, posted, ingestor, outcome)
        ui.until(lambda: ui.loaded, 30.0, "the first load")
        if ui.mode != mode:
            outcome.problems.append(f"watching in {ui.mode} mode, not {mode}")
        for writer in writers:
            writer.say("go")
        journals = _follow(writers, inbox, ui, outcome)
        if not outcome.problems:
            settled = ui.until(lambda: not differences(store, journals), SETTLE_DEADLINE, None)
            if not settled:
                outcome.problems += differences(store, journals)
        outcome.points = store.points
        outcome.runs = len(store)
        for journal in journals.values():
            outcome.events.update(body for kind, body in journal["entries"] if kind in ("e", "u"))
    finally:
        if ingestor is not None:
            ingestor.stop()
        if thread is not None:
            thread.join(timeout=10)
            if thread.is_alive():
                outcome.problems.append("the ingest thread did not stop")
        for writer in writers:
            writer.stop()
    outcome.seconds = time.monotonic() - began
    return outcome


class _Applier:
    """The UI thread's part: apply what the ingest worker posted, acknowledge it."""

    def __init__(self, store: Store, posted: queue.Queue, ingestor: Ingestor, outcome: Outcome) -> None:
        self.store, self.posted, self.ingestor, self.outcome = store, posted, ingestor, outcome
        self.loaded = False
        self.mode = None

    def pump(self, wait: float = 0.02) -> None:
        try:
            message = self.posted.get(timeout=wait)
        except queue.Empty:
            return
        while True:
            if isinstance(message, Ingested):
                apply_result(self.store, message.result)
                self.ingestor.ack()
            elif isinstance(message, WatchStarted):
                self.mode = message.mode
            elif isinstance(message, LoadFinished):
                self.loaded = True
            elif isinstance(message, IngestFailed):
                self.outcome.problems.append(f"ingest failed: {message.message}")
            try:
                message = self.posted.get_nowait()
            except queue.Empty:
                return

    def until(self, predicate, timeout: float, what: str | None) -> bool:
        deadline = time.monotonic() + timeout
        while not predicate():
            if time.monotonic() > deadline:
                if what is not None:
                    raise AssertionError(f"timed out after {timeout}s waiting for {what}")
                return False
            self.pump()
        return True


def _wait_ready(writers: list[WriterProcess], inbox: queue.Queue) -> None:
    ready = set()
    deadline = time.monotonic() + 60
    while len(ready) < len(writers):
        try:
            index, message = inbox.get(timeout=max(0.0, deadline - time.monotonic()))
        except queue.Empty:
            raise AssertionError("chaos writers did not start") from None
        if "exited" in message:
            raise AssertionError(f"writer {index} died: {writers[index].stderr.decode()[-2000:]}")
        ready.add(index)


def _follow(writers: list[WriterProcess], inbox: queue.Queue, ui: _Applier, outcome: Outcome) -> dict:
    """Serve the writers' sync requests until every one is done; return the journals."""
    journals: dict = {}
    done: set[int] = set()
    waiting: list[tuple[int, dict, float]] = []
    while len(done) < len(writers):
        ui.pump(0.005)
        while True:
            try:
                index, message = inbox.get_nowait()
            except queue.Empty:
                break
            if "exited" in message:
                if index not in done:
                    outcome.problems.append(f"writer {index} died: {writers[index].stderr.decode()[-2000:]}")
                    return journals
            elif "done" in message:
                done.add(index)
                journals.update(message["runs"])
            elif "sync" in message:
                waiting.append((index, message, time.monotonic() + SYNC_DEADLINE))
        still = []
        for index, message, deadline in waiting:
            if _synced(ui.store, message):
                writers[index].say("ok")
            elif time.monotonic() > deadline:
                run = ui.store.runs.get(message["run"])
                outcome.problems.append(
                    f"{message['run']}: sync {message['sync']} timed out: wanted {message.get('points')} points, "
                    f"{message.get('rejected')} rejected; holds "
                    f"{run.points if run else None} points, "
                    f"{run.skipped_lines + run.unmatched if run else None} rejected"
                    + (f"; skipped lines: {run.skipped_examples[-3:]}" if run else ""))
                return journals
            else:
                still.append((index, message, deadline))
        waiting = still
    return journals


def _synced(store: Store, message: dict) -> bool:
    run = store.runs.get(message["run"])
    if run is None:
        return False
    if message["sync"] == "deleted":
        return run.deleted
    points = sum(len(series) for name, series in run.series.items() if name not in DERIVED)
    return points >= message["points"] and run.skipped_lines + run.unmatched >= message["rejected"]


# -- the tests -----------------------------------------------------------------------------------------


def _seeds() -> tuple[list[int] | None, int]:
    replay = os.environ.get("TUILOSS_CHAOS_SEED")
    if replay:
        return [int(replay)], int(replay)
    base = random.SystemRandom().randrange(1 << 31)
    return None, base


def test_the_checker_tries_every_split_of_what_came_before_a_change_that_did_not_wait():
    """Epochs that start with the same point (step 3, the same lr: it happens) are no loss."""
    x, a, b, c = point(9, 0.5), point(3, 0.000524), point(5, 0.1), point(8, 0.2)
    want = [({"start"}, [x, b]), (None, []), ({"truncated"}, [a, c]), (None, []), ({"replaced"}, [a, b])]
    assert _compare_unwaited("w", want, [("start", [x]), ("replaced", [a, b])]) == []
    assert _compare_unwaited("w", want, [("start", [x, b]), ("truncated", [a]), ("replaced", [a, b])]) == []
    assert _compare_unwaited("w", want, [("start", [x, c]), ("replaced", [a, b])])  # c is no prefix
    assert _compare_unwaited("w", want, [("start", [x]), ("replaced", [a])])  # b lost after the change


@pytest.mark.parametrize("mode", ["inotify", "polling"])
def test_chaos_nothing_lost_nothing_invented(mode, tmp_path, chaos_budget):
    seconds, fewest, longest = chaos_budget
    replay, base = _seeds()
    began = time.monotonic()
    outcomes: list[Outcome] = []

    def trial(k: int, seed: int) -> Outcome:
        rng = random.Random(seed)
        return run_trial(seed, mode, tmp_path / f"trial{k}", rng.uniform(0.8, longest))

    width = 1 if replay else CONCURRENT_TRIALS[mode]
    with ThreadPoolExecutor(max_workers=width) as pool:
        futures = []
        k = 0
        while True:
            if replay is not None:
                if k == len(replay):
                    break
                seed = replay[k]
            else:
                finished = [f.result().seconds for f in futures if f.done()]
                typical = sum(finished) / len(finished) if finished else 0.0
                if k >= fewest and time.monotonic() - began + typical > seconds:
                    break
                seed = base + k
            while sum(not f.done() for f in futures) >= width:  # a free slot first
                time.sleep(0.05)
            futures.append(pool.submit(trial, k, seed))
            k += 1
        for future in futures:
            outcomes.append(future.result())
    for outcome in outcomes:
        print(outcome.line())
    failed = [o for o in outcomes if o.problems]
    report = "\n".join(
        f"{o.line()}\n  replay: TUILOSS_CHAOS_SEED={o.seed} pytest tests/reliability/test_chaos.py -k {mode}\n"
        + "\n".join(f"  - {p}" for p in o.problems[:15])
        for o in failed
    )
    assert not failed, f"{len(failed)} of {len(outcomes)} chaos trials failed:\n{report}"
    if replay is None:
        assert len(outcomes) >= fewest
    assert sum(o.points for o in outcomes) > 0
