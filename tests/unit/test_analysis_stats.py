"""The batch and fast forms of the statistics give exactly what the plain forms give."""

import math

import numpy as np

from tuiloss.core.analysis import stats
from tuiloss.core.analysis.stats import KendallTable, PairSlopes, kendall_scores, kendall_z, theil_sen


def windows(m):
    return [(a, b) for a in range(0, m, 3) for b in range(a + 1, m + 1, 4)]


def test_mann_kendall_scores_of_many_windows_match_one_at_a_time():
    rng = np.random.default_rng(11)
    for m in (2, 5, 40, 130):
        levels = np.round(rng.normal(size=m), 1)  # ties included
        table = KendallTable(levels)
        a, b = np.array(windows(m)).T
        for inflation in (1.0, 2.7):
            many = kendall_scores(table.s_many(a, b), b - a, inflation)
            one = [kendall_z(table.s(i, j), j - i, inflation) for i, j in zip(a, b)]
            assert many.tolist() == one
        # S itself: the count of rising pairs less the falling ones
        i, j = a[-1], b[-1]
        part = levels[i:j]
        rising = sum(np.sign(part[q] - part[p]) for p in range(len(part)) for q in range(p + 1, len(part)))
        assert table.s(i, j) == rising


def test_a_nan_level_leaves_the_windows_holding_it_undecided():
    levels = np.array([0.1, 0.2, np.nan, 0.4, 0.5, 0.6])
    table = KendallTable(levels)
    assert np.isnan(table.s(1, 4))
    assert table.s(0, 2) == 1.0


def test_theil_sen_of_any_window_from_the_pair_slopes_matches_the_direct_one():
    rng = np.random.default_rng(12)
    x = np.cumsum(rng.integers(1, 4, 90)).astype(float)
    y = 0.01 * x + rng.normal(scale=0.3, size=90)
    slopes = PairSlopes(x, y)
    for a, b in windows(90):
        assert slopes.median(a, b) == theil_sen(x[a:b], y[a:b])


def same(a: float, b: float) -> bool:
    return a == b or (math.isnan(a) and math.isnan(b))


def test_the_median_is_numpys_to_the_bit_with_nan_inf_integers_and_float32():
    rng = np.random.default_rng(7)
    for trial in range(3000):
        n = int(rng.integers(1, 70))
        kind = trial % 5
        if kind == 0:
            values = rng.normal(size=n) * 10.0 ** rng.integers(-6, 6)
        elif kind == 1:
            values = rng.integers(-5, 5, size=n)
        elif kind == 2:
            values = rng.normal(size=n).astype(np.float32)
        elif kind == 3:
            values = rng.normal(size=n)
            values[rng.integers(0, n)] = np.nan
        else:
            values = rng.choice([1.0, 2.0, np.inf, 3.0], size=n)
        want = float(np.median(values))
        got = stats.median(values)
        assert same(got, want), (values, got, want)
        assert type(got) is float
        if kind in (0, 1, 4):  # float64 throughout (float32 is scaled in float64 here)
            mad = float(stats.MAD_SCALE * np.median(np.abs(values - np.median(values))))
            assert same(stats.mad_sigma(values), mad), values
    assert math.isnan(stats.median(np.empty(0)))


def test_row_medians_are_numpys_for_rows_short_and_long():
    """Short even rows are sorted, long ones partitioned: both give what ``np.median`` gives."""
    from tuiloss.core.analysis.stats import row_medians

    rng = np.random.default_rng(4)
    for width in (1, 2, 7, 8, 20, 64, 255, 256, 257, 512, 1024):
        block = np.round(rng.standard_normal((300, width)), 2)  # ties too
        assert np.array_equal(row_medians(block), np.median(block, axis=1)), width


def test_a_long_running_median_and_chunk_noise_are_numpys(monkeypatch):
    from tuiloss.core.analysis import scan

    rng = np.random.default_rng(3)
    y = np.exp(rng.standard_t(2, 120_001) * 0.2) + np.linspace(2, 0, 120_001)
    resid = y - stats.running_median(y, 3)
    resid[::997] = np.nan  # rows with gaps take the slow path
    whole = stats.running_median(y, 10)
    windows = np.lib.stride_tricks.sliding_window_view(y, 21)
    assert np.array_equal(whole[10:-10], np.median(windows, axis=1))
    assert np.array_equal(stats.running_median(y, 10, 5, 119_990), whole[5:119_990])
    noise = scan._chunk_mad(resid)
    rows = resid[: len(resid) // scan.NOISE_CHUNK * scan.NOISE_CHUNK].reshape(-1, scan.NOISE_CHUNK)
    with np.errstate(all="ignore"):
        centred = np.abs(rows - np.nanmedian(rows, axis=1, keepdims=True))
    assert np.allclose(noise[: len(rows)], stats.MAD_SCALE * np.nanmedian(centred, axis=1), equal_nan=True)
