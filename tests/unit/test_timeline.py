"""A run's events and its other x axes, from its stored series."""

from __future__ import annotations

import json

import numpy as np

from tuiloss.core import timeline
from tuiloss.core.engine import load
from tuiloss.core.model import Batch, SegmentEvent
from tuiloss.core.store import Run


def run_with(**series) -> Run:
    run = Run(id="r", label="r", source="r", format="csv")
    batch = Batch()
    for name, (steps, values) in series.items():
        batch.add(name, steps, values)
    run.apply(batch)
    return run


STEPS = np.arange(1, 101, dtype=float) * 10


def test_events_of_a_run_gather_every_kind_in_step_order():
    lr = np.where(STEPS < 500, 1e-3, 1e-4)
    scale = np.where(STEPS < 300, 65536.0, 32768.0)
    run = run_with(loss=(STEPS, np.linspace(3, 1, 100)), lr=(STEPS, lr), loss_scale=(STEPS, scale),
                   val_loss=(np.array([250.0, 500.0]), np.array([2.0, 1.5])), _checkpoint=(np.array([500.0]), np.array([1.0])))
    found = timeline.events_of(run)
    assert [(e.kind, e.step) for e in found] == [
        ("eval", 250.0), ("scale_drop", 300.0), ("lr_drop", 500.0), ("checkpoint", 500.0), ("eval", 500.0)]


def test_a_resume_is_an_event_of_its_run(tmp_path):
    run = run_with(loss=(STEPS, np.linspace(3, 1, 100)))
    run.mark(SegmentEvent("truncated"))
    batch = Batch()
    batch.add("loss", STEPS[50:], np.linspace(1, 0.5, 50))
    run.apply(batch)
    (event,) = timeline.events_of(run)
    assert (event.kind, event.step) == ("segment", 510.0) and "truncated" in event.message


def test_a_restart_in_one_log_is_an_event_of_the_second_run(tmp_path):
    log = tmp_path / "train.log"
    log.write_text("".join(f"iter {s}: loss {3 - s / 100:.3f}\n" for s in range(1, 101))
                   + "".join(f"iter {s}: loss {3 - s / 200:.3f}\n" for s in range(1, 51)))
    store, _, _ = load([str(log)])
    first, second = list(store)
    assert [e.kind for e in timeline.events_of(second)] == ["restart"]
    assert timeline.events_of(first) == []


def test_axes_present_and_their_values():
    wall = 1.7e9 + STEPS * 2.0
    run = run_with(loss=(STEPS, np.ones(100)), _timestamp=(STEPS, wall),
                   **{"consumed samples": (STEPS, STEPS * 256)})
    assert timeline.axes_of(run) == ["step", "wall", "elapsed", "progress"]
    steps, x = timeline.axis_values(run, "elapsed")
    assert x[0] == 0.0 and x[-1] == 1980.0
    assert timeline.axis_values(run, "progress")[1][-1] == 256000.0
    assert timeline.axis_source(run, "progress") == "consumed samples"
    x, kept = timeline.map_steps(np.array([5.0, 15.0, 1000.0, 2000.0]), timeline.axis_values(run, "progress"))
    assert kept.tolist() == [False, True, True, False] and x.tolist() == [3840.0, 256000.0]


def test_milliseconds_and_per_iteration_times_and_counters_that_go_back():
    ms = (1.7e9 + STEPS) * 1000.0
    run = run_with(loss=(STEPS, np.ones(100)), timestamp=(STEPS, ms))
    assert timeline.axis_values(run, "wall")[1][0] == 1.7e9 + 10.0
    # nanoGPT's "time 12.3ms" is a time per iteration, not a clock; fairseq's ntokens is per batch.
    noisy = run_with(loss=(STEPS, np.ones(100)), time=(STEPS, 12 + np.sin(STEPS)),
                     ntokens=(STEPS, 1000 + np.cos(STEPS)), _runtime=(STEPS, STEPS * 0.5))
    assert timeline.axes_of(noisy) == ["step", "elapsed"]
    assert timeline.axis_source(noisy, "elapsed") == "_runtime"


def test_real_megatron_log_has_consumed_samples_as_progress(real_logs):
    store, _, _ = load([str(real_logs / "plain_text/megatron_deepspeed_moe_gpt3_125m")])
    (run,) = list(store)
    assert "progress" in timeline.axes_of(run)
    assert timeline.axis_source(run, "progress") in ("consumed tokens", "consumed samples")


def test_real_report_lists_events(real_logs, capsys):
    from tuiloss.cli import main

    main(["report", str(real_logs / "keras_csvlogger"), "--json"])
    (run,) = json.loads(capsys.readouterr().out)["runs"]
    drops = [(e["step"], e["before"], e["after"]) for e in run["events"] if e["kind"] == "lr_drop"]
    # ReduceLROnPlateau's staircase: x0.2 four times, then to its min_lr 1e-6 (x0.62).
    assert [d[0] for d in drops] == [4, 8, 13, 16, 18]
    assert "_checkpoint" not in run["metrics"] and "lr" in run["metrics"]
    main(["report", str(real_logs / "fairseq")])
    text = capsys.readouterr().out
    assert "events: 6 loss-scale drops, 10 checkpoints" in text


def test_real_tensorboard_runs_have_their_clock(real_logs):
    store, _, _ = load([str(real_logs / "tensorboard/hf_trainer_roberta_lora_5runs_flat")])
    runs = list(store)
    assert len(runs) == 5
    for run in runs:
        assert timeline.axes_of(run)[:3] == ["step", "wall", "elapsed"]
        steps, wall = timeline.axis_values(run, "wall")
        assert 1.744e9 < wall[0] < 1.745e9  # April 2025, as the file names say (events.out.tfevents.1744227257...)
        assert timeline.axis_values(run, "elapsed")[1][0] == 0.0
