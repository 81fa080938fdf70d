"""What keeps the viewer's cost to what is on screen and what changed, with many runs.

The runs list and the panel render only the lines on screen; the list's model works a row out
when it is asked; the safety poll checks runs in turn within a budget; watchdog is asked only
for writes; the status line's counts follow reads and the selection.
"""

import contextlib
import os
import threading
import time

import pytest
from rich.text import Text
from ui_helpers import CountingSelection, settle, wait_for, wait_loaded

from tuiloss.core.engine import Engine, Options, load
from tuiloss.core.store import Run
from tuiloss.ui.app import make_app
from tuiloss.ui.runstate import Activities, ListedRuns, list_rows
from tuiloss.ui.selection import Selection, parse_filter
from tuiloss.ui.watcher import Watcher


def write_runs(root, count, points=20, start=1):
    for k in range(count):
        folder = root / f"run{k:03d}"
        folder.mkdir(parents=True)
        (folder / "metrics.csv").write_text(
            "step,loss\n" + "".join(f"{s},{1.0 / (s + k):.6f}\n" for s in range(start, start + points)))


@contextlib.asynccontextmanager
async def watching(root, config_for, runs: int, points: int = 20):
    """The viewer of ``runs`` new runs under ``root``, loaded and at rest: (app, pilot)."""
    write_runs(root, runs, points)
    app = make_app(config_for(root))
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_loaded(pilot, app)
        await settle(pilot, app)
        yield app, pilot


# -- the list's model ------------------------------------------------------------------------------

def test_the_model_works_out_only_the_rows_asked_for(tmp_path):
    write_runs(tmp_path, 30)
    store, _, _ = load([str(tmp_path)])
    selection = CountingSelection()
    for run in store:
        selection.add(run.id)
    rows = ListedRuns(selection.numbered(list(store)), selection, plain=False, value_at=None, findings={},
                      stalled=(), new=(), activity=Activities(), now=0.0)
    assert len(rows) == 30 and selection.asked == 0
    assert rows[12].label.endswith("run012") and selection.asked == 1
    assert rows[12] is rows[12] and selection.asked == 1  # once per model
    assert "run029" in rows.key(29) and selection.asked == 1
    assert rows.index_of(rows.key(7)) == 7 and rows.index_of("nope") is None
    assert list(rows) == list_rows(list(store), selection, plain=False, at_cursor=None, findings={}, stalled=(),
                                   new=(), activity=Activities(), now=0.0)


def test_values_at_the_cursor_only_for_shown_runs_with_the_metric():
    selection = Selection(None)
    runs = [Run(id=name, label=name, source=name, format="csv") for name in ("a", "b")]
    for run in runs:
        selection.add(run.id)
    selection.toggle(["b"], False)
    asked = []

    def value_at(run):
        asked.append(run.id)
        return True, 0.5

    rows = ListedRuns(selection.numbered(runs), selection, plain=True, value_at=value_at, findings={},
                      stalled=(), new=(), activity=Activities(), now=0.0)
    assert [row.value for row in rows] == ["0.500", ""]
    assert asked == ["a"]


def test_the_filter_is_searched_again_only_when_runs_labels_or_filter_change():
    selection = Selection(None)
    runs = [Run(id=f"r{k}", label=f"lr{k}", source=f"r{k}", format="csv") for k in range(5)]
    selection.filter = parse_filter("lr[13]")
    searched = []
    matches = selection.matches
    selection.matches = lambda run: searched.append(run.id) or matches(run)
    assert [n for n, _ in selection.numbered(runs)] == [2, 4]
    assert [n for n, _ in selection.numbered(runs)] == [2, 4] and len(searched) == 5
    runs[3].label = "lr0"  # relabelled (a moved run)
    assert [n for n, _ in selection.numbered(runs)] == [2]
    selection.filter = parse_filter("lr0")
    assert [n for n, _ in selection.numbered(runs)] == [1, 4] and len(searched) == 15


def test_the_selection_version_follows_what_is_listed_and_shown():
    selection = Selection(None)
    seen = [selection.version]
    for change in (lambda: selection.add("a"), lambda: selection.toggle(["a"]),
                   lambda: selection.show_only([], "a"), lambda: setattr(selection, "filter", parse_filter("x"))):
        change()
        assert selection.version > seen[-1]
        seen.append(selection.version)
    assert not selection.add("a") and selection.version == seen[-1]  # known: nothing changed


def test_the_newest_growth_is_kept_as_runs_grow():
    activity = Activities()
    assert activity.since_last(10.0) is None
    activity.found("a", None)
    assert activity.since_last(10.0) is None
    activity.found("b", 5.0)
    activity.grew("a", 7.0)
    activity.grew("b", 6.0)
    assert activity.since_last(10.0) == pytest.approx(3.0)


