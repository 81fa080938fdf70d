import numpy as np
import pytest

from tuiloss.core.analysis import LiveAnalyzer, analyze_series, stall_anomaly
from tuiloss.core.store import Series


def run_with_everything(n, seed):
    """A run with a spike, a NaN stretch, a slow bump and a restart from an earlier step."""
    rng = np.random.default_rng(seed)
    t = np.arange(n) / n
    z = np.log(0.3 + 3 * np.exp(-t / 0.05)) + 0.02 * rng.standard_normal(n)
    z[int(0.4 * n)] += 1.5
    z[int(0.5 * n) : int(0.55 * n)] += np.log(1.15) * np.sin(np.linspace(0, np.pi, int(0.55 * n) - int(0.5 * n)))
    values = np.exp(z)
    values[int(0.3 * n) : int(0.3 * n) + 4] = np.nan
    steps = (np.arange(n) + 1) * 10.0
    cut, back = int(0.7 * n), int(0.6 * n)
    steps = np.concatenate((steps[:cut], steps[back:]))
    values = np.concatenate((values[:cut], values[back:] * 0.98))
    return steps, values


@pytest.mark.parametrize("seed", range(4))
def test_live_equals_batch_for_random_splits(seed):
    rng = np.random.default_rng(100 + seed)
    n = int(rng.choice([300, 1500, 6000]))
    steps, values = run_with_everything(n, seed)
    series, live = Series(), LiveAnalyzer()
    done = 0
    while done < len(steps):
        size = int(rng.choice([1, 2, 7, 50, 400]))
        series.extend(steps[done : done + size], values[done : done + size])
        done += size
        visible = series.visible()
        got = live.update(*visible, series.segments)
        if rng.random() < 0.2 or done >= len(steps):
            assert got == analyze_series(*visible, series.segments)


def test_live_starts_over_after_a_restart():
    steps, values = run_with_everything(2000, 9)
    series, live = Series(), LiveAnalyzer()
    series.extend(steps[:1000], values[:1000])
    live.update(*series.visible(), series.segments)
    series.extend(steps[1000:], values[1000:])  # contains the step counter going back
    got = live.update(*series.visible(), series.segments)
    assert live.rebuilds == 1
    assert got == analyze_series(*series.visible(), series.segments)
    assert [a.kind for a in got.anomalies].count("reset") == 1


def test_live_equals_batch_when_values_change_space():
    # positive at first (log space), then a value <= 0 switches to a linear scale
    values = np.concatenate((np.linspace(2, 1, 300), [0.0], np.linspace(1, 0.5, 300)))
    steps = np.arange(len(values), dtype=float)
    live = LiveAnalyzer()
    for cut in (100, 300, 301, 450, len(values)):
        assert live.update(steps[:cut], values[:cut]) == analyze_series(steps[:cut], values[:cut])


def test_live_update_cost_does_not_grow_with_the_run():
    """An append of 250 points costs about the same on a run 10x longer (compared in one process,
    as a ratio, since the batch analysis it was once compared with is itself vectorised now)."""
    import time

    def append_cost(n: int) -> float:
        rng = np.random.default_rng(0)
        t = np.arange(n) / n
        values = np.exp(np.log(0.2 + 3 * np.exp(-t / 0.05)) + 0.02 * rng.standard_normal(n))
        steps = np.arange(n, dtype=float)
        live = LiveAnalyzer()
        live.update(steps[: n - 5000], values[: n - 5000])
        timings = []
        for end in range(n - 5000, n, 250):
            start = time.perf_counter()
            live.update(steps[: end + 250], values[: end + 250])
            timings.append(time.perf_counter() - start)
        return float(np.median(timings))

    short, long = append_cost(40_000), append_cost(400_000)
    assert long < 3 * short, (short, long)  # a whole re-analysis grows ~5x here


def test_unchanged_input_returns_the_same_result_object():
    live = LiveAnalyzer()
    steps, values = np.arange(100.0), np.linspace(2, 1, 100)
    first = live.update(steps, values)
    assert live.update(steps, values) is first


