"""Viewer rows: latency, redraw, key response, start-up and many runs.

The app is the one ``tuiloss watch`` builds (:func:`tuiloss.ui.app.make_app`),
driven headless with Textual's pilot at 200x50 unless a row says otherwise. The
chart's ``build_frame`` (where the picture is rasterised) is wrapped here to note
when each frame was built and from which chart spec: a point is *on screen* when
a frame built after it was written holds it. Start-up rows run the real command
in a pseudo-terminal and wait for its first frame to be written.
"""

from __future__ import annotations

import asyncio
import fcntl
import functools
import os
import pty
import select
import shutil
import struct
import subprocess
import sys
import termios
import time

from benchmarks.datagen import DATA_DIR, cached_log, write_log
from benchmarks.measure import Row, Timing, limit_row, median, percentile, ratio_row

SIZE = (200, 50)
TERMINAL_ENV = {"TERM": "xterm-256color", "COLORTERM": "truecolor"}
#: Where the timed processes keep their byte code. An installed package has its modules compiled
#: at install time; an editable checkout run with PYTHONDONTWRITEBYTECODE would compile every
#: module from source at each start and time the compiler, not the viewer.
PYCACHE = os.path.join(DATA_DIR, "pycache")


# -- test folders ---------------------------------------------------------------------------------

def _folder(name: str) -> str:
    return os.path.join(DATA_DIR, "ui", name)


def runs_folder(name: str, runs: int, lines: int, fmt: str = "csv") -> str:
    """``runs`` run folders, each a copy of a cached ``lines``-line log."""
    root = _folder(name)
    done = os.path.join(root, ".done")
    if os.path.exists(done):
        return root
    shutil.rmtree(root, ignore_errors=True)
    source = cached_log(fmt, lines)
    for k in range(runs):
        target = os.path.join(root, f"run{k:04d}", os.path.basename(source))
        os.makedirs(os.path.dirname(target))
        shutil.copyfile(source, target)
    open(done, "w").close()
    return root


#: ~1 GB in ten runs: four nanoGPT logs, three JSONL, three CSV.
GIGABYTE = (("text", 2_000_000, 4), ("jsonl", 2_000_000, 3), ("csv", 3_500_000, 3))
POINTS_PER_LINE = {"text": 3, "jsonl": 2, "csv": 2}


def gigabyte_folder() -> tuple[str, int, int]:
    """The ~1 GB folder, its size in bytes and its number of points."""
    root = _folder("gigabyte")
    points = sum(POINTS_PER_LINE[fmt] * lines * copies for fmt, lines, copies in GIGABYTE)
    done = os.path.join(root, ".done")
    if not os.path.exists(done):
        shutil.rmtree(root, ignore_errors=True)
        k = 0
        for fmt, lines, copies in GIGABYTE:
            source = cached_log(fmt, lines)
            for _ in range(copies):
                target = os.path.join(root, f"run{k:02d}", os.path.basename(source))
                os.makedirs(os.path.dirname(target))
                shutil.copyfile(source, target)
                k += 1
        open(done, "w").close()
    size = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(root) for f in fs)
    return root, size, points


# -- the app, headless -----------------------------------------------------------------------------

class Frames:
    """Notes when each spec reached the screen, and how long each frame took to rasterise.

    A spec is on screen once the chart has drawn it: rasterised anew, or, where it draws as the
    last one did (an appended point in a column already drawn), the frame kept as it is.
    """

    def __init__(self, chart) -> None:
        self.chart = chart
        self.log: list[tuple[float, object]] = []  # (time the chart drew it, spec)
        self.build_seconds: list[float] = []
        draw, build = chart.draw, chart.build_frame

        def drawn(spec) -> None:
            draw(spec)
            self.log.append((time.perf_counter(), chart.spec))

        def build_frame():
            fresh = chart._frame is None or chart._frame[0] != chart._key()
            began = time.perf_counter()
            out = build()
            if fresh:
                self.build_seconds.append(time.perf_counter() - began)
                if not self.log or self.log[-1][1] is not chart.spec:  # rasterised outside a draw (a resize)
                    self.log.append((time.perf_counter(), chart.spec))
            return out

        chart.draw, chart.build_frame = drawn, build_frame

    def since(self, moment: float):
        return [(when, spec) for when, spec in self.log if when > moment]


