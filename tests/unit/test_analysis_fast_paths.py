"""The vectorised statistics give the numbers the plain definitions give, exactly.

Each fast path (paired windows, counting instead of medians, a sampled guess of the
decimal places, the scan borrowing the caller's arrays) is checked against the
definition it replaces, on random data with ties, rounding and gaps.
"""

from __future__ import annotations

import numpy as np
import pytest

from tuiloss.core.analysis import analyze_series, scan as scan_module, stats
from tuiloss.core.analysis.live import LiveAnalyzer
from tuiloss.core.analysis.plateaus import settled_from
from tuiloss.core.analysis.scan import Borrowed, Scan, decimals
from tuiloss.core.analysis.stats import row_medians, running_median, window_bounds


def _window_medians(y: np.ndarray, half: int, lo: int, hi: int) -> np.ndarray:
    n = len(y)
    return np.array([np.median(y[slice(*window_bounds(i, n, half))]) for i in range(lo, hi)])


@pytest.mark.parametrize("seed", range(4))
def test_running_median_is_the_median_of_each_window(seed):
    rng = np.random.default_rng(seed)
    for trial in range(300):
        n, half = int(rng.integers(1, 90)), int(rng.integers(0, 25))
        y = rng.standard_normal(n)
        if trial % 3 == 0:
            y = np.round(y, 1)  # ties
        lo = int(rng.integers(0, n))
        hi = int(rng.integers(lo, n + 1))
        assert np.array_equal(running_median(y, half, lo, hi), _window_medians(y, half, lo, hi))


def test_running_median_of_a_long_series_crosses_buffer_pieces(monkeypatch):
    monkeypatch.setattr(stats, "_BUFFER_ELEMENTS", 64)  # many pieces, an odd one left over
    y = np.round(np.random.default_rng(9).standard_normal(1001), 2)
    assert np.array_equal(running_median(y, 10), _window_medians(y, 10, 0, len(y)))
    assert np.array_equal(running_median(y, 10, 37, 512), _window_medians(y, 10, 37, 512))


@pytest.mark.parametrize("half", [5, 7, 10])
def test_running_median_six_windows_at_a_time_with_any_left_over(monkeypatch, half):
    monkeypatch.setattr(stats, "_BUFFER_ELEMENTS", 96)  # a few groups of six per piece
    rng = np.random.default_rng(half)
    for n in range(2 * half + 40, 2 * half + 52):  # every count of windows left over (0-5)
        y = np.round(rng.standard_normal(n), 1)  # ties between the shared points and the added ones
        assert np.array_equal(running_median(y, half), _window_medians(y, half, 0, n))
        assert np.array_equal(running_median(y, half, half + 1, n - half - 2), _window_medians(y, half, half + 1, n - half - 2))


def test_row_medians_match_numpy():
    rng = np.random.default_rng(3)
    for width in (1, 2, 7, 8, 64, 65):
        block = np.round(rng.standard_normal((37, width)), 1)
        assert np.array_equal(row_medians(block), np.median(block, axis=1))


def _settled_by_medians(y, lo, hi, level, band, half):
    z = running_median(y, half, lo, hi)
    outside = np.flatnonzero(np.abs(z - level) > band)
    return lo if not len(outside) else lo + int(outside[-1]) + 1


def test_settled_from_counts_what_the_medians_say():
    rng = np.random.default_rng(11)
    for trial in range(1500):
        n, half = int(rng.integers(1, 150)), int(rng.integers(0, 40))
        y = np.cumsum(rng.standard_normal(n)) * 0.1
        if trial % 2:
            y = np.round(y, 1)  # medians exactly on the band's edge
        lo = int(rng.integers(0, n))
        hi = int(rng.integers(lo, n + 1))
        level = float(rng.choice(y))
        band = float(abs(rng.standard_normal()) * 0.3)
        assert settled_from(y, lo, hi, level, band, half) == _settled_by_medians(y, lo, hi, level, band, half)


def _places_one_by_one(values):
    values = np.abs(values[np.isfinite(values)])
    remaining = values
    for d in range(13):
        scaled = remaining * 10.0**d
        close = np.abs(scaled - np.round(scaled)) <= 1e-6 * np.maximum(1.0, scaled) + 1e-9
        remaining = remaining[~close]
        if not len(remaining):
            return d
    return 13 if len(values) else 0


def test_decimals_sampled_guess_never_misses_a_value_the_sample_skipped():
    rng = np.random.default_rng(5)
    values = np.round(rng.random(50_000), 2)
    assert decimals(values) == 2 == _places_one_by_one(values)
    values[12_345] = 0.123456  # one value between the sampled ones needs more places
    assert decimals(values) == 6 == _places_one_by_one(values)
    values[::7] = np.nan
    values[100:110] = 3.0
    assert decimals(values) == _places_one_by_one(values)
    full = rng.standard_normal(20_000)  # full precision
    assert decimals(full) == _places_one_by_one(full) > 6


