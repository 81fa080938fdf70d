"""Storage keeps every point, NaN included, and splits series into segments."""

import mmap
import resource
import sys

import numpy as np
import pytest

from tuiloss.core.analysis.arrays import GrowableArray
from tuiloss.core.model import Batch, RowGroup, SegmentEvent
from tuiloss.core import store as store_module
from tuiloss.core.store import Run, Series, Store, choose_primary, eval_counterpart, step_drops


def test_growable_array_appends_in_amortised_chunks():
    array = GrowableArray(capacity=2)
    for i in range(1000):
        array.extend(np.array([float(i)]))
    assert len(array) == 1000
    assert array.view[-1] == 999.0
    assert array.nbytes < 1000 * 8 * 2  # growth factor keeps slack bounded


def test_growable_array_keeps_its_type_through_copies_and_truncation():
    array = GrowableArray(dtype=np.int64)
    array.extend(np.arange(100))
    array.truncate(10)
    twin = array.copy()
    array.extend(np.array([7]))
    assert twin.view.dtype == np.int64 and twin.view.tolist() == list(range(10))
    assert array.view.tolist() == list(range(10)) + [7]
    assert not array.view.flags.writeable


def test_row_groups_say_which_metrics_share_steps_and_keep_the_order_of_series():
    steps = np.arange(3.0)
    batch = Batch()
    batch.add_rows(steps, {"loss": steps / 10})
    batch.add("acc", np.array([5.0]), np.array([0.5]))
    batch.add_rows(steps, {"lr": steps / 100})  # the same rows: the same group
    assert batch.groups == [RowGroup(steps, ("loss", "lr"))]
    assert [(g.metrics, g.steps is steps) for g in batch.row_groups()] == [(("loss", "lr"), True), (("acc",), False)]
    assert all(batch.series[name][0] is steps for name in ("loss", "lr"))
    batch.add("loss", np.array([3.0]), np.array([0.3]))  # appended: loss has steps of its own now
    assert [g.metrics for g in batch.groups] == [("lr",)]
    assert batch.series["loss"][0].tolist() == [0.0, 1.0, 2.0, 3.0]
    merged = Batch()
    merged.add("acc", np.array([4.0]), np.array([0.4]))
    merged.merge(batch)
    assert list(merged.series) == ["acc", "loss", "lr"]
    assert [g.metrics for g in merged.groups] == [("lr",)] and merged.series["lr"][0] is steps
    assert merged.series["acc"][0].tolist() == [4.0, 5.0]


def test_metrics_in_no_group_get_steps_of_their_own_even_from_one_array():
    run = Run(id="r", label="r", source="r", format="csv")
    steps = np.arange(4.0)
    batch = Batch()
    batch.series["loss"] = (steps, steps / 10)  # one array, but no group says they share rows
    batch.series["lr"] = (steps, steps / 100)
    run.apply(batch)
    assert run.series["loss"].steps is not run.series["lr"].steps
    assert run.series["lr"].steps.view.tolist() == steps.tolist()


def test_nan_and_inf_are_values_not_gaps():
    series = Series()
    series.extend(np.array([1.0, 2.0, 3.0]), np.array([0.5, np.nan, np.inf]))
    steps, values = series.visible()
    assert list(steps) == [1, 2, 3]
    assert np.isnan(values[1]) and np.isinf(values[2])


def test_step_going_back_opens_a_reset_segment_and_newest_wins_overlap():
    series = Series()
    series.extend(np.array([1.0, 2.0, 3.0, 4.0]), np.array([10.0, 20.0, 30.0, 40.0]))
    series.extend(np.array([3.0, 4.0, 5.0]), np.array([31.0, 41.0, 51.0]))
    assert [(s.start, s.start_step, s.reason) for s in series.segments] == [
        (0, 1.0, "start"),
        (4, 3.0, "reset"),
    ]
    assert len(series) == 7  # nothing thrown away
    steps, values = series.visible()
    assert list(steps) == [1, 2, 3, 4, 5]
    assert list(values) == [10, 20, 31, 41, 51]


def test_reset_inside_one_batch_is_found():
    series = Series()
    series.extend(np.array([1.0, 2.0, 1.0, 2.0]), np.array([1.0, 1.0, 2.0, 2.0]))
    assert [s.reason for s in series.segments] == ["start", "reset"]
    assert series.segments[1].start == 2