def make(paths: tuple[str, ...], poll: float | None = None):
    from tuiloss.config import Config
    from tuiloss.ui.app import make_app

    return make_app(Config(paths=paths, poll=poll))


async def wait_for(pilot, predicate, timeout: float, what: str, step: float = 0.002) -> None:
    deadline = time.perf_counter() + timeout
    while not predicate():
        if time.perf_counter() > deadline:
            raise TimeoutError(f"timed out after {timeout:g}s waiting for {what}")
        await pilot.pause(step)


async def loaded(pilot, app, timeout: float = 600.0) -> None:
    await wait_for(pilot, lambda: app.loaded, timeout, "the first load", step=0.05)
    await pilot.pause(0.3)


# -- append -> on screen ---------------------------------------------------------------------------

async def _latencies(folder: str, path, poll: float | None, appends: int, start_step: int):
    import random

    rng = random.Random(7)
    app = make((folder,), poll)
    out = []
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot, app)
        frames = Frames(app.chart)
        mode = app.watch_mode
        for k in range(appends):
            step = start_step + 1 + k
            await pilot.pause(rng.uniform(0.15, 0.4))
            written = time.perf_counter()
            line = f'{{"step": {step}, "loss": {0.5 + 0.1 * rng.random():.6f}}}\n'
            if callable(path):  # an append done otherwise (a remote object rewritten: benchmarks/remote.py)
                path(line.encode())
            else:
                with open(path, "a", encoding="utf-8") as handle:
                    handle.write(line)

            def holds(spec, step=step) -> bool:
                return spec is not None and spec.newest_step is not None and spec.newest_step >= step

            await wait_for(pilot, lambda: any(holds(spec) for _, spec in frames.since(written)),
                           10 + 3 * (poll or 0), "the appended point on screen")
            when = next(when for when, spec in frames.since(written) if holds(spec))
            out.append(when - written)
    return out, mode


def latency(appends: int, poll: float | None) -> Row:
    work = _folder("latency-poll" if poll else "latency")
    shutil.rmtree(work, ignore_errors=True)
    path = os.path.join(work, "run", "metrics.jsonl")
    os.makedirs(os.path.dirname(path))
    write_log(path, "jsonl", 10_000)
    seconds, mode = asyncio.run(_latencies(work, path, poll, appends, 10_000))
    shutil.rmtree(work, ignore_errors=True)
    p50, p95 = median(seconds), percentile(seconds, 0.95)
    limit = 0.25 + (poll or 0.0)
    name = "latency-poll" if poll else "latency"
    what = f"append -> on screen, {'polling every %gs' % poll if poll else 'inotify'} (p95)"
    if poll is None and mode != "inotify":
        what += f" [watcher chose {mode}]"
    return limit_row(
        name, what, p95, limit, f"p95 <= {limit * 1000:.0f} ms",
        f"p50 {p50 * 1000:.0f} ms, p95 {p95 * 1000:.0f} ms, max {max(seconds) * 1000:.0f} ms over {len(seconds)} appends to a JSONL run",
    )


# -- redraw and keys -------------------------------------------------------------------------------

async def _frame_after(pilot, frames: Frames, moment: float, predicate, timeout: float = 10.0) -> float:
    def found():
        return next((when for when, spec in frames.since(moment) if predicate(spec)), None)

    await wait_for(pilot, lambda: found() is not None, timeout, "a frame")
    return found() - moment


def _forget(app) -> None:
    """Drop what a redraw reuses from the last one, as if every curve had changed."""
    for index in app.curves._indexes.values():
        index._last_query = index._last_answer = None
    app.curves._points_memo.clear()
    app.panel.forget()


async def _redraws(folder: str, repeat: int, timeout: float = 10.0,
                   cold: list[float] | None = None) -> tuple[list[float], list[float], str, float]:
    """Redraw times of an unchanged chart; with ``cold``, also (into it) times with every curve changed."""
    app = make((folder,))
    began = time.perf_counter()
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot, app)
        load_seconds = time.perf_counter() - began
        frames = Frames(app.chart)
        out, builds = [], []
        for k in range(repeat if cold is None else 2 * repeat):
            await pilot.pause(app.redraw_interval + 0.05)
            if k % 2 and cold is not None:
                _forget(app)
            app.chart._look = None  # rasterised anew: a frame that draws as the last one did is kept as it is
            moment = time.perf_counter()
            app.schedule_redraw()
            took = await _frame_after(pilot, frames, moment, lambda spec: True, timeout)
            if k % 2 and cold is not None:
                cold.append(took)
                continue
            out.append(took)
            builds.append(frames.build_seconds[-1])
        chart = f"{app.chart.size.width}x{app.chart.size.height}"
    return out, builds, chart, load_seconds


