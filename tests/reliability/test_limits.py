"""Limits: huge trees, huge lines, huge sparse files, denied access, loops, vanishing folders.

Each case must end without a crash or a hang, with bounded memory and open
files, and with a message that says what happened.
"""

from __future__ import annotations

import builtins
import errno
import os
import threading
import time
import tracemalloc
from pathlib import Path

import pytest

from tuiloss.core.engine import Engine, Options, load
from tuiloss.core.model import Batch, Notice
from tuiloss.core.tail import DEFAULT_MAX_READ, PINNED_FILES

GIB = 1024 ** 3


def nanogpt(first: int, n: int) -> bytes:
    return b"".join(b"iter %d: loss %.4f, time 12.00ms\n" % (i, 1.0 / (i + 1)) for i in range(first, first + n))


def run_of(store, path) -> object:
    return store.runs[os.path.abspath(str(path))]


def read_all(engine: Engine) -> list:
    items = []
    while True:
        result = engine.read(check_all=True)
        items += [item for update in result.updates for item in update.items]
        if not result.more:
            return items


def within(seconds: float, work, *args):
    """Run ``work`` on a thread; fail (instead of hanging the suite) if it takes longer."""
    box: dict = {}

    def target():
        try:
            box["value"] = work(*args)
        except BaseException as exc:  # handed back to the test
            box["error"] = exc

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"{getattr(work, '__name__', work)} still running after {seconds}s"
    if "error" in box:
        raise box["error"]
    return box.get("value")


# -- 10,000 logs -------------------------------------------------------------------------------------------


def test_ten_thousand_logs_are_read_without_holding_files_open(tmp_path, monkeypatch):
    root = tmp_path / "tree"
    for d in range(50):
        folder = root / f"run{d:02d}"
        folder.mkdir(parents=True)
        for f in range(200):
            (folder / f"worker{f:03d}.log").write_bytes(b"iter 1: loss 1.0\niter 2: loss 0.5\n")
    engine = Engine([str(root)], Options())
    assert len(engine.scan().new_runs) == 10_000

    outstanding, peak = [0], [0]
    real_open, real_close = os.open, os.close

    def counting_open(*args, **kwargs):
        fd = real_open(*args, **kwargs)
        outstanding[0] += 1
        peak[0] = max(peak[0], outstanding[0])
        return fd

    def counting_close(fd):
        outstanding[0] -= 1
        return real_close(fd)

    before = len(os.listdir("/proc/self/fd"))
    monkeypatch.setattr(os, "open", counting_open)
    monkeypatch.setattr(os, "close", counting_close)
    items = within(120, read_all, engine)
    monkeypatch.undo()
    assert sum(item.points for item in items if isinstance(item, Batch)) == 20_000
    # A live reader keeps the files it read last open until their next read (pinned, so a
    # replacement is not handed their inodes): never more than PINNED_FILES of them.
    assert peak[0] <= 2 + PINNED_FILES, f"{peak[0]} files open at once"
    assert len(os.listdir("/proc/self/fd")) <= before + PINNED_FILES
    # An append to one of them costs one read of one file.
    with open(root / "run07" / "worker123.log", "ab") as handle:
        handle.write(b"iter 3: loss 0.25\n")
    result = engine.read()
    assert [update.run_id for update in result.updates] == [str(root / "run07" / "worker123.log")]


# -- inotify watch limit ----------------------------------------------------------------------------------------


def limit_watches(monkeypatch, limit: int) -> list[int]:
    """inotify refuses watches past ``limit``, as when fs.inotify.max_user_watches is reached.

    Lowering the real limit would break every other inotify user on the machine, so
    the kernel's answer (ENOSPC) is given by the binding tuiloss calls.
    """
    import tuiloss.ui.watcher as watcher_module

    real = watcher_module.add_watch
    calls = [0]

    def limited(queue, path, mask):
        calls[0] += 1
        if calls[0] > limit:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real(queue, path, mask)

    monkeypatch.setattr(watcher_module, "add_watch", limited)
    return calls


def many_folders(root: Path, n: int = 12) -> None:
    for k in range(n):
        folder = root / f"run{k}"
        folder.mkdir(parents=True)
        (folder / "train.log").write_bytes(nanogpt(0, 3))