def test_step_drops_are_found_across_the_comparison_blocks(monkeypatch):
    monkeypatch.setattr(store_module, "_DROP_BLOCK", 7)
    rng = np.random.default_rng(5)
    for n in [0, 1, 2, 7, 8, 9, 15, 50, 301]:
        for _ in range(30):
            steps = np.cumsum(rng.choice([-3.0, 0.0, 1.0, 2.0], size=n, p=[0.05, 0.1, 0.6, 0.25]))
            expected = [i for i in range(1, n) if steps[i] < steps[i - 1]]
            assert step_drops(steps).tolist() == expected


def test_metrics_sharing_one_steps_array_get_the_same_reset_segments():
    run = Run(id="r", label="r", source="r", format="csv")
    steps = np.array([1.0, 2.0, 3.0, 1.0, 2.0, 0.0])
    batch = Batch()
    batch.series["loss"] = (steps, steps * 2)
    batch.series["lr"] = (steps, steps * 3)
    batch.series["acc"] = (np.array([5.0, 4.0]), np.array([0.1, 0.2]))
    run.apply(batch)
    starts = {name: [(s.start, s.reason) for s in series.segments] for name, series in run.series.items()}
    assert starts["loss"] == starts["lr"] == [(0, "start"), (3, "reset"), (5, "reset")]
    assert starts["acc"] == [(0, "start"), (1, "reset")]


def test_equal_steps_are_not_a_reset():
    series = Series()
    series.extend(np.array([5.0, 5.0, 6.0]), np.array([1.0, 2.0, 3.0]))
    assert [s.reason for s in series.segments] == ["start"]


def test_marked_event_starts_next_segment_even_when_steps_continue():
    run = Run("r", "r", "r", "csv")
    batch = Batch()
    batch.add("loss", [1, 2], [1.0, 0.9])
    run.apply(batch)
    run.mark(SegmentEvent("truncated"))
    batch = Batch()
    batch.add("loss", [3, 4], [0.8, 0.7])
    run.apply(batch)
    assert [s.reason for s in run.segments] == ["start", "truncated"]
    assert run.points == 4


def test_primary_metric_choice():
    assert choose_primary(["lr", "loss", "val_loss"]) == "loss"
    assert choose_primary(["train_loss_epoch", "train_loss_step", "epoch"]) == "train_loss_step"
    assert choose_primary(["lm loss", "learning rate"]) == "lm loss"
    assert choose_primary(["val_loss", "acc"]) == "val_loss"
    assert choose_primary(["acc", "lr"]) == "acc"
    assert choose_primary([]) is None


def test_eval_counterpart():
    assert eval_counterpart("loss", ["loss", "val_loss"]) == "val_loss"
    assert eval_counterpart("train_loss", ["train_loss", "val_loss"]) == "val_loss"
    assert eval_counterpart("loss", ["loss", "eval_loss"]) == "eval_loss"
    assert eval_counterpart("lm loss", ["lm loss", "validation lm loss"]) == "validation lm loss"
    assert eval_counterpart("trl", ["trl", "tel"]) == "tel"
    assert eval_counterpart("loss", ["loss", "lr"]) is None


def test_a_backlog_makes_room_once_so_a_big_file_is_not_copied_chunk_after_chunk():
    series = Series()
    chunk = np.arange(1000, dtype=np.float64)
    series.extend(chunk, chunk, backlog=9.0)  # nine more chunks like this one wait in the file
    room = series.steps.nbytes
    assert room >= 10_000 * 8
    for k in range(1, 10):
        series.extend(chunk + 1000 * k, chunk, backlog=9.0 - k)
    assert series.steps.nbytes == room  # no regrowth: every chunk went into the room made
    assert series.steps.view.tolist() == list(range(10_000))
    assert series.segments == [series.segments[0]]


def test_a_wild_backlog_reserves_at_most_a_hundred_times_the_batch():
    series = Series()
    series.extend(np.arange(10.0), np.arange(10.0), backlog=1e12)
    assert series.steps.nbytes <= 8 * 1100


