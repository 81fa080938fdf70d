import numpy as np
import pytest

from tuiloss.core.analysis import ColumnIndex, column_edges, minmax_columns

FIELDS_FLOAT = ("min", "max", "last", "edges")
FIELDS_OTHER = ("count", "nonfinite")


def assert_same(a, b):
    for name in FIELDS_FLOAT:
        assert np.array_equal(getattr(a, name), getattr(b, name), equal_nan=True), name
    for name in FIELDS_OTHER:
        assert np.array_equal(getattr(a, name), getattr(b, name)), name


def test_one_point_spike_and_nan_are_never_dropped():
    steps = np.arange(100_000, dtype=float)
    values = np.full(len(steps), 0.5)
    values[31_337] = 9.0
    values[77_777] = np.nan
    cols = minmax_columns(steps, values, 0, 99_999, 40, False)
    assert cols.max.max() == 9.0
    assert cols.nonfinite.sum() == 1
    assert cols.count.sum() == len(steps)
    assert not np.isnan(cols.last).any()


def test_last_is_last_finite_and_empty_columns_are_nan():
    steps = np.array([0.0, 1.0, 2.0, 9.0])
    values = np.array([1.0, 2.0, np.nan, 4.0])
    cols = minmax_columns(steps, values, 0, 10, 5, False)
    assert cols.last[0] == 2.0  # steps 0 and 1 (step 2 is NaN and falls in column 1)
    assert cols.nonfinite[1]
    assert np.isnan(cols.min[2])


def test_log_axis_puts_step_zero_in_first_column():
    steps = np.array([0.0, 1.0, 10.0, 100.0, 1000.0])
    values = np.array([5.0, 4.0, 3.0, 2.0, 1.0])
    cols = minmax_columns(steps, values, 0, 1000, 3, True)
    assert cols.edges[0] == 0
    assert cols.max[0] == 5.0 and cols.min[0] == 4.0  # step 0 joins step 1
    assert cols.count.sum() == 5


def test_log_axis_with_steps_below_one():
    steps = np.array([0.0, 0.01, 0.02, 0.5, 1.0, 2.5])
    values = np.arange(6, dtype=float)
    cols = minmax_columns(steps, values, 0.0, 2.5, 4, True)
    assert cols.count.sum() == 6
    assert cols.edges[1] > 0.01
    assert cols.x[0] > 0


def test_edges_linear_and_log():
    assert np.allclose(column_edges(0, 10, 5, False), [0, 2, 4, 6, 8, 10])
    assert np.allclose(column_edges(1, 1000, 3, True), [1, 10, 100, 1000])


@pytest.mark.parametrize("levels", [True, False], ids=["block levels", "one pass when small"])
@pytest.mark.parametrize("n", [0, 1, 5, 31, 32, 33, 1000, 40_000])
def test_index_matches_batch_for_any_split_and_range(n, levels, monkeypatch):
    from tuiloss.core.analysis import downsample

    if levels:
        monkeypatch.setattr(downsample, "_DIRECT_POINTS", 0)
        monkeypatch.setattr(downsample, "_BLOCK_PIECE", 64)  # the first level summarised in many pieces
    rng = np.random.default_rng(n)
    steps = np.sort(rng.choice(np.arange(0, 3 * n + 1), size=n)).astype(float)
    values = rng.normal(size=n)
    if n:
        values[rng.integers(0, n, size=max(1, n // 50))] = np.nan
        values[rng.integers(0, n, size=max(1, n // 70))] = np.inf
    index = ColumnIndex()
    for cut in sorted(rng.integers(0, n + 1, size=4)) + [n]:
        index.sync(steps[:cut], values[:cut])
    top = 3 * n + 1
    for lo, hi, width, log_x in [
        (0, top, 7, False),
        (0, top, 200, True),
        (1, 3 * n, 50, True),
        (n / 3, n, 13, False),
        (0.5, 2, 3, True),
        (-5, 10, 4, True),
    ]:
        assert_same(minmax_columns(steps, values, lo, hi, width, log_x), index.query(lo, hi, width, log_x))
    small = steps / 1000.0
    index2 = ColumnIndex()
    index2.sync(small, values)
    hi = small[-1] if n else 1.0
    assert_same(minmax_columns(small, values, 0, hi, 100, True), index2.query(0, hi, 100, True))


def test_index_rebuilds_when_points_change():
    index = ColumnIndex()
    steps = np.arange(100, dtype=float)
    index.sync(steps, np.ones(100))
    index.sync(steps[:50], np.ones(50))  # shrank: a reset hid points
    assert index.rebuilds == 1
    index.sync(steps, np.full(100, 2.0), key=2)  # new segment
    assert index.rebuilds == 2
    assert index.query(0, 99, 4, False).max.max() == 2.0


def test_index_query_cost_does_not_depend_on_points():
    n = 2_000_000
    steps = np.arange(n, dtype=float)
    values = np.random.default_rng(0).normal(size=n)
    index = ColumnIndex()
    index.sync(steps, values)
    import time

    start = time.perf_counter()
    for _ in range(20):
        index.query(0, n, 200, True)
    per_query = (time.perf_counter() - start) / 20
    assert per_query < 0.01


@pytest.mark.parametrize("log_x", [False, True])
@pytest.mark.parametrize("start", [50, 5_000, 40_000])
def test_a_grown_index_asked_the_same_layout_reads_again_only_the_columns_the_new_points_reached(start, log_x):
    rng = np.random.default_rng(start)
    total = start + 600
    steps = np.arange(total, dtype=float)
    values = rng.normal(1.0, 0.1, total)
    values[rng.integers(0, total, 12)] = np.nan
    values[start + 7] = np.inf
    index = ColumnIndex()
    n = start
    window = (0.0, total + 100.0, 120, log_x)
    index.sync(steps[:n], values[:n])
    index.query(*window)
    partial = 0
    for grow in (1, 1, 3, 0, 40, 2, 200, 1, 352):
        n += grow
        index.sync(steps[:n], values[:n])
        answer = index.query(*window)
        assert_same(answer, minmax_columns(steps[:n], values[:n], *window))
        partial = index.partial_queries
    assert partial >= 5  # the same layout: only the last columns were read again
    # points past the window's end change no column; another layout is read whole, and right
    index.sync(np.append(steps, [total + 500.0]), np.append(values, 9.0))
    assert_same(index.query(*window), minmax_columns(steps, values, *window))
    other = (10.0, total / 2, 90, log_x)
    assert_same(index.query(*other), minmax_columns(np.append(steps, [total + 500.0]), np.append(values, 9.0), *other))


def test_a_rebuilt_index_does_not_reuse_the_columns_of_its_old_points():
    steps = np.arange(1000, dtype=float)
    values = np.linspace(1.0, 2.0, 1000)
    index = ColumnIndex()
    index.sync(steps, values, key=1)
    index.query(0.0, 2000.0, 50, False)
    changed = values.copy()
    changed[:10] = 5.0
    index.sync(np.append(steps, 1000.0), np.append(changed, 1.0), key=2)  # earlier points changed
    assert_same(index.query(0.0, 2000.0, 50, False),
                minmax_columns(np.append(steps, 1000.0), np.append(changed, 1.0), 0.0, 2000.0, 50, False))
