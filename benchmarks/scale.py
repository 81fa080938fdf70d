"""Scale rows: `tuiloss report` on one long CSV run, resident memory per point, `watch` at 100M points.

- **report**: ``tuiloss report FILE`` (start, read, analyse, print) against
  ``python -c "pandas.read_csv(FILE)"`` on the same file (pandas imported without pyarrow, as
  tuiloss imports it), both as fresh processes, alternating; the ratio is the median of the pairs.
- **report-memory**: the peak resident memory (``ru_maxrss`` of the process, from
  ``wait4`` in a small process that starts it: see :func:`_peak`) of ``tuiloss report`` over the points it stored, on one CSV run of 20M
  points (10M lines of ``step,loss,lr``) and on ten runs of 10M points each (100M).
  The whole process counts: the interpreter, numpy and pandas, the store, the analysis.
- **watch-scale**: ``tuiloss watch`` on the ten runs of 10M points in a pseudo-terminal:
  the load time (until the status bar shows every point), then how long its CPU takes to
  go quiet (the analyses of every run done: the findings settled), and the peak resident
  memory by then (``VmHWM``).
- **watch-live**: ``tuiloss watch`` following one CSV log while another process appends
  it (``step,loss,lr``, :data:`LIVE_RATE` lines a second, a block every
  :data:`LIVE_BLOCK` lines): the file is read as it grows, a little at a time, with no
  backlog to size the store's arrays from, and the panel analyses it as it goes. The peak
  resident memory (``VmHWM``) once every point is shown and the CPU went quiet, per point:
  at 20M lines (40M points) the whole process; ``--quick``, the slope from 1M to 3M lines.
"""

from __future__ import annotations

import os
import pty
import select
import shutil
import signal
import statistics
import subprocess
import sys
import time

from typing import Callable

from benchmarks.datagen import DATA_DIR, cached_log
from benchmarks.measure import Row, Timing, ratio_row

REPORT_TARGET = 2.0
#: Lines a second the writer of the live log appends, and lines per write.
LIVE_RATE = 1_000_000
LIVE_BLOCK = 20_000
BYTES_PER_POINT = 24.0
WATCH_RSS = 2.4e9
POINTS_PER_LINE = 2  # step,loss,lr: loss and lr
CLOCK = os.sysconf("SC_CLK_TCK")


def _tuiloss() -> str:
    return os.path.join(os.path.dirname(sys.executable), "tuiloss")


def _env() -> dict:
    from benchmarks.ui import PYCACHE

    env = dict(os.environ, PYTHONPYCACHEPREFIX=PYCACHE)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def _child(args: list[str]) -> float:
    """Wall seconds of one process, its output discarded."""
    began = time.perf_counter()
    proc = subprocess.run(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=_env())
    seconds = time.perf_counter() - began
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(args)} exited {proc.returncode}: {proc.stderr.decode(errors='replace')[-500:]}")
    return seconds


#: Starts the command it is given and prints its peak resident kilobytes. Linux counts in a process'
#: peak the memory of the process it was forked from, up to its exec: a child spawned straight from
#: this harness (which holds the earlier rows' data, 1.5 GB after a full run's UI rows) reported that.
_PEAK = """import os, sys
pid = os.fork()
if pid == 0:
    os.execvp(sys.argv[1], sys.argv[1:])
_, status, usage = os.wait4(pid, 0)
print(usage.ru_maxrss)
sys.exit(os.waitstatus_to_exitcode(status))
"""


def _peak(args: list[str]) -> int:
    """Peak resident bytes of one process (started from a small one, see :data:`_PEAK`)."""
    proc = subprocess.run([sys.executable, "-c", _PEAK, *args], capture_output=True, env=_env())
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(args)} exited {proc.returncode}: {proc.stderr.decode(errors='replace')[-500:]}")
    return int(proc.stdout.split()[-1]) * 1024


def _pandas(path: str) -> list[str]:
    """``pandas.read_csv`` of ``path`` in a fresh process, pandas imported as tuiloss imports it:
    without pyarrow (see :mod:`tuiloss.core.pandas_import`), whose import pandas pays wherever
    it is installed (the ``bench`` extra's MLflow brings it): ~0.3 s that would flatter the ratio."""
    return [sys.executable, "-c", f"import sys; sys.modules['pyarrow'] = None; import pandas; pandas.read_csv({path!r})"]


