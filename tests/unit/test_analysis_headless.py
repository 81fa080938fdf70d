import pkgutil
import subprocess
import sys

import tuiloss.core.analysis as analysis


def test_analysis_modules_import_no_ui_library():
    names = [f"tuiloss.core.analysis.{m.name}" for m in pkgutil.iter_modules(analysis.__path__)]
    code = (
        "import importlib, sys\n"
        f"for name in {names!r}:\n"
        "    importlib.import_module(name)\n"
        "bad = [m for m in ('textual', 'plotext', 'watchdog', 'scipy') if m in sys.modules]\n"
        "assert not bad, bad\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_public_names():
    for name in (
        "Anomaly", "Plateau", "SeriesAnalysis", "analyze_series", "stall_anomaly", "LiveAnalyzer",
        "Observation", "RunFacts", "compare_runs", "ema", "rolling_median", "minmax_columns",
        "ColumnIndex", "ColumnData",
    ):
        assert hasattr(analysis, name), name