def test_metrics_of_the_same_rows_share_one_stored_copy_of_the_steps_until_their_rows_differ():
    run = Run(id="r", label="r", source="r", format="csv")
    steps = np.arange(4.0)
    first = Batch()
    first.add_rows(steps, {"loss": steps / 10, "lr": steps / 100})
    run.apply(first)
    assert run.series["loss"].steps is run.series["lr"].steps
    more = np.arange(4.0, 6.0)
    second = Batch()
    second.add_rows(more, {"loss": more / 10, "lr": more / 100})
    run.apply(second)
    assert run.series["loss"].steps is run.series["lr"].steps
    gap = Batch()  # lr is empty on step 6: the rows differ from here on
    gap.series["loss"] = (np.array([6.0, 7.0]), np.array([0.6, 0.7]))
    gap.series["lr"] = (np.array([7.0]), np.array([0.07]))
    run.apply(gap)
    assert run.series["loss"].steps is not run.series["lr"].steps
    assert run.series["loss"].visible()[0].tolist() == [0, 1, 2, 3, 4, 5, 6, 7]
    assert run.series["lr"].visible()[0].tolist() == [0, 1, 2, 3, 4, 5, 7]
    assert run.series["lr"].visible()[1].tolist() == [0, 0.01, 0.02, 0.03, 0.04, 0.05, 0.07]
    assert run.points == 4 * 2 + 2 * 2 + 3


def test_shared_steps_store_what_separate_steps_store(monkeypatch):
    """Random batches, some of whose metrics are read from the same rows, against a run given copies."""
    rng = np.random.default_rng(11)
    for trial in range(40):
        shared_run = Run(id="a", label="a", source="a", format="csv")
        plain_run = Run(id="b", label="b", source="b", format="csv")
        step = 0.0
        for _ in range(rng.integers(1, 8)):
            n = int(rng.integers(0, 6))
            steps = step + np.cumsum(rng.choice([-2.0, 1.0, 1.0, 3.0], size=n))
            step = float(steps[-1]) if n else step
            batch, copies = Batch(), Batch()
            for metric in ("loss", "lr", "acc"):
                roll = rng.random()
                if roll < 0.2:
                    continue  # not in this batch
                own = steps if roll < 0.7 else steps[rng.random(n) < 0.7]
                values = rng.normal(size=len(own))
                if own is steps:
                    batch.add_rows(steps, {metric: values})
                else:
                    batch.series[metric] = (own, values)
                copies.series[metric] = (own.copy(), values.copy())
            if rng.random() < 0.15:
                event = SegmentEvent("truncated", "test")
                shared_run.mark(event)
                plain_run.mark(event)
            backlog = float(rng.choice([0.0, 3.0]))
            batch.backlog = copies.backlog = backlog
            assert shared_run.apply(batch) == plain_run.apply(copies)
        assert set(shared_run.series) == set(plain_run.series)
        for metric, series in shared_run.series.items():
            other = plain_run.series[metric]
            assert series.steps.view.tolist() == other.steps.view.tolist(), (trial, metric)
            assert series.values.view.tolist() == other.values.view.tolist(), (trial, metric)
            assert series.segments == other.segments, (trial, metric)


# -- one run, its segments, and logs that hold several runs ------------------------------------


def _run_of(steps, values, name="loss"):
    from tuiloss.core.store import Run

    run = Run(id="/logs/exp/training.log", label="training.log", source="training.log", format="text")
    run.series[name] = Series()
    run.series[name].extend(np.asarray(steps, dtype=float), np.asarray(values, dtype=float))
    return run


def _curve(start, n, first=2.0, last=0.5):
    steps = np.arange(start, start + n, dtype=float)
    return steps, np.geomspace(first, last, n)


def test_a_resume_is_one_run_stitched_at_the_resume_step():
    s1, v1 = _curve(1, 100)
    s2 = np.arange(60, 150, dtype=float)  # back to the checkpoint at 60, then on
    v2 = np.geomspace(v1[59], 0.3, len(s2))
    run = _run_of(np.concatenate((s1, s2)), np.concatenate((v1, v2)))
    (part,) = run.parts()
    steps, values = part["loss"].visible()
    assert [seg.reason for seg in part["loss"].segments] == ["start", "reset"]
    assert steps[0] == 1 and steps[-1] == 149 and len(steps) == 59 + 90  # older up to 60, newer after
    assert np.all(np.diff(steps) > 0) and values[0] == v1[0]