# -- the widgets ------------------------------------------------------------------------------------

async def test_a_long_list_renders_the_rows_on_screen_and_scrolls_to_the_cursor(tmp_path, config_for):
    async with watching(tmp_path / "logs", config_for, 40) as (app, pilot):
        run_list = app.run_list
        height = run_list.size.height
        assert len(run_list.rows_shown) == 40 and height < 40
        asked = []
        rows = run_list._rows
        getitem = type(rows).__getitem__
        type(rows).__getitem__ = lambda self, index: asked.append(index) or getitem(self, index)
        try:
            run_list._strips.clear()
            for y in range(height):
                run_list.render_line(y)
        finally:
            type(rows).__getitem__ = getitem
        assert set(asked) <= set(range(height))  # only the rows on screen
        for _ in range(39):
            await pilot.press("down")
        await pilot.pause()
        assert run_list.highlighted_key == rows.key(39)
        last = run_list.render_line(height - 1).text
        assert "run039" in last
        assert "#" in run_list.render_line(0).text and "state" in run_list.render_line(0).text  # the header stays
        await pilot.press("space")  # the highlighted run is the one toggled
        await settle(pilot, app)
        assert not app.selection.is_on(rows.key(39))


async def test_a_new_value_repaints_one_row(tmp_path, config_for):
    async with watching(tmp_path / "logs", config_for, 5) as (app, pilot):
        painted = []
        refresh = app.run_list.refresh
        app.run_list.refresh = lambda *regions, **kw: painted.append(regions) or refresh(*regions, **kw)
        with open(tmp_path / "logs" / "run002" / "metrics.csv", "a") as handle:
            handle.write("21,0.4321\n")
        await wait_for(pilot, lambda: any(row.value == "0.432" for row in app.run_list.rows_shown), what="the new value")
        await settle(pilot, app)
        app.run_list.refresh = refresh
        lines = {region.y for regions in painted for region in regions}
        assert painted and all(regions for regions in painted)  # never the whole list
        assert lines == {3}  # header, run000, run001, then run002


async def test_the_panel_draws_its_lines_with_their_styles(tmp_path, config_for):
    write_runs(tmp_path / "logs", 2)
    app = make_app(config_for(tmp_path / "logs"))
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_loaded(pilot, app)
        panel = app.insights_panel
        text = Text("first\n")
        text.append("second", style="bold red")
        text.append(" plain\n\nlast")
        panel.show(text)
        await pilot.pause()
        lines = [panel.render_line(y) for y in range(5)]
        assert [line.text.rstrip() for line in lines] == ["first", "second plain", "", "last", ""]
        bold = [seg for seg in lines[1] if seg.text == "second"]
        assert bold and bold[0].style.bold and bold[0].style.color.name == "red"
        assert not any(seg.style.bold for seg in lines[1] if seg.text.strip() == "plain")
        assert panel.virtual_size.height == 4


# -- the safety poll and the watcher ----------------------------------------------------------------

def test_a_sweep_checks_the_runs_in_turn_within_its_budget(tmp_path):
    write_runs(tmp_path, 6)
    engine = Engine([str(tmp_path)], Options())
    engine.scan()
    checked = []
    for run_id, source in engine.sources.items():
        source.changed = lambda run_id=run_id: checked.append(run_id) or "run004" in run_id
    ticks = iter(range(1000))
    clock = lambda: next(ticks) * 0.001  # each check takes a millisecond  # noqa: E731
    assert engine.sweep(0.0015, clock=clock) == []  # two checks fit
    assert len(checked) == 2
    found = engine.sweep(0.0015, clock=clock) + engine.sweep(0.0015, clock=clock)
    assert len(checked) == 6 and len(set(checked)) == 6  # on from where the last stopped
    assert len(found) == 1 and "run004" in found[0]
    assert len(engine.sweep(1.0)) == 1 and len(checked) == 12  # a big budget: every run at once


def test_a_log_grown_without_an_event_is_read_by_the_sweep(tmp_path):
    """A watcher whose events never come (a remote writer, a full inotify queue): the safety poll reads it."""
    import tuiloss.core.driver as driver_module
    from ui_helpers import StaticWatcher

    write_runs(tmp_path, 3)
    engine = Engine([str(tmp_path)], Options(), hold=0.0)
    posted = []
    watcher = StaticWatcher([str(tmp_path)])
    ingestor = driver_module.Ingestor(engine, watcher, posted.append)
    saved, driver_module.SAFETY_POLL = driver_module.SAFETY_POLL, 0.05
    thread = threading.Thread(target=ingestor.run, daemon=True)
    try:
        thread.start()
        deadline = time.monotonic() + 10
        while not any(type(p).__name__ == "LoadFinished" for p in posted):
            assert time.monotonic() < deadline
            time.sleep(0.01)
        with open(tmp_path / "run001" / "metrics.csv", "a") as handle:
            handle.write("99,0.01\n")
        while not any("run001" in u.run_id for p in posted if hasattr(p, "result")
                      for u in p.result.updates if not p.initial):
            assert time.monotonic() < deadline, "the sweep never read the grown log"
            ingestor.ack()
            time.sleep(0.01)
    finally:
        driver_module.SAFETY_POLL = saved
        ingestor.stop()
        thread.join(timeout=5)


