"""A small labelled set from the detection benchmark meets the targets (the full run is
``python -m benchmarks.detection``)."""

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.detection import PLATEAU_LEVEL, TARGETS, VERDICT_ACCURACY  # noqa: E402
from benchmarks.detection.generate import make_suite  # noqa: E402
from benchmarks.detection.run import evaluate  # noqa: E402
from benchmarks.detection.score import f1  # noqa: E402


@pytest.fixture(scope="module")
def score():
    cases = make_suite(seed=11, scale=1, max_length=10_000)
    result, _, missing = evaluate(cases, files=True)
    assert missing == 0
    return result


@pytest.mark.parametrize("kind", sorted(TARGETS))
def test_f1_per_kind(score, kind):
    tally = score.kinds[kind]
    assert tally.tp + tally.fn > 0
    assert f1(tally) >= TARGETS[kind], (tally.misses, tally.false)


def test_verdicts(score):
    assert len(score.verdicts) >= 40
    assert score.verdict_accuracy >= VERDICT_ACCURACY, score.verdict_notes
    assert {label for label, _ in score.verdicts} >= {"improving", "converged", "no_progress", "diverged", "too_short"}


def test_plateau_levels_and_controls(score):
    assert score.plateau_found > 0
    assert max(score.plateau_errors) <= PLATEAU_LEVEL
    assert score.control_runs > 0 and score.control_spikes == 0 and score.control_other == 0, score.control_notes


def test_run_states_on_a_small_labelled_set():
    from benchmarks.detection.states import STATE_ACCURACY, STATES, evaluate_states, state_accuracy

    confusion, wrong = evaluate_states(seed=5, count=40)
    assert state_accuracy(confusion) >= STATE_ACCURACY, wrong
    assert all(sum(confusion[state].values()) > 0 for state in STATES)