@pytest.mark.parametrize("seed", range(3))
def test_decimals_pieces_passed_at_a_glance_agree_value_by_value(seed):
    # A piece whose values are all within a millionth of a whole number of the quantum is passed
    # at once; any other piece (one value off, a NaN, an infinity, values so large that the test
    # allows them more than a millionth) is looked at value by value: the same count of places.
    rng = np.random.default_rng(seed)
    n = 3 * 16_384 + 77
    base = np.round(rng.standard_normal(n) * 3, 4)
    cases = [base, -base]
    off = base.copy()
    off[rng.integers(0, n, 3)] += 3e-7  # still whole at four places, by the relative allowance too
    cases.append(off)
    big = np.round(rng.random(n) * 1e8, 0) + rng.random(n) * 1e-3  # whole by the relative allowance only
    cases.append(big)
    odd = base.copy()
    odd[[5, 20_000, 40_000]] = [np.nan, np.inf, -np.inf]
    odd[33_333] = 1.23456789
    cases.append(odd)
    cases.append(np.full(n, np.nan))
    for values in cases:
        assert decimals(values) == _places_one_by_one(values)


def test_a_series_without_gaps_is_borrowed_and_a_gap_makes_copies():
    steps = np.arange(5000, dtype=np.float64)
    values = 1.0 + 1.0 / (1 + steps) + 0.01 * np.random.default_rng(2).random(5000)
    scan = Scan()
    scan.update(steps[:3000], values[:3000])
    assert isinstance(scan.f_value, Borrowed) and np.shares_memory(scan.f_value.view, values)
    gappy = values.copy()
    gappy[4000] = np.nan
    scan.update(steps, gappy)
    assert not isinstance(scan.f_value, Borrowed)
    assert scan.nf == 4999 and not np.shares_memory(scan.f_value.view, gappy)
    assert np.array_equal(scan.f_step.view, np.delete(steps, 4000))


def test_live_and_batch_agree_across_a_late_gap():
    rng = np.random.default_rng(8)
    steps = np.arange(20_000, dtype=np.float64)
    values = 0.5 + 2.0 / (1 + steps / 500) + 0.02 * rng.standard_normal(len(steps))
    values[15_000] *= 6  # a spike after the gap
    values[12_000:12_003] = np.nan
    live = LiveAnalyzer()
    for end in (5_000, 11_999, 12_001, 14_000, 20_000):
        got = live.update(steps[:end], values[:end])
    assert got == analyze_series(steps, values)
    assert any(a.kind == "spike" for a in got.anomalies) and any(a.kind == "nan" for a in got.anomalies)


def test_candidates_do_not_depend_on_the_floor_being_worked_out_everywhere():
    """The floor is evaluated only where the noise test passed; the spike found is the same
    whether the floor is cheap (no quantum) or per point (few decimals)."""
    rng = np.random.default_rng(4)
    steps = np.arange(30_000, dtype=np.float64)
    values = np.round(1.0 + 0.05 * rng.standard_normal(len(steps)), 3)
    values[20_000] = 2.5
    found = analyze_series(steps, values)
    spikes = [a for a in found.anomalies if a.kind == "spike"]
    assert [a.step for a in spikes] == [20_000.0]


def test_a_track_forgets_old_medians_and_works_them_out_again_when_asked():
    rng = np.random.default_rng(12)
    steps = np.arange(300_000, dtype=np.float64)
    values = 0.3 + 1.0 / (1 + steps / 1e4) + 0.01 * rng.standard_normal(len(steps))
    scan = Scan()
    scan.update(steps, values)
    track = scan.tracks[0]
    assert track.med_start > 200_000 and len(track.med) < 100_000  # bounded, not one per point
    full = running_median(scan.y.view, scan_module.LOCAL_HALF)
    start = track.med_start
    for lo, hi in ((0, 500), (start - 300, start + 300), (start + 10, start + 900), (5, 299_990)):
        assert np.array_equal(track.median(lo, hi), full[lo:hi])


def test_live_and_batch_agree_on_an_early_spike_after_its_medians_are_forgotten():
    rng = np.random.default_rng(13)
    steps = np.arange(400_000, dtype=np.float64)
    values = 0.5 + 1.0 / (1 + steps / 2e4) + 0.01 * rng.standard_normal(len(steps))
    values[30_000:30_004] *= 4  # its noise and baseline are read long after the scan passed it
    live = LiveAnalyzer()
    for end in (20_000, 100_000, 250_001, 400_000):
        got = live.update(steps[:end], values[:end])
    batch = analyze_series(steps, values)
    assert got == batch
    assert [a.step for a in batch.anomalies if a.kind == "spike"] == [30_000.0]


def test_points_above_their_chunk_limit_are_those_above_a_limit_per_point():
    # Whole chunks are compared as rows against their limit; the part chunks at either end and
    # a range inside one chunk give what one limit per point gives.
    from tuiloss.core.analysis import scan as scan_module

    rng = np.random.default_rng(11)
    chunk = scan_module.NOISE_CHUNK
    for _ in range(600):
        skip, n = int(rng.integers(0, chunk)), int(rng.integers(0, 6 * chunk))
        limits = rng.random(-(-(skip + n) // chunk)) * 2
        values = rng.standard_normal(n) * 1.5
        values[rng.random(n) < 0.05] = np.nan
        per_point = np.repeat(limits, chunk)[skip : skip + n]
        with np.errstate(invalid="ignore"):
            expected = np.flatnonzero(values > per_point)
        assert np.array_equal(scan_module._above_chunk_limits(values, limits, skip), expected)
