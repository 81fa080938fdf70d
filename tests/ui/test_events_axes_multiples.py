"""Keys t (events), X (x axes) and M (small multiples), pressed in a running app."""

from __future__ import annotations

import math

import pytest

from tuiloss.ui.app import make_app
from tuiloss.ui.multiples import MultiplesScreen, grid_shape, panes_of
from tuiloss.ui.xaxis import XAxis, clock_label, duration_label

from ui_helpers import FROZEN_NOW, StaticWatcher, freeze_mtimes, settle, wait_for, wait_loaded


def write_logs(folder):
    """A JSONL run with an LR staircase, a loss scale, wall times and tokens seen; a text run without them."""
    folder.mkdir(parents=True, exist_ok=True)
    lines = []
    for s in range(1, 301):
        lr = 1e-3 if s < 150 else 1e-4
        scale = 65536 if s < 200 else 32768
        loss = 3 * math.exp(-s / 60) + 0.5 + 0.01 * math.sin(s)
        lines.append('{"step": %d, "loss": %.4f, "lr": %g, "loss_scale": %d, "grad_norm": %.3f, "_timestamp": %.1f, '
                     '"num_input_tokens_seen": %d}' % (s * 10, loss, lr, scale, 1 + 0.1 * math.cos(s), 1.7e9 + s * 3.0, s * 4096))
        if s % 50 == 0:
            lines.append('{"step": %d, "eval_loss": %.4f}' % (s * 10, loss + 0.1))
    (folder / "a.jsonl").write_text("\n".join(lines) + "\n")
    text = []
    for s in range(1, 201):
        text.append(f"iter {s * 10}: loss {2.5 * math.exp(-s / 50) + 0.6:.4f}, lr {3e-4 * 0.5 * (1 + math.cos(math.pi * s / 200)):.3e}")
        if s % 100 == 0:
            text.append("saving checkpoint to out")
    (folder / "b.log").write_text("\n".join(text) + "\n")
    return folder


@pytest.fixture
def logs(tmp_path):
    folder = write_logs(tmp_path / "logs")
    freeze_mtimes(folder)
    return folder


@pytest.fixture
def app_for(config_for, tmp_path):
    def build(folder, **changes):
        return make_app(config_for(folder, **changes), watcher_factory=StaticWatcher, clock=lambda: FROZEN_NOW,
                        export_dir=str(tmp_path / "exports"))

    return build


async def test_t_marks_each_runs_events_in_its_colour_and_lists_those_near_the_cursor(logs, app_for):
    app = app_for(logs)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_loaded(pilot, app)
        assert app.chart.spec.event_marks == [] and "events" not in app.chart.spec.title
        await pilot.press("t")
        await settle(pilot, app)
        spec = app.chart.spec
        colours = {run.label: app.selection.color(run.id) for run in app.shown_runs()}
        glyphs = {(glyph, colour) for _, colour, glyph, _ in spec.event_marks}
        places = {glyph: place for _, _, glyph, place in spec.event_marks}
        assert places == {"L": "line", "S": "line", "C": "top", "·": "bottom"}
        assert ("L", colours["a.jsonl"]) in glyphs and ("S", colours["a.jsonl"]) in glyphs  # LR and loss-scale drops
        assert ("C", colours["b.log"]) in glyphs  # its "saving checkpoint" lines
        assert ("·", colours["a.jsonl"]) in glyphs  # evaluations, on the bottom row only
        assert not any(glyph == "L" for glyph, colour in glyphs if colour == colours["b.log"])  # a cosine: no LR event
        assert "events: " in spec.title
        # The cursor at the LR drop (step 1500) lists it with the run's number.
        app._set_view(cursor=1500.0)
        app._draw_list()
        await settle(pilot, app)
        assert "near the cursor: 1 L lr dropped" in str(app.run_list.border_title)
        await pilot.press("t")
        await settle(pilot, app)
        assert app.chart.spec.event_marks == [] and app.run_list.border_title == "runs"


