"""What keeps a frame of thousands of runs to what changed: the snapshots handed to the analysis,
kept while a run is the same, and the panel's lines read from the runs' blocks as kept."""

from __future__ import annotations

import json

from rich.text import Span, Text

from tuiloss.core.engine import Engine, apply_result
from tuiloss.core.model import Notice
from tuiloss.core.report import report_json
from tuiloss.core.store import Store
from tuiloss.ui.feed import Snapshots
from tuiloss.ui.insights import metric_report, render_insights, render_lines
from tuiloss.ui.lines import PanelLines
from tuiloss.ui.snapshot import snapshot_run, snapshot_store


def write_runs(root, count: int, points: int = 60) -> list:
    paths = []
    for k in range(count):
        folder = root / f"run{k}"
        folder.mkdir()
        body = "".join(f"{s},{0.3 + 2.0 / (1 + s * 0.05 * (k + 1)):.5f}\n" for s in range(points))
        (folder / "metrics.csv").write_text("step,loss\n" + body)
        paths.append(folder / "metrics.csv")
    return paths


def read(store: Store, engine: Engine) -> None:
    apply_result(store, engine.scan())
    while True:
        result = engine.read()
        apply_result(store, result)
        if not result.more:
            return


def findings(report) -> str:
    out = report_json(report)
    for run in out["runs"]:
        run.pop("state", None)
    return json.dumps(out, sort_keys=True, default=str)


def test_an_unchanged_run_is_handed_over_as_its_last_snapshot_and_a_changed_one_is_copied_again(tmp_path):
    paths = write_runs(tmp_path, 3)
    engine, store = Engine([str(tmp_path)], hold=0.0), Store()
    read(store, engine)
    snapshots = Snapshots()
    first = snapshots.take(list(store))
    assert snapshots.made == 3
    again = snapshots.take(list(store))
    assert snapshots.made == 3 and all(a is b for a, b in zip(first, again))
    # points appended to one run: that one is copied again, and sees them; the copy before does not
    with open(paths[1], "a") as handle:
        handle.write("60,0.31\n61,0.30\n")
    read(store, engine)
    grown = snapshots.take(list(store))
    changed = [k for k, (a, b) in enumerate(zip(first, grown)) if a is not b]
    assert [grown[k].id for k in changed] == [str(paths[1])] and snapshots.made == 4
    assert len(grown[changed[0]].series["loss"]) == 62 and len(first[changed[0]].series["loss"]) == 60
    # any field the run is made with: a label, a notice, a config value
    run = store.runs[str(paths[2])]
    run.label = "renamed"
    run.notices.append(Notice("warning", "something"))
    third = snapshots.take(list(store))
    assert snapshots.made == 5 and third[2].label == "renamed" and len(third[2].notices) == 1
    store.runs[str(paths[0])].config["lr"] = 0.1
    assert snapshots.take(list(store))[0].config == {"lr": 0.1} and snapshots.made == 6
    # a run left out of a request (switched off) is copied again when it comes back
    snapshots.take(list(store)[1:])
    snapshots.take(list(store))
    assert snapshots.made == 7
    # the report over the kept snapshots is the one over fresh copies
    kept = metric_report(snapshot_store(snapshots.take(list(store))), None, None)
    fresh = metric_report(snapshot_store([snapshot_run(r) for r in store]), None, None)
    assert findings(kept) == findings(fresh)


def test_a_run_whose_config_holds_an_uncomparable_value_is_copied_again(tmp_path):
    import numpy as np

    write_runs(tmp_path, 1)
    engine, store = Engine([str(tmp_path)], hold=0.0), Store()
    read(store, engine)
    run = next(iter(store.runs.values()))
    run.config["weights"] = np.arange(3)
    snapshots = Snapshots()
    snapshots.take(list(store))
    snapshots.take(list(store))
    assert snapshots.made == 1  # the same array object: the same config
    run.config["weights"] = np.arange(3)  # an equal array: it cannot say so
    snapshots.take(list(store))
    assert snapshots.made == 2


def blocks() -> list[Text]:
    one = Text()
    one.append("1 ", style="bold")
    one.append("■", style="red")
    one.append(" run a\n  ▲ spiked\n    to 1.4\n", style="bold")
    two = Text("2 ■ run b\n")
    two.stylize("green", 2, 3)
    last = Text("Across runs\n  • a converged fastest")  # its last line ends with the block
    last.stylize("bold underline", 0, 11)
    return [Text(), one, Text(), two, Text("\n"), last]


