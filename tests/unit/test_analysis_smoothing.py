import numpy as np
import pytest

from tuiloss.core.analysis import ema, rolling_median


def reference_ema(values, weight):
    out = np.full(len(values), np.nan)
    last, count = 0.0, 0
    for i, x in enumerate(values):
        if not np.isfinite(x):
            continue
        last = last * weight + (1 - weight) * x
        count += 1
        out[i] = last / (1 - weight**count)
    return out


@pytest.mark.parametrize("weight", [0.0, 0.3, 0.6, 0.9, 0.99])
def test_ema_matches_tensorboard(weight):
    rng = np.random.default_rng(0)
    values = rng.normal(5, 1, 20_000)
    values[[3, 100, 101]] = np.nan
    values[7] = np.inf
    got = ema(values, weight)
    want = reference_ema(values, weight)
    assert np.array_equal(np.isnan(got), np.isnan(want))
    assert np.nanmax(np.abs(got - want)) < 1e-9


def test_ema_nan_does_not_poison_and_first_point_is_unbiased():
    values = np.array([1.0, np.nan, 3.0, np.inf, 5.0])
    got = ema(values, 0.9)
    assert got[0] == pytest.approx(1.0)
    assert np.isnan(got[1]) and np.isnan(got[3])
    assert np.isfinite(got[[0, 2, 4]]).all()


def test_ema_log_space_and_odd_input():
    got = ema(np.array([-1.0, 1.0, 10.0, 100.0]), 0.5, log=True)
    assert np.isnan(got[0])
    assert got[1] == pytest.approx(1.0)
    assert 1 < got[3] < 100
    assert len(ema(np.array([]), 0.5)) == 0
    assert np.isnan(ema(np.array([np.nan, np.nan]), 0.5)).all()
    assert np.array_equal(ema(np.array([1.0, 2.0]), 0.0), [1.0, 2.0])


def test_rolling_median_keeps_gaps_and_ignores_neighbouring_nan():
    x = np.array([1, np.nan, 3, 10, 2, 2, np.inf, 5.0])
    got = rolling_median(x, 3)
    assert np.isnan(got[1]) and np.isnan(got[6])
    assert got[3] == 3.0  # median of 3, 10, 2
    assert got[2] == 6.5  # median of 3 and 10 (the NaN neighbour left out)
    assert np.array_equal(rolling_median(x, 1)[[0, 2]], [1.0, 3.0])


def test_rolling_median_log_space():
    x = np.array([1.0, 10.0, 100.0, 0.0, 1000.0])
    got = rolling_median(x, 3, log=True)
    assert got[1] == pytest.approx(10.0)
    assert np.isnan(got[3])  # no logarithm of 0
