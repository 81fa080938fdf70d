"""The scan holds only the last of a series' transformed values: the rest are worked out again where read.

A long series' log values would take 8 bytes a point beside the store's own values; the
scan lets them go once no later update reads them (see ``scan.Transformed``),
and every reader sees the same numbers as before.
"""

import numpy as np
import pytest

from tuiloss.core.analysis import LiveAnalyzer, analyze_series
from tuiloss.core.analysis import scan as scan_module
from tuiloss.core.analysis.scan import HeldBack, Scan

KEEP_ALL = 1 << 62


def decaying(n: int, seed: int, decimals: int = 4) -> tuple[np.ndarray, np.ndarray]:
    """A loss falling from ~3 to ~0.3 with noise, logged with ``decimals`` places."""
    rng = np.random.default_rng(seed)
    t = np.arange(n) / n
    values = np.exp(np.log(0.3 + 3 * np.exp(-t / 0.05)) + 0.02 * rng.standard_normal(n))
    return np.arange(n) * 10.0, np.round(values, decimals)


def with_spikes(n, seed):
    steps, values = decaying(n, seed)
    for at in (0.2, 0.45, 0.8):  # one-point, three-point and slow spikes
        k = int(at * n)
        values[k : k + 1 + int(at * 5)] *= 3.0
    values[int(0.6 * n) : int(0.6 * n) + 400] *= np.exp(0.3 * np.sin(np.linspace(0, np.pi, 400)))
    return steps, values


def with_gaps_and_a_restart(n, seed):
    steps, values = decaying(n, seed)
    values[int(0.3 * n) : int(0.3 * n) + 5] = np.nan
    values[int(0.5 * n)] = np.inf
    cut, back = int(0.7 * n), int(0.6 * n)  # the counter goes back: resumed from a checkpoint
    return np.concatenate((steps[:cut], steps[back:])), np.concatenate((values[:cut], values[back:] * 0.97))


def turning_linear(n, seed):
    steps, values = decaying(n, seed)
    values[int(0.75 * n)] = 0.0  # a value <= 0 late: the analysis starts over on a linear scale
    return steps, values - 0.25


def gaining_decimals(n, seed):
    steps, values = decaying(n, seed, decimals=2)
    late = decaying(n, seed + 1, decimals=6)[1]
    values[int(0.8 * n) :] = late[int(0.8 * n) :]  # more places late: the quantum changes
    return steps, values