def test_reads_and_scans_cause_no_events(tmp_path):
    """inotify is asked for writes only: opening, reading and listing the tree queues nothing."""
    write_runs(tmp_path, 3)
    watcher = Watcher([str(tmp_path)], None, mounts=[])
    watcher.start()
    try:
        if watcher.mode != "inotify":
            pytest.skip(f"no inotify here ({watcher.reason})")
        for _ in range(5):
            for folder in tmp_path.iterdir():
                list(os.scandir(folder))
                (folder / "metrics.csv").read_bytes()
        appended = tmp_path / "run000" / "metrics.csv"
        with open(appended, "a") as handle:
            handle.write("99,0.01\n")
        seen: set[str] = set()
        deadline = time.monotonic() + 10
        while str(appended) not in seen:
            assert time.monotonic() < deadline, seen
            watcher.wait(0.1)
            changes = watcher.take()
            assert not changes.structure
            seen |= changes.paths
        assert seen == {str(appended)}  # the reads and listings before it said nothing
    finally:
        watcher.stop()


def test_a_first_load_with_a_budget_comes_in_parts_and_reads_everything(tmp_path):
    write_runs(tmp_path, 5, points=30)
    engine = Engine([str(tmp_path)], Options(), hold=0.0)
    engine.scan()
    parts = []
    while True:
        result = engine.read(check_all=True, budget=0.0)  # one run per read, in turn
        parts.append([update.run_id for update in result.updates])
        if not result.more:
            break
    read = [run_id for part in parts for run_id in part]
    assert len(parts) >= 5 and all(len(part) <= 1 for part in parts)
    assert sorted(set(read)) == sorted(engine.sources)  # every run, none twice while it had news
    store, _, _ = load([str(tmp_path)])
    assert store.points == 5 * 30


async def test_a_new_frame_repaints_only_the_chart_rows_that_changed(tmp_path, config_for):
    async with watching(tmp_path / "logs", config_for, 3, points=400) as (app, pilot):
        chart = app.chart
        painted = []
        refresh = chart.refresh
        chart.refresh = lambda *regions, **kw: painted.append(regions) or refresh(*regions, **kw)
        draws = chart.draws
        spec = chart.spec
        app.schedule_redraw()  # the same picture again: nothing to paint
        await wait_for(pilot, lambda: chart.draws > draws, what="a redraw")
        assert painted == [] and chart.spec is not spec
        with open(tmp_path / "logs" / "run001" / "metrics.csv", "a") as handle:
            handle.write("401,0.01\n")  # a step up at the end: its last column changes, little else
        await wait_for(pilot, lambda: chart.spec.newest_step == 401, what="the new point drawn")
        chart.refresh = refresh
        rows = {region.y for regions in painted for region in regions}
        assert painted and all(painted) and 0 < len(rows) < chart.size.height / 2


async def test_runs_wait_to_join_the_chart_while_keys_come_and_join_once_they_rest(tmp_path, config_for):
    from tuiloss.ui.selection import ChartPacing

    write_runs(tmp_path, 20)
    app = make_app(config_for(tmp_path))
    now = [0.0]
    app.pacing = ChartPacing(most=2, rest=5.0, clock=lambda: now[0])
    app.pacing.keyed()  # as if a key came: the clock stands still, so the keys never rest
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: app.loaded and app.ingestor.idle, 20, "the load")
        app.schedule_redraw()
        await wait_for(pilot, lambda: not app.redraws.pending and app.pacing.waiting == 20, 10, "a frame")
        assert not app.pacing._on and app._admit_due and not app.settled()
        await pilot.press("1")  # a key's frame: none joins, run 1 leaves the shown ones
        await wait_for(pilot, lambda: not app.redraws.pending and app.pacing.waiting == 19, 10, "the key's frame")
        assert not app.pacing._on and "19 runs to draw" in app.chart.spec.title
        now[0] += 5.0  # the keys rested
        app._admit_rest()
        await settle(pilot, app)
        assert app.pacing.waiting == 0 and len(app.pacing._on) == 19
