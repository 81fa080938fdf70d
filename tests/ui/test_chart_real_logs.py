"""The default chart of every real log gives where each curve settled rows of its own (skips without the logs)."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from tuiloss.core.engine import load
from tuiloss.ui.chartdata import ChartView
from tuiloss.ui.curves import Curves
from tuiloss.ui.selection import Selection

REAL_LOGS = Path(os.environ.get("TUILOSS_REAL_LOGS") or Path(__file__).resolve().parents[2].parent / "shared" / "real_logs")
FOLDERS = sorted(p for p in REAL_LOGS.glob("*/*") if p.is_dir()) if REAL_LOGS.is_dir() else []
COLUMNS, ROWS = 66, 27  # the plot area of a 120x40 terminal with the panel shown


def _chart(folder):
    store, _, _ = load([str(folder)])
    runs = list(store)
    selection = Selection()
    for run in runs:
        selection.add(run.id)
    curves = Curves()
    view = ChartView()
    prepared = curves.prepare(runs, selection, view, {}, {})
    return prepared, curves.chart(prepared, view, COLUMNS, height=ROWS, metric="loss", background=(0, 0, 0))


@pytest.mark.skipif(not FOLDERS, reason="../shared/real_logs is not present")
@pytest.mark.parametrize("folder", FOLDERS or [None], ids=[f"{p.parent.name}/{p.name}" for p in FOLDERS] or ["absent"])
def test_the_settled_part_of_every_curve_gets_rows_of_its_own(folder):
    """Where a curve ended up (its later half) is what a reader looks at: not one row of a huge axis."""
    _, spec = _chart(folder)
    if spec.empty:
        pytest.skip(f"no points read from {folder.name} yet")
    y_lo, y_hi = spec.y_lim
    for trace in spec.traces:
        xs, ys = np.asarray(trace.xs, dtype=float), np.asarray(trace.ys, dtype=float)
        steps = 10.0**xs if spec.x_log else xs
        later = ys[(steps >= (steps[0] + steps[-1]) / 2) & np.isfinite(ys)]
        if len(later) < 10:
            continue
        values = 10.0**later if spec.y_log else later
        level = abs(float(np.median(values)))
        spread = float(np.quantile(values, 0.9) - np.quantile(values, 0.1))
        if level == 0 or spread / level < 0.05:
            continue  # flat where it settled: one row is the truth
        rows = np.unique(np.clip(np.rint((y_hi - later) / (y_hi - y_lo) * (ROWS - 1)), 0, ROWS - 1))
        assert len(rows) >= 3, (folder.name, len(rows), spec.y_lim, spec.y_log)
    if spec.y_log:
        assert "log y" in spec.title
