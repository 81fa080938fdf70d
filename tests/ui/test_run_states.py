"""Run states in the viewer: the demo's replay ends finished and raises no stall; a run cut short
does stall; the panel says how a killed or crashed run ended."""

from tuiloss.core.engine import load
from tuiloss.core.report import build_report, state_of
from tuiloss.sample import replay, writers
from tuiloss.ui.findings import Findings
from tuiloss.ui.insights import render_insights
from tuiloss.ui.runstate import Activity, list_rows
from tuiloss.ui.selection import Selection


def grown(times):
    activity = Activity()
    for t in times:
        activity.grew(t)
    return activity


def stalls_after(store, later):
    findings = Findings()
    activity = {run.id: grown([0.0, 1.0, 2.0, 3.0]) for run in store}
    findings.check_stalls(store, activity, later)
    return findings.stalls, activity


def test_a_completed_demo_is_finished_and_never_stalls(tmp_path):
    replay(str(tmp_path), seconds=0.05, tick=0.01)
    store = load([str(tmp_path)])[0]
    assert len(store) == 7 and all(state_of(run).state == "finished" for run in store)
    stalls, activity = stalls_after(store, 3600.0)
    assert stalls == {}
    selection = Selection()
    for run in store:
        selection.add(run.id)
    rows = list_rows(list(store), selection, plain=True, at_cursor=None, findings={}, stalled=stalls, new=(),
                     activity=activity, now=3600.0)
    assert {row.state for row in rows} == {"finished"}


def test_a_replay_cut_short_stalls(tmp_path):
    for writer in writers(str(tmp_path)):  # the replay stopped at 30K of its 100K steps
        writer.start()
        writer.advance(30_000)
    store = load([str(tmp_path)])[0]
    assert len(store) == 7
    assert not any(state_of(run).ended for run in store)
    stalls, _ = stalls_after(store, 3600.0)
    assert set(stalls) == {run.id for run in store}


def test_the_panel_says_how_a_killed_run_ended(tmp_path):
    log = tmp_path / "train.log"
    lines = [f"{{'loss': {2.0 - k / 100:.4f}, 'learning_rate': 2e-05, 'epoch': {k / 100:.2f}}}" for k in range(40)]
    log.write_text("\n".join(lines + ["Traceback (most recent call last):", '  File "train.py", line 9', "KeyboardInterrupt"])
                   + "\n")
    report = build_report(load([str(tmp_path)])[0])
    [run] = report.runs
    assert run.state.state == "killed" and run.state.reason == "KeyboardInterrupt"
    text = render_insights(report, colors={}, numbers={run.id: "1"}, swatches={}, width=60).plain
    assert "killed (KeyboardInterrupt) after step 0.39" in text
