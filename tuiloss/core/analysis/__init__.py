"""Analysis of loss curves: smoothing and downsampling for the chart, findings for the report.

Everything here is headless (numpy only) and never raises on odd data.

The names below load their module on first use, so a caller that needs only formatting
(:mod:`~tuiloss.core.analysis.display`) or the chart's columns does not pay for every detector
before the viewer's first frame.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

#: Each public name and the module of this package that defines it.
_HOMES = {
    "Anomaly": "anomalies", "find_nans": "anomalies", "find_resets": "anomalies", "stall_anomaly": "anomalies",
    "join_eval": "evals",
    "ColumnData": "downsample", "ColumnIndex": "downsample", "column_edges": "downsample",
    "minmax_columns": "downsample",
    "LiveAnalyzer": "live",
    "Observation": "observations", "RunFacts": "observations", "compare_runs": "observations",
    "Plateau": "plateaus",
    "ema": "smoothing", "rolling_median": "smoothing",
    "SeriesAnalysis": "summary", "analyze_series": "summary", "final_value": "summary",
}

__all__ = sorted(_HOMES)


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{home}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__


if TYPE_CHECKING:
    from tuiloss.core.analysis.anomalies import Anomaly, find_nans, find_resets, stall_anomaly
    from tuiloss.core.analysis.downsample import ColumnData, ColumnIndex, column_edges, minmax_columns
    from tuiloss.core.analysis.evals import join_eval
    from tuiloss.core.analysis.live import LiveAnalyzer
    from tuiloss.core.analysis.observations import Observation, RunFacts, compare_runs
    from tuiloss.core.analysis.plateaus import Plateau
    from tuiloss.core.analysis.smoothing import ema, rolling_median
    from tuiloss.core.analysis.summary import SeriesAnalysis, analyze_series, final_value
