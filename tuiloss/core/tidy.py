"""Every stored point as one tidy table: ``tuiloss export --csv`` and the viewer's ``e`` key.

One row per point: run label, metric, step, value, segment (0 for the first stretch, then one more
after each reset, truncation or replacement), and the run's id, which stays unique where two
runs share a label. Every point is written, those a newer segment hides on the chart too, in the
order they were read. pandas writes it.
"""

from __future__ import annotations

from typing import Iterable

import numpy as np

from tuiloss.core.pandas_import import load_pandas
from tuiloss.core.store import Run

pd = load_pandas()

COLUMNS = ("run", "metric", "step", "value", "segment", "run_id")


def tidy_frame(runs: Iterable[Run]) -> pd.DataFrame:
    """The points of ``runs`` as a DataFrame with :data:`COLUMNS`."""
    parts = []
    for run in runs:
        for name, series in run.series.items():
            n = len(series)
            if not n:
                continue
            segment = np.zeros(n, dtype=np.int32)
            for index, seg in enumerate(series.segments[1:], start=1):
                segment[seg.start:] = index
            parts.append(pd.DataFrame({
                "run": pd.Categorical.from_codes(np.zeros(n, dtype=np.int8), [run.label]),
                "metric": pd.Categorical.from_codes(np.zeros(n, dtype=np.int8), [name]),
                "step": series.steps.view,
                "value": series.values.view,
                "segment": segment,
                "run_id": pd.Categorical.from_codes(np.zeros(n, dtype=np.int8), [run.id]),
            }))
    if not parts:
        return pd.DataFrame({column: [] for column in COLUMNS})
    return pd.concat(parts, ignore_index=True)


def write_tidy_csv(runs: Iterable[Run], path: str) -> int:
    """Write the points of ``runs`` to the CSV file ``path``; the number of points written.

    Whole steps are written without a decimal point; values keep every digit they were read
    with; NaN and infinities are written as ``nan``, ``inf`` and ``-inf``.
    """
    frame = tidy_frame(runs)
    steps = frame["step"].to_numpy(dtype=float) if len(frame) else np.zeros(0)
    if len(steps) and np.all(np.isfinite(steps)) and np.all(steps == np.round(steps)) and np.abs(steps).max() < 2**53:
        frame["step"] = steps.astype(np.int64)
    frame.to_csv(path, index=False, na_rep="nan", float_format=None)
    return len(frame)
