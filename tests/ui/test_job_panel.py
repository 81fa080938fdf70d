"""The insights panel shows a job of per-rank logs under its lead rank, named as the job, with the
rank that stopped while the others went on (not only in the job's row)."""

from __future__ import annotations

import math
from pathlib import Path

from tuiloss.core.engine import load
from tuiloss.core.report import build_report
from tuiloss.core.store import Store
from tuiloss.ui.app import make_app
from tuiloss.ui.panel import PanelText
from tuiloss.ui.runstate import Activities
from tuiloss.ui.selection import Selection, parse_filter

from ui_helpers import settle, wait_for, wait_loaded

STOPPED = "rank 3 stopped at step 2.0K while 7 ranks went on to 6.0K"


def write_job(folder: Path, ranks: int = 8, stopped: int | None = 3) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for rank in range(ranks):
        last = 2000 if rank == stopped else 6000
        (folder / f"rank{rank}.log").write_text("".join(
            f"step {s}/6000 | loss {2 * math.exp(-s / 2000) + 0.3 + 0.01 * rank:.4f} | lr 3.0e-04\n"
            for s in range(10, last + 1, 10)))


def folded(folder: Path):
    """The runs read from ``folder``, all selected, its jobs worked out and folded as the viewer does."""
    store, _, _ = load([str(folder)])
    selection, activity = Selection(None), Activities()
    for run in store:
        selection.add(run.id)
    activity.jobs.update(store, activity, 1e10)
    activity.jobs.hide_folded(selection)
    return store, selection, activity


def panel_text(store: Store, selection: Selection, activity: Activities) -> str:
    text = PanelText().render(build_report(store), list(store), selection, stalls={}, new=set(), plain=True,
                              ascii=False, width=100, jobs=activity.jobs.jobs)
    return text.plain


def test_the_panel_names_the_job_and_its_stopped_rank(tmp_path):
    write_job(tmp_path / "job")
    store, selection, activity = folded(tmp_path)
    text = panel_text(store, selection, activity)
    assert "job/rank*.log (8 ranks)" in text and f"! {STOPPED}" in text
    assert text.count(STOPPED) == 1 and "rank3.log" not in text  # said once, under the job
    selection.filter = parse_filter("rank3")
    selection.toggle([run.id for run in store if run.id.endswith("rank3.log")], True)
    assert f"! {STOPPED}" in panel_text(store, selection, activity)  # the rank shown on its own says it too


def test_a_job_in_step_has_no_finding_in_the_panel(tmp_path):
    write_job(tmp_path, ranks=4, stopped=None)
    store, selection, activity = folded(tmp_path)
    text = panel_text(store, selection, activity)
    assert "rank*.log (4 ranks)" in text and "stopped" not in text


async def test_the_viewers_panel_says_which_rank_stopped(tmp_path, config_for):
    write_job(tmp_path / "job")
    app = make_app(config_for(tmp_path))
    async with app.run_test(size=(140, 40)) as pilot:
        await wait_loaded(pilot, app)
        await wait_for(pilot, lambda: [row.label for row in app.run_list.rows_shown] == [
            "job/rank*.log (8 ranks, rank 3 stopped)"], what="the job's row")
        await settle(pilot, app)
        await wait_for(pilot, lambda: STOPPED in " ".join(app.insights_panel.text.plain.split()), 15,
                       "the stopped rank in the panel")
        assert "job/rank*.log (8 ranks)" in app.insights_panel.text.plain


def test_a_ranks_other_stream_has_no_row_of_its_own(tmp_path):
    """torchrun's attempt_0/N/stdout.log beside each rank's stderr.log: one row for the job."""
    from tuiloss.ui.runstate import list_rows

    attempt = tmp_path / "none_x1" / "attempt_0"
    for rank in range(4):
        (attempt / str(rank)).mkdir(parents=True)
        (attempt / str(rank) / "stdout.log").write_text(f"rank {rank} ready\n")
        last = 2000 if rank == 3 else 6000
        (attempt / str(rank) / "stderr.log").write_text("".join(
            f"2024-05-01 10:00:00,000 - INFO - step={s} loss={2 * math.exp(-s / 2000) + 0.3:.4f}\n"
            for s in range(10, last + 1, 10)))
    store, selection, activity = folded(tmp_path)
    rows = list_rows(list(store), selection, plain=True, at_cursor=None, findings={}, stalled=(), new=(),
                     activity=activity, now=1e10)
    assert [row.label for row in rows] == ["none_x1/attempt_0/*/stderr.log (4 ranks, rank 3 stopped)"]
    assert "rank 3 stopped at step 2.0K while 3 ranks went on to 6.0K" in panel_text(store, selection, activity)