def watch_headless(root: Path):
    """Start the viewer's ingest worker on ``root``; return (ingestor, thread, posted messages)."""
    from tuiloss.core.driver import Ingestor, LoadFinished
    from tuiloss.ui.watcher import Watcher

    posted: list = []
    ingestor = Ingestor(Engine([str(root)], Options()), Watcher([str(root)], mounts=[]), posted.append,
                        max_inflight=10**6)
    thread = threading.Thread(target=ingestor.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not any(isinstance(p, LoadFinished) for p in posted):
        assert time.monotonic() < deadline, "the first load never finished"
        time.sleep(0.02)
    return ingestor, thread, posted


@pytest.mark.parametrize("limit", [
    0,  # not even the root folder can be watched
    3,  # the root is watched, the limit is reached inside the tree
])
def test_watch_limit_falls_back_to_polling_and_says_so(tmp_path, monkeypatch, limit):
    from tuiloss.core.driver import Ingested, WatchStarted

    many_folders(tmp_path)
    calls = limit_watches(monkeypatch, limit)
    ingestor, thread, posted = watch_headless(tmp_path)
    try:
        assert calls[0] > limit  # the limit was reached
        started = next(p for p in posted if isinstance(p, WatchStarted))
        assert (started.mode, "watch limit" in started.reason) == ("polling", True)
        with open(tmp_path / "run3" / "train.log", "ab") as handle:
            handle.write(nanogpt(3, 1))

        def points() -> int:
            return sum(b.points for p in posted if isinstance(p, Ingested)
                       for u in p.result.updates for b in u.items if isinstance(b, Batch))

        deadline = time.monotonic() + 30
        while points() < 12 * 3 * 2 + 2:  # polling sees the append
            assert time.monotonic() < deadline, "an append was never read while polling"
            time.sleep(0.05)
    finally:
        ingestor.stop()
        thread.join(timeout=10)
    assert not thread.is_alive()


def test_watch_limit_is_shown_in_the_status_bar(tmp_path, monkeypatch):
    import asyncio

    from tuiloss.config import Config
    from tuiloss.ui.app import make_app

    many_folders(tmp_path)
    limit_watches(monkeypatch, 0)

    async def watch() -> str:
        app = make_app(Config(paths=(str(tmp_path),)))
        async with app.run_test(size=(120, 40)) as pilot:
            deadline = time.monotonic() + 30
            while not app.loaded:
                assert time.monotonic() < deadline
                await pilot.pause(0.05)
            await pilot.pause(0.3)
            text = app.export_screenshot()
            await pilot.press("q")
        return text.replace("&#160;", " ")

    screen = asyncio.run(watch())
    assert "polling" in screen and "watch limit" in screen


def test_inotify_still_starts_after_a_refused_watch(tmp_path):
    """The refused watches of the tests above leave inotify usable."""
    from tuiloss.ui.watcher import Watcher

    watcher = Watcher([str(tmp_path)], mounts=[])
    watcher.start()
    try:
        assert watcher.mode == "inotify", watcher.reason
    finally:
        watcher.stop()


# -- a 100 MB line, a sparse 5 GB file ---------------------------------------------------------------------------


@pytest.mark.parametrize("name, before, after", [
    ("train.log", b"iter 1: loss 1.0, time 1.00ms\n", b"iter 2: loss 0.5, time 1.00ms\n"),
    ("metrics.jsonl", b'{"step": 1, "loss": 1.0}\n', b'{"step": 2, "loss": 0.5}\n'),
    ("metrics.csv", b"step,loss\n1,1.0\n", b"2,0.5\n"),
])
def test_a_100_mb_line_is_skipped_counted_and_never_held(tmp_path, name, before, after):
    # The parser's modules (pandas, for CSV: some 28 MB of objects) are imported first, so
    # the peak is what reading holds, whichever tests ran before this one.
    warm = tmp_path / "warm"
    warm.mkdir()
    (warm / name).write_bytes(before + after)
    load([str(warm / name)])
    path = tmp_path / name
    with open(path, "wb") as handle:
        handle.write(before)
        block = b"x" * (4 * 1024 * 1024)
        for _ in range(25):
            handle.write(block)
        handle.write(b"\n" + after)
    tracemalloc.start()
    try:
        store, _, _ = within(60, load, [str(path)])
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    run = run_of(store, path)
    assert run.series["loss"].steps.view.tolist() == [1.0, 2.0]
    assert dict(run.skipped) == {"line longer than 1 MiB": 1}
    # one read at a time (about 17.6 MB measured for each format): a read kept alive while the
    # next is read (a parser holding its last chunk) is two
    assert peak < DEFAULT_MAX_READ + 16 * 1024 * 1024, f"peak {peak / 1e6:.0f} MB for a 100 MB line"


@pytest.mark.parametrize("pieces", ["buffer", "read_csv"])
@pytest.mark.parametrize("size", [1000, 5 * 1024 * 1024])  # one piece; pieces on several threads
def test_the_csv_parser_keeps_no_chunk_it_parsed(monkeypatch, pieces, size):
    """A kept pandas reader must not hold the last chunk alive while the next one is read
    (two 16 MiB reads at once, for a file read to its end)."""
    import sys

    from pandas._libs import parsers

    from tuiloss.core.formats import csv as csv_module

    if pieces == "buffer" and not hasattr(parsers.TextReader, "load_buffer"):
        pytest.skip("no load_buffer in this pandas")
    monkeypatch.setattr(csv_module, "PIECE_READER", pieces)
    monkeypatch.setattr(csv_module, "_kept", csv_module._Kept())
    parser = csv_module.CsvParser()
    parser.feed(b"step,loss\n", 1)
    rows = b"".join(b"%d,%d.5\n" % (i, i) for i in range(size // 12))
    data = bytes(rows)  # a buffer of its own, as a read returns
    before = sys.getrefcount(data)
    batch = parser.feed_range(data, 0, len(data), 2)
    assert len(batch.series["loss"][0]) == size // 12
    assert sys.getrefcount(data) == before
    if size > csv_module.PARALLEL_MIN_BYTES and csv_module._workers() > 1:
        assert csv_module._kept.kept()  # kept for the next chunk
        parser.rest()
        assert not csv_module._kept.kept()


def test_a_sparse_5_gb_log_is_not_read_whole(tmp_path):
    path = tmp_path / "train.log"
    with open(path, "wb") as handle:
        handle.write(nanogpt(0, 600))  # over 8 KiB of text first, so discovery sees a text log
        handle.truncate(5 * GIB)
        handle.seek(5 * GIB)
        handle.write(b"\n" + nanogpt(600, 2))
    tracemalloc.start()
    began = time.monotonic()
    try:
        store, _, _ = within(60, load, [str(tmp_path)])
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    run = run_of(store, path)
    assert run.series["loss"].steps.view.tolist() == [float(i) for i in range(602)]
    assert dict(run.skipped) == {"line longer than 1 MiB": 1}  # the hole, as one line
    assert peak < 2 * DEFAULT_MAX_READ + 16 * 1024 * 1024
    assert time.monotonic() - began < 20


@pytest.mark.parametrize("name", ["trainer_state.json", "events.out.tfevents.1.host"])
def test_sparse_5_gb_document_and_event_file(tmp_path, name):
    folder = tmp_path / "run"
    folder.mkdir()
    with open(folder / name, "wb") as handle:
        handle.truncate(5 * GIB)
    tracemalloc.start()
    try:
        store, _, notices = within(60, load, [str(tmp_path)])
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 2 * DEFAULT_MAX_READ + 16 * 1024 * 1024
    messages = [n.message for run in store for n in run.notices] + [n.message for n in notices]
    assert messages, "a 5 GB file of zeros passed without a word"


def test_truncated_under_a_writer_resumes_at_its_next_line(tmp_path):
    """``> train.log`` while the trainer keeps writing at its old offset: zeros, then its next line."""
    path = tmp_path / "train.log"
    path.write_bytes(nanogpt(0, 50))
    engine = Engine([str(path)], Options())
    engine.scan()
    read_all(engine)
    writer_offset = 3 * 1024 * 1024 + 123  # far past the old end: a hole, then zeros, then the line
    with open(path, "r+b") as handle:
        handle.truncate(0)
        handle.seek(writer_offset)
        handle.write(nanogpt(50, 2))
    items = read_all(engine)
    batches = [item for item in items if isinstance(item, Batch)]
    steps = [s for b in batches for s in b.series.get("loss", ([], []))[0].tolist()]
    assert steps == [50.0, 51.0]
    assert any(getattr(item, "reason", None) in ("truncated", "replaced") for item in items)


# -- permission denied, read-only, loops -----------------------------------------------------------------------------


def test_permission_denied_is_a_message_and_the_rest_goes_on(tmp_path, monkeypatch):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    (tmp_path / "c").mkdir()
    (tmp_path / "a" / "train.log").write_bytes(nanogpt(0, 5))
    (tmp_path / "b" / "train.log").write_bytes(nanogpt(0, 5))
    (tmp_path / "c" / "train.log").write_bytes(nanogpt(0, 5))
    denied_read = str(tmp_path / "a" / "train.log")
    denied_sniff = str(tmp_path / "b" / "train.log")
    denied_list = str(tmp_path / "c")
    real_os_open, real_open, real_scandir = os.open, builtins.open, os.scandir

    def refuse(path):
        raise PermissionError(errno.EACCES, "Permission denied", os.fspath(path))

    monkeypatch.setattr(os, "open", lambda p, *a, **k: refuse(p) if os.fspath(p) == denied_read else real_os_open(p, *a, **k))
    monkeypatch.setattr(builtins, "open", lambda p, *a, **k: refuse(p) if os.fspath(p) in (denied_sniff,) else real_open(p, *a, **k))
    monkeypatch.setattr(os, "scandir", lambda p=".": refuse(p) if os.fspath(p) == denied_list else real_scandir(p))
    store, engine, notices = within(30, load, [str(tmp_path)])
    run = store.runs[denied_read]
    assert run.points == 0
    assert any("permission denied" in n.message for n in run.notices)
    assert engine.ignored.get(denied_sniff) == "permission denied"
    assert any("permission denied" in n.message and denied_list in n.message for n in notices)
    monkeypatch.undo()
    result = engine.read(check_all=True)
    items = [item for update in result.updates for item in update.items]
    assert sum(item.points for item in items if isinstance(item, Batch)) == 5 * 2  # readable again
    assert any(isinstance(item, Notice) and "readable again" in item.message for item in items)


def test_report_on_an_unreadable_root_exits_2(tmp_path, monkeypatch, capsys):
    from tuiloss import cli

    monkeypatch.setattr(os, "access", lambda path, mode: False)
    assert cli.main(["report", str(tmp_path)]) == 2
    assert "permission denied" in capsys.readouterr().err


def test_symlink_loops_fifos_and_devices_are_passed_over(tmp_path):
    root = tmp_path / "tree"
    (root / "real").mkdir(parents=True)
    (root / "real" / "train.log").write_bytes(nanogpt(0, 5))
    os.symlink("..", root / "real" / "up")  # a loop through the parent
    os.symlink("self", root / "self")  # a link to itself (ELOOP)
    os.symlink("nowhere", root / "dangling.log")
    os.symlink("/dev/zero", root / "zero.log")  # endless if it were read
    os.mkfifo(root / "fifo.log")  # blocks forever if it were opened
    store, engine, notices = within(30, load, [str(root)])
    assert [run.points for run in store] == [10]
    assert any("symlink loop" in n.message for n in notices)
    assert engine.ignored[str(root / "fifo.log")] == "not a regular file"
    assert engine.ignored[str(root / "zero.log")] == "not a regular file"


# -- a folder deleted while watched ---------------------------------------------------------------------------------


def test_folder_deleted_while_watched(tmp_path):
    import shutil

    from tuiloss.core.engine import apply_result
    from tuiloss.core.store import Store
    from tuiloss.core.driver import IngestFailed, Ingested, Ingestor, LoadFinished
    from tuiloss.ui.watcher import Watcher

    root = tmp_path / "tree"
    many_folders(root, 3)
    store = Store()
    failures: list = []
    loaded = threading.Event()
    engine = Engine([str(root)], Options())
    ingestor = None

    def post(message):
        if isinstance(message, Ingested):
            apply_result(store, message.result)  # a plain list of runs: safe from this one thread
            ingestor.ack()
        elif isinstance(message, LoadFinished):
            loaded.set()
        elif isinstance(message, IngestFailed):
            failures.append(message.message)

    ingestor = Ingestor(engine, Watcher([str(root)], mounts=[]), post)
    thread = threading.Thread(target=ingestor.run, daemon=True)
    thread.start()
    try:
        assert loaded.wait(30)
        gone = str(root / "run1" / "train.log")
        shutil.rmtree(root / "run1")
        deadline = time.monotonic() + 15
        while not store.runs[gone].deleted:
            assert time.monotonic() < deadline, "the deleted folder's run was never marked"
            time.sleep(0.02)
        assert store.runs[gone].points == 3 * 2  # its points (loss and time) are kept
        assert any("deleted" in n.message for n in store.runs[gone].notices)
        shutil.rmtree(root)  # the watched folder itself
        while not all(run.deleted for run in store):
            assert time.monotonic() < deadline, "runs under the deleted root were never marked"
            time.sleep(0.02)
        assert thread.is_alive() and not failures
    finally:
        ingestor.stop()
        thread.join(timeout=10)
    assert not thread.is_alive()


def test_watched_folder_deleted_and_recreated_is_watched_again(tmp_path):
    import shutil

    from tuiloss.core.driver import Ingested

    root = tmp_path / "tree"
    many_folders(root, 2)
    ingestor, thread, posted = watch_headless(root)
    try:
        shutil.rmtree(root)
        deadline = time.monotonic() + 10
        while not any(n.message.endswith("no such file or folder")
                      for p in posted if isinstance(p, Ingested) for n in p.result.notices):
            assert time.monotonic() < deadline, "the deleted root was never noticed"
            time.sleep(0.02)
        (root / "again").mkdir(parents=True)
        (root / "again" / "train.log").write_bytes(nanogpt(0, 3))
        deadline = time.monotonic() + 4
        while not any("again" in spec.id for p in posted if isinstance(p, Ingested) for spec in p.result.new_runs):
            assert time.monotonic() < deadline, "a log in the recreated folder was not found within 4 s"
            time.sleep(0.05)
    finally:
        ingestor.stop()
        thread.join(timeout=10)