def redraw(big_points: int, small_points: int, runs: int, repeat: int) -> Row:
    big = runs_folder(f"{runs}x{big_points}", runs, big_points)
    small = runs_folder(f"{runs}x{small_points}", runs, small_points)
    timing = Timing()
    builds = {}
    for name, folder in (("big", big), ("small", small)):
        seconds, build, chart, _ = asyncio.run(_redraws(folder, repeat))
        builds[name] = build
        (timing.ours if name == "big" else timing.baseline).extend(sorted(seconds))
    row = ratio_row(
        "redraw",
        f"redraw, {runs} runs x {big_points:,} points / {runs} runs x {small_points:,} points",
        timing,
        1.5,
    )
    absolute = row.ours
    note = (
        f"request -> frame built: {absolute * 1000:.0f} ms (target <= 100 ms) against"
        f" {row.baseline * 1000:.0f} ms; frame build alone {median(builds['big']) * 1000:.0f} ms;"
        f" chart {chart} cells of a {SIZE[0]}x{SIZE[1]} terminal"
    )
    return Row(row.name, row.what, row.ours, row.baseline, row.ratio, "<= 1.5 and <= 100 ms",
               row.ratio <= 1.5 and absolute <= 0.1, row.unit, note, row.spread)


async def _key_frames(folder: str, presses: int) -> list[float]:
    app = make((folder,))
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot, app)
        frames = Frames(app.chart)
        out = []
        for _ in range(presses):
            await pilot.pause(0.2)
            before = len(app.chart.spec.traces)
            moment = time.perf_counter()
            await pilot.press("1")
            out.append(await _frame_after(pilot, frames, moment, lambda spec: len(spec.traces) != before))
    return out


def keys(points: int, runs: int, presses: int) -> Row:
    folder = runs_folder(f"{runs}x{points}", runs, points)
    seconds = asyncio.run(_key_frames(folder, presses))
    p50, p95 = median(seconds), percentile(seconds, 0.95)
    return limit_row(
        "keys", f"key -> redrawn frame, toggling a run with {runs} runs x {points:,} points (p95)", p95, 0.15,
        "p95 <= 150 ms", f"p50 {p50 * 1000:.0f} ms, p95 {p95 * 1000:.0f} ms over {presses} presses of '1'",
    )


def many_runs(runs: int, points: int, repeat: int) -> Row:
    folder = runs_folder(f"{runs}x{points}", runs, points)
    cold: list[float] = []
    seconds, builds, chart, load_seconds = asyncio.run(_redraws(folder, repeat, timeout=300.0, cold=cold))
    took = median(seconds)
    return limit_row(
        "many-runs", f"{runs:,} run files of {points:,} points: redraw (load reported)", took, 0.2,
        "redraw <= 200 ms",
        f"load {load_seconds:.1f} s; redraw {took * 1000:.0f} ms, frame build {median(builds) * 1000:.0f} ms;"
        f" unchanged curves reuse their column summaries and points: with those dropped, as if every"
        f" curve had changed, a redraw takes {median(cold) * 1000:.0f} ms",
    )


# -- start-up in a terminal ------------------------------------------------------------------------

