"""first_min: the first smallest finite value, read in pieces, whatever the gaps around it."""

import subprocess
import sys

import numpy as np
import pytest

from tuiloss.core.analysis import arrays
from tuiloss.core.analysis.arrays import first_min


def _reference(values: np.ndarray) -> int | None:
    finite = np.flatnonzero(np.isfinite(values))
    if not len(finite):
        return None
    return int(finite[np.argmin(values[finite])])


@pytest.mark.parametrize("values, expected", [
    ([], None),
    ([np.nan], None),
    ([np.inf, -np.inf, np.nan], None),
    ([np.nan, 1.0, 0.5, 0.5], 2),  # a NaN first, and the first of two equal least values
    ([-np.inf, 3.0, 2.0], 2),  # -inf is no value
    ([2.0, np.inf, 1.0, 1.0], 2),
])
def test_first_min_of_small_arrays(values, expected):
    assert first_min(np.array(values, dtype=np.float64)) == expected


def test_first_min_across_pieces_with_gaps(monkeypatch):
    monkeypatch.setattr(arrays, "_PIECE", 64)
    rng = np.random.default_rng(5)
    for trial in range(300):
        values = np.round(rng.normal(size=int(rng.integers(1, 400))), 1)  # ties
        for bad in (np.nan, np.inf, -np.inf):
            values[rng.random(len(values)) < rng.random() * 0.5] = bad
        if trial % 7 == 0:
            values[:128] = np.nan  # whole pieces without a number
        assert first_min(values) == _reference(values), trial


def test_a_csv_report_compiles_no_text_patterns(tmp_path):
    """The text parser's hundreds of patterns are compiled only where a log may be text."""
    log = tmp_path / "metrics.csv"
    log.write_text("step,loss\n" + "".join(f"{i},{1 / (i + 1):.4f}\n" for i in range(50)))
    code = (
        "import sys\n"
        "from tuiloss.core.engine import load\n"
        f"store, _, _ = load([{str(log)!r}])\n"
        "assert store.points == 50, store.points\n"
        "print('tuiloss.core.formats.stdout' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"
