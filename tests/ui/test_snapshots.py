"""Screenshots of the main screen on the sample logs, at 120x40 and 80x24.

Stable by construction: a frozen clock, file times set to two hours before it,
a watcher that reports a fixed mode, and relative run labels.
"""

from __future__ import annotations

import pytest

from tuiloss.ui.app import make_app

from ui_helpers import FROZEN_NOW, StaticWatcher, freeze_mtimes, settle, wait_loaded


@pytest.fixture
def frozen_app(sample_logs, config_for, tmp_path):
    freeze_mtimes(sample_logs)

    def build(**changes):
        return make_app(config_for(sample_logs, **changes), watcher_factory=StaticWatcher, clock=lambda: FROZEN_NOW,
                        export_dir=str(tmp_path / "exports"))

    return build


def _ready(app):
    async def run_before(pilot):
        await wait_loaded(pilot, app)

    return run_before


def test_main_screen_120x40(snap_compare, frozen_app):
    app = frozen_app()
    assert snap_compare(app, terminal_size=(120, 40), run_before=_ready(app))


def test_main_screen_80x24(snap_compare, frozen_app):
    app = frozen_app()
    assert snap_compare(app, terminal_size=(80, 24), run_before=_ready(app))


def test_ascii_linear_zoomed_with_cursor_120x40(snap_compare, frozen_app):
    app = frozen_app(ascii=True, log_x=False)

    async def run_before(pilot):
        await wait_loaded(pilot, app)
        await pilot.press("left_square_bracket", "end", "left", "left")
        await settle(pilot, app)

    assert snap_compare(app, terminal_size=(120, 40), run_before=run_before)


def test_grouped_by_configuration_120x40(snap_compare, frozen_app):
    """``g``: a median curve and a min-max band per configuration, its row and its seeds' findings."""
    app = frozen_app()

    async def run_before(pilot):
        await wait_loaded(pilot, app)
        await pilot.press("g")
        app.clear_notifications()  # the toast saying how many configurations: gone after 3 s anyway
        await settle(pilot, app)

    assert snap_compare(app, terminal_size=(120, 40), run_before=run_before)


def test_grouped_ascii_80x24(snap_compare, frozen_app):
    app = frozen_app(ascii=True, group_by=("norm", "gradient_clip"))
    assert snap_compare(app, terminal_size=(80, 24), run_before=_ready(app))