def report(lines: int, repeat: int) -> Row:
    path = cached_log("csv", lines)
    ours, theirs = [_tuiloss(), "report", path], _pandas(path)
    _child(ours), _child(theirs)  # byte code and page cache warm, not counted
    timing = Timing()
    for k in range(repeat):
        order = (ours, theirs) if k % 2 else (theirs, ours)
        for args in order:
            (timing.ours if args is ours else timing.baseline).append(_child(args))
    peaks = [_peak(ours)]
    note = (
        f"{lines:,} lines ({os.path.getsize(path) / 1e6:,.0f} MB), every point stored and the loss analysed;"
        f" both timed as fresh processes; peak RSS {max(peaks) / 1e6:,.0f} MB"
    )
    return ratio_row("report", f"`tuiloss report` on one CSV run of {lines / 1e6:g}M lines / `pandas.read_csv`",
                     timing, REPORT_TARGET, note)


def runs_folder(runs: int, lines: int) -> str:
    """``runs`` run folders, each holding a copy of one cached ``lines``-line CSV log."""
    root = os.path.join(DATA_DIR, "scale", f"runs-{runs}x{lines}")
    done = os.path.join(root, ".done")
    if not os.path.exists(done):
        shutil.rmtree(root, ignore_errors=True)
        source = cached_log("csv", lines)
        for k in range(runs):
            target = os.path.join(root, f"run{k:02d}", "metrics.csv")
            os.makedirs(os.path.dirname(target))
            shutil.copyfile(source, target)
        open(done, "w").close()
    return root


def report_memory(small_lines: int, run_lines: int, runs: int, whole: bool = True) -> Row:
    """Peak RSS per stored point of ``tuiloss report`` on one run and on ``runs`` runs.

    ``whole``: the whole process counts, at each size. Else (``--quick``, where a few
    million points are outweighed by what does not grow with them: the interpreter, pandas,
    one chunk's parse buffers) the slope from one run of ``small_lines`` to one of ``run_lines``:
    the second peak's growth over the first, per point added.
    """
    second = (runs_folder(runs, run_lines), runs * run_lines) if whole else (cached_log("csv", run_lines), run_lines)
    cases = [(cached_log("csv", small_lines), small_lines), second]
    _child([_tuiloss(), "report", cached_log("csv", 1_000)])  # byte code written, not counted
    peaks = []
    for path, lines in cases:
        peak = _peak([_tuiloss(), "report", path])
        peaks.append((peak, lines * POINTS_PER_LINE))
    (first, p1), (second, p2) = peaks
    if whole:
        worst = max(first / p1, second / p2)
        counted = "the whole process: interpreter, numpy, pandas, the store and the analysis"
    else:
        worst = (second - first) / (p2 - p1)
        counted = f"per point added from {p1 / 1e6:.0f}M to {p2 / 1e6:.0f}M points"
    note = "; ".join(f"{points / 1e6:.0f}M points: peak RSS {peak / 1e6:,.0f} MB, {peak / points:.1f} B/point"
                     for peak, points in peaks)
    return _per_point_row("report-memory", f"`tuiloss report`: peak RSS per stored point ({'process' if whole else 'slope'}),"
                          f" {p1 / 1e6:.0f}M and {p2 / 1e6:.0f}M points", worst, f"{note} ({counted})")


def _per_point_row(name: str, what: str, per_point: float, note: str) -> Row:
    """A row of resident bytes per point, held to :data:`BYTES_PER_POINT`."""
    return Row(name=name, what=what, ours=per_point, baseline=BYTES_PER_POINT, ratio=per_point / BYTES_PER_POINT,
               target=f"<= {BYTES_PER_POINT:g} bytes", passed=per_point <= BYTES_PER_POINT, unit="bytes", note=note)


