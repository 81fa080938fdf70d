"""``python -m benchmarks [--quick] [--only NAME[,NAME]] [--repeat N]``: measure, write RESULTS.md.

Rows (names for ``--only``): csv, jsonl, text (with the physical limit), tfevents,
tail, memory, latency, latency-poll, redraw, keys, startup, startup-1gb, many-runs.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import traceback

from benchmarks import machine, results

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ALL = results.ORDER

#: What holds back each figure that misses its target, from profiles (see the module docstrings).
BOUNDS = {
    "csv": (
        "pandas parsing the chunk is ~1.0-1.15x `pandas.read_csv` of the path by itself; on top come"
        " the tailer's read of the bytes, two line counts (LineSource's and the parser's) and storing"
        " the points, ~0.5x together. `LineSource._has_long_line` (sources.py) walks the chunk line by"
        " line in Python and costs more than the parse: see its share in the physical-limit table."
    ),
    "jsonl": (
        "Lines of one layout are read with bytes operations and pandas (see text.py `LineLayout`);"
        " what is left over the bare orjson loop is mostly `LineSource._has_long_line`."
    ),
    "text": "as JSONL: the long-line scan in `sources.py` is the part over the target.",
    "redraw": (
        "plotext's build on the UI thread (`PlotextPlot.render`) is most of it whatever the number of"
        " points; the downsampled traces are already ~2 points per column."
    ),
    "keys": "the same plotext build, plus the redraw throttle of 100 ms after the previous frame.",
    "startup": "imports (textual, rich, numpy, plotext) and composing the screen before the first frame.",
    "startup-1gb": "see the ingest rows: the load is the parse of every byte, bounded by the long-line scan.",
}


def measure(names: list[str], quick: bool, repeat: int | None) -> tuple[list, list]:
    from benchmarks import events, ingest, memory, tail_cost, ui

    lines = 1_000_000 if quick else 10_000_000
    reps = repeat or (5 if quick else 3)
    rows, limits = [], []
    plan = {
        "csv": lambda: ingest.run("csv", lines, reps),
        "jsonl": lambda: ingest.run("jsonl", lines, reps),
        "text": lambda: ingest.run("text", lines, reps),
        "tfevents": lambda: events.run(200_000 if quick else 1_000_000, reps if quick else 2),
        "tail": lambda: tail_cost.run(lines, 100 if quick else 300),
        "memory": lambda: memory.run(lines),
        "latency": lambda: ui.latency(20 if quick else 60, None),
        "latency-poll": lambda: ui.latency(10 if quick else 30, 1.0),
        "redraw": lambda: ui.redraw(100_000 if quick else 1_000_000, 10_000, 10, 5 if quick else 15),
        "keys": lambda: ui.keys(100_000 if quick else 1_000_000, 10, 10 if quick else 30),
        "startup": lambda: ui.startup(3 if quick else 7, os.path.join(ROOT, "sample_logs")),
        "startup-1gb": lambda: ui.startup_gigabyte(1 if quick else 3),
        "many-runs": lambda: ui.many_runs(100 if quick else 1000, 10_000, 5 if quick else 10),
    }
    for name in names:
        started = time.perf_counter()
        print(f"{name} ...", end=" ", flush=True)
        try:
            out = plan[name]()
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
    parser.add_argument("--repeat", type=int, help="paired runs per ingest row (default 3, quick 5)")
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
    missed = {row["name"] for row in state["rows"].values() if row["passed"] is False}
    results.write(state, {name: text for name, text in BOUNDS.items() if name in missed})
    print(f"wrote {os.path.relpath(results.RESULTS_MD)}")
    return 0 if rows else 1


if __name__ == "__main__":
    sys.exit(main())