def test_a_restart_from_the_first_step_with_a_fresh_curve_is_a_new_run():
    s1, v1 = _curve(1, 80)
    s2, v2 = _curve(1, 50, first=2.1, last=0.9)  # the same file, a second training
    run = _run_of(np.concatenate((s1, s2)), np.concatenate((v1, v2)))
    first, second = run.parts()
    assert len(first["loss"]) == 80 and len(second["loss"]) == 50
    assert second["loss"].segments[0].reason == "start"
    assert second["loss"].visible()[1][0] == pytest.approx(2.1)


def test_a_counter_that_restarts_while_the_curve_carries_on_is_not_a_new_run():
    # an iteration counted per epoch: the step goes back to 50, the loss goes on where it was
    steps = np.tile(np.arange(50, 550, 50, dtype=float), 3)
    values = np.geomspace(1.0, 0.4, len(steps))
    run = _run_of(steps, values)
    assert len(run.parts()) == 1
    assert run.series["loss"].restarts() == []


def test_a_flat_curve_going_back_to_its_start_stays_one_run():
    steps = np.concatenate((np.arange(1, 60), np.arange(1, 60))).astype(float)
    values = np.full(len(steps), 1.39) + np.sin(np.arange(len(steps))) * 0.005
    assert len(_run_of(steps, values).parts()) == 1


def test_a_truncated_file_is_never_split_into_runs():
    run = _run_of(*_curve(1, 40))
    run.series["loss"].mark("truncated")
    run.series["loss"].extend(*_curve(1, 40))
    assert len(run.parts()) == 1


def test_every_metric_is_split_at_its_own_restarts():
    s1, v1 = _curve(1, 40)
    s2, v2 = _curve(1, 30)
    run = _run_of(np.concatenate((s1, s2)), np.concatenate((v1, v2)))
    run.series["val_loss"] = Series()
    run.series["val_loss"].extend(np.array([10.0, 20, 30, 10, 20]), np.array([2.0, 1.0, 0.8, 2.1, 1.2]))
    first, second = run.parts()
    assert first["val_loss"].visible()[0].tolist() == [10, 20, 30]
    assert second["val_loss"].visible()[0].tolist() == [10, 20]


def test_rekey_puts_points_on_another_column_of_the_same_rows():
    from tuiloss.core.store import rekey

    loss, epoch = Series(), Series()
    loss.extend(np.array([10.0, 20, 30, 40]), np.array([4.0, 3, 2, 1]))
    epoch.extend(np.array([10.0, 20, 40]), np.array([0.0, 0, 1]))
    keyed = rekey(loss, epoch)
    assert keyed.steps.view.tolist() == [0, 0, 1] and keyed.values.view.tolist() == [4, 3, 1]


# -- a step counter that runs backwards ----------------------------------------------------------


def test_steps_counting_down_are_one_backwards_segment_not_a_reset_per_point():
    series = Series()
    steps = np.arange(5000.0, 0.0, -1.0)
    series.extend(steps, steps / 10)
    assert [(s.start, s.start_step, s.reason) for s in series.segments] == [(0, 5000.0, "start"),
                                                                          (1, 4999.0, "backwards")]
    shown_steps, shown_values = series.visible()
    assert len(shown_steps) == 5000 and shown_steps[0] == 1.0 and shown_values[-1] == 500.0


def test_a_countdown_read_one_point_at_a_time_is_one_backwards_segment():
    series = Series()
    for step in (10.0, 9.0, 8.0, 7.0, 6.0):
        series.extend(np.array([step]), np.array([step]))
    assert [(s.start, s.reason) for s in series.segments] == [(0, "start"), (1, "backwards")]


def test_a_reset_then_counting_up_is_a_reset_and_two_drops_in_a_row_count_down():
    series = Series()
    series.extend(np.array([1.0, 2.0, 3.0, 1.0, 2.0, 3.0]), np.zeros(6))
    assert [s.reason for s in series.segments] == ["start", "reset"]
    series.extend(np.array([2.0]), np.zeros(1))  # one drop: another reset
    series.extend(np.array([4.0, 3.0, 2.0, 1.0, 5.0]), np.zeros(5))  # down three times, then up
    assert [(s.start, s.reason) for s in series.segments] == [(0, "start"), (3, "reset"), (6, "reset"),
                                                              (8, "backwards")]
    series.extend(np.array([4.0]), np.zeros(1))  # after the counter went up again: a reset
    assert series.segments[-1].reason == "reset"


