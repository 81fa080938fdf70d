"""Events on the step axis: LR changes, loss-scale drops, checkpoints, evals, segments."""

from __future__ import annotations

import math

import numpy as np
import pytest

from tuiloss.core.analysis import events as ev


def steps_of(n, every=10):
    return np.arange(1, n + 1, dtype=np.float64) * every


def test_step_decay_marks_each_drop_at_its_step():
    steps = steps_of(300)
    lr = np.where(steps < 1000, 1e-3, np.where(steps < 2000, 1e-4, 1e-5))
    found = ev.lr_events(steps, lr)
    assert [(e.kind, e.step) for e in found] == [("lr_drop", 1000.0), ("lr_drop", 2000.0)]
    assert found[0].before == pytest.approx(1e-3) and found[0].after == pytest.approx(1e-4)
    assert "x0.1" in found[0].message


def test_halving_staircase_per_epoch_is_found():
    # Keras ReduceLROnPlateau logged once an epoch: 1e-3 for 5 epochs, then halved twice.
    lr = np.array([1e-3] * 5 + [5e-4] * 4 + [2.5e-4] * 4)
    found = ev.lr_events(np.arange(len(lr), dtype=float), lr)
    assert [e.step for e in found] == [5.0, 9.0]


def test_a_dense_staircase_marks_every_step():
    # ReduceLROnPlateau with a short patience: drops 2-3 epochs apart, down to its min_lr.
    lr = np.array([1e-3] * 4 + [2e-4] * 4 + [4e-5] * 5 + [8e-6] * 3 + [1.6e-6] * 2 + [1e-6] * 6)
    assert [e.step for e in ev.lr_events(np.arange(len(lr), dtype=float), lr)] == [4.0, 8.0, 13.0, 16.0, 18.0]


@pytest.mark.parametrize("points", [50, 100, 2000])
def test_exponential_and_one_cycle_schedules_mark_nothing(points):
    # (Logged ten times a run, a warmup-stable-decay's decay is two points: a step at that resolution.)
    t = np.arange(points) / (points - 1)
    exponential = 1e-3 * 0.5 ** (t * 10)  # halved every tenth of the run, logged at every point
    up = t < 0.3
    one_cycle = np.where(up, 4e-5 + (1e-3 - 4e-5) * (1 - np.cos(np.pi * t / 0.3)) / 2,
                         1e-7 + (1e-3 - 1e-7) * (1 + np.cos(np.pi * (t - 0.3) / 0.7)) / 2)
    wsd = np.where(t < 0.8, 1e-3, 1e-3 * (1 - (t - 0.8) / 0.2) + 1e-5)  # warmup-stable-decay's decay
    for lr in (exponential, one_cycle, wsd):
        assert ev.lr_events(steps_of(points), lr) == []


@pytest.mark.parametrize("points", [20, 100, 2000])
def test_cosine_decay_to_zero_marks_nothing(points):
    steps = steps_of(points)
    lr = 3e-4 * 0.5 * (1 + np.cos(np.pi * np.arange(points) / (points - 1)))
    assert ev.lr_events(steps, lr) == []


@pytest.mark.parametrize("points", [30, 1000])
def test_linear_warmup_then_linear_decay_marks_nothing(points):
    warm = points // 10
    lr = np.concatenate([np.linspace(0, 1e-3, warm), np.linspace(1e-3, 0, points - warm)])
    assert ev.lr_events(steps_of(points), lr) == []


def test_cosine_with_warm_restarts_marks_each_restart_and_no_drop():
    cycle = 200
    t = np.arange(3 * cycle) % cycle
    lr = 1e-5 + (1e-3 - 1e-5) * 0.5 * (1 + np.cos(np.pi * t / cycle))
    steps = steps_of(3 * cycle)
    found = ev.lr_events(steps, lr)
    assert [(e.kind, e.step) for e in found] == [("lr_restart", steps[cycle]), ("lr_restart", steps[2 * cycle])]