def _proc(pid: int) -> tuple[float, int, int]:
    """CPU seconds, resident bytes and peak resident bytes of a running process."""
    with open(f"/proc/{pid}/stat", encoding="ascii") as handle:
        fields = handle.read().rsplit(")", 1)[1].split()
    cpu = (int(fields[11]) + int(fields[12])) / CLOCK
    rss = hwm = 0
    with open(f"/proc/{pid}/status", encoding="ascii") as handle:
        for line in handle:
            if line.startswith("VmRSS:"):
                rss = int(line.split()[1]) * 1024
            elif line.startswith("VmHWM:"):
                hwm = int(line.split()[1]) * 1024
    return cpu, rss, hwm


def watch_settled(folder: str, points: int, timeout: float, quiet: float = 0.1, window: float = 2.0,
                  first: tuple[int, Callable[[], None]] | None = None) -> dict:
    """Start ``tuiloss watch folder`` in a 200x50 pseudo-terminal; time the load, then the settling.

    Loaded: the status bar shows ``{points:,} points``. Settled: the process used less than
    ``quiet`` of a core over ``window`` seconds (its analyses done; an idle viewer uses ~1%).
    ``first``: (a count of points, what to do once the status bar shows it), once.
    """
    from benchmarks.ui import SIZE, TERMINAL_ENV

    import fcntl
    import struct
    import termios

    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", SIZE[1], SIZE[0], 0, 0))
    env = dict(_env(), **TERMINAL_ENV)
    env.pop("NO_COLOR", None)
    began = time.perf_counter()
    proc = subprocess.Popen([_tuiloss(), "watch", folder], stdin=slave, stdout=slave, stderr=slave, env=env,
                            start_new_session=True)
    os.close(slave)
    marker = f"{points:,} points".encode()
    early = f"{first[0]:,} points".encode() if first else None
    loaded = settled = None
    samples: list[tuple[float, float]] = []
    tail = b""
    rss = hwm = 0
    try:
        while time.perf_counter() - began < timeout and settled is None:
            ready, _, _ = select.select([master], [], [], 0.05)
            if ready:
                try:
                    data = os.read(master, 1 << 16)
                except OSError:
                    break
                if early is not None and early in tail + data:
                    early = None
                    first[1]()
                if loaded is None and marker in tail + data:
                    loaded = time.perf_counter() - began
                tail = (tail + data)[-256:]
            elif proc.poll() is not None:
                break
            now = time.perf_counter() - began
            if loaded is not None and (not samples or now - samples[-1][0] >= 0.25):
                cpu, rss, hwm = _proc(proc.pid)
                samples.append((now, cpu))
                earlier = [s for s in samples if now - s[0] >= window]
                if earlier:
                    then, cpu_then = earlier[-1]
                    if (cpu - cpu_then) / (now - then) < quiet:
                        settled = then
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # the viewer's own session, started above; its state is read
        proc.wait()
        os.close(master)
    return {"loaded": loaded, "settled": settled, "rss": rss, "hwm": hwm}


def watch_scale(runs: int, lines: int, repeat: int, timeout: float = 600.0) -> Row:
    folder = runs_folder(runs, lines)
    points = runs * lines * POINTS_PER_LINE
    found = [watch_settled(folder, points, timeout) for _ in range(repeat)]
    if any(f["loaded"] is None or f["settled"] is None for f in found):
        raise TimeoutError(f"watch did not load or settle within {timeout:g} s: {found}")
    load = statistics.median(f["loaded"] for f in found)
    settle = statistics.median(f["settled"] - f["loaded"] for f in found)
    peak = max(f["hwm"] for f in found)
    ratio = settle / load
    return Row(
        name="watch-scale",
        what=f"`tuiloss watch`, {runs} runs x {lines * POINTS_PER_LINE / 1e6:g}M points: findings settled after"
             f" the load / the load; peak RSS",
        ours=settle,
        baseline=load,
        ratio=ratio,
        target=f"<= 1 and RSS <= {WATCH_RSS / 1e9:g} GB",
        passed=ratio <= 1 and peak <= WATCH_RSS,
        note=f"loaded after {load:.1f} s, quiet {settle:.1f} s later (CPU under 10% of a core for 2 s);"
             f" peak RSS {peak / 1e9:.2f} GB ({peak / points:.1f} B/point); median of {repeat}",
    )


