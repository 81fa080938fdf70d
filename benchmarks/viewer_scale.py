"""Viewer rows at scale: thousands of runs, idle CPU, following a busy log, latency on the terminal.

Process rows run the installed ``tuiloss watch`` in tmux at 200x50, as a user would, and read the
CPU it used from ``/proc/PID/stat``; each is measured beside its baseline in the same run (a
minimal Textual app idling, ``tail -F`` following the same file). Pilot rows drive the app
headless (see :mod:`benchmarks.ui`). Generated run folders live under ``benchmarks/.data``.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import os
import re
import shutil
import subprocess
import sys
import threading
import time

from benchmarks.datagen import DATA_DIR
from benchmarks.measure import Row, Skip, median, percentile
from benchmarks.ui import MINIMAL_APP, PYCACHE, SIZE, TERMINAL_ENV, Frames, make, wait_for

TMUX = shutil.which("tmux")
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


# -- run folders ----------------------------------------------------------------------------------

def _lines(start: int, stop: int) -> str:
    """``step,loss`` rows of a decaying curve (one point per line)."""
    return "".join(f"{s},{0.2 + 2.0 / (1.0 + s * 1e-3) + 0.001 * ((s * 7919) % 13):.5f}\n" for s in range(start, stop))


def many_runs_folder(runs: int, points: int) -> str:
    """``runs`` run folders of ``points`` points each (a two-column CSV), made once."""
    root = os.path.join(DATA_DIR, "scale", f"{runs}x{points}")
    done = os.path.join(root, ".done")
    if os.path.exists(done):
        return root
    shutil.rmtree(root, ignore_errors=True)
    body = ("step,loss\n" + _lines(0, points)).encode()
    for k in range(runs):
        folder = os.path.join(root, f"run{k:05d}")
        os.makedirs(folder)
        with open(os.path.join(folder, "metrics.csv"), "wb") as handle:
            handle.write(body)
    open(done, "w").close()
    return root


# -- a program in tmux ----------------------------------------------------------------------------

class Pane:
    """One program in its own tmux session at 200x50."""

    def __init__(self, name: str, argv: list[str], cwd: str | None = None) -> None:
        if TMUX is None:
            raise Skip("tmux is not installed")
        self.name = f"bench-{name}-{os.getpid()}"
        # A session takes the tmux server's environment, not this process's: the program's own
        # is set on its command line (PYTHONPATH too, so a checkout can be measured beside another).
        settings = dict(TERMINAL_ENV, PYTHONPYCACHEPREFIX=PYCACHE)
        if os.environ.get("PYTHONPATH"):
            settings["PYTHONPATH"] = os.environ["PYTHONPATH"]
        command = " ".join(["env", "-u", "PYTHONDONTWRITEBYTECODE", "-u", "NO_COLOR",
                            *(f"{key}={_quote(value)}" for key, value in settings.items()),
                            *(_quote(arg) for arg in argv)])
        self._tmux("new-session", "-d", "-s", self.name, "-x", str(SIZE[0]), "-y", str(SIZE[1]),
                   *(["-c", cwd] if cwd else []), f"exec {command}")
        self.pid = int(self._tmux("display-message", "-p", "-t", self.name, "#{pane_pid}").strip())

    def _tmux(self, *args: str, env: dict | None = None) -> str:
        return subprocess.run([TMUX, *args], check=True, capture_output=True, text=True, env=env).stdout

    def screen(self) -> str:
        return self._tmux("capture-pane", "-p", "-t", self.name)

    def wait_for(self, predicate, timeout: float, what: str, step: float = 0.2) -> str:
        deadline = time.monotonic() + timeout
        while True:
            screen = self.screen()
            if predicate(screen):
                return screen
            if time.monotonic() > deadline:
                raise TimeoutError(f"timed out after {timeout:g}s waiting for {what}; screen:\n{screen}")
            time.sleep(step)

    def cpu(self) -> float:
        """CPU seconds the program used so far (user and system, its threads included)."""
        with open(f"/proc/{self.pid}/stat", encoding="ascii") as handle:
            fields = handle.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS

    def close(self) -> None:
        subprocess.run([TMUX, "kill-session", "-t", self.name], capture_output=True)


def _quote(arg: str) -> str:
    return "'" + arg.replace("'", "'\\''") + "'"


def _tuiloss() -> str:
    return os.path.join(os.path.dirname(sys.executable), "tuiloss")


def _minimal_app() -> list[str]:
    return [sys.executable, "-c", MINIMAL_APP]


def _loaded(points: int):
    """A screen whose status says every point is in and nothing is loading."""
    marker = f"{points:,} points"
    return lambda screen: marker in screen and "loading" not in screen


def _cpu_share(panes: list[Pane], seconds: float) -> list[float]:
    """Each pane's share of one core over the same ``seconds``."""
    before = [pane.cpu() for pane in panes]
    began = time.monotonic()
    time.sleep(seconds)
    took = time.monotonic() - began
    return [(pane.cpu() - start) / took for pane, start in zip(panes, before)]


