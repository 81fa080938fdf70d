"""Eval series findings, joined to their train series (issue 13, item 2)."""

import math

import numpy as np
import pytest

from tuiloss.core.analysis import analyze_series, join_eval


def train_curve(n=5000, rng=None, tau=400.0):
    rng = rng or np.random.default_rng(0)
    steps = np.arange(1, n + 1, dtype=float)
    return steps, (0.05 + 2.0 * np.exp(-steps / tau)) * np.exp(0.01 * rng.standard_normal(n))


def test_eval_rising_while_train_falls_is_overfitting_from_the_best_eval():
    # whisper: 5 evals, eval_loss 0.321 -> 0.420 while train falls to ~1e-4
    steps, values = train_curve()
    es = np.array([1000.0, 2000, 3000, 4000, 5000])
    ev = np.array([0.321, 0.35, 0.38, 0.40, 0.420])
    [found] = join_eval(steps, values, es, ev)
    assert found.kind == "overfitting" and found.step == 1000
    assert found.baseline == pytest.approx(0.321) and found.value == pytest.approx(np.median(ev[-2:]))
    assert "overfitting from 1.0K" in found.message and "0.321" in found.message
    assert "train loss fell" in found.message and found.severity_word in ("medium", "high")


def test_eval_that_follows_train_is_not_overfitting():
    steps, values = train_curve()
    es = np.arange(250.0, 5001, 250)
    ev = 1.3 * (0.05 + 2.0 * np.exp(-es / 400.0))
    assert join_eval(steps, values, es, ev) == []


def test_one_bad_last_eval_is_not_overfitting():
    steps, values = train_curve()
    es = np.arange(250.0, 5001, 250)
    ev = 1.3 * (0.05 + 2.0 * np.exp(-es / 400.0))
    ev[-1] *= 3
    assert join_eval(steps, values, es, ev) == []


def test_eval_rising_with_train_rising_too_is_not_overfitting():
    steps, values = train_curve(tau=100.0)
    values = values * np.where(steps > 3000, 1 + (steps - 3000) / 4000, 1.0)  # train gets worse too
    es = np.array([1000.0, 2000, 3000, 4000, 5000])
    ev = np.array([0.321, 0.32, 0.33, 0.40, 0.45])
    assert join_eval(steps, values, es, ev) == []


def test_short_eval_series_gets_its_spikes_and_nans():
    # Keras val_loss per epoch: 80-100x its median at epochs 9-10, back at 11
    rng = np.random.default_rng(1)
    ev = 0.09 * np.exp(-np.arange(26) / 20.0) * np.exp(0.1 * rng.standard_normal(26))
    ev[8], ev[9] = 7.33, 9.38
    ev[20] = math.nan
    result = analyze_series(np.arange(1.0, 27.0), ev, is_eval=True)
    [spike] = result.of_kind("spike")
    assert spike.step == 9 and spike.end_step == 11 and spike.value == 9.38
    [nan] = result.of_kind("nan")
    assert nan.step == 21


def test_a_steady_climb_in_a_short_series_is_not_a_spike():
    ev = np.concatenate([np.linspace(1.0, 0.5, 10), np.linspace(0.5, 0.7, 10)])
    assert analyze_series(np.arange(20.0), ev, is_eval=True).of_kind("spike") == ()


def floor_train(n=1600, rng=None):
    """A train loss near its floor printed with two decimals, as OpenNMT prints xent."""
    rng = rng or np.random.default_rng(3)
    steps = np.arange(50.0, n + 1, 50)
    values = np.round(0.03 + 3.0 * np.exp(-steps / 150) + 0.012 * np.abs(rng.standard_normal(len(steps))), 2)
    return steps, values


def test_an_eval_perplexity_is_judged_as_the_loss_it_is():
    steps, values = floor_train()
    es = np.arange(200.0, 1601, 200)
    ppl = np.array([5.45, 2.44, 1.22, 1.075, 1.050, 1.047, 1.091, 1.100])  # +5% of itself; the loss doubled
    assert join_eval(steps, values, es, ppl) == []  # read as a loss of its own, +5% is under the noise
    [found] = join_eval(steps, values, es, ppl, perplexity=True)
    assert found.baseline == pytest.approx(1.050, abs=0.005) and found.value == pytest.approx(1.0955, abs=0.001)
    assert "eval perplexity rose" in found.message and "(+4.3%)" in found.message
    # a perplexity that keeps following the train loss down is no overfitting, whatever the units
    falling = np.exp(0.5 * np.exp(-es / 300) + 0.04)
    assert join_eval(steps, values, es, falling, perplexity=True) == []


def test_a_train_loss_within_its_noise_stays_and_one_past_it_rises():
    steps, values = floor_train()
    es = np.arange(200.0, 1601, 200)
    ev = np.array([2.0, 1.0, 0.3, 0.12, 0.10, 0.10, 0.13, 0.14])
    assert join_eval(steps, values, es, ev)  # the train moves by a print step or two: it stays
    worse = values.copy()
    worse[steps > 1200] += 0.3  # the train loss rose far past its noise: not overfitting
    assert join_eval(steps, worse, es, ev) == []