def append_log(source: str, target: str, start: int, rate: float, block: int) -> None:
    """Append ``source`` from byte ``start`` on to ``target``, ``block`` lines at a time, at ``rate`` lines a second."""
    began = time.perf_counter()
    written = 0
    with open(source, "rb") as src, open(target, "ab") as out:
        src.seek(start)
        rest = b""
        while True:
            piece = src.read(1 << 20)
            data = rest + piece
            lines = data.split(b"\n")
            rest = lines.pop()
            for k in range(0, len(lines), block):
                chunk = lines[k : k + block]
                out.write(b"\n".join(chunk) + b"\n")
                out.flush()
                written += len(chunk)
                ahead = written / rate - (time.perf_counter() - began)
                if ahead > 0:
                    time.sleep(ahead)
            if not piece:
                break


def _live_peak(lines: int, timeout: float) -> tuple[int, int, float, float]:
    """Follow one CSV log written by another process as it grows to ``lines`` lines: the viewer's
    peak resident bytes once all is shown and quiet, its points, the writer's time and the viewer's lag."""
    source = cached_log("csv", lines)
    folder = os.path.join(DATA_DIR, "scale", f"live-{lines}")
    shutil.rmtree(folder, ignore_errors=True)
    os.makedirs(folder)
    target = os.path.join(folder, "metrics.csv")
    head = 1_000  # lines there at the start, so the log is found and drawn first
    with open(source, "rb") as src, open(target, "wb") as out:
        for _ in range(head + 1):  # the header and the first lines
            out.write(src.readline())
        start = src.tell()
    writer: dict = {}

    def start_writer() -> None:  # once the viewer shows the first lines: it reads the rest as written
        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        code = f"from benchmarks.scale import append_log; append_log({source!r}, {target!r}, {start}, {LIVE_RATE}, {LIVE_BLOCK})"
        writer["at"] = time.perf_counter()
        writer["proc"] = subprocess.Popen([sys.executable, "-c", code], cwd=root)

    points = lines * POINTS_PER_LINE
    began = time.perf_counter()
    try:
        found = watch_settled(folder, points, timeout, first=(head * POINTS_PER_LINE, start_writer))
    finally:
        if "proc" in writer:
            writer["proc"].wait()
    if found["loaded"] is None or found["settled"] is None or "proc" not in writer:
        raise TimeoutError(f"watch did not follow the log to its end within {timeout:g} s: {found}")
    if writer["proc"].returncode != 0:
        raise RuntimeError(f"the writer of the live log exited {writer['proc'].returncode}")
    shutil.rmtree(folder, ignore_errors=True)
    writing = lines / LIVE_RATE
    lag = found["loaded"] - (writer["at"] - began) - writing  # shown after the writer's last write
    return found["hwm"], points, writing, lag


def watch_live(lines: int, small: int | None, timeout: float = 600.0) -> Row:
    """Peak RSS per point of ``tuiloss watch`` following one growing CSV log to ``lines`` lines.

    ``small`` (``--quick``): the slope from a log of ``small`` lines to one of ``lines``, as
    report-memory's quick variant does (a few million points are outweighed by what does not
    grow with them: the interpreter, Textual, pandas).
    """
    peak, points, writing, lag = _live_peak(lines, timeout)
    note = (f"{lines:,} lines appended at {LIVE_RATE:,} a second ({writing:.0f} s) in writes of {LIVE_BLOCK:,};"
            f" all shown {max(lag, 0.0):.1f} s after the last write; peak RSS {peak / 1e6:,.0f} MB,"
            f" {peak / points:.1f} B/point")
    if small is None:
        per_point = peak / points
        counted = "the whole process"
    else:
        low, low_points, _, _ = _live_peak(small, timeout)
        per_point = (peak - low) / (points - low_points)
        note = f"{small:,} lines: peak RSS {low / 1e6:,.0f} MB; " + note
        counted = f"per point added from {low_points / 1e6:.0f}M to {points / 1e6:.0f}M points"
    return _per_point_row("watch-live", f"`tuiloss watch` following a CSV log as it grows to {lines / 1e6:g}M lines:"
                          f" peak RSS per point ({'process' if small is None else 'slope'})", per_point, f"{note} ({counted})")
