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
            # (which stay: the fewest of a few counts, as a Python thread that is just ending
            # may be gone from threading's list while the kernel still lists it)
            counts = []
            for _ in range(5):
                counts.append(len(os.listdir("/proc/self/task")) - threading.active_count())
                await pilot.pause(0.02)
            seen["native"] = min(counts)

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


#: The collector held off by ``tuiloss watch`` (the CLI's own call), then run again by the app.
COLLECTOR = """
import asyncio, gc, json, sys
import tuiloss.ui.app
from tuiloss.config import Config
from tuiloss.ui import collection

collection.LONGEST_HOLD = {longest!r}
seen = {{}}

make_app = tuiloss.ui.app.make_app


def probed(config, **options):
    app = make_app(config, **options)

    async def check():
        async with app.run_test(size=(120, 40)) as pilot:
            for _ in range(3000):
                if not app.booted or app.report is None:
                    seen["held until the findings"] = not gc.isenabled()
                if gc.isenabled():
                    break
                await pilot.pause(0.01)
            seen["findings"] = app.report is not None and len(app.report.runs)
            seen["enabled"] = gc.isenabled()
            seen["frozen"] = gc.get_freeze_count()
            for _ in range(3000):
                if not collection.unsettled():
                    break
                await pilot.pause(0.01)
            seen["settled"] = not collection.unsettled()
            seen["frozen after the load"] = gc.get_freeze_count()

    def run():
        seen["held at run"] = not gc.isenabled()
        asyncio.run(check())

    app.run = run
    return app


tuiloss.ui.app.make_app = probed
from tuiloss import cli
cli.main(["watch", {path!r}])
print(json.dumps(seen))
"""


def collector_probe(path, longest: float, script) -> dict:
    script.write_text(COLLECTOR.format(path=str(path), longest=longest))  # Textual reads an App's source
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_watch_holds_the_garbage_collector_off_until_the_first_findings_are_drawn(sample_logs, tmp_path):
    seen = collector_probe(sample_logs, 60.0, tmp_path / "probe.py")
    assert seen["held at run"] and seen["held until the findings"]
    assert seen["findings"] == 7 and seen["enabled"] and seen["frozen"] > 10_000
    assert seen["settled"] and seen["frozen after the load"] == seen["frozen"]  # the load was in: nothing to settle


def test_a_load_that_outlasts_the_hold_is_frozen_once_its_findings_are_drawn(sample_logs, tmp_path):
    seen = collector_probe(sample_logs, 0.0, tmp_path / "probe.py")  # run again before the load is in
    assert seen["enabled"] and seen["settled"] and seen["frozen after the load"] >= seen["frozen"]


def test_the_collector_runs_again_when_no_findings_come(tmp_path):
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "notes.txt").write_text("nothing to plot\n")
    seen = collector_probe(tmp_path / "logs", 0.5, tmp_path / "probe.py")
    assert seen["held at run"] and seen["enabled"] and not seen["findings"]


def test_an_app_that_found_the_collector_running_leaves_it_alone():
    import gc

    from tuiloss.ui import collection

    assert gc.isenabled()
    frozen = gc.get_freeze_count()
    collection.release()
    collection.settle()
    assert gc.isenabled() and gc.get_freeze_count() == frozen and not collection.unsettled()


def test_a_load_that_outlasts_the_hold_is_frozen_a_step_at_a_time_as_it_goes():
    import gc
    import time

    from tuiloss.ui import collection

    now = [time.monotonic() + 1e6]  # later than any step an app took in this process
    clock = lambda: now[0]  # noqa: E731
    collection.hold()
    try:
        assert not collection.step(clock)  # held: the load is frozen when it is released
        collection.release()
        frozen = gc.get_freeze_count()
        made = [[k] for k in range(1000)]  # what the load made since
        assert collection.step(clock) and gc.get_freeze_count() >= frozen + 1000
        more = [[k] for k in range(1000)]
        now[0] += collection.STEP / 2
        assert not collection.step(clock)  # at most every STEP seconds
        now[0] += collection.STEP / 2
        assert collection.step(clock) and gc.get_freeze_count() >= frozen + 2000
        collection.settle()  # the load is in: no more steps
        now[0] += collection.STEP
        assert not collection.step(clock) and gc.isenabled() and len(made) == len(more) == 1000
    finally:
        collection.release()
        gc.enable()
        gc.unfreeze()


async def test_once_a_load_is_read_what_its_first_analysis_makes_is_frozen_every_second(sample_logs):
    import gc

    from tuiloss.config import Config
    from tuiloss.ui import collection

    app = make_app(Config(paths=(str(sample_logs),)))
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_loaded(pilot, app)
        collection.hold()  # as if the load had outlasted the hold, its findings still on their way
        collection.release()
        collection._stepped = float("-inf")  # whatever clock another test stepped with
        try:
            made = [[k] for k in range(1000)]  # what the analysis made meanwhile
            assert _walked(made)
            app._tick()  # no read applied: the once-a-second tick steps
            assert not _walked(made) and collection.unsettled()
        finally:
            collection.settle()
            gc.unfreeze()
    assert len(made) == 1000


def _walked(made: list) -> bool:
    """Whether ``made`` is where the collector's collections walk (not frozen)."""
    import gc

    return any(obj is made for obj in gc.get_objects())


async def test_the_load_is_frozen_with_the_analysis_of_all_of_it_not_one_of_a_part_that_came_after(sample_logs):
    import gc

    from tuiloss.config import Config
    from tuiloss.ui import collection, messages
    from tuiloss.ui.insights import InsightsReady

    from ui_helpers import wait_for

    app = make_app(Config(paths=(str(sample_logs),)))
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_loaded(pilot, app)
        collection.hold()  # as if the load had outlasted the hold
        collection.release()
        try:
            first = app.insights.generation + 1
            app.findings.baseline_generation = first + 1  # the analysis asked for once the load was in
            app.post_message(messages.InsightsReady(InsightsReady(first, app.report, 0.0)))  # asked before
            await wait_for(pilot, lambda: app.insights.generation == first, 10, "the earlier analysis taken")
            await pilot.pause()
            assert collection.unsettled()
            app.post_message(messages.InsightsReady(InsightsReady(first + 1, app.report, 0.0)))
            await wait_for(pilot, lambda: not collection.unsettled(), 10, "the load frozen")
        finally:
            collection.settle()
            gc.unfreeze()