def test_panel_lines_are_the_lines_of_the_joined_text_with_their_styles():
    lines = PanelLines(blocks())
    joined = Text()
    for block in blocks():
        joined.append_text(block)
    joined.rstrip()
    expected = joined.split("\n", allow_blank=True)
    assert lines.plain == joined.plain and len(lines) == len(expected) == 7
    for k, want in enumerate(expected):
        got = lines.line(k)
        assert got.plain == want.plain, k
        assert sorted(got.spans, key=repr) == sorted([s for s in want.spans if s.end > s.start], key=repr), k
    assert lines.line(4).plain == ""  # the block that is one newline
    assert lines.line(0).spans[0] == Span(0, 2, "bold")  # the empty block has no line: block 1 first


def test_text_put_before_panel_lines_comes_first_and_same_compares_what_is_shown():
    lines = PanelLines(blocks())
    before = Text("Configurations\n") + Text("\n") + lines
    assert isinstance(before, PanelLines) and before.plain.startswith("Configurations\n\n1 ■ run a")
    assert len(before) == len(lines) + 2
    assert lines.same(PanelLines(blocks())) and not lines.same(PanelLines(blocks()[:-1]))
    changed = blocks()
    changed[3].stylize("blue", 0, 1)
    assert not lines.same(PanelLines(changed))


def test_the_panel_text_of_a_report_is_the_same_read_by_line_or_joined(tmp_path):
    write_runs(tmp_path, 4)
    engine, store = Engine([str(tmp_path)], hold=0.0), Store()
    read(store, engine)
    report = metric_report(store, None, None)
    how = dict(colors={}, numbers={run.id: str(k + 1) for k, run in enumerate(store)}, swatches={}, width=30)
    lines, joined = render_lines(report, **how), render_insights(report, **how)
    assert [lines.line(k).plain for k in range(len(lines))] == joined.plain.split("\n")
    assert "1 ■" in joined.plain and "4 ■" in joined.plain


def test_runs_join_the_chart_a_slice_per_frame_and_those_on_it_stay():
    from tuiloss.core.store import Run
    from tuiloss.ui.selection import ChartPacing

    def run(k: int, points: int) -> Run:
        return Run(id=f"r{k}", label=f"r{k}", source=f"r{k}", format="csv", points=points)

    pacing = ChartPacing(most=2)
    runs = [run(k, 10_000) for k in range(8)] + [run(8, 0)]  # the last one has no point yet
    first = pacing.admit(runs)
    assert [r.id for r in first] == ["r0", "r1", "r8"] and pacing.waiting == 6
    second = pacing.admit(runs)
    assert [r.id for r in second] == ["r0", "r1", "r2", "r3", "r8"] and pacing.waiting == 4
    while pacing.waiting:
        pacing.admit(runs)
    assert pacing.admit(runs) == runs and pacing.waiting == 0
    assert pacing.admit(runs[1:]) == runs[1:]  # r0 switched off ...
    back = pacing.admit(runs + [run(9, 50)])  # ... and on again, beside a new run
    assert runs[0] in back and len(back) == 10 and pacing.waiting == 0
    pacing.admit(runs[1:])  # r0 off again, and two more new runs
    keyed = pacing.admit(runs + [run(9, 50), run(10, 50), run(11, 50)], fresh=False)
    assert runs[0] in keyed and len(keyed) == 10 and pacing.waiting == 2  # a key's frame: r0 had a curve
    runs[8].points = 30  # points read for the run that had none: it is new to the chart
    pacing = ChartPacing(most=1)
    assert [r.id for r in pacing.admit([runs[8], runs[0]])] == ["r8"] and pacing.waiting == 1