def plateau_then_drop(n, seed):
    steps, values = decaying(n, seed)
    values[: n // 2] = np.round(1.2 + 0.01 * np.random.default_rng(seed).standard_normal(n // 2), 4)
    return steps, values


def diverging(n, seed):
    steps, values = decaying(n, seed)
    k = int(0.9 * n)
    values[k:] = values[k] * np.exp(np.linspace(0, 6, n - k))
    values[-50:] = np.nan
    return steps, values


SHAPES = [with_spikes, with_gaps_and_a_restart, turning_linear, gaining_decimals, plateau_then_drop, diverging]


def let_go_early(monkeypatch):
    """Let values go 512 at a time as soon as they are behind the first value read, with no margin,
    and the coarser scales take in their parents 64 groups (512 values) at a time."""
    monkeypatch.setattr(scan_module, "LET_GO", 512)
    monkeypatch.setattr(scan_module, "HOLD_MARGIN", 0)
    monkeypatch.setattr(scan_module, "LAZY_GROUPS", 64)


@pytest.mark.parametrize("shape", SHAPES, ids=lambda f: f.__name__)
@pytest.mark.parametrize("higher", [False, True])
def test_letting_the_transformed_values_go_changes_no_finding(shape, higher, monkeypatch):
    steps, values = shape(200_000, 7)  # long enough for the running medians to be forgotten too
    if higher:
        values = 1.0 / (1.0 + values)  # an accuracy-like series, mirrored inside
    monkeypatch.setattr(scan_module, "LET_GO", KEEP_ALL)
    whole = analyze_series(steps, values, higher_is_better=higher)
    let_go_early(monkeypatch)
    batch = analyze_series(steps, values, higher_is_better=higher)
    assert batch == whole
    rng = np.random.default_rng(1)
    live, done = LiveAnalyzer(higher_is_better=higher), 0
    while done < len(steps):
        done = min(len(steps), done + int(rng.choice([37, 3000, 20_000, 50_000])))
        got = live.update(steps[:done], values[:done])
    assert got == whole
    assert live._scan.y.hole > len(steps) // 2  # it did let most of them go


def test_a_report_built_on_a_scan_kept_up_in_pieces_is_the_batch_one(monkeypatch):
    """``report``'s analysis catches up batch by batch while the log loads, then finishes once."""
    steps, values = with_spikes(60_000, 3)
    expected = analyze_series(steps, values)
    let_go_early(monkeypatch)
    live = LiveAnalyzer()
    for end in range(5_000, len(steps) + 1, 5_000):
        live.catch_up(steps[:end], values[:end])
        # held: what the coarser scales wait for (64 groups of 8) and a step of letting go, not the series
        assert len(live._scan.y) - live._scan.y.hole <= 64 * 8 + 512
    assert live._scan.y.hole > 0
    assert live.update(steps, values) == expected


def test_what_was_let_go_reads_as_it_was(monkeypatch):
    let_go_early(monkeypatch)
    steps, values = with_gaps_and_a_restart(30_000, 5)
    order = np.argsort(steps, kind="stable")
    scan = Scan()
    scan.update(steps[order], values[order])
    view = scan.y.view
    assert isinstance(view, HeldBack) and 0 < scan.y.hole < len(view)
    finite = values[order][np.isfinite(values[order])]
    truth = np.log(finite)
    hole, n = scan.y.hole, len(truth)
    assert len(view) == n and view.shape == (n,)
    same = lambda got, want: np.asarray(got).view(np.int64).tolist() == np.asarray(want).view(np.int64).tolist()
    for key in (0, 5, hole - 1, hole, n - 1, -1, -n, np.int64(hole // 2), np.int32(3)):
        assert same(view[key], truth[key])
        assert isinstance(view[key], np.float64)
    for key in (slice(None), slice(10, 20), slice(hole - 5, hole + 5), slice(hole, None), slice(-50, None),
                slice(None, None, 7), slice(hole + 1, None, 3), slice(hole + 3, 10, -3), slice(n + 5, n + 9),
                slice(-n - 4, 3), slice(hole + 9, hole + 2)):
        assert same(view[key], truth[key]), key
    mask = np.zeros(n, dtype=bool)
    mask[::997] = True
    for key in (mask, np.array([0, hole - 1, hole, n - 1, -2]), [1, 2, hole + 1]):
        assert same(view[key], truth[key])
    assert same(np.asarray(view), truth)
    for bad in (n, -n - 1):
        with pytest.raises(IndexError):
            view[bad]


def test_a_transform_of_each_value_is_the_same_however_the_values_are_cut():
    """What letting them go rests on: log of a piece, of a strided or picked subset, of one value,
    bit for bit what the whole array gives (worked out now in other pieces than the first time)."""
    rng = np.random.default_rng(11)
    values = np.concatenate((rng.uniform(1e-6, 50, 200_000), rng.lognormal(0, 8, 50_000),
                             [1.0, 5e-324, 2.0**-1022, 1e308, np.inf, 0.0, np.nan]))
    with np.errstate(divide="ignore", invalid="ignore"):
        whole = np.log(values).view(np.int64)
        for _ in range(200):
            a = int(rng.integers(0, len(values)))
            b = min(len(values), a + int(rng.integers(1, 3000)))
            assert (np.log(values[a:b]).view(np.int64) == whole[a:b]).all()
            assert (np.log(values[a:b:3]).view(np.int64) == whole[a:b:3]).all()
            picked = rng.integers(0, len(values), 50)
            assert (np.log(values[picked]).view(np.int64) == whole[picked]).all()
            assert np.log(values[a : a + 1]).view(np.int64)[0] == whole[a]


def test_the_buffer_holds_the_last_values_only():
    steps, values = decaying(3_000_000, 2)
    scan = Scan()
    scan.update(steps, values)
    unfinished = 64 * 1024  # the running medians, chunks and blocks not final yet, at most
    held = scan_module.LET_GO + scan_module.HOLD_MARGIN + unfinished
    assert scan.y.hole >= len(values) - held
    assert scan.y.nbytes <= 8 * 2 * (held + scan_module.PIECE)  # not 8 bytes a point: 24 MB here
    steps, values = steps[:700_000], values[:700_000]
    live = LiveAnalyzer()
    for end in range(0, len(values) + 1, 2500):  # a log followed as it is written
        live.update(steps[:end], values[:end])
    assert 0 < live._scan.y.hole and live._scan.y.nbytes <= 8 * 2 * (held + 2500)
    assert live.update(steps, values) == analyze_series(steps, values)


def test_blocks_are_worked_out_when_asked_for_from_what_was_let_go(monkeypatch):
    """A scan caught up in pieces (a report's load) leaves its block summary until it is asked
    for: then each point is summed up once, at the size the series ends with, the values let go
    worked out again, and the blocks are those of the whole series in one go."""
    from tuiloss.core.analysis import blocks as blocks_module

    steps, values = with_gaps_and_a_restart(300_000, 11)
    let_go_early(monkeypatch)
    summed = []
    real = scan_module.compute_blocks
    monkeypatch.setattr(scan_module, "compute_blocks",
                        lambda y, s, size, a, b: summed.append((b - a) * size) or real(y, s, size, a, b))
    scan = Scan()
    for end in range(20_000, len(steps) + 1, 20_000):
        scan.update(steps[:end], values[:end])
    assert not summed and scan.y.hole > len(steps) // 2
    size, got = scan.complete_blocks()
    assert size == blocks_module.block_size(scan.nf) and sum(summed) <= scan.nf
    y = np.log(scan.f_value.view)
    expected = blocks_module.compute_blocks(y, scan.f_step.view, size, 0, scan.nf // size)
    for ours, theirs in zip(got, expected, strict=True):
        assert ours.dtype == theirs.dtype and np.array_equal(ours, theirs)
    asked = Scan()  # asked after every piece, as the live analysis does: the same blocks
    for end in range(20_000, len(steps) + 1, 20_000):
        asked.update(steps[:end], values[:end])
        asked.complete_blocks()
    for ours, theirs in zip(asked.complete_blocks()[1], got, strict=True):
        assert np.array_equal(ours, theirs)