def _settled(pane: Pane, most: float, window: float = 5.0, quiet: float = 0.05) -> None:
    """Wait until ``pane`` used less than ``quiet`` of a core over ``window`` seconds (the analyses
    of the load are done), ``most`` seconds at the most: on a loaded machine they take longer."""
    deadline = time.monotonic() + most
    while time.monotonic() < deadline and _cpu_share([pane], window)[0] >= quiet:
        pass


# -- idle CPU ---------------------------------------------------------------------------------------

def idle_cpu(runs: int, points: int, settle: float, seconds: float, name: str = "idle-cpu",
             poll: float | None = None) -> Row:
    """CPU of ``tuiloss watch`` over ``runs`` unchanging runs, beside a minimal Textual app idling
    (polling every ``poll`` seconds instead of file events when given)."""
    folder = many_runs_folder(runs, points)
    ours = Pane(name, [_tuiloss(), "watch", folder, *(("--poll", f"{poll:g}") if poll else ())])
    floor = Pane("idle-floor", _minimal_app())
    try:
        floor.wait_for(lambda s: "Quit" in s, 60, "the minimal app")
        ours.wait_for(_loaded(runs * points), 600, "every point loaded", step=0.5)
        first = _cpu_share([ours, floor], settle)  # the findings settle; reported, not held
        _settled(ours, settle * 5)
        share, base = _cpu_share([ours, floor], seconds)
    finally:
        ours.close()
        floor.close()
    how = f", polling every {poll:g}s" if poll else ""
    return Row(name, f"idle CPU, {runs:,} runs x {points:,} points{how}, nothing changing (share of a core)",
               share, base, share / base if base else float("inf"), "<= 1% of a core", share <= 0.01, "core",
               f"{share:.2%} of a core over {seconds:g} s against {base:.2%} for a minimal Textual app;"
               f" {first[0]:.2%} in the {settle:g} s after the load")


# -- following one busy run -------------------------------------------------------------------------

class Writer(threading.Thread):
    """Appends a line to ``path`` every ``period`` seconds; notes when each was written."""

    def __init__(self, path: str, period: float, start_step: int, line=None) -> None:
        super().__init__(daemon=True)
        self.path, self.period, self.step = path, period, start_step
        # the curve's own level and noise at the end of the generated runs, so nothing is a finding
        self.line = line or (lambda step, k: f"{step},{0.386 + 0.001 * (k % 7):.5f}\n")
        self.written: list[tuple[float, int]] = []
        self.halt = threading.Event()

    def run(self) -> None:
        with open(self.path, "a", encoding="utf-8") as handle:
            due = time.monotonic()
            k = 0
            while not self.halt.is_set():
                handle.write(self.line(self.step, k))
                handle.flush()
                self.written.append((time.monotonic(), k))
                self.step += 1
                k += 1
                due += self.period
                self.halt.wait(max(0.0, due - time.monotonic()))


def _followed_folder(name: str, runs: int, points: int) -> tuple[str, str]:
    """A fresh copy of ``runs`` runs of ``points`` points; the path of the first run's log."""
    source = many_runs_folder(runs, points)
    work = os.path.join(DATA_DIR, "scale", name)
    shutil.rmtree(work, ignore_errors=True)
    shutil.copytree(source, work, ignore=shutil.ignore_patterns(".done"))
    return work, os.path.join(work, "run00000", "metrics.csv")