def test_a_report_with_the_same_marks_draws_the_same_chart():
    from types import MappingProxyType

    from tuiloss.core.analysis import Anomaly, SeriesAnalysis
    from tuiloss.core.report import MetricReport, Report, RunReport, SkipCounts
    from tuiloss.ui.findings import chart_unchanged

    def entry(run_id: str, anomalies=(), metric: str = "loss") -> RunReport:
        analysis = SeriesAnalysis(10, None, None, 0.2, 0.19, None, None, tuple(anomalies), ())
        reported = MetricReport(metric, 10, None, None, None, 0.2, 0.19, None, analysis)
        return RunReport(run_id, run_id, "", "", {}, metric, False, SkipCounts(0, {}, 0), (), (),
                         MappingProxyType({metric: reported}))

    spike = Anomaly("spike", 25000, 30000, 1.4, 0.2, "spiked to 1.40 at 25.0K")
    before = Report("0", None, (entry("a", [spike]), entry("b"), entry("c")))
    assert chart_unchanged(before, Report("0", None, (entry("a", [spike]), entry("b"), entry("c"))))
    assert chart_unchanged(before, Report("0", None, (entry("a", [spike]), entry("c"))))  # b switched off
    assert chart_unchanged(before, Report("0", None, (entry("a", [spike]), entry("c"), entry("d"))))  # d: no mark
    assert not chart_unchanged(before, Report("0", None, (entry("b"), entry("c"))))  # a's marks would go
    assert not chart_unchanged(before, Report("0", None, (entry("a", [spike]), entry("b", [spike]), entry("c"))))
    assert not chart_unchanged(before, Report("0", None, (entry("a", [spike], "val_loss"), entry("b"), entry("c"))))
    assert not chart_unchanged(None, before) and chart_unchanged(None, None)


def test_a_chart_of_many_curves_takes_more_new_ones_per_frame():
    from tuiloss.core.store import Run
    from tuiloss.ui.selection import ChartPacing

    pacing = ChartPacing(most=2, per=10)
    small = [Run(id=f"s{k}", label="", source="", format="csv", points=10) for k in range(400)]
    frames = 0
    while True:  # two a frame, then more as the chart fills (a tenth of the curves on it)
        frames += 1
        pacing.admit(small)
        if not pacing.waiting:
            break
    assert 20 < frames < 100
    new = [Run(id=f"n{k}", label="", source="", format="csv", points=1_000) for k in range(100)]
    drawn = pacing.admit(small + new)
    assert len(drawn) == 400 + 40 and pacing.waiting == 60


def test_no_run_joins_the_chart_while_keys_come_and_those_waiting_join_once_they_rest():
    from tuiloss.core.store import Run
    from tuiloss.ui.selection import ChartPacing

    now = [100.0]
    pacing = ChartPacing(most=2, rest=1.0, clock=lambda: now[0])
    runs = [Run(id=f"r{k}", label="", source="", format="csv", points=10) for k in range(6)]
    assert len(pacing.admit(runs)) == 2 and pacing.waiting == 4 and pacing.resting() == 0
    pacing.keyed()
    assert pacing.resting() == 1.0
    now[0] += 0.5
    assert len(pacing.admit(runs)) == 2 and pacing.waiting == 4  # a frame between two keys adds none
    pacing.keyed()  # another key: the rest starts again
    now[0] += 0.9
    assert len(pacing.admit(runs)) == 2 and abs(pacing.resting() - 0.1) < 1e-9
    now[0] += 0.1
    assert pacing.resting() == 0 and len(pacing.admit(runs)) == 4 and pacing.waiting == 2


def test_a_snapshot_of_a_run_whose_version_did_not_move_is_kept_unless_it_was_edited_in_place(tmp_path):
    from tuiloss.ui import feed

    write_runs(tmp_path, 2)
    engine, store = Engine([str(tmp_path)], hold=0.0), Store()
    read(store, engine)
    snapshots, compared = Snapshots(), []
    full = feed._unchanged
    feed._unchanged = lambda run, frozen: compared.append(run.id) or full(run, frozen)
    try:
        first = snapshots.take(list(store))
        again = snapshots.take(list(store))
        assert snapshots.made == 2 and all(a is b for a, b in zip(first, again)) and compared == []
        one, two = list(store)
        one.config["lr"] = 0.3  # in place: the version did not move, the config is compared
        two.notices.append(Notice("warning", "late"))
        third = snapshots.take(list(store))
        assert snapshots.made == 4 and third[0].config == {"lr": 0.3} and len(third[1].notices) == 1
        assert compared == []
        one.label = "renamed"  # a field set: the version moved, every field is compared
        assert snapshots.take(list(store))[0].label == "renamed" and compared == [one.id]
        one.changed()  # moved with nothing to tell: compared, and kept
        kept = snapshots.take(list(store))
        assert snapshots.made == 5 and compared == [one.id, one.id] and kept[0].label == "renamed"
    finally:
        feed._unchanged = full


