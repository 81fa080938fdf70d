"""Analysis of loss curves: smoothing and downsampling for the chart, findings for the report.

Everything here is headless (numpy only) and never raises on odd data.
"""

from tuiloss.core.analysis.anomalies import Anomaly, find_nans, find_resets, stall_anomaly
from tuiloss.core.analysis.evals import join_eval
from tuiloss.core.analysis.downsample import ColumnData, ColumnIndex, column_edges, minmax_columns
from tuiloss.core.analysis.live import LiveAnalyzer
from tuiloss.core.analysis.observations import Observation, RunFacts, compare_runs
from tuiloss.core.analysis.plateaus import Plateau
from tuiloss.core.analysis.smoothing import ema, rolling_median
from tuiloss.core.analysis.summary import SeriesAnalysis, analyze_series, final_value

__all__ = [
    "Anomaly",
    "ColumnData",
    "ColumnIndex",
    "LiveAnalyzer",
    "Observation",
    "Plateau",
    "RunFacts",
    "SeriesAnalysis",
    "analyze_series",
    "column_edges",
    "compare_runs",
    "ema",
    "final_value",
    "find_nans",
    "find_resets",
    "join_eval",
    "minmax_columns",
    "rolling_median",
    "stall_anomaly",
]
