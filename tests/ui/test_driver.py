import threading
import time

import pytest
from ui_helpers import DriftedWatcher

from tuiloss.core import driver
from tuiloss.core.driver import SAFETY_POLL, IngestFailed, Ingested, Ingestor, LoadFinished, NoWatcher, WatchStarted
from tuiloss.core.engine import Engine, Options
from tuiloss.ui.watcher import Watcher


class Collector:
    def __init__(self):
        self.items = []
        self.ingestor = None

    def __call__(self, item):
        self.items.append(item)
        if isinstance(item, Ingested) and self.ingestor is not None:
            self.ingestor.ack()

    def points(self):
        total = 0
        for item in self.items:
            if isinstance(item, Ingested):
                for update in item.result.updates:
                    for batch in update.items:
                        total += getattr(batch, "points", 0)
        return total

    def wait(self, predicate, timeout=10):
        deadline = time.monotonic() + timeout
        while not predicate():
            assert time.monotonic() < deadline, "timed out"
            time.sleep(0.01)


def start(tmp_path, poll=None):
    engine = Engine([str(tmp_path)], Options())
    collector = Collector()
    ingestor = Ingestor(engine, Watcher([str(tmp_path)], poll, mounts=[]), collector)
    collector.ingestor = ingestor
    thread = threading.Thread(target=ingestor.run, daemon=True)
    thread.start()
    return ingestor, collector, thread


def test_loads_then_follows_appends_and_new_files(tmp_path):
    log = tmp_path / "run1" / "train.log"
    log.parent.mkdir()
    log.write_text("".join(f"iter {i}: loss {1 / (i + 1):.4f}\n" for i in range(100)))
    ingestor, collector, thread = start(tmp_path)
    try:
        collector.wait(lambda: any(isinstance(i, LoadFinished) for i in collector.items))
        assert isinstance(collector.items[0], WatchStarted) and collector.items[0].mode == "inotify"
        assert collector.points() == 100
        with open(log, "a") as handle:
            handle.write("iter 100: loss 0.0099\n")
        began = time.monotonic()
        collector.wait(lambda: collector.points() == 101)
        # woken by the file's event, not found by the safety poll (SAFETY_POLL, 2 s, after the load);
        # a loaded machine may delay the read itself by some hundreds of milliseconds
        assert time.monotonic() - began < 0.5 * SAFETY_POLL
        other = tmp_path / "run2" / "metrics.jsonl"
        other.parent.mkdir()
        other.write_text('{"step": 1, "loss": 2.0}\n')
        collector.wait(lambda: any(i.result.new_runs for i in collector.items[2:] if isinstance(i, Ingested)))
        collector.wait(lambda: collector.points() == 102)
    finally:
        ingestor.stop()
        thread.join(timeout=5)
    assert not thread.is_alive()


def test_polling_mode_sees_appends(tmp_path):
    log = tmp_path / "train.log"
    log.write_text("iter 1: loss 1.0\n")
    ingestor, collector, thread = start(tmp_path, poll=0.1)
    try:
        collector.wait(lambda: any(isinstance(i, LoadFinished) for i in collector.items))
        assert collector.items[0].mode == "polling"
        with open(log, "a") as handle:
            handle.write("iter 2: loss 0.5\n")
        collector.wait(lambda: collector.points() == 2, timeout=5)
    finally:
        ingestor.stop()
        thread.join(timeout=5)


def test_pause_holds_reads_until_resumed(tmp_path):
    log = tmp_path / "train.log"
    log.write_text("iter 1: loss 1.0\n")
    ingestor, collector, thread = start(tmp_path)
    try:
        collector.wait(lambda: any(isinstance(i, LoadFinished) for i in collector.items))
        ingestor.pause()
        with open(log, "a") as handle:
            handle.write("iter 2: loss 0.5\n")
        time.sleep(0.4)  # nothing may arrive while paused
        assert collector.points() == 1
        ingestor.resume()
        collector.wait(lambda: collector.points() == 2)
    finally:
        ingestor.stop()
        thread.join(timeout=5)


