"""``python -m benchmarks [--quick] [--only NAME[,NAME]] [--repeat N]``: measure, write RESULTS.md.

Rows (names for ``--only``): csv, csv-pieces, jsonl, text (with the physical limit),
tfevents, mlflow-db, wandb-file, tail, memory, latency, latency-poll, redraw, keys, startup, startup-ready,
startup-1gb, many-runs, remote-latency-sftp, remote-latency-s3, remote-idle, remote-idle-tfevents, remote-discovery,
tfevents-rustboard, report, report-memory, watch-scale, watch-live (benchmarks/scale.py), runs-start, toggle-runs,
idle-cpu, rescan-loop, follow-cpu, latency-terminal, idle-cpu-poll, runs-cpu, runs-appear
(benchmarks/viewer_scale.py: thousands of runs,
CPU of the real command in tmux, latency on the terminal).
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import time
import traceback

from benchmarks import machine, results

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ALL = results.ORDER

#: What holds back each figure that misses its target, from profiles (see the module docstrings).
BOUNDS = {
    "csv": (
        "`pandas.read_csv(path)` (pandas 3.1) maps the file and parses it on both cores with no copy."
        " tuiloss parses with the same C reader on both cores, in place in each 8 MiB read: the"
        " parser alone takes ~0.8x the baseline's whole read on the AMD EPYC VMs, ~1.1x on the Intel"
        " Xeon one, where the row measures 1.42-1.48x (pairs 1.03-1.84: pandas' own read swings between"
        " 0.46 and 0.8 s in one process) and the pairs swing widely; there the"
        " code of the start of this work took 1.09-1.20 s against 0.87-0.94 s for this code,"
        " interleaved in one process (ratios 1.66-2.32x against 1.22-1.79x). What it adds is the read itself (a copy"
        " out of the page cache, ~70 ms for 300 MB; mapping the file instead would kill the process"
        " with SIGBUS when a log is truncated while mapped) and storing 20M points in fresh memory,"
        " whose page faults are slow and vary on this VM. Reading and storing overlap on two threads,"
        " but both readers already keep both cores busy, so what tuiloss adds shows in the ratio, and"
        " the pairs spread widely with the machine's noise (see the range)."
    ),
    "jsonl": (
        "lines of one layout are read with bytes operations and pandas (see `LineLayout` in"
        " formats/layout.py); the rest of a load is the read, the store and the line count."
    ),
    "text": "as JSONL: the parser alone is ~0.5x; LineSource and the store add the rest.",
    "redraw": (
        "building the chart data: a per-run column query of the downsampling index, then the numpy"
        " rasteriser (`tuiloss/ui/canvas.py`, a few ms per frame)."
    ),
    "keys": "the same redraw, after a redraw throttle of up to 100 ms since the previous frame.",
    "startup": (
        "Textual's own start and the footer, whose keys Textual lays out a few refreshes after the rest"
        " (eight keys, against the minimal app's one); numpy and the rest of tuiloss load after that frame."
    ),
    "startup-ready": (
        "loading numpy, the parsers and the detectors, reading the sample's seven logs and the first analysis of each,"
        " on two cores shared with the UI thread; the garbage collector is held off until the first findings are drawn"
        " (it walked the start-up's long-lived objects about 140 times, a tenth of its CPU)."
    ),
    "startup-1gb": (
        "the first frame is on time; loading is the ingest rows' work for 57M points, while the UI"
        " thread's redraws share the two cores and the GIL."
    ),
    "report": (
        "the CPU of two cores, used in full from the first batch on: 3.2-3.7 s of CPU in 2.0-2.3 s on the"
        " AMD EPYC VM of run D (the parse 1.0-1.25 s, the analysis of the loss 1.0 s, the reads, their"
        " hashes and pandas' import 0.5 s, the store and the pages it lands on 0.2 s, the report after"
        " the load 0.15 s). The loss is analysed as it loads, on the main thread, while the next chunks"
        " are parsed on threads of the lowest priority; its block summary is summed up meanwhile, at the"
        " size its expected length takes, so the report after the load reads only the last blocks"
        " (0.10 s after the load, 0.19 s before). Before the first batch, pandas' import (0.23-0.28 s)"
        " leaves one core idle. Both sides import pandas without pyarrow. The analysis' costs are"
        " spread thin: the running median of 21 points 0.24 s, the noise of each 64 points 0.19 s, the"
        " coarse scales 0.12 s, the logarithms 0.05 s."
    ),
    "report-memory": (
        "the store keeps a float64 step (shared by the metrics of a row) and a float64 value per point"
        " (12 B/point for `step,loss,lr`); the analysis of the loss holds its log values only for the last"
        " few hundred thousand points (the rest are worked out again from the store's values where read)"
        " and bounded state (~0.7 B/point); the interpreter, numpy and pandas are ~80 MB"
        " (4 B/point at 20M points); and the load keeps about four 8 MiB reads' worth of buffers for reuse"
        " (the read, the two threads' parse buffers, the parsed columns, the batches waiting to be stored)."
        " Steps kept as int32 would take 2 B/point off; not done: every reader of the steps (the analysis,"
        " the chart, the report) takes them as float64, and would copy them."
    ),
    "watch-scale": (
        "the store's 12 B/point for the ten runs, with Textual, the chart's index, each run's bounded"
        " analysis state and the pipeline's chunks in flight at the peak (VmHWM)."
    ),
    "watch-live": (
        "the store's 12 B/point, the chart's index, the analysis' bounded state (its log values only for the"
        " last few hundred thousand points), the interpreter, Textual and pandas; while the log is written, what"
        " the reads and parses free stays in the C heap (glibc raises its mmap threshold to 32 MiB after the"
        " first big free), and the arrays a snapshot being analysed still reads are held beside the newer ones."
    ),
    "tfevents-rustboard": (
        "records are framed where their lengths repeat a cycle, CRC-checked column by column and"
        " decoded with numpy; the rest is the source's reads and the per-tag arrays."
    ),
    "runs-start": (
        "the first curves wait for inotify watches on every run folder (watchdog walks the tree and"
        " adds one per folder, ~2 s for ten thousand), one discovery walk (~2.5 s) and the first read."
        " A frame keeps each unchanged curve (its columns, traces and layer), so a curve already on the"
        " chart costs a frame a few look-ups; runs join the chart a slice a frame (8, or one per hundred"
        " curves on it; a new one costs 2-5 ms: its column index, first query, points and settled"
        " range); a key's frame takes none, and none join for three seconds after a toggle, so keys"
        " pressed in a row never wait behind a frame adding runs (the chart fills once they rest)."
        " After a read the UI thread looks again only at what changed (the store's listing by version,"
        " the list's numbers, the shown runs). A read is applied a slice at a time (eight runs' points"
        " a part, 8 ms of parts at most, the event loop going round in between: a read of a load held"
        " the UI thread 40-70 ms, and a key waited for all of it), and while a key's frame is due the"
        " reads and the panel wait for it. The panel goes over the runs for its budget (20 ms) and no"
        " further: the runs it did not reach keep their last block until the next slice goes on from"
        " there (the first panel of a report made ten thousand titles, ~250 ms, and each slice went"
        " over every run left, 30-50 ms). The rows hold the cyclic collector at the start as `tuiloss"
        " watch` does; a load longer than the hold is frozen a step at a time (every second, after a"
        " collection of the young generations) until the analysis of the whole load is drawn, the"
        " reads done or not (the steps came only with the reads, and every full collection then walked"
        " what the first analysis made: 80-160 ms each on the UI thread, the slowest keys). What is"
        " left: the frames' loops over every shown run (the counts, which runs join), the analysis'"
        " snapshot after a key's frame (40-90 ms at 10,000 runs), the collection that ends the hold"
        " (~0.3 s, once), and the GIL, shared with the reads and the first analysis of every run (a"
        " key's frame drawn while the analysis compares the runs' series, where it does not stop for"
        " keys, takes twice as long)."
    ),
    "idle-cpu-poll": (
        "the once-a-second tick (status line, the list's rows on screen) and, at each poll, the runs"
        " that grew within 30 s, then the idle runs and the watched folders' times in turn, each within"
        " 0.2% of the poll interval: the cost does not grow with idle runs, and an idle run that grows"
        " again is seen within a round of polls (a thousand runs fit in one or two)."
    ),
    "runs-cpu": (
        "the last third of the time after the load: the safety poll behind file events (a budget of"
        " 4 ms every 2 s), the safety rescan (0.2% of the time) and the once-a-second tick; the first"
        " third is the analysis of every loaded run settling."
    ),
    "runs-appear": (
        "new runs come as file events: a discovery scan at most every five scan-times, then each"
        " new run read in full, while the analysis of the runs already in competes for the GIL."
    ),
    "toggle-runs": (
        "a toggle costs what changed: an unchanged curve is the same object, with its columns, traces"
        " and layer kept; the layers are composited from the last frame's, end to end, in a few slices;"
        " the auto log y reads pools of the column extremes kept sorted; the panel, the runs list and"
        " the shown runs are worked out again only when what they show changed; the analysis is asked"
        " for once the frame is out. No run new to the chart joins a key's frame, nor any frame for"
        " three seconds after a toggle: the runs still waiting after the load (thousands at 5,000"
        " runs: they join a slice a frame, 8 or one per hundred curves on the chart) wait while the"
        " keys come, so a key never waits behind a frame adding runs, and its own frame draws the"
        " curves already on the chart. While a key's frame is due, the panel waits for it; the panel"
        " goes over the runs for its budget and no further, each slice going on where the last one"
        " stopped. The row holds the cyclic collector at the start as `tuiloss watch` does, and a load"
        " longer than the hold is frozen a step at a time until the analysis of all of it is drawn (an"
        " analysis asked for while it was read settled it before, and the full collections then walked"
        " what the first analysis of 5,000 runs made: 100-140 ms on the UI thread, the slowest keys)."
        " What is left: a few look-ups per curve on the chart in a key's frame, and the first analysis"
        " of the runs, which holds the GIL and two loaded cores (a key's frame drawn while it compares"
        " the runs' series, where it does not stop for keys, takes twice as long)."
    ),
    "follow-cpu": (
        "only the followed run is analysed again, every two seconds (the other runs' entries are handed"
        " back as they were, with one stat call each for their state); a log written more than twenty"
        " lines a second is read every 0.25 s and each read's points are drawn at once (four reads and"
        " frames a second; 0.15 s before: 5.3-5.8% against 4.4-4.6%, interleaved, `tail -F` 0.65-0.75%); a frame rasterises the one curve that changed and composites it over the"
        " other curves' composite, kept from the frame before; the x axis' end moves ahead on a grid of"
        " 1/64 of the span; on Linux the inotify queue is read by the reading thread itself; the"
        " insights panel repaints only its lines that changed. Since: the main screen's partial updates"
        " render each widget only over the changed rows that touch it, and not the containers behind the"
        " widgets rendered in front of them; a followed curve whose new points draw as before (about two"
        " frames in three at a hundred lines a second) keeps its points, traces and raster, and the plot"
        " rows that did not change keep their lines; the auto log y's pools move only the column extremes"
        " that changed; the followed curve's column query reads again only the columns its new points"
        " reached, a spec that draws as the last one keeps the chart's lines without rendering them, the"
        " Line API widgets keep their Rich styles, the status line is cut straight from its spans, and the"
        " changed rows are refreshed in one call (7.5% and 7.1% against 8.2% and 7.3% at load 1). Then"
        " (this pass): the reads of such a busy log (the driver marks them) draw the chart alone, and the"
        " runs list's values and the status line's counts come with the once-a-second tick (any other"
        " read, a key or a report that moves the chart's marks draws them with its frame as before), so"
        " the two frames in three whose points draw as before send nothing to the terminal; a row of the"
        " runs list is kept from the frame before while its run and inputs are the same and the clock is"
        " short of its state's next age threshold (running -> stalled -> stopped); the chart's curves are"
        " looked at again only for the runs whose version moved. In tmux, interleaved with the code"
        " before at load 1.5-3.4: 4.5-5.1% against 6.0-6.6% (the UI thread 2.8-3.3% against 4.2-4.5%)."
        " What is left, at 100 runs: the UI thread (~65%): the chart's build at each read (~1.5 ms: the"
        " followed curve's column index and query, its points and the log y's pools, a few passes of"
        " Python over the 100 curves), its raster and Textual's update of the changed plot rows when its"
        " drawing changed (a frame in three, ~1.5 and ~1 ms); applying each read (~0.4 ms, a Textual"
        " timer for each throttle); every ~15 s the x axis' end moves and every curve is queried and"
        " rasterised again; the analysis thread (~0.4%: the followed run, every two seconds) and the reader"
        " (~0.8%). A point of such a log waits up to 0.25 s for its read and its frame (the runs list's"
        " values and the status line's counts come with the once-a-second tick); writes 0.1 s apart are"
        " read at each write (the latency-terminal row). With --poll 1: 4.6% (4.5% for the code before, interleaved with it at load 7;"
        " 3.8% recorded at a lower load)."
    ),
    "latency-terminal": (
        "the redraw throttle (up to 100 ms), the redraw itself (the changed curve rasterised, the others"
        " composited), and the analyses and reads that share the two cores and the GIL with it."
    ),
    "many-runs": (
        "a redraw rasterises every trace (~75 ms for 1,000); each run's column summary and points are"
        " reused while it does not change. When every curve changed (a zoom, a resize, a new step"
        " that moves the axis), each of the 1,000 is summarised again, one numpy pass of a few"
        " dozen calls per run: that per-run overhead, not the points, bounds it."
    ),
}


def measure(names: list[str], quick: bool, repeat: int | None) -> tuple[list, list]:
    from benchmarks import csv_pieces, events, ingest, memory, remote, rustboard, scale, stores, tail_cost, ui, viewer_scale
    from benchmarks.measure import Skip

    lines = 1_000_000 if quick else 10_000_000
    reps = repeat or 9  # pairs; the median of few pairs moves with one noisy neighbour
    rows, limits = [], []
    plan = {
        "csv": lambda: ingest.run("csv", lines, reps),
        "csv-pieces": lambda: csv_pieces.run(lines, reps),
        "jsonl": lambda: ingest.run("jsonl", lines, reps),
        "text": lambda: ingest.run("text", lines, reps),
        "tfevents": lambda: events.run(200_000 if quick else 1_000_000, reps if quick else 2),
        "mlflow-db": lambda: stores.mlflow_db(200_000 if quick else 1_000_000, 3 if quick else 5),
        "wandb-file": lambda: stores.wandb_file(200_000 if quick else 1_000_000, 3 if quick else 5),
        "tail": lambda: tail_cost.run(lines, 100 if quick else 300),
        "memory": lambda: memory.run(lines),
        "latency": lambda: ui.latency(20 if quick else 60, None),
        "latency-poll": lambda: ui.latency(10 if quick else 30, 1.0),
        "redraw": lambda: ui.redraw(100_000 if quick else 1_000_000, 10_000, 10, 5 if quick else 15),
        "keys": lambda: ui.keys(100_000 if quick else 1_000_000, 10, 10 if quick else 30),
        "startup": lambda: ui.startup(3 if quick else 7, os.path.join(ROOT, "sample_logs")),
        "startup-ready": lambda: ui.startup_ready(3 if quick else 7, os.path.join(ROOT, "sample_logs")),
        "startup-1gb": lambda: ui.startup_gigabyte(1 if quick else 3),
        "many-runs": lambda: ui.many_runs(100 if quick else 1000, 10_000, 3),
        "remote-latency-sftp": lambda: remote.latency("sftp", 10 if quick else 30),
        "remote-latency-s3": lambda: remote.latency("s3", 10 if quick else 30),
        "remote-idle": lambda: remote.idle(10, 5 if quick else 20),
        "remote-idle-tfevents": lambda: remote.idle_events(10, 5 if quick else 20),
        "remote-discovery": lambda: remote.discovery(2_000 if quick else 10_000, 1 if quick else 3),
        "tfevents-rustboard": lambda: rustboard.run(200_000 if quick else 1_000_000, 5 if quick else 7),
        "report": lambda: scale.report(lines, 3 if quick else 9),
        "report-memory": lambda: scale.report_memory(lines, 4_000_000 if quick else 5_000_000, 10, not quick),
        "watch-scale": lambda: scale.watch_scale(10, 500_000 if quick else 5_000_000, 1 if quick else 2),
        "watch-live": lambda: scale.watch_live(3_000_000, 1_000_000) if quick else scale.watch_live(20_000_000, None),
        "runs-start": lambda: viewer_scale.runs_start(1000 if quick else 10_000, 10_000, 10 if quick else 30),
        "toggle-runs": lambda: viewer_scale.toggle_runs(1000 if quick else 5000, 10_000, 10 if quick else 30),
        "idle-cpu": lambda: viewer_scale.idle_cpu(1000, 1000 if quick else 10_000, 10 if quick else 30, 10 if quick else 30),
        # the first analysis of thousands of runs takes a while: the idle window starts after it
        "rescan-loop": lambda: viewer_scale.idle_cpu(2000 if quick else 5000, 1000, 40 if quick else 100, 10 if quick else 60,
                                                     name="rescan-loop"),
        "idle-cpu-poll": lambda: viewer_scale.idle_cpu(100 if quick else 1000, 1000 if quick else 10_000, 20 if quick else 60, 10 if quick else 30,
                                                       name="idle-cpu-poll", poll=1.0),
        "runs-cpu": lambda: viewer_scale.runs_cpu(1000 if quick else 5000, 10_000, 60 if quick else 300),
        "runs-appear": lambda: viewer_scale.runs_appear(200 if quick else 2000, 10_000),
        "follow-cpu": lambda: viewer_scale.follow_cpu(100, 10_000, 10 if quick else 30),
        "latency-terminal": lambda: viewer_scale.latency_terminal(100, 10_000, 100 if quick else 300),
    }
    for name in names:
        started = time.perf_counter()
        print(f"{name} ...", end=" ", flush=True)
        try:
            out = plan[name]()
        except Skip as why:
            print(f"skipped: {why}")
            continue
        except Exception:
            print("failed")
            traceback.print_exc()
            continue
        row, limit = out if isinstance(out, tuple) else (out, None)
        rows.append(row)
        if limit is not None:
            limits.append(limit)
        verdict = "reported" if row.passed is None else ("pass" if row.passed else "MISS")
        print(f"{row.ratio:.2f} ({row.target}) {verdict}  [{time.perf_counter() - started:.0f} s]")
    return rows, limits


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1M lines instead of 10M, fewer repeats")
    parser.add_argument("--only", metavar="NAME[,NAME]", help=f"rows to measure: {', '.join(ALL)}")
    parser.add_argument("--repeat", type=int, help="paired runs per ingest row (default 9)")
    args = parser.parse_args(argv)
    names = ALL if not args.only else [name.strip() for name in args.only.split(",") if name.strip()]
    unknown = [name for name in names if name not in ALL]
    if unknown:
        parser.error(f"unknown row(s): {', '.join(unknown)}; choose from {', '.join(ALL)}")
    info = machine.describe()
    print(f"{info['cpu']}, {info['cores']} cores, {info['python']}; load average {info['load average']}")
    run_id = time.strftime("%Y-%m-%d %H:%M")
    rows, limits = measure(names, args.quick, args.repeat)
    state = results.load()
    results.record(state, run_id, info, args.quick, rows, limits)
    close = {row["name"] for row in state["rows"].values() if row["passed"] is False or _pairs_miss(row)}
    results.write(state, {name: text for name, text in BOUNDS.items() if name in close})
    print(f"wrote {os.path.relpath(results.RESULTS_MD)}")
    return 0 if rows else 1


def _pairs_miss(row: dict) -> bool:
    """Whether a row held to a plain ratio passed on its median while some of its pairs missed."""
    ratio_target = re.fullmatch(r"<= ([0-9.]+)", row["target"])
    return bool(ratio_target) and row["passed"] is True and row["spread"][1] > float(ratio_target.group(1))


if __name__ == "__main__":
    sys.exit(main())
