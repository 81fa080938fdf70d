"""Reads are applied a slice at a time, and a key's frame goes before them."""

from __future__ import annotations

from textual import events

from tuiloss.config import Config
from tuiloss.core.driver import Ingested
from tuiloss.core.engine import ReadResult, Update
from tuiloss.ui.app import make_app

from ui_helpers import settle, wait_for, wait_loaded


def _noting(app):
    """Wrap the app so ``log`` notes each part of a read applied and each chart frame drawn."""
    log: list[str] = []
    apply_part, draw = app._apply_part, app.chart.draw

    def noting_part(event, result, last):
        log.append("part")
        apply_part(event, result, last)

    def noting_draw(spec):
        log.append("frame")
        draw(spec)

    app.reads._apply, app.chart.draw = noting_part, noting_draw
    return log


def _long_read(app, updates: int) -> Ingested:
    """A read of ``updates`` updates (nothing new in them) of the runs there are."""
    runs = list(app.store.runs)
    return Ingested(ReadResult(updates=[Update(runs[k % len(runs)]) for k in range(updates)]))


async def test_a_key_pressed_while_a_long_read_is_applied_is_handled_between_its_slices(sample_logs):
    app = make_app(Config(paths=(str(sample_logs),)))
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_loaded(pilot, app)
        app.reads.part, app.reads.budget = 1, 0.0  # a part a slice
        log = _noting(app)
        on_before = app.selection.is_on(app.listed_runs()[0].id)
        app.ingestor._inflight += 1  # as the driver counts the read it posts
        app.post_message(events.Key("1", "1"))  # queued behind the read's first slice
        app.apply_records(type("Posted", (), {"batch": _long_read(app, 40)})())
        await wait_for(pilot, lambda: not app.reads, 10, "the read applied")
        await settle(pilot, app)
        assert app.selection.is_on(app.listed_runs()[0].id) != on_before  # the key was handled
        first_frame = log.index("frame")
        assert 0 < log[:first_frame].count("part") < 40  # its frame came between the read's slices
        assert log.count("part") == 40 and app.reads.slices >= 40


async def test_a_read_that_comes_while_a_keys_frame_is_due_is_applied_after_that_frame(sample_logs):
    app = make_app(Config(paths=(str(sample_logs),)))
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_loaded(pilot, app)
        log = _noting(app)
        points = app.store.points
        app.action_toggle_run(0)  # the key's frame is due
        app.ingestor._inflight += 1
        app.apply_records(type("Posted", (), {"batch": _long_read(app, 3)})())
        assert app.reads and "part" not in log  # held for the frame
        await wait_for(pilot, lambda: not app.reads, 10, "the read applied")
        await settle(pilot, app)
        assert log.index("frame") < log.index("part") and app.store.points == points
        assert app.ingestor.idle  # the read was acknowledged
