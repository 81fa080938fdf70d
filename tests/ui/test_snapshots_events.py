"""Screenshots of event marks (t), another x axis (X) and small multiples (M).

Stable as the main screen's: a frozen clock, file times set before it, a watcher with a fixed
mode, relative labels; wall times read as UTC.
"""

from __future__ import annotations

import pytest

from tuiloss.ui.app import make_app
from tuiloss.ui.multiples import MultiplesScreen

from test_events_axes_multiples import write_logs
from ui_helpers import FROZEN_NOW, StaticWatcher, freeze_mtimes, settle, wait_for, wait_loaded


@pytest.fixture
def frozen(config_for, tmp_path):
    def build(folder, **changes):
        freeze_mtimes(folder)
        return make_app(config_for(folder, **changes), watcher_factory=StaticWatcher, clock=lambda: FROZEN_NOW,
                        export_dir=str(tmp_path / "exports"))

    return build


def test_events_with_cursor_120x40(snap_compare, frozen, sample_logs):
    app = frozen(sample_logs)

    async def run_before(pilot):
        await wait_loaded(pilot, app)
        await pilot.press("t")
        app._set_view(cursor=25000.0)  # run 1's checkpoint and its eval, beside its spike
        app._draw_list()
        await settle(pilot, app)

    assert snap_compare(app, terminal_size=(120, 40), run_before=run_before)


def test_wall_time_axis_80x24(snap_compare, frozen, tmp_path):
    app = frozen(write_logs(tmp_path / "logs"))

    async def run_before(pilot):
        await wait_loaded(pilot, app)
        await pilot.press("X", "x", "t")
        await settle(pilot, app)

    assert snap_compare(app, terminal_size=(80, 24), run_before=run_before)


@pytest.mark.parametrize("size", [(80, 24), (120, 40)])
def test_small_multiples(snap_compare, frozen, sample_logs, size):
    app = frozen(sample_logs)

    async def run_before(pilot):
        await wait_loaded(pilot, app)
        await pilot.press("M")
        await wait_for(pilot, lambda: isinstance(app.screen, MultiplesScreen), what="the multiples screen")
        screen = app.screen
        await wait_for(pilot, lambda: len(screen.query("LossChart")) == len(screen.panes)
                       and all(chart.spec is not None and chart.size.width for chart in screen.query("LossChart")),
                       what="the panes drawn")
        screen.redraw()
        await pilot.pause()

    assert snap_compare(app, terminal_size=size, run_before=run_before)