def test_metrics_sharing_steps_get_the_backwards_segment_relabelled_too():
    run = Run(id="r", label="r", source="r", format="csv")
    for step in (5.0, 4.0, 3.0, 2.0):
        batch = Batch()
        batch.add_rows(np.array([step]), {"loss": np.array([step]), "lr": np.array([0.1])})
        run.apply(batch)
    assert run.series["loss"].steps is run.series["lr"].steps
    for name in ("loss", "lr"):
        assert [s.reason for s in run.series[name].segments] == ["start", "backwards"], name


# -- the runs a log holds, in one place (Run.split; the report and the viewer read them) ---------


def _two_trainings():
    """A log of 80 points, then training again from step 1 for 50: two runs."""
    s1, v1 = _curve(1, 80)
    s2, v2 = _curve(1, 50, first=2.1, last=0.9)
    log = _run_of(np.concatenate((s1, s2)), np.concatenate((v1, v2)))
    log.points = 130
    return log


def test_a_log_s_runs_are_split_once_and_share_its_points_without_copies():
    log = _two_trainings()
    first, second = log.split()
    assert (first.id, first.label) == (log.id, "training.log")
    assert (second.id, second.label) == (f"{log.id}#2", "training.log #2")
    assert first.part_of == log.id == second.part_of and first.points == 80 and second.points == 50
    assert first.restarted_after and not second.restarted_after
    assert np.shares_memory(second.series["loss"].steps.view, log.series["loss"].steps.view)
    assert log.split()[1] is second  # nothing added: the same runs
    log.label = "exp"  # relabelled when more runs were found
    assert [run.label for run in log.split()] == ["exp", "exp #2"]


def test_a_log_without_a_restart_is_its_own_only_run():
    log = _run_of(*_curve(1, 40))
    assert log.split() == [log] and not log.restarted_after


def test_a_restart_appended_later_becomes_a_new_run_of_the_store():
    from tuiloss.core.model import Batch
    from tuiloss.core.store import Store

    store = Store()
    log = store.add(_run_of([], []))
    batch = Batch()
    batch.add("loss", *_curve(1, 60))
    log.apply(batch)
    assert [run.id for run in store] == [log.id] and len(store) == 1
    again = Batch()
    again.add("loss", *_curve(1, 5, first=2.05, last=1.9))
    log.apply(again)
    first, second = list(store)
    assert len(store) == 2 and second.id == f"{log.id}#2" and len(second.series["loss"]) == 5
    assert store.find(second.id) is second and store.find(log.id) is first and store.find("nope") is None
    more = Batch()
    more.add("loss", np.array([6.0, 7.0]), np.array([1.85, 1.8]))
    log.apply(more)
    assert [len(run.series["loss"]) for run in store] == [60, 7]


def test_step_override_re_keys_first_and_splits_on_the_new_axis():
    # two trainings in one file whose step counter never went back; their epoch did
    steps = np.arange(1, 121, dtype=float)
    epochs = np.concatenate((np.arange(60), np.arange(60))) // 10
    values = np.concatenate((np.geomspace(2.0, 0.3, 60), np.geomspace(2.1, 0.8, 60)))
    log = _run_of(steps, values)
    log.series["epoch"] = Series()
    log.series["epoch"].extend(steps, epochs.astype(float))
    log.points = 240
    assert log.split() == [log]
    log.step_override = "epoch"
    first, second = log.split()
    assert "epoch" not in first.series and len(first.series["loss"]) == 60
    assert second.series["loss"].visible()[0][0] == 0 and second.split() == [second]


def test_what_the_parsers_say_of_the_axis_is_kept_per_log():
    from tuiloss.core.model import Batch

    log = _run_of([], [])
    batch = Batch()
    batch.add("loss", *_curve(1, 10))
    batch.meta.update(planned_steps=1000.0, step_key="iteration", held=3)
    log.apply(batch)
    assert log.meta == {"planned_steps": 1000.0, "step_key": "iteration", "held": 3}
    later = Batch()
    later.add("loss", *_curve(11, 10))
    later.meta.update(planned_steps=1000.0, step_key="iteration")  # nothing waits any more
    log.apply(later)
    assert log.meta["held"] == 0 and log.meta["planned_steps"] == 1000.0