def test_polling_finds_a_new_run_by_its_folder_not_by_a_rescan(tmp_path, monkeypatch):
    monkeypatch.setattr(driver, "POLL_RESCAN", 600.0)  # no periodic rescan within the test
    (tmp_path / "run1").mkdir()
    (tmp_path / "run1" / "metrics.csv").write_text("step,loss\n1,2.0\n")
    ingestor, collector, thread = start(tmp_path, poll=0.1)
    try:
        collector.wait(lambda: any(isinstance(i, LoadFinished) for i in collector.items))
        assert ingestor.scan_interval >= 600  # the periodic rescan is only a safety net
        (tmp_path / "run2").mkdir()
        (tmp_path / "run2" / "metrics.csv").write_text("step,loss\n1,2.0\n")
        collector.wait(lambda: collector.points() == 2, timeout=20)
    finally:
        ingestor.stop()
        thread.join(timeout=5)


def test_back_pressure_waits_for_acks(tmp_path):
    for k in range(5):
        (tmp_path / f"r{k}.log").write_text("iter 1: loss 1.0\n")
    engine = Engine([str(tmp_path)], Options())
    items = []
    ingestor = Ingestor(engine, Watcher([str(tmp_path)], None, mounts=[]), items.append, max_inflight=1)
    thread = threading.Thread(target=ingestor.run, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 5
        while not any(isinstance(i, Ingested) for i in items):
            assert time.monotonic() < deadline
            time.sleep(0.01)
        time.sleep(0.3)
        assert sum(isinstance(i, Ingested) for i in items) == 1  # waits: nothing acknowledged
        ingestor.ack()
        deadline = time.monotonic() + 5
        while sum(isinstance(i, Ingested) for i in items) < 2:
            assert time.monotonic() < deadline
            time.sleep(0.01)
    finally:
        ingestor.stop()
        thread.join(timeout=5)
    assert not thread.is_alive()


def wait_until(predicate, timeout=10):
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def test_idle_once_loaded_and_every_batch_is_acknowledged(tmp_path):
    for k in range(3):
        (tmp_path / f"r{k}.log").write_text("iter 1: loss 1.0\n")
    items = []
    ingestor = Ingestor(Engine([str(tmp_path)], Options()), NoWatcher(), items.append, max_inflight=100)
    assert not ingestor.idle
    thread = threading.Thread(target=ingestor.run, daemon=True)
    thread.start()
    try:
        wait_until(lambda: any(isinstance(i, LoadFinished) for i in items))
        batches = sum(isinstance(i, Ingested) for i in items)
        assert batches and not ingestor.idle  # waiting for changes, but nothing applied yet
        for _ in range(batches):
            ingestor.ack()
        wait_until(lambda: ingestor.idle)
        ingestor.pause()
        wait_until(lambda: ingestor.idle)
    finally:
        ingestor.stop()
        thread.join(timeout=5)
    assert not thread.is_alive()


def test_without_follow_the_driver_ends_at_the_end_of_the_backlog(tmp_path):
    (tmp_path / "train.log").write_text("".join(f"iter {i}: loss 1.0\n" for i in range(10)))
    collector = Collector()
    collector.ingestor = Ingestor(Engine([str(tmp_path)], Options()), NoWatcher(), collector)
    collector.ingestor.run(follow=False)  # returns: nothing to wait for
    assert collector.items[0] == WatchStarted("none", "", 1.0)
    assert isinstance(collector.items[-1], LoadFinished) and collector.points() == 10


def test_a_broken_watcher_ends_the_loop_instead_of_passing_for_a_read_failure(tmp_path):
    (tmp_path / "train.log").write_text("iter 1: loss 1.0\n")
    watcher = DriftedWatcher()
    posted, raised = [], []
    ingestor = Ingestor(Engine([str(tmp_path)], Options()), watcher, posted.append, max_inflight=100)

    def drive():
        try:
            ingestor.run()
        except AttributeError as exc:
            raised.append(exc)

    watcher.wake()  # the first wait after the load returns at once
    thread = threading.Thread(target=drive, daemon=True)
    thread.start()
    thread.join(timeout=10)
    try:
        assert not thread.is_alive() and len(raised) == 1
        assert any(isinstance(p, LoadFinished) for p in posted)
        assert not any(isinstance(p, IngestFailed) for p in posted)
    finally:
        ingestor.stop()
        thread.join(timeout=5)


def test_a_read_failure_while_following_is_posted_and_the_loop_goes_on(tmp_path, monkeypatch):
    (tmp_path / "train.log").write_text("iter 1: loss 1.0\n")
    watcher = NoWatcher()
    collector = Collector()
    ingestor = collector.ingestor = Ingestor(Engine([str(tmp_path)], Options()), watcher, collector)
    thread = threading.Thread(target=ingestor.run, daemon=True)
    thread.start()
    try:
        collector.wait(lambda: any(isinstance(i, LoadFinished) for i in collector.items))
        monkeypatch.setattr(ingestor.engine, "read", lambda *a, **k: 1 / 0)
        with open(tmp_path / "train.log", "a") as handle:
            handle.write("iter 2: loss 0.9\n")
        watcher.wake()  # no file events: each wake is a poll, which finds the log grew and reads it
        collector.wait(lambda: any(isinstance(i, IngestFailed) for i in collector.items))
        failure = next(i for i in collector.items if isinstance(i, IngestFailed))
        assert failure.message.startswith("ZeroDivisionError") and isinstance(failure.error, ZeroDivisionError)
        assert thread.is_alive()
    finally:
        ingestor.stop()
        thread.join(timeout=5)
    assert not thread.is_alive()


def test_every_driver_event_becomes_its_past_tense_message():
    from tuiloss.core.engine import ReadResult
    from tuiloss.ui import messages

    batch = Ingested(ReadResult(), initial=True)
    assert messages.from_driver(batch) == messages.RecordsIngested(batch)
    assert messages.from_driver(WatchStarted("polling", "nfs4 file system", 2.0)) == messages.WatchStarted(
        "polling", "nfs4 file system")
    assert isinstance(messages.from_driver(LoadFinished(1.5)), messages.LoadFinished)
    assert messages.from_driver(IngestFailed("loading failed: OSError: x", OSError("x"))) == messages.IngestFailed(
        "loading failed: OSError: x")
    with pytest.raises(TypeError):
        messages.from_driver("not an event")


@pytest.mark.parametrize("poll", [None, 0.1])
def test_a_last_line_without_a_newline_shows_once_it_is_stable_with_no_new_event(tmp_path, poll):
    """inotify sends nothing more once the writer stops: the safety poll (or the poll) takes the line."""
    import tuiloss.core.driver as driver_module

    log = tmp_path / "metrics.csv"
    log.write_text("step,loss\n1,0.5\n2,0.25")
    engine = Engine([str(tmp_path)], Options(), hold=0.3)
    collector = Collector()
    ingestor = Ingestor(engine, Watcher([str(tmp_path)], poll, mounts=[]), collector)
    collector.ingestor = ingestor
    saved, driver_module.SAFETY_POLL = driver_module.SAFETY_POLL, 0.2
    thread = threading.Thread(target=ingestor.run, daemon=True)
    try:
        thread.start()
        collector.wait(lambda: any(isinstance(i, LoadFinished) for i in collector.items))
        assert collector.points() == 1  # the last line is held back
        told = [n.message for i in collector.items if isinstance(i, Ingested)
                for u in i.result.updates for n in u.items if hasattr(n, "level")]
        assert any("no newline" in message for message in told)
        collector.wait(lambda: collector.points() == 2, timeout=10)
    finally:
        driver_module.SAFETY_POLL = saved
        ingestor.stop()
        thread.join(timeout=5)


def test_a_log_written_line_by_line_is_read_in_batches_not_once_per_write(tmp_path):
    from tuiloss.core import driver as driver_module

    log = tmp_path / "run1" / "metrics.csv"
    log.parent.mkdir()
    log.write_text("step,loss\n" + "".join(f"{i},{1 / (i + 1):.4f}\n" for i in range(10)))
    ingestor, collector, thread = start(tmp_path)
    try:
        collector.wait(lambda: any(isinstance(i, LoadFinished) for i in collector.items))
        before = sum(isinstance(i, Ingested) for i in collector.items)
        began = time.monotonic()
        with open(log, "a") as handle:
            for i in range(10, 210):  # 200 writes, one every 2 ms: a trainer printing every step
                handle.write(f"{i},0.5\n")
                handle.flush()
                time.sleep(0.002)
        took = time.monotonic() - began
        collector.wait(lambda: collector.points() == 210)
        reads = sum(isinstance(i, Ingested) for i in collector.items) - before
        assert reads <= took / driver_module.READ_GAP + 3, (reads, took)  # each read took what came meanwhile
        with open(log, "a") as handle:  # a lone write, once the last read is READ_GAP behind
            handle.write("210,0.4\n")
        collector.wait(lambda: collector.points() == 211, timeout=5 + driver_module.READ_GAP)
    finally:
        ingestor.stop()
        thread.join(timeout=5)