@contextlib.contextmanager
def _beside_tail(name: str, runs: int, points: int, period: float, options: tuple[str, ...] = ()):
    """``tuiloss watch`` of a fresh copy of ``runs`` runs and ``tail -F`` of the first run's log, both
    in tmux, once every point is loaded; a :class:`Writer` appending to that log every ``period``
    seconds (not started). Yields (tuiloss, tail, writer) and stops the writer and both at the end."""
    work, path = _followed_folder(name, runs, points)
    ours = Pane(name, [_tuiloss(), "watch", work, *options])
    tail = Pane(f"{name}-tail", ["tail", "-F", path])
    writer = Writer(path, period, points)
    try:
        ours.wait_for(_loaded(runs * points), 600, "every point loaded", step=0.5)
        time.sleep(3)  # the first analyses
        yield ours, tail, writer
    finally:
        writer.halt.set()
        if writer.is_alive():
            writer.join()
        ours.close()
        tail.close()
        shutil.rmtree(work, ignore_errors=True)


def follow_cpu(runs: int, points: int, seconds: float, poll: float | None = None) -> Row:
    """CPU of ``tuiloss watch`` over ``runs`` runs while one logs 100 lines a second, beside ``tail -F``."""
    options = ("--poll", f"{poll:g}") if poll else ()
    with _beside_tail("follow", runs, points, 0.01, options) as (ours, tail, writer):
        writer.start()
        time.sleep(2)
        share, base = _cpu_share([ours, tail], seconds)
    how = f"polling every {poll:g}s" if poll else "file events"
    name = "follow-cpu-poll" if poll else "follow-cpu"
    return Row(name, f"CPU following one run logging 100 lines/s, {runs} runs watched ({how}; share of a core)",
               share, base, share / base if base else float("inf"), "<= 5% of a core", share <= 0.05, "core",
               f"{share:.1%} of a core over {seconds:g} s; `tail -F` of the same file {base:.2%}")


# -- append -> on the terminal ----------------------------------------------------------------------

def _points_shown(screen: str) -> int | None:
    """The point count the status line shows."""
    match = re.search(r"([0-9][0-9,]*) points", screen)
    return int(match.group(1).replace(",", "")) if match else None


def latency_terminal(runs: int, points: int, appends: int) -> Row:
    """Append -> on the terminal (tmux), one point every 0.1 s, ``runs`` runs watched; ``tail -F`` beside."""
    seen_ours: dict[int, float] = {}  # appends on screen -> when first seen
    seen_tail: dict[int, float] = {}
    base = runs * points
    with _beside_tail("latency-terminal", runs, points, 0.1) as (ours, tail, writer):
        writer.start()
        deadline = time.monotonic() + appends * 0.1 + 5
        while time.monotonic() < deadline and len(writer.written) < appends:
            shown = _points_shown(ours.screen())
            if shown is not None:
                seen_ours.setdefault(shown - base, time.monotonic())
            last = tail.screen().rstrip().rsplit("\n", 1)[-1].split(",")[0].strip()
            if last.isdigit():  # the step of the last line tail shows; the first append is step ``points``
                seen_tail.setdefault(int(last) - points + 1, time.monotonic())
            time.sleep(0.005)
    ours_lat = _latencies(writer.written, seen_ours)
    tail_lat = _latencies(writer.written, seen_tail)
    if not ours_lat:
        raise TimeoutError("no appended point was seen on screen")
    p95, base = percentile(ours_lat, 0.95), percentile(tail_lat, 0.95) if tail_lat else float("nan")
    return Row("latency-terminal", f"append -> on the terminal (tmux), a point every 0.1 s, {runs} runs watched (p95)",
               p95, base, p95 / base if base else float("inf"), "p95 <= 250 ms", p95 <= 0.25, "s",
               f"p50 {median(ours_lat) * 1000:.0f} ms, p95 {p95 * 1000:.0f} ms over {len(ours_lat)} appends;"
               f" `tail -F` of the same file p95 {base * 1000:.0f} ms (both read by capture-pane every few ms)")