def test_while_the_newest_run_grows_the_earlier_ones_are_the_same_parts():
    log = _two_trainings()
    first, second = log.split()
    log.series["loss"].extend(np.array([51.0]), np.array([0.89]))
    log.points += 1
    again, grown = log.split()
    assert again.series["loss"] is first.series["loss"]  # its visible points are not worked out again
    assert grown.series["loss"] is not second.series["loss"] and len(grown.series["loss"]) == 51


def _grown_log():
    """A log read a few points at a time: a training, a resume, a countdown, a restart with a
    fresh curve, a counter that restarts while the curve goes on, a truncation."""
    s1, v1 = _curve(1, 40)
    resume = (np.arange(30.0, 50.0), np.geomspace(v1[29], 0.4, 20))
    countdown = (np.arange(60.0, 50.0, -1), np.linspace(0.4, 0.39, 10))
    s2, v2 = _curve(1, 30, first=2.1, last=0.9)  # a second training
    counter = (np.arange(1.0, 11.0), np.linspace(0.89, 0.85, 10))  # the counter again, the curve on
    s3, v3 = _curve(1, 20, first=1.9, last=1.0)  # read after a truncation
    return [(s1, v1), resume, (s2, v2), counter, countdown, "truncated", (s3, v3)]


def test_restarts_worked_out_as_a_log_grows_are_those_of_the_whole_log():
    # The restarts are kept while only points are added; at every size they are what a
    # series holding the same points, never asked before, finds.
    grown, pieces = Series(), []
    for part in _grown_log():
        if part == "truncated":
            grown.mark("truncated")
            pieces.append(part)
            continue
        steps, values = part
        for lo in range(0, len(steps), 3):
            grown.extend(steps[lo : lo + 3], values[lo : lo + 3])
            pieces.append((steps[lo : lo + 3], values[lo : lo + 3]))
            fresh = Series()
            for piece in pieces:
                fresh.mark("truncated") if piece == "truncated" else fresh.extend(*piece)
            assert grown.restarts() == fresh.restarts(), len(grown)
    assert len(grown.restarts()) == 1  # the second training; the resume, countdown and counter are not


def test_restarts_are_not_worked_out_again_while_points_are_only_added(monkeypatch):
    log = _two_trainings()
    series = log.series["loss"]
    calls = []
    found = Series._find_restarts
    monkeypatch.setattr(Series, "_find_restarts", lambda self: calls.append(len(self)) or found(self))
    assert len(log.split()) == 2
    for k in range(20):  # the newest run grows; iterating the store splits the log each time
        series.extend(np.array([51.0 + k]), np.array([0.89]))
        log.points += 1
        assert len(log.split()) == 2
    assert calls == [130]  # once: the newest segment already held the points it is judged on
    series.extend(np.array([1.0]), np.array([2.2]))  # the step goes back: a segment is added
    log.points += 1
    log.split()
    assert calls == [130, 151]  # again when it was added (once, for every part it splits)
    series.extend(np.array([2.0, 3.0]), np.array([2.1, 2.0]))
    log.points += 2
    assert len(log.split()) == 3 and calls[-1] == 153


def test_find_reads_only_the_log_a_run_id_names():
    from tuiloss.core.store import Store

    store = Store()
    log = store.add(_two_trainings())
    hashed = _run_of(*_curve(1, 10))
    hashed.id = "/logs/other.log#2"  # a second file found where a moved run was (engine._free_id)
    store.add(hashed)
    first, second = log.split()
    assert store.find(log.id) is first and store.find(f"{log.id}#2") is second
    assert store.find(hashed.id) is hashed  # a log whose own id holds a '#'
    assert store.find(f"{log.id}#3") is None and store.find(f"{log.id}#x") is None and store.find("nope") is None
    assert [run.id for run in store] == [log.id, f"{log.id}#2", hashed.id] and len(store) == 3


def test_the_arrays_of_a_log_read_as_it_is_written_make_room_one_at_a_time():
    # With no backlog to size them from, the steps and the metrics' values grow by copies: on
    # one grid they would all be copied at once, and briefly held twice each.
    run = Run(id="live", label="live", source="live.csv", format="csv")
    copies = []
    before = None
    for k in range(600):
        batch = Batch()
        steps = np.arange(k * 50, (k + 1) * 50, dtype=float)
        batch.add_rows(steps, {"loss": steps * 0.5, "lr": steps * 1e-4})
        run.apply(batch)
        arrays = [run.series["loss"].steps, run.series["loss"].values, run.series["lr"].values]
        now = [a.capacity for a in arrays]
        if before is not None:
            copies.append(sum(a != b for a, b in zip(now, before)))
        before = now
    assert run.series["lr"].steps is run.series["loss"].steps  # still one copy of the steps
    assert sum(copies) >= 3 * 8  # each grew many times ...
    assert max(copies[20:]) == 1  # ... and past the first few batches, never two in one read


