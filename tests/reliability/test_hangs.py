"""Hangs that cannot be quit: a user pattern that backtracks without end, a reader that never returns.

A ``--pattern`` is matched a block of lines at a time under a deadline, by an engine that
lets other threads run while it matches: the viewer's keys keep working, the pattern is
said to be too slow, and ``q`` quits at once whatever the reading thread is doing.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from pathlib import Path

import pytest

from tmux_session import TMUX, Tmux
from tuiloss.core.formats import stdout as stdout_module
from tuiloss.core.formats.stdout import PatternParser, PatternTooSlow
from tuiloss.core.model import Batch, Notice
from tuiloss.core.sources.line import LineSource

TUILOSS = Path(sys.executable).with_name("tuiloss")
SLOW = r"loss (?P<loss>[\d.]+)|(b+)+$"  # fine on the trial lines, explodes on a long line of b's
LONG_B = "b" * 30_000 + "!\n"


def test_a_pattern_that_backtracks_is_given_up_within_its_deadline(monkeypatch):
    monkeypatch.setattr(stdout_module, "PATTERN_BLOCK", 1)  # a line a block: the slow one is named
    parser = PatternParser(r"(a+)+$", seconds=0.2)
    began = time.monotonic()
    with pytest.raises(PatternTooSlow, match=r"over 0.2 s .* from line 3 \(nested repeats"):
        parser.feed(b"x\ny\n" + b"a" * 20_000 + b"!\n", 1)
    assert time.monotonic() - began < 10


def test_other_threads_run_while_a_pattern_is_matched():
    """The UI thread (here: a counter) goes on while the reader is stuck in a match."""
    ticks, stop = [0], threading.Event()

    def count():
        while not stop.is_set():
            ticks[0] += 1
            time.sleep(0.005)

    counter = threading.Thread(target=count)
    counter.start()
    try:
        began = time.monotonic()
        with pytest.raises(PatternTooSlow):
            PatternParser(r"(b+)+$", seconds=0.5).feed(LONG_B.encode(), 1)
        took = time.monotonic() - began
    finally:
        stop.set()
        counter.join()
    # A match holding the interpreter lets the counter tick once or twice at most (``re`` does).
    assert took >= 0.4 and ticks[0] >= 10, (ticks[0], took)  # the deadline, by regex's own clock


def test_blocks_of_lines_match_as_one_text(monkeypatch):
    """Matching a block at a time finds every line, with its number, across the blocks."""
    monkeypatch.setattr(stdout_module, "PATTERN_BLOCK", 50)
    data = "".join(f"step {s} loss {1 / (s + 1):.4f}\n" if s % 7 else f"noise {s}\n" for s in range(300))
    batch = PatternParser(r"^step (?P<step>\d+) loss (?P<loss>[\d.]+)$").feed(data.encode(), 1)
    steps, values = batch.series["loss"]
    assert steps.tolist() == [float(s) for s in range(300) if s % 7]
    assert values.tolist() == [round(1 / (s + 1), 4) for s in range(300) if s % 7]
    assert batch.unmatched == len([s for s in range(300) if not s % 7])


def test_a_log_the_pattern_is_too_slow_on_is_said_once_and_read_no_further(tmp_path):
    log = tmp_path / "train.log"
    log.write_text("loss 0.5\nloss 0.4\n")
    source = LineSource(str(log), PatternParser(SLOW, seconds=0.2), hold=0)
    items, _ = source.read()
    assert [b.series["loss"][1].tolist() for b in items if isinstance(b, Batch)] == [[0.5, 0.4]]
    with open(log, "a") as handle:
        handle.write(LONG_B + "loss 0.3\n")
    items, more = source.read()
    (notice,) = items
    assert isinstance(notice, Notice) and notice.level == "error" and not more
    assert "--pattern is too slow" in notice.message and "not read further" in notice.message
    with open(log, "a") as handle:
        handle.write("loss 0.2\n")
    assert not source.changed() and source.read() == ([], False)


@pytest.mark.skipif(TMUX is None, reason="tmux is not installed")
@pytest.mark.skipif(not TUILOSS.exists(), reason="the tuiloss command is not installed beside this Python")
def test_q_quits_the_viewer_while_a_pattern_backtracks(tmp_path):
    """``watch --pattern``, then a long line the pattern backtracks on; q right after it quits."""
    logs = tmp_path / "logs"
    logs.mkdir()
    for name in ("a.log", "b.log"):
        (logs / name).write_text("loss 0.5\nloss 0.4\n")
    status = tmp_path / "status"
    tmux = Tmux(f"tuiloss-hang-{os.getpid()}", "hang")
    command = (f"{TUILOSS} watch --pattern '{SLOW}' {logs}; echo $? > {status}.tmp; mv {status}.tmp {status}")
    try:
        tmux("new-session", "-d", "-x", "120", "-y", "40", "-s", "hang", "sh", "-c", command,
             ";", "set-option", "-t", "hang", "remain-on-exit", "on")
        tmux.wait_until(lambda s: "2 runs" in s and "inotify" in s, "the runs on screen", 60)
        with open(logs / "a.log", "a") as handle:
            handle.write(LONG_B)
        tmux.wait_until(lambda s: "--pattern is too" in s, "the pattern said to be too slow", 30)
        with open(logs / "b.log", "a") as handle:
            handle.write(LONG_B)
        tmux("send-keys", "-t", "hang", "q")  # while the reader is on b.log's long line
        deadline = time.monotonic() + 10
        while not status.exists():
            assert time.monotonic() < deadline, f"tuiloss did not quit on q:\n{tmux.screen()}"
            time.sleep(0.05)
        screen = tmux.screen(history=True)
    finally:
        tmux("kill-server", check=False)
    assert status.read_text().strip() == "0" and "Traceback" not in screen


def test_a_reading_thread_that_never_returns_does_not_keep_the_quit_viewer_alive():
    """What ``watch`` does once the viewer has quit: a thread stuck in a read (a dead network
    mount) gets a grace period, then the process leaves without it."""
    import subprocess

    code = ("import threading, time\n"
            "from tuiloss.cli import _leave_promptly\n"
            "threading.Thread(target=time.sleep, args=(120,)).start()\n"
            "print('quit', flush=True)\n"
            "_leave_promptly(0.5)\n"
            "print('never printed')\n")
    began = time.monotonic()
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert time.monotonic() - began < 30
    assert done.returncode == 0 and done.stdout == "quit\n", done


@pytest.mark.parametrize("pool", ["tuiloss-csv_0", "tuiloss-report_0", "tuiloss-pager_0"])
def test_leaving_waits_only_for_the_viewers_own_threads(pool):
    """Threads alive before the viewer started, and tuiloss' own idle pools (the CSV parser's,
    the report's, the store's pager), neither hold a quit viewer for the grace
    period nor make it leave by ``os._exit`` (in a test process that would end the whole run)."""
    import subprocess

    code = ("import threading, time\n"
            "from tuiloss.cli import _leave_promptly\n"
            "stop = threading.Event()\n"
            "old = threading.Thread(target=stop.wait)\n"
            "old.start()\n"
            f"pool = threading.Thread(target=stop.wait, name={pool!r})\n"
            "pool.start()\n"
            "began = time.monotonic()\n"
            "_leave_promptly(60, ignore={old})\n"
            "print('returned', time.monotonic() - began < 30, flush=True)\n"
            "stop.set()\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout == "returned True\n", done