def test_cosine_restarts_to_zero_with_warmup_start_is_not_a_restart():
    cycle = 100
    t = np.arange(2 * cycle) % cycle
    lr = 1e-3 * 0.5 * (1 + np.cos(np.pi * t / cycle))
    lr = np.concatenate([np.linspace(0, 1e-3, 10), lr])  # a warmup from 0 rises: not a restart
    found = ev.lr_events(steps_of(len(lr)), lr)
    assert [e.kind for e in found] == ["lr_restart"]


def test_lr_repeated_at_a_step_and_nan_are_read_once():
    steps = np.array([1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6], dtype=float)
    lr = np.array([1, 1, 1, 1, np.nan, 1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1]) * 1e-3
    assert [e.step for e in ev.lr_events(steps, lr)] == [4.0]


def test_loss_scale_drops_and_not_its_growth():
    # fairseq: 128 -> 256 -> 64 -> 128 -> 32; Megatron doubles every 500 iterations.
    steps = np.array([100, 200, 300, 400, 500], dtype=float)
    found = ev.scale_events(steps, np.array([128, 256, 64, 128, 32], dtype=float))
    assert [(e.step, e.before, e.after) for e in found] == [(300.0, 256.0, 64.0), (500.0, 128.0, 32.0)]
    assert ev.scale_events(steps, np.array([2048, 4096, 4096, 8192, 16384], dtype=float)) == []


def test_checkpoints_and_overflows_are_one_per_step():
    assert [e.step for e in ev.checkpoint_events(np.array([500, 500, 1000.0]))] == [500.0, 1000.0]
    found = ev.overflow_events(np.array([3.0, 3.0, 4.0]), np.array([32768.0, 32768.0, 16384.0]))
    assert [e.step for e in found] == [3.0, 4.0]
    assert found[1].after == 16384.0 and "loss scale now 1.64e+04" in found[1].message


def test_evals_segments_and_restarts_read_as_events():
    evals = ev.eval_events(np.array([100.0, 200.0]), np.array([0.5, 0.4]), "val_loss")
    assert [e.step for e in evals] == [100.0, 200.0] and "val_loss 0.400" in evals[1].message
    segs = ev.segment_events([(5000.0, "reset"), (7000.0, "truncated"), (8000.0, "start")])
    assert [(e.kind, e.step) for e in segs] == [("segment", 5000.0), ("segment", 7000.0)]
    assert "5.0K" in segs[0].message
    assert ev.restart_event(1.0, 2).kind == "restart"


def test_near_orders_by_distance_and_counted_says_kinds():
    found = [ev.Event("checkpoint", 100.0, "a"), ev.Event("eval", 120.0, "b"), ev.Event("lr_drop", 300.0, "c")]
    assert [e.message for e in ev.near(found, 118.0, 90.0, 130.0)] == ["b", "a"]
    assert ev.counted(found) == "1 LR drop, 1 checkpoint, 1 eval"
    assert ev.counted(found + [ev.Event("checkpoint", 200.0, "d")]) == "1 LR drop, 2 checkpoints, 1 eval"


def test_empty_and_tiny_inputs_give_no_events():
    empty = np.zeros(0)
    assert ev.lr_events(empty, empty) == [] and ev.scale_events(empty, empty) == []
    assert ev.lr_events(np.array([1.0]), np.array([1e-3])) == []
    assert ev.lr_events(np.array([1.0, 2.0]), np.array([0.0, 0.0])) == []
    # An infinite LR is left out, not a drop from infinity.
    assert [e.before for e in ev.lr_events(np.arange(8.0), np.array([math.inf] + [1e-3] * 4 + [1e-4] * 3))] == [1e-3]


