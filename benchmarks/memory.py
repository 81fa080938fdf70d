"""Memory row: resident memory added per stored point, measured in a fresh process.

The child imports tuiloss, reads ``/proc/self/statm``, loads a CSV log of
``step,loss,lr`` (two points per line) through :func:`tuiloss.core.engine.load`,
collects garbage and reads ``statm`` again while the store is alive.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

from benchmarks.datagen import cached_log
from benchmarks.measure import Row

TARGET = 24.0


def resident_bytes() -> int:
    with open("/proc/self/statm", encoding="ascii") as handle:
        return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def child(path: str, warm: str) -> None:
    import gc

    from tuiloss.core.engine import load
    from tuiloss.core.pandas_import import load_pandas

    load([warm])  # import everything the load needs, outside the measurement...
    load_pandas()  # ... pandas too, which a small log's load does without (its ~50 MB are no point's)
    gc.collect()
    before = resident_bytes()
    store, _, _ = load([path])
    gc.collect()
    after = resident_bytes()
    arrays = {id(a): a for run in store for series in run.series.values() for a in (series.steps, series.values)}
    stored = sum(array.nbytes for array in arrays.values())  # a steps array shared by metrics counts once
    print(json.dumps({"before": before, "after": after, "points": store.points, "capacity": stored}))


def run(lines: int) -> Row:
    path = cached_log("csv", lines)
    warm = cached_log("csv", 1_000)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    out = subprocess.run(
        [sys.executable, "-c", f"from benchmarks.memory import child; child({path!r}, {warm!r})"],
        cwd=root,
        capture_output=True,
        text=True,
        check=True,
    )
    figures = json.loads(out.stdout.strip().splitlines()[-1])
    points = figures["points"]
    per_point = (figures["after"] - figures["before"]) / points
    return Row(
        name="memory",
        what=f"resident memory growth per stored point, {points / 1e6:.0f}M points",
        ours=per_point,
        baseline=16.0,
        ratio=per_point / 16.0,
        target=f"<= {TARGET:g} bytes",
        passed=per_point <= TARGET,
        unit="bytes",
        note=(
            f"baseline: 16 bytes (a float64 step and value); arrays reserved"
            f" {figures['capacity'] / points:.1f} bytes/point, untouched pages are not resident"
        ),
    )