def _latencies(written: list[tuple[float, int]], seen: dict[int, float], offset: int = 0) -> list[float]:
    """Per append, the time until a screen first held it (``seen``: count shown -> when)."""
    out = []
    firsts = sorted(seen.items())
    for when, k in written[5:-5]:
        later = [t for count, t in firsts if count - offset >= k + 1]
        if later:
            out.append(max(0.0, min(later) - when))
    return out


# -- thousands of runs, headless ----------------------------------------------------------------------

async def _key_times(pilot, app, frames: Frames, presses: int) -> list[float]:
    """Seconds from pressing ``1`` (toggle run 1) to the first frame drawn after the toggle."""
    after_toggle: set[int] = set()  # ids of the specs drawn since the last toggle
    toggled = [False]
    draw, toggle = app.chart.draw, app.selection.toggle

    def noting_draw(spec):
        if toggled[0]:
            after_toggle.add(id(spec))
        draw(spec)

    def noting_toggle(*args, **kwargs):
        after_toggle.clear()
        toggled[0] = True
        toggle(*args, **kwargs)

    app.chart.draw, app.selection.toggle = noting_draw, noting_toggle
    out = []
    try:
        for _ in range(presses):
            await pilot.pause(0.3)
            toggled[0] = False
            moment = time.perf_counter()
            await pilot.press("1")

            def shown():
                return next((when for when, spec in frames.since(moment) if id(spec) in after_toggle), None)

            await wait_for(pilot, lambda: shown() is not None, 120, "a frame after the toggle")
            out.append(shown() - moment)
    finally:
        app.chart.draw, app.selection.toggle = draw, toggle
    return out


async def _start_and_keys(folder: str, presses: int, after_load: bool) -> tuple[float, list[float], float]:
    """(seconds to the first frame with curves, key -> frame times, seconds to loaded), with the
    cyclic collector held at the start as ``tuiloss watch`` holds it (see :mod:`tuiloss.ui.collection`)."""
    from tuiloss.ui import collection

    collection.hold()
    try:
        return await _timed_start(folder, presses, after_load)
    finally:
        collection.release()  # if the app did not
        gc.unfreeze()  # as the rows after this one expect the collector


async def _timed_start(folder: str, presses: int, after_load: bool) -> tuple[float, list[float], float]:
    app = make((folder,))
    began = time.perf_counter()
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: getattr(app, "booted", False), 60, "the boot", step=0.01)
        frames = Frames(app.chart)
        await wait_for(pilot, lambda: any(spec is not None and spec.traces for _, spec in frames.log), 900, "the first curves", step=0.01)
        first = next(when for when, spec in frames.log if spec is not None and spec.traces) - began
        if after_load:
            await wait_for(pilot, lambda: app.loaded, 900, "the load", step=0.05)
            await pilot.pause(1.0)
        keys = await _key_times(pilot, app, frames, presses)
        await wait_for(pilot, lambda: app.loaded, 900, "the load", step=0.05)
        done = time.perf_counter() - began
    return first, keys, done


def runs_start(runs: int, points: int, presses: int) -> Row:
    """``runs`` runs present at start: the first curves on screen, and keys while they load."""
    folder = many_runs_folder(runs, points)
    first, keys, done = asyncio.run(_start_and_keys(folder, presses, after_load=False))
    p95 = percentile(keys, 0.95)
    return Row("runs-start", f"{runs:,} runs x {points:,} points present at start: first curves; key -> frame (p95)",
               first, 10.0, first / 10.0, "first curves <= 10 s, key p95 <= 150 ms", first <= 10 and p95 <= 0.15, "s",
               f"first curves after {first:.1f} s, all loaded after {done:.1f} s; key '1' -> frame p50"
               f" {median(keys) * 1000:.0f} ms, p95 {p95 * 1000:.0f} ms over {presses} presses from the first curves on")


