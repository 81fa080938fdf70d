"""The runs list shows a job of per-rank logs as one row, its lowest rank's; the ranks stay runs."""

from __future__ import annotations

import math
from pathlib import Path

from tuiloss.core.engine import load
from tuiloss.ui.app import make_app
from tuiloss.ui.runstate import Activities, list_rows
from tuiloss.ui.selection import Selection, parse_filter

from ui_helpers import settle, wait_for, wait_loaded


def write_ranks(folder: Path, ranks: int = 4, stalled: int | None = 2) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for rank in range(ranks):
        last = 2000 if rank == stalled else 6000
        lines = [f"step {s}/6000 | loss {2 * math.exp(-s / 2000) + 0.3 + 0.01 * rank:.4f} | lr 3.0e-04"
                 for s in range(10, last + 1, 10)]
        (folder / f"rank{rank}.log").write_text("\n".join(lines) + "\n")
    (folder / "other.log").write_text("".join(f"step {s}/400 | loss {1 / s:.5f} | lr 1.0e-03\n" for s in range(1, 400)))


def loaded(folder: Path):
    """The store read from ``folder``, every run in a fresh selection, and fresh activities."""
    store, _, _ = load([str(folder)])
    selection, activity = Selection(None), Activities()
    for run in store:
        selection.add(run.id)
    return store, selection, activity


def rows_for(store, selection, activity, now=1e10):
    return list_rows(list(store), selection, plain=True, at_cursor=None, findings={}, stalled=(), new=(),
                     activity=activity, now=now)


def test_a_job_is_one_row_and_a_filter_lists_its_ranks(tmp_path):
    write_ranks(tmp_path / "job")
    store, selection, activity = loaded(tmp_path)
    assert activity.jobs.update(store, activity, 1e10)
    activity.jobs.hide_folded(selection)
    rows = rows_for(store, selection, activity)
    assert [(row.number, row.label) for row in rows] == [("1", "other.log"),
                                                         ("2", "job/rank*.log (4 ranks, rank 2 stopped)")]
    ranks = [run.id for run in store if "rank" in run.id]
    assert [selection.is_on(run_id) for run_id in ranks] == [True, False, False, False]  # one curve: rank 0's
    selection.filter = parse_filter("rank2")
    assert [(row.number, row.label, row.visible) for row in rows_for(store, selection, activity)] == [
        ("", "rank2.log", False)]  # listed, without a number


def test_a_rank_seen_growing_is_not_said_stopped(tmp_path):
    write_ranks(tmp_path / "job")
    store, selection, activity = loaded(tmp_path)
    rank2 = str(tmp_path / "job" / "rank2.log")
    activity.grew(rank2, 1000.0)
    assert [row.label for row in rows_for(store, selection, activity, now=1010.0)][1] == "job/rank*.log (4 ranks)"
    assert [row.label for row in rows_for(store, selection, activity, now=5000.0)][1] == (
        "job/rank*.log (4 ranks, rank 2 stopped)")


def test_a_rank_no_longer_of_the_job_gets_its_curve_back(tmp_path):
    write_ranks(tmp_path, ranks=3, stalled=None)
    store, selection, activity = loaded(tmp_path)
    activity.jobs.update(store, activity, 1e10)
    activity.jobs.hide_folded(selection)
    rank1 = store.find(str(tmp_path / "rank1.log"))
    assert not selection.is_on(rank1.id)
    rank1.config = {"lr": 0.5}  # now reads as another job
    activity.jobs.update(store, activity, 2e10)
    activity.jobs.hide_folded(selection)
    assert selection.is_on(rank1.id) and rank1.id not in activity.jobs.folded


async def test_the_viewer_lists_the_job_and_reaches_a_rank_by_the_filter(tmp_path, config_for):
    write_ranks(tmp_path / "job")
    app = make_app(config_for(tmp_path))
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_loaded(pilot, app)
        await wait_for(pilot, lambda: len(app.run_list.rows_shown) == 2, what="the job's row")
        assert [row.label for row in app.run_list.rows_shown] == ["other.log",
                                                                  "job/rank*.log (4 ranks, rank 2 stopped)"]
        assert [run.label for run in app.shown_runs()] == ["other.log", "rank0.log"]
        await pilot.press("slash", *"rank2", "enter")
        await settle(pilot, app)
        assert [(row.number, row.label) for row in app.run_list.rows_shown] == [("", "rank2.log")]
        await pilot.press("space")  # the highlighted rank's own curve
        await settle(pilot, app)
        assert [run.label for run in app.shown_runs()] == ["rank2.log"]
        await wait_for(pilot, lambda: "- ■ rank2.log" in app.insights_panel.text.plain, 10, "the rank in the panel")


def test_the_runs_after_a_job_keep_the_number_keys(tmp_path):
    write_ranks(tmp_path / "a_job", ranks=8)
    (tmp_path / "later").mkdir()
    for name in ("b", "c"):
        (tmp_path / "later" / f"{name}.log").write_text("".join(f"step {s}/400 | loss {1 / s:.5f} | lr 1.0e-03\n"
                                                      for s in range(1, 400)))
    store, selection, activity = loaded(tmp_path)
    activity.jobs.update(store, activity, 1e10)
    activity.jobs.hide_folded(selection)
    rows = rows_for(store, selection, activity)
    assert [(row.number, row.label) for row in rows] == [
        ("1", "other.log"), ("2", "a_job/rank*.log (8 ranks, rank 2 stopped)"), ("3", "b.log"), ("4", "c.log")]
    assert selection.numbered_run(list(store), 3).label == "b.log"


async def test_a_rank_that_falls_silent_while_the_others_go_on(tmp_path, config_for):
    """Live: four ranks in step, then three go on and one does not; its job's row says so."""
    def append(rank: int, steps: range) -> None:
        with open(tmp_path / f"rank{rank}.log", "a") as handle:
            for s in steps:
                handle.write(f"step {s}/6000 | loss {2 * math.exp(-s / 2000) + 0.3:.4f} | lr 3.0e-04\n")

    for rank in range(4):
        append(rank, range(10, 1001, 10))
    app = make_app(config_for(tmp_path))
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_loaded(pilot, app)
        await wait_for(pilot, lambda: [r.label for r in app.run_list.rows_shown] == ["rank*.log (4 ranks)"],
                       what="the job in step")
        for rank in (0, 1, 3):
            append(rank, range(1010, 3001, 10))
        await wait_for(pilot, lambda: [r.label for r in app.run_list.rows_shown] == [
            "rank*.log (4 ranks, rank 2 stopped)"], 15, "the stopped rank said")