def test_a_big_array_grows_into_room_reserved_ahead_and_is_not_copied_again(monkeypatch):
    from tuiloss.core.analysis import arrays

    monkeypatch.setattr(arrays, "AHEAD_BYTES", 64 * 1024)
    grown = GrowableArray()
    grown.extend(np.arange(1000.0))
    early = grown.view  # a reader of the array as it was (a snapshot being analysed)
    grown.extend(np.arange(1000.0, 9000.0))  # past 64 KiB: into a mapping 8 times what is needed
    moved = grown.view.base
    assert grown.capacity == 9000 * arrays.AHEAD
    for lo in range(9000, 60_000, 700):
        grown.extend(np.arange(float(lo), float(lo + 700)))
        assert grown.view.base is moved  # the same room: nothing copied, nothing held twice
    assert np.array_equal(grown.view, np.arange(float(len(grown))))
    assert np.array_equal(early, np.arange(1000.0))  # what was read before is unchanged


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="pages are written in ahead on Linux")
def test_a_long_logs_next_batch_lands_on_pages_written_in_beforehand():
    """A series read with a backlog has the pages of its next batch faulted in on another
    thread: storing that batch takes (almost) no page faults on the storing thread."""
    from tuiloss.core.analysis import arrays

    series = Series()
    batch = 1 << 19  # 4 MiB of values
    steps = np.arange(float(batch))
    series.extend(steps, steps * 0.5, backlog=10.0)
    assert arrays._pager is not None
    arrays._pager.submit(lambda: None).result(timeout=30)  # what was asked is done
    if not arrays._madvise:
        pytest.skip("this kernel cannot write pages in ahead (MADV_POPULATE_WRITE)")
    more = np.arange(float(batch), 2.0 * batch)
    halves = more * 0.5
    before = resource.getrusage(resource.RUSAGE_THREAD).ru_minflt
    series.extend(more, halves, backlog=9.0)  # one batch fewer behind it
    faults = resource.getrusage(resource.RUSAGE_THREAD).ru_minflt - before
    pages = 2 * batch * 8 // mmap.PAGESIZE
    assert faults < pages // 10, (faults, pages)
    steps_now, values_now = series.visible()
    assert np.array_equal(steps_now, np.arange(2.0 * batch)) and np.array_equal(values_now, steps_now * 0.5)


def test_where_no_room_can_be_reserved_ahead_an_array_grows_as_before(monkeypatch):
    import mmap

    from tuiloss.core.analysis import arrays

    def refused(*args, **kwargs):
        raise OSError("no such mapping here")

    monkeypatch.setattr(arrays, "AHEAD_BYTES", 64 * 1024)
    monkeypatch.setattr(mmap, "mmap", refused)
    grown = GrowableArray()
    for lo in range(0, 30_000, 1000):
        grown.extend(np.arange(float(lo), float(lo + 1000)))
    assert np.array_equal(grown.view, np.arange(30_000.0)) and grown.capacity < 30_000 * 2


def test_the_earlier_runs_of_a_log_let_its_old_arrays_go_when_it_grows_into_new_ones():
    log = _two_trainings()
    first, _ = log.split()
    series = log.series["loss"]
    series.extend(np.arange(51.0, 51.0 + 4 * series.steps.capacity), np.full(4 * series.steps.capacity, 0.8))
    log.points = len(series)
    again, _ = log.split()
    assert again.series["loss"].steps.view.base is series.steps.view.base  # the arrays as they are now
    assert np.array_equal(again.series["loss"].visible()[1], first.series["loss"].visible()[1])


