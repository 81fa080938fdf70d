"""A run that cannot be read (a missing optional extra) says so in the runs list and the panel."""

from tuiloss.core.model import Notice
from tuiloss.core.report import build_report
from tuiloss.core.store import Run, Store
from tuiloss.ui.insights import render_insights
from tuiloss.ui.runstate import list_rows
from tuiloss.ui.selection import Selection

MISSING = "TensorBoard event files need the optional extra: pip install 'tuiloss[tensorboard]'"


def test_a_run_left_unread_by_a_missing_extra_is_said_in_the_list_and_the_panel():
    unread = Run(id="tb", label="runs", source="runs", format="tfevents", notices=[Notice("error", MISSING)])
    waiting = Run(id="w", label="w", source="w.log", format="text")
    store = Store()
    store.add(unread)
    store.add(waiting)
    selection = Selection(None)
    for run in store:
        selection.add(run.id)
    rows = list_rows(list(store), selection, plain=True, at_cursor=None, findings={}, stalled=(), new=(),
                     activity={}, now=0.0)
    assert [row.state for row in rows] == ["unread", "waiting"]
    text = render_insights(build_report(store), colors={}, numbers={"tb": "1", "w": "2"}, swatches={}, width=200)
    assert "tuiloss[tensorboard]" in text.plain
    assert text.plain.count("tuiloss[tensorboard]") == 1