def test_a_panel_goes_over_as_many_runs_as_its_budget_allows_and_those_not_reached_keep_their_last_block():
    from types import MappingProxyType

    from tuiloss.core.analysis import SeriesAnalysis
    from tuiloss.core.report import MetricReport, Report, RunReport, SkipCounts
    from dataclasses import replace

    from tuiloss.ui.insights import RunTexts, render_lines, render_rest

    def entry(run_id: str, label: str) -> RunReport:
        analysis = SeriesAnalysis(10, None, None, 0.2, 0.19, None, None, (), ())
        reported = MetricReport("loss", 10, None, None, None, 0.2, 0.19, None, analysis)
        return RunReport(run_id, label, "", "", {}, "loss", False, SkipCounts(0, {}, 0), (), (),
                         MappingProxyType({"loss": reported}))

    runs = [entry(f"r{k}", f"run {k}") for k in range(5)]
    blocks = RunTexts(budget=-1.0, fewest=1)  # one block made a panel
    how = dict(colors={}, numbers={f"r{k}": str(k + 1) for k in range(5)}, swatches={}, width=40)
    whole = render_lines(Report("0", None, tuple(runs)), **how)
    first = render_lines(Report("0", None, tuple(runs)), **how, kept=blocks)
    assert blocks.made == 1 and blocks.behind == 4
    assert first.blocks[2].plain == "" and len(first) == len(first.blocks[1].plain.splitlines())  # not reached yet
    slices = [first]
    while blocks.behind:
        made, behind = blocks.made, blocks.behind
        slices.append(render_rest(blocks))
        assert blocks.made == made + 1 and blocks.behind == behind - 1  # one run further each slice
    assert len(slices) == 5 and slices[-1].joined().plain == whole.joined().plain
    assert slices[-1].joined().spans == whole.joined().spans and len(slices[-1]) == len(whole)
    done = slices[-1]
    renamed = replace(runs[4], label="run four")
    second = render_lines(Report("0", None, tuple(runs[:4]) + (renamed,)), **how, kept=blocks)
    assert blocks.made == 6 and blocks.behind == 0  # the kept blocks cost no budget: r4 alone is made
    assert all(second.blocks[k] is done.blocks[k] for k in range(1, 5))
    assert "run four" in second.blocks[5].plain
    changed = [replace(run, metrics=MappingProxyType(dict(run.metrics))) for run in runs]  # all analysed again
    third = render_lines(Report("0", None, tuple(changed)), **how, kept=blocks)
    assert blocks.made == 7 and blocks.behind == 4
    assert all(third.blocks[k] is second.blocks[k] for k in range(2, 5))  # their last block until reached
    while blocks.behind:
        last = render_rest(blocks)
    assert blocks.made == 11 and last.joined().plain == whole.joined().plain


def test_a_panel_whose_blocks_are_all_kept_stops_at_its_budget_too_and_ends_as_the_whole_panel():
    from types import MappingProxyType

    from tuiloss.core.analysis import SeriesAnalysis
    from tuiloss.core.report import MetricReport, Report, RunReport, SkipCounts

    from tuiloss.ui.insights import REACHED, RunTexts, render_lines, render_rest

    def entry(run_id: str) -> RunReport:
        analysis = SeriesAnalysis(10, None, None, 0.2, 0.19, None, None, (), ())
        reported = MetricReport("loss", 10, None, None, None, 0.2, 0.19, None, analysis)
        return RunReport(run_id, run_id, "", "", {}, "loss", False, SkipCounts(0, {}, 0), (), (),
                         MappingProxyType({"loss": reported}))

    runs = tuple(entry(f"r{k}") for k in range(3 * REACHED))
    how = dict(colors={}, numbers={run.id: str(k + 1) for k, run in enumerate(runs)}, swatches={}, width=40)
    whole = render_lines(Report("0", None, runs), **how)
    blocks = RunTexts(budget=-1.0, fewest=1)  # the budget always spent
    render_lines(Report("0", None, runs), **how, kept=blocks)
    while blocks.behind:
        render_rest(blocks)
    made = blocks.made
    again = render_lines(Report("0", None, runs[1:]), **how, kept=blocks)  # one run switched off: the rest kept
    assert blocks.made == made and 0 < blocks.behind < len(runs) - 1 - REACHED + 1  # stopped all the same
    assert again.blocks[-1].plain == whole.blocks[-1].plain != ""  # the last run, not reached, keeps its block
    while blocks.behind:
        again = render_rest(blocks)
    assert blocks.made == made
    assert again.joined().plain == render_lines(Report("0", None, runs[1:]), **how).joined().plain