def test_the_store_the_analysis_and_the_chart_index_read_one_copy_of_the_points():
    from tuiloss.core.analysis.downsample import ColumnIndex
    from tuiloss.core.analysis.live import LiveAnalyzer

    run = Run(id="one", label="one", source="one.csv", format="csv")
    for k in range(4):
        batch = Batch()
        steps = np.arange(k * 5000, (k + 1) * 5000, dtype=float)
        batch.add_rows(steps, {"loss": 2.0 / (1.0 + steps * 1e-3), "lr": np.full(5000, 1e-3)})
        run.apply(batch)
        series = run.series["loss"]
        steps, values = series.visible()
        analyzer, index = LiveAnalyzer(), ColumnIndex()
        analyzer.update(steps, values, series.segments)
        index.sync(steps, values, key=len(series.segments))
        scan = analyzer._scan
        for reader in (scan.f_step.view, index._steps):
            assert np.shares_memory(reader, series.steps.view)
        for reader in (scan.f_value.view, index._values):
            assert np.shares_memory(reader, series.values.view)
        assert run.series["lr"].steps is series.steps  # and the metrics of a row share their steps


def test_big_room_made_at_once_is_an_anonymous_mapping_and_keeps_every_value(monkeypatch):
    """Room made for a long log's backlog is mapped memory, not numpy's (which numpy would
    advise the kernel to back with huge pages, slow to fault in on a busy machine)."""
    import mmap

    from tuiloss.core.analysis import arrays

    monkeypatch.setattr(arrays, "AHEAD_BYTES", 64 * 1024)
    grown = GrowableArray()
    grown.extend(np.arange(100.0))
    grown.reserve(20_000)  # 160 KB: past the threshold
    assert grown.capacity == 20_000 and _memory_of(grown.view) is mmap.mmap
    grown.extend(np.arange(100.0, 20_000.0))
    assert np.array_equal(grown.view, np.arange(20_000.0))
    small = GrowableArray()
    small.reserve(1000)  # 8 KB: numpy's own
    assert small.capacity == 1000 and _memory_of(small.view) is not mmap.mmap


def _memory_of(array: np.ndarray) -> type:
    """The type of what finally holds an array's memory."""
    base = array
    while isinstance(base, np.ndarray) and base.base is not None:
        base = base.base
    return type(getattr(base, "obj", base))


def _points(steps, values) -> Batch:
    batch = Batch()
    batch.add("loss", np.asarray(steps, dtype=float), np.asarray(values, dtype=float))
    return batch


def test_a_runs_version_moves_when_a_batch_a_mark_or_a_listed_field_changes_it():
    run = Run(id="a", label="a", source="a", format="csv")
    seen = [run.version]

    def moved() -> bool:
        seen.append(run.version)
        return seen[-1] != seen[-2]

    run.apply(_points([1, 2], [1.0, 0.9]))
    assert moved()
    run.mark(SegmentEvent("truncated"))
    assert moved()
    run.label = "b"
    assert moved()
    run.deleted = True
    assert moved()
    assert run.primary_metric == "loss" and run.split() == [run]
    assert not moved()  # looking is no change


def _from_scratch(store: Store) -> list[Run]:
    return list(store)


def test_the_listing_kept_up_to_date_is_the_listing_made_from_scratch():
    store = Store()
    first = store.add(Run(id="a", label="a", source="a", format="csv"))
    store.add(Run(id="b", label="b", source="b", format="csv"))
    first.apply(_points(*_curve(1, 80)))
    store.runs["b"].apply(_points(*_curve(1, 30)))
    listing = store.listing()
    assert listing == _from_scratch(store) and [run.id for run in listing] == ["a", "b"]
    assert store.listing() is listing  # nothing changed: the same list
    store.runs["b"].apply(_points(*_curve(31, 10)))
    assert store.listing() is listing  # points grew: the same runs, the same list
    first.apply(_points(*_curve(1, 50, first=2.1, last=0.9)))  # training restarted in a's log
    restarted = store.listing()
    assert restarted is not listing
    assert [run.id for run in restarted] == ["a", "a#2", "b"] == [run.id for run in _from_scratch(store)]
    assert all(a is b for a, b in zip(restarted, _from_scratch(store)))
    first.label = "renamed"
    renamed = store.listing()
    assert renamed is not restarted and [run.label for run in renamed] == ["renamed", "renamed #2", "b"]
    store.add(Run(id="c", label="c", source="c", format="csv"))
    assert [run.id for run in store.listing()] == ["a", "a#2", "b", "c"] == [run.id for run in _from_scratch(store)]
    del store.runs["b"]  # a log gone: the listing starts again
    assert [run.id for run in store.listing()] == ["a", "a#2", "c"] == [run.id for run in _from_scratch(store)]