def test_a_linear_decay_printed_with_six_decimals_is_no_staircase():
    # llm.c prints "lr:0.000003": the end of a linear decay to zero reads 7e-6, 6e-6, ..., 1e-6, 0.
    steps = np.arange(1000.0)
    lr = np.round(np.linspace(2e-5, 0, 1000), 6)
    assert ev.printed_quantum(lr) == pytest.approx(1e-6)
    assert ev.lr_events(steps, lr) == []
    # Printed with few decimals, a real step decay is still one: 0.0010 -> 0.0001.
    assert [e.step for e in ev.lr_events(steps, np.where(steps < 500, 0.001, 0.0001))] == [500.0]


def test_real_llmc_log_has_no_lr_event(real_logs):
    from tuiloss.core import timeline
    from tuiloss.core.engine import load

    store, _, _ = load([str(real_logs / "plain_text/llmc_gpt2_124m_modded_nanogpt")])
    (run,) = list(store)
    assert [e for e in timeline.events_of(run) if e.kind.startswith("lr")] == []


@pytest.mark.parametrize("block", [1, 2, 3, 5, 64])
def test_lr_events_do_not_depend_on_how_the_series_is_read_in_blocks(monkeypatch, block):
    # Read a block at a time (so a series of 10M points costs no copy of itself per temporary):
    # every event, and none more, is found wherever the blocks end.
    rng = np.random.default_rng(block)
    steps = np.arange(300.0)
    shapes = [
        1e-3 * 0.5 ** (steps // 3),  # a dense staircase
        1e-3 * (1 + np.cos(np.pi * (steps % 75) / 75)) / 2 + 1e-6,  # cosine with warm restarts
        np.round(np.linspace(2e-5, 0, 300), 6),  # printed with six decimals
        rng.choice([1e-3, 1e-4, 5e-4, 0.0, np.nan], 300),  # gaps, zeros and jumps everywhere
        np.exp(rng.standard_normal(300)),
    ]
    repeated = np.sort(rng.integers(0, 150, 300)).astype(np.float64)  # several rows per step
    whole = [[(e.kind, e.step, e.before, e.after) for e in ev.lr_events(s, v)]
             for s, v in [(steps, v) for v in shapes] + [(repeated, shapes[0]), (steps.astype(np.int32), shapes[1])]]
    assert sum(map(len, whole)) > 20
    monkeypatch.setattr(ev, "BLOCK", block)
    blocked = [[(e.kind, e.step, e.before, e.after) for e in ev.lr_events(s, v)]
               for s, v in [(steps, v) for v in shapes] + [(repeated, shapes[0]), (steps.astype(np.int32), shapes[1])]]
    assert blocked == whole


def test_big_changes_are_the_changes_of_logarithms_also_at_the_factor():
    # The ratio of neighbours only picks what the logarithms then decide: a change of exactly
    # LR_FACTOR, or one unit in the last place either side of it, is judged as the logarithms
    # judge it, and so is every change of a heavy-tailed series and of values down at the floor.
    rng = np.random.default_rng(7)
    factors = [ev.LR_FACTOR, np.nextafter(ev.LR_FACTOR, 0), np.nextafter(ev.LR_FACTOR, 2),
               1 / ev.LR_FACTOR, np.nextafter(1 / ev.LR_FACTOR, 0), np.nextafter(1 / ev.LR_FACTOR, 1), 1.39999999, 0.1, 10.0]
    staircase = np.cumprod(np.where(rng.random(5000) < 0.05, rng.choice(factors, 5000), 1.0)) * 1e-3
    heavy = np.abs(rng.standard_cauchy(5000))
    floored = np.concatenate((np.zeros(5), staircase[:200], [0.0, 1e-12, 0.0]))
    for values in (staircase, heavy, floored):
        floor = float(values.max()) * ev.LR_FLOOR * 0.1
        logged = np.log(np.maximum(values, floor))
        direct = np.flatnonzero(np.abs(np.diff(logged)) >= math.log(ev.LR_FACTOR))
        assert np.array_equal(ev._big_changes(values, floor), direct)
    assert len(ev._big_changes(staircase, 1e-12)) > 100