async def test_X_cycles_the_axes_present_and_says_runs_without_one(logs, app_for):
    app = app_for(logs)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_loaded(pilot, app)
        seen = []
        for _ in range(4):
            await pilot.press("X")
            await settle(pilot, app)
            seen.append((app.xaxis.name, app.chart.spec.title))
        assert [name for name, _ in seen] == ["wall", "elapsed", "progress", "step"]
        wall, elapsed, progress, step = (title for _, title in seen)
        assert "log wall time" in wall and "no wall time in 1 of 2 runs" in wall
        assert "time since start" in elapsed and "no progress in 1 of 2 runs" in progress
        assert "log step" in step and "runs" not in step
        await pilot.press("X", "X", "X", "x")  # progress, on a linear axis
        await settle(pilot, app)
        spec = app.chart.spec
        assert not spec.x_log and spec.x_lim[1] == pytest.approx(300 * 4096)
        assert len(spec.traces) == 1  # the text log has no counter: said, not drawn
        await pilot.press("end")
        await settle(pilot, app)
        assert app._cursor_label(app.view.cursor) == "1.23M"  # the cursor is a place on the counter's axis
        values = app.late.values_at(app.shown_runs(), app.selection, app.view.cursor, app.xaxis)
        by_label = {run.label: values.get(run.id) for run in app.shown_runs()}
        assert by_label["b.log"] is None and by_label["a.jsonl"] == pytest.approx(0.5 + 3 * math.exp(-5) + 0.01 * math.sin(300), abs=1e-3)


async def test_X_with_no_other_axis_says_so_and_stays_on_steps(logs, app_for):
    (logs / "a.jsonl").unlink()
    app = app_for(logs)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_loaded(pilot, app)
        await pilot.press("X")
        await settle(pilot, app)
        assert app.xaxis.name == "step"
        assert any("no wall time" in str(n.message) for n in app._notifications)


@pytest.mark.parametrize("size, most", [((80, 24), 4), ((120, 40), 12)])
async def test_M_shows_small_multiples_that_fit_and_escape_returns(logs, app_for, size, most):
    app = app_for(logs)
    async with app.run_test(size=size) as pilot:
        await wait_loaded(pilot, app)
        await pilot.press("M")
        await wait_for(pilot, lambda: isinstance(app.screen, MultiplesScreen), what="the multiples screen")
        screen = app.screen
        await wait_for(pilot, lambda: all(chart.spec is not None for chart in screen.query("LossChart"))
                       and len(screen.query("LossChart")) == len(screen.panes), what="the panes drawn")
        assert [p.title for p in screen.panes][:4] == ["loss", "eval loss", "learning rate", "grad norm"]
        assert len(screen.panes) <= most
        specs = [chart.spec for chart in screen.query("LossChart")]
        assert len({spec.x_lim for spec in specs}) == 1  # one x window for every pane
        assert specs[0].title.startswith("loss")
        await pilot.press("escape")
        await wait_for(pilot, lambda: not isinstance(app.screen, MultiplesScreen), what="the main screen")


def test_panes_order_and_grid():
    from tuiloss.core.model import Batch
    from tuiloss.core.store import Run
    import numpy as np

    def run_of(*metrics):
        run = Run(id=metrics[0], label="r", source="r", format="jsonl")
        batch = Batch()
        for name in metrics:
            batch.add(name, np.arange(10.0), np.ones(10))
        run.apply(batch)
        return run

    hf = run_of("train/loss", "eval/loss", "train/learning_rate", "train/grad_norm", "train/epoch",
                "eval/accuracy", "_timestamp", "_checkpoint", "tokens_per_sec", "train/global_step")
    lightning = run_of("train_loss", "val_loss", "lr-AdamW")
    panes, total = panes_of([hf, lightning], 5)
    assert [p.title for p in panes] == ["loss", "eval loss", "learning rate", "grad norm", "eval/accuracy"]
    # Each run's own names: one pane for both runs' losses, evals and learning rates.
    assert [(p.pick(hf), p.pick(lightning)) for p in panes[:4]] == [
        ("train/loss", "train_loss"), ("eval/loss", "val_loss"), ("train/learning_rate", "lr-AdamW"), ("train/grad_norm", None)]
    assert total == 6  # epoch and global step are axes, _timestamp a clock, _checkpoint events: not panes
    assert grid_shape(80, 24) == (2, 2) and grid_shape(120, 40) == (3, 4) and grid_shape(30, 8) == (1, 1)


def test_axis_labels():
    assert [duration_label(s) for s in (0, 45, 600, 5400, 90000)] == ["0s", "45s", "10m", "1.5h", "1d"]
    label = clock_label(1.7e9, 3600)
    assert label(0) == "22:13" and label(60) == "22:14"
    assert XAxis().formatter(10)(2500) == "2.5K"
