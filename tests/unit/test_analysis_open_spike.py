"""A spike still coming down at the end of a live log is a spike, not a divergence."""

import numpy as np

from tuiloss.core.analysis import analyze_series
from tuiloss.sample import reference_runs


def postnorm_until(step: float):
    run = next(r for r in reference_runs() if r.folder == "postnorm_deepnorm")
    keep = run.steps <= step
    return run.steps[keep], run.loss[keep]


def kinds(steps, values):
    return [a.kind for a in analyze_series(steps, values).anomalies]


def test_spike_decaying_at_the_end_of_the_log_is_not_a_divergence():
    for end in (25_600, 26_000, 26_500, 27_000, 27_500, 30_000, 100_000):
        found = kinds(*postnorm_until(end))
        assert "divergence" not in found, (end, found)
        assert "spike" in found, (end, found)


def test_a_rise_that_holds_at_the_end_is_still_a_divergence():
    steps = np.arange(1, 2001, dtype=float)
    rng = np.random.default_rng(3)
    values = 0.2 * (1 + 0.01 * rng.standard_normal(steps.size))
    values[1500:] *= np.linspace(1, 8, 500)
    assert "divergence" in kinds(steps, values)


def test_column_index_answers_a_repeated_question_without_recomputing():
    from tuiloss.core.analysis import ColumnIndex

    steps = np.arange(1, 1001, dtype=float)
    values = np.sin(steps)
    index = ColumnIndex()
    index.sync(steps, values)
    first = index.query(1, 1000, 50, True)
    index.sync(steps, values)  # nothing new
    assert index.query(1, 1000, 50, True) is first
    assert index.query(1, 1000, 60, True) is not first
    more = np.arange(1, 1101, dtype=float)
    index.sync(more, np.sin(more))
    grown = index.query(1, 1000, 60, True)
    assert grown.count.sum() == 1000 and not grown.min.flags.writeable
