"""Plateaus are flat (issue 13, item 4): a band the level and the noise explain, never across a spike."""

import numpy as np

from tuiloss.core.analysis import analyze_series


def test_a_falling_noisy_curve_has_no_plateau_with_a_wide_band():
    # Keras-like epochs: loss falls 1.0 -> 0.06 over 40 epochs with +-30% wiggles
    rng = np.random.default_rng(1)
    n = 40
    values = np.exp(np.linspace(0, np.log(0.06), n) + 0.3 * rng.standard_normal(n))
    result = analyze_series(np.arange(1.0, n + 1), values)
    for p in result.plateaus:
        assert p.high / p.low <= 1.6, p


def test_plateau_band_is_bounded_by_level_and_noise():
    rng = np.random.default_rng(2)
    n = 20_000
    t = np.arange(n)
    values = (0.2 + np.exp(-t / 500.0)) * np.exp(0.02 * rng.standard_normal(n))
    [plateau] = analyze_series(t + 1.0, values).plateaus
    assert plateau.end_step == n
    assert plateau.high / plateau.low < np.exp(4.5 * 0.02)
    assert 0.19 <= plateau.mean <= 0.21


def test_a_plateau_never_spans_a_spike():
    rng = np.random.default_rng(3)
    n = 20_000
    values = 1.4 * np.exp(0.01 * rng.standard_normal(n))
    values[10_000:10_050] *= 6
    result = analyze_series(np.arange(1.0, n + 1), values)
    [spike] = result.of_kind("spike")
    assert result.plateaus
    for p in result.plateaus:
        assert p.end_step < spike.step or p.start_step >= spike.end_step


def test_twelve_points_get_no_plateau():
    values = np.array([0.15, 0.12, 0.14, 0.13, 0.11, 0.16, 0.13, 0.12, 0.14, 0.15, 0.13, 0.14])
    assert analyze_series(np.arange(2.0, 26.0, 2), values).plateaus == ()


def test_while_live_a_plateau_stops_where_a_spike_in_progress_began():
    from tuiloss.core.analysis import LiveAnalyzer

    rng = np.random.default_rng(4)
    n = 20_000
    steps = np.arange(1.0, n + 1)
    values = 0.2 * np.exp(0.01 * rng.standard_normal(n))
    values[19_980:] *= 7  # the spike has not come back yet
    live = LiveAnalyzer()
    live.update(steps[:15_000], values[:15_000])
    result = live.update(steps, values)
    [spike] = result.of_kind("spike")
    assert spike.end_step is None
    assert result.plateaus and all(p.end_step < spike.step for p in result.plateaus)