def toggle_runs(runs: int, points: int, presses: int) -> Row:
    """Toggling one run with ``runs`` runs loaded: key -> frame."""
    folder = many_runs_folder(runs, points)
    _, keys, done = asyncio.run(_start_and_keys(folder, presses, after_load=True))
    p50, p95 = median(keys), percentile(keys, 0.95)
    return Row("toggle-runs", f"toggling one run, {runs:,} runs x {points:,} points loaded: key -> frame (p95)",
               p95, 0.15, p95 / 0.15, "p95 <= 150 ms", p95 <= 0.15, "s",
               f"p50 {p50 * 1000:.0f} ms, p95 {p95 * 1000:.0f} ms over {presses} presses of '1'; loaded after {done:.1f} s")


# -- thousands of runs: CPU after the load, runs appearing --------------------------------------------

def runs_cpu(runs: int, points: int, seconds: float) -> Row:
    """CPU of ``tuiloss watch`` (file events) over the ``seconds`` after ``runs`` runs loaded: the
    analyses of the load settle, then nothing may keep a core busy (the watcher and the rescans
    once fed each other). Held on the last third of the time, beside a minimal Textual app."""
    folder = many_runs_folder(runs, points)
    ours = Pane("runs-cpu", [_tuiloss(), "watch", folder])
    floor = Pane("runs-cpu-floor", _minimal_app())
    try:
        floor.wait_for(lambda s: "Quit" in s, 60, "the minimal app")
        ours.wait_for(_loaded(runs * points), 1800, "every point loaded", step=1.0)
        thirds = [_cpu_share([ours, floor], seconds / 3) for _ in range(3)]
    finally:
        ours.close()
        floor.close()
    (first, _), (second, _), (share, base) = thirds
    return Row("runs-cpu", f"CPU after the load, {runs:,} runs x {points:,} points watched with file events"
               " (share of a core, last third)", share, base, share / base if base else float("inf"),
               "<= 1% of a core", share <= 0.01, "core",
               f"{first:.1%}, {second:.1%}, {share:.2%} of a core in each third of the {seconds:g} s after the load;"
               f" a minimal Textual app {base:.2%}")


_COPY = """
import os, sys, time
source, target = sys.argv[1], sys.argv[2]
for name in sorted(os.listdir(source)):
    if not name.startswith("run"):
        continue
    with open(os.path.join(source, name, "metrics.csv"), "rb") as handle:
        body = handle.read()
    os.makedirs(os.path.join(target, name))
    with open(os.path.join(target, name, "metrics.csv"), "wb") as handle:
        handle.write(body)
print(time.monotonic())
"""


async def _until_shown(folder: str, runs: int, points: int, copy_from: str | None) -> float:
    """Seconds until the status bar shows ``runs`` runs and all their points: from the start
    (the runs present), or from the last file written (``copy_from`` copied in while watching)."""
    app = make((folder,))
    began = time.monotonic()
    async with app.run_test(size=SIZE) as pilot:
        def shown():
            status = app.status_bar.status
            return status.runs == runs and status.points == runs * points

        if copy_from is not None:
            await wait_for(pilot, lambda: app.loaded, 120, "the empty folder's load", step=0.05)
            copy = await asyncio.create_subprocess_exec(sys.executable, "-c", _COPY, copy_from, folder,
                                                        stdout=subprocess.PIPE)
            out, _ = await copy.communicate()
            began = float(out.decode().strip())
        await wait_for(pilot, shown, 1800, "every run shown with its points", step=0.05)
        return time.monotonic() - began


def runs_appear(runs: int, points: int) -> Row:
    """``runs`` runs copied into the watched folder while ``watch`` runs: from the last file written
    to every run on the status bar with its points, against the same runs present at start."""
    source = many_runs_folder(runs, points)
    work = os.path.join(DATA_DIR, "scale", "appear")
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    try:
        base = asyncio.run(_until_shown(source, runs, points, None))
        ours = asyncio.run(_until_shown(work, runs, points, source))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return Row("runs-appear", f"{runs:,} runs x {points:,} points appearing while watched: all shown"
               " with their points (vs present at start)", ours, base, ours / base, "<= 1", ours <= base, "s",
               f"{ours:.1f} s from the last file written to all {runs * points:,} points on the status bar;"
               f" {base:.1f} s from the start with the same runs present")
