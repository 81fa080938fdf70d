"""The labelled grouping benchmark holds its targets on a small draw (the full one: python -m benchmarks.grouping)."""

from benchmarks.grouping import LAYOUTS, run


def test_sweeps_of_every_layout_are_grouped_and_their_deviating_seeds_found():
    score = run(len(LAYOUTS) * 2, seed=7)
    assert score.pair_precision >= 0.95 and score.pair_recall >= 0.95
    assert score.exact >= score.sweeps - 1
    assert score.dev_fp == 0 and score.deviation_recall >= 0.9
