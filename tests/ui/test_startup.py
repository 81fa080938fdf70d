"""The first frame waits only for Textual and the widgets: numpy and what needs it load after it."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from tuiloss.ui.app import make_app

from ui_helpers import wait_loaded

HEAVY = ("numpy", "pandas", "tuiloss.core.store", "tuiloss.core.discover", "tuiloss.core.report")

#: Runs the viewer headless in a fresh interpreter and notes, when the start-up step that loads
#: the rest begins, which heavy modules were loaded and whether the footer keys were on screen.
PROBE = """
import asyncio, json, os, sys, threading
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
        seen["blas"] = os.environ.get("OPENBLAS_NUM_THREADS")
        if os.path.isdir("/proc/self/task"):  # threads Python did not start: numpy's BLAS workers
            seen["native"] = len(os.listdir("/proc/self/task")) - threading.active_count()

        seen["points"] = app.store.points

asyncio.run(main())
print(json.dumps(seen))
"""


def probe(path, env: dict | None = None) -> dict:
    code = PROBE.format(heavy=HEAVY, path=str(path))
    environ = {key: value for key, value in os.environ.items() if key != "OPENBLAS_NUM_THREADS"}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          env={**environ, **(env or {})})
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_numpy_and_the_engine_load_after_the_first_frame(sample_logs):
    seen = probe(sample_logs)
    assert seen["loaded"] == []  # nothing heavy before the first frame
    assert seen["footer"]  # and that frame had its footer keys
    assert {"numpy", "tuiloss.core.store", "tuiloss.core.report"} <= set(seen["after"])
    # small logs of plain numbers (CSV, JSONL, text, trainer_state.json) are read and
    # analysed without pandas: its import would cost the start-up a third of a second
    assert seen["points"] > 4000 and seen["analysed"] == []


def test_numpy_starts_no_blas_workers_unless_asked(sample_logs):
    # each would spin for a tenth of a second after numpy's import, on the cores the start-up needs
    seen = probe(sample_logs)
    assert seen["blas"] == "1" and seen.get("native", 0) == 0
    assert probe(sample_logs, {"OPENBLAS_NUM_THREADS": "2"})["blas"] == "2"  # the environment's choice stands


async def test_every_key_answers_once_started(sample_logs, config_for):
    app = make_app(config_for(sample_logs))
    assert app.check_action("quit", ()) and app.check_action("help", ())
    assert app.check_action("zoom", (1,)) is None  # not yet: nothing to zoom
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_loaded(pilot, app)
        assert app.booted and app.check_action("zoom", (1,)) is True
        await pilot.press("left_square_bracket")  # zoom in
        assert app.view.zoom == 1
