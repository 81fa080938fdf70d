"""Analysis of loss curves: smoothing and downsampling for the chart, findings for the report."""

from tuiloss.core.analysis.downsample import ColumnData, ColumnIndex, column_edges, minmax_columns
from tuiloss.core.analysis.smoothing import ema, rolling_median
from tuiloss.core.analysis.text import format_step, format_value

__all__ = [
    "ColumnData",
    "ColumnIndex",
    "column_edges",
    "ema",
    "format_step",
    "format_value",
    "minmax_columns",
    "rolling_median",
]
