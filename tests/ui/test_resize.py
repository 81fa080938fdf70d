"""Any sequence of resizes ends in the layout a fresh start at the last size draws."""

from __future__ import annotations

import pytest

from tuiloss.ui.app import make_app

from ui_helpers import FROZEN_NOW, StaticWatcher, freeze_mtimes, settle, wait_loaded


def _layout(app) -> dict:
    """Where each part sits and what the chart draws: what a reader sees of the layout."""
    parts = {name: getattr(app, name) for name in ("chart", "run_list", "insights_panel", "status_bar")}
    out = {name: (tuple(widget.region), widget.has_class("hidden")) for name, widget in parts.items()}
    out["chart ticks"] = app.chart.spec.x_ticks[1], app.chart.spec.y_ticks[1]
    out["chart"] = app.chart.capture()
    return out


async def _settled_layout(pilot, app) -> dict:
    await settle(pilot, app)
    await pilot.pause()
    await settle(pilot, app)
    return _layout(app)


@pytest.mark.parametrize("sizes", [
    [(200, 60), (60, 20)],
    [(60, 20), (120, 40)],
    [(120, 40), (80, 24), (200, 60)],
    [(80, 24), (200, 60), (120, 40), (60, 20)],
], ids=lambda sizes: "->".join(f"{w}x{h}" for w, h in sizes))
async def test_a_resize_sequence_ends_as_a_fresh_start_at_that_size(sizes, sample_logs, config_for):
    freeze_mtimes(sample_logs)

    def build():
        return make_app(config_for(sample_logs), watcher_factory=StaticWatcher, clock=lambda: FROZEN_NOW)

    resized = build()
    async with resized.run_test(size=sizes[0]) as pilot:
        await wait_loaded(pilot, resized)
        for size in sizes[1:]:
            await pilot.resize_terminal(*size)
            await pilot.pause()
        after = await _settled_layout(pilot, resized)
    fresh = build()
    async with fresh.run_test(size=sizes[-1]) as pilot:
        await wait_loaded(pilot, fresh)
        expected = await _settled_layout(pilot, fresh)
    assert after == expected
