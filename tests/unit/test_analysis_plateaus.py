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


def _every_stretch_walk(blocks, level, log, quantum):
    """The plateau walk written plainly: every stretch's flatness first, then the walk."""
    from tuiloss.core.analysis import plateaus as p

    nb = len(level)
    shortest = max(p.PLATEAU_MIN_BLOCKS, int(np.ceil(p.PLATEAU_MIN_FRACTION * nb)))
    if nb < shortest:
        return []
    x = p.decade_positions(blocks.first_step)
    zs = p.smooth_levels(level)
    table, thirds = p._RangeTable(zs), p._Thirds(level)
    scale = np.ones(nb) if log else np.maximum(np.abs(zs), 0.01 * float(np.ptp(zs)) + 1e-12)
    coarse = quantum > 0 and log

    def flat_starts(j):
        a = np.arange(j - shortest + 2)
        ok = np.ones(len(a), bool)
        for part in (1, 2, 4):
            ok &= p._flat(table, thirds, zs, x, scale, a, a + (j - a) // part, coarse, quantum)
        return list(a[ok])

    out, j, step = [], nb - 1, max(1, nb // 64)
    while j + 1 >= shortest:
        starts = flat_starts(j)
        if starts and (x[j] - x[starts[0]] >= p.PLATEAU_MIN_DECADES or j - starts[0] + 1 >= p.PLATEAU_LONG_FRACTION * nb):
            out.append((starts[0], j))
            j = starts[0] - 1
        else:
            j -= step
    return out[::-1]


def test_the_plateau_walk_finds_what_checking_every_stretch_finds():
    from types import SimpleNamespace

    from tuiloss.core.analysis.plateaus import find_plateaus

    rng = np.random.default_rng(7)
    for trial in range(40):
        nb = int(rng.integers(5, 160))
        t = np.linspace(0, 1, nb)
        level = np.log(np.exp(-5 * t * rng.uniform(0.2, 3)) + rng.uniform(0.01, 0.5))
        level += rng.normal(0, rng.uniform(0, 0.1), nb)
        if trial % 3 == 1:
            level = np.round(level, 1)
        if trial % 3 == 2:
            level[nb // 2 :] = level[nb // 2]
        blocks = SimpleNamespace(first_step=np.cumsum(rng.integers(1, 50, nb)).astype(float))
        for log, quantum in ((True, 0.0), (True, 0.01), (False, 0.0)):
            assert find_plateaus(blocks, level, log, quantum) == _every_stretch_walk(blocks, level, log, quantum)