def test_stall_after_many_usual_intervals():
    assert stall_anomaly(2500.0, 1000.0, 2.0, 1010.0) is None
    found = stall_anomaly(2500.0, 1000.0, 2.0, 1000.0 + 600)
    assert found is not None and found.kind == "stall" and found.step == 2500.0
    assert "no new point for 10 min" in found.message and "2.5K" in found.message
    times = np.arange(0, 100, 5.0)
    assert stall_anomaly(10.0, 95.0, times, 95.0 + 30) is None
    assert stall_anomaly(10.0, 95.0, times, 95.0 + 120) is not None
    assert stall_anomaly(10.0, None, 2.0, 5000.0) is None
    assert stall_anomaly(10.0, 95.0, [1.0], 5000.0) is None


def test_batch_in_pieces_equals_batch_in_one_go(monkeypatch):
    from tuiloss.core.analysis import scan

    steps, values = run_with_everything(5000, 3)
    series = Series()
    series.extend(steps, values)
    whole = analyze_series(*series.visible(), series.segments)
    monkeypatch.setattr(scan, "PIECE", 333)
    assert analyze_series(*series.visible(), series.segments) == whole


@pytest.mark.parametrize("lazy_groups", [1, 3, 40])
def test_coarser_scales_that_wait_give_the_same_findings(monkeypatch, lazy_groups):
    """Pieces and catch-ups leave the coarser scales behind until their parents have gathered
    LAZY_GROUPS groups; what an update returns is the same however far behind they were."""
    from tuiloss.core.analysis import scan

    steps, values = run_with_everything(20_000, 5)
    series = Series()
    series.extend(steps, values)
    whole = analyze_series(*series.visible(), series.segments)
    monkeypatch.setattr(scan, "PIECE", 777)
    monkeypatch.setattr(scan, "LAZY_GROUPS", lazy_groups)
    assert analyze_series(*series.visible(), series.segments) == whole
    rng = np.random.default_rng(lazy_groups)
    grown, live, done = Series(), LiveAnalyzer(), 0
    while done < len(steps):
        size = int(rng.integers(1, 3000))
        grown.extend(steps[done : done + size], values[done : done + size])
        done += size
        live.catch_up(*grown.visible(), grown.segments)
        if rng.random() < 0.15:
            assert live.update(*grown.visible(), grown.segments) == analyze_series(*grown.visible(), grown.segments)
    assert live.update(*grown.visible(), grown.segments) == whole


@pytest.mark.parametrize("room_share", [1.0, 0.3, 3.0])
@pytest.mark.parametrize("rounded", [False, True])
def test_blocks_summed_up_during_a_load_give_the_same_findings(monkeypatch, room_share, rounded):
    """A load's catch-ups, told how long the series will grow (``room``), sum up its blocks as
    their points come; the findings are the batch analysis' whether that guess was right, short
    or long, and after the analysis starts over (more decimals arrive half way). With the right
    guess, what is left for the end is the last few blocks."""
    from tuiloss.core.analysis import scan

    steps, values = run_with_everything(30_000, 9)
    if rounded:  # three decimals, then full precision: the scan starts over in the middle
        values = np.concatenate((np.round(values[:15_000], 3), values[15_000:]))
    monkeypatch.setattr(scan, "PIECE", 2048)
    summed = []
    compute = scan.compute_blocks

    def counted(y, s, size, first, last):
        summed.append((last - first) * size)
        return compute(y, s, size, first, last)

    monkeypatch.setattr(scan, "compute_blocks", counted)
    whole = Series()
    whole.extend(steps, values)
    room = int(len(whole.visible()[0]) * room_share)  # the points it ends with (after its restart)
    series, live, done = Series(), LiveAnalyzer(), 0
    while done < len(steps):
        series.extend(steps[done : done + 2500], values[done : done + 2500])
        done += 2500
        live.catch_up(*series.visible(), series.segments, room=room)
    summed.clear()
    live.prepare()
    after_load = sum(summed)
    assert live.update(*series.visible(), series.segments) == analyze_series(*series.visible(), series.segments)
    size = live._scan.block_size
    if room_share == 1.0 and not rounded:
        assert after_load <= 2 * size  # the blocks completed by the last piece (at most)
    elif room_share == 3.0:
        assert after_load >= live._scan.nf - size  # a size it did not end at: all again
