"""The first frame waits only for Textual and the widgets: numpy and what needs it load after it."""

from __future__ import annotations

import json
import subprocess
import sys

from tuiloss.ui.app import make_app

from ui_helpers import wait_loaded

HEAVY = ("numpy", "pandas", "tuiloss.core.store", "tuiloss.core.discover", "tuiloss.core.report")

#: Runs the viewer headless in a fresh interpreter and notes, when the start-up step that loads
#: the rest begins, which heavy modules were loaded and whether the footer keys were on screen.
PROBE = """
import asyncio, json, sys
from textual.widgets import Footer
from tuiloss.cli import _check_paths
from tuiloss.config import Config
from tuiloss.ui import startup
from tuiloss.ui.app import make_app

heavy = {heavy!r}
seen = {{}}
boot = startup.DeferredStart._boot

def probe(self):
    seen["loaded"] = [name for name in heavy if name in sys.modules]
    seen["footer"] = [str(key.region) for key in self.query_one(Footer).children if key.region.area]
    boot(self)
    seen["after"] = [name for name in heavy if name in sys.modules]

startup.DeferredStart._boot = probe

async def main():
    assert _check_paths([{path!r}]) is None  # the command line's own check comes first
    app = make_app(Config(paths=({path!r},)))
    async with app.run_test(size=(120, 40)) as pilot:
        while "after" not in seen:
            await pilot.pause(0.01)
        for _ in range(6000):  # then until every run is read and analysed (at most a minute)
            if app.loaded and app.report is not None and len(app.report.runs) == len(app.store):
                break
            await pilot.pause(0.01)
        seen["analysed"] = [name for name in sys.modules if name == "pandas" or name.startswith("pandas.")]
        seen["points"] = app.store.points

asyncio.run(main())
print(json.dumps(seen))
"""


def test_numpy_and_the_engine_load_after_the_first_frame(sample_logs):
    code = PROBE.format(heavy=HEAVY, path=str(sample_logs))
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["loaded"] == []  # nothing heavy before the first frame
    assert seen["footer"]  # and that frame had its footer keys
    assert {"numpy", "tuiloss.core.store", "tuiloss.core.report"} <= set(seen["after"])
    # small logs of plain numbers (CSV, JSONL, text, trainer_state.json) are read and
    # analysed without pandas: its import would cost the start-up a third of a second
    assert seen["points"] > 4000 and seen["analysed"] == []


async def test_every_key_answers_once_started(sample_logs, config_for):
    app = make_app(config_for(sample_logs))
    assert app.check_action("quit", ()) and app.check_action("help", ())
    assert app.check_action("zoom", (1,)) is None  # not yet: nothing to zoom
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_loaded(pilot, app)
        assert app.booted and app.check_action("zoom", (1,)) is True
        await pilot.press("left_square_bracket")  # zoom in
        assert app.view.zoom == 1