def in_terminal(args: list[str], markers: list[bytes], timeout: float = 60.0, cwd: str | None = None) -> list[float | None]:
    """Seconds from starting ``args`` in a 200x50 pseudo-terminal until each marker is written."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", SIZE[1], SIZE[0], 0, 0))
    env = dict(os.environ, **TERMINAL_ENV, PYTHONPYCACHEPREFIX=PYCACHE)
    env.pop("NO_COLOR", None)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    began = time.perf_counter()
    proc = subprocess.Popen(args, stdin=slave, stdout=slave, stderr=slave, env=env, cwd=cwd, start_new_session=True)
    os.close(slave)
    seen: list[float | None] = [None] * len(markers)
    tail = b""
    try:
        while time.perf_counter() - began < timeout and None in seen:
            ready, _, _ = select.select([master], [], [], 0.02)
            if not ready:
                if proc.poll() is not None:
                    break
                continue
            try:
                data = os.read(master, 1 << 16)
            except OSError:
                break
            now = time.perf_counter() - began
            window = tail + data
            for k, marker in enumerate(markers):
                if seen[k] is None and marker in window:
                    seen[k] = now
            tail = window[-256:]
    finally:
        try:
            os.write(master, b"q")
            proc.wait(10)
        except (OSError, subprocess.TimeoutExpired):
            proc.kill()
            proc.wait()
        os.close(master)
    return seen


MINIMAL_APP = (
    "from textual.app import App\n"
    "from textual.widgets import Footer, Static\n"
    "class Minimal(App):\n"
    "    BINDINGS = [('q', 'quit', 'Quit')]\n"
    "    def compose(self):\n"
    "        yield Static('hello')\n"
    "        yield Footer()\n"
    "Minimal().run()\n"
)


#: The chart has curves: a braille cell of U+28C0-U+28FF (every dense curve draws some).
CURVES = "\u28c0".encode()[:2]
#: The panel has findings: the verdict of a converged run, which only the analysis writes.
FINDINGS = b"converged"


@functools.cache
def _startups(repeat: int, sample_logs: str) -> tuple[Timing, Timing]:
    """Interleaved pairs: (first frame, minimal app), (chart and findings drawn, minimal app)."""
    tuiloss = os.path.join(os.path.dirname(sys.executable), "tuiloss")
    first, ready = Timing(), Timing()
    for k in range(repeat + 1):  # the first pair compiles the byte code and is not counted
        frame, curves, findings = in_terminal([tuiloss, "watch", sample_logs], [b"Quit", CURVES, FINDINGS])
        (floor,) = in_terminal([sys.executable, "-c", MINIMAL_APP], [b"Quit"])
        if frame is None or floor is None:
            raise TimeoutError("no first frame")
        if curves is None or findings is None:
            raise TimeoutError("the chart or the findings never came")
        if k:
            first.ours.append(frame)
            ready.ours.append(max(curves, findings))
            first.baseline.append(floor)
            ready.baseline.append(floor)
    return first, ready


def startup(repeat: int, sample_logs: str) -> Row:
    first, _ = _startups(repeat, sample_logs)
    row = ratio_row("startup", "start-up: `tuiloss watch sample_logs` to first frame / a minimal Textual app", first, 1.5)
    return Row(row.name, row.what, row.ours, row.baseline, row.ratio, row.target, row.passed, row.unit,
               f"first frame (its footer keys drawn) after {row.ours:.2f} s; a two-widget Textual app shows its"
               f" first frame after {row.baseline:.2f} s in the same terminal", row.spread)


def startup_ready(repeat: int, sample_logs: str) -> Row:
    _, ready = _startups(repeat, sample_logs)
    row = ratio_row("startup-ready", "start-up: `tuiloss watch sample_logs` to the chart's curves and the panel's"
                    " findings drawn / a minimal Textual app's first frame", ready, 3)
    return Row(row.name, row.what, row.ours, row.baseline, row.ratio, row.target, row.passed, row.unit,
               f"curves and findings on screen after {row.ours:.2f} s (the same runs as the startup row)", row.spread)


def startup_gigabyte(repeat: int) -> Row:
    folder, size, points = gigabyte_folder()
    tuiloss = os.path.join(os.path.dirname(sys.executable), "tuiloss")
    first, done = [], []
    in_terminal([tuiloss, "watch", folder], [b"Quit"])  # compiles the byte code; not counted
    for _ in range(repeat):
        frame, full = in_terminal([tuiloss, "watch", folder], [b"Quit", f"{points:,} points".encode()], timeout=120)
        if frame is None:
            raise TimeoutError("no first frame")
        first.append(frame)
        done.append(full if full is not None else float("inf"))
    frame, full = median(first), median(done)
    return Row(
        name="startup-1gb",
        what=f"start-up with {size / 1e9:.2f} GB of logs ({points / 1e6:.0f}M points in 10 runs): first frame; loaded",
        ours=frame,
        baseline=1.5,
        ratio=frame / 1.5,
        target="first frame <= 1.5 s, loaded <= 10 s",
        passed=frame <= 1.5 and full <= 10,
        note=f"first frame {frame:.2f} s, every point on screen after {full:.1f} s"
        " (4 nanoGPT, 3 JSONL, 3 CSV runs)",
    )
