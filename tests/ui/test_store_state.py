"""A tracker's recorded status (MLflow, W&B) sets the run's state in the runs list."""

import gzip
import shutil
from pathlib import Path

from tuiloss.core.engine import load
from tuiloss.ui.runstate import Activities, Activity, list_rows, run_state
from tuiloss.ui.selection import Selection

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "stores"


def test_a_recorded_end_wins_over_activity():
    assert run_state(False, Activity(100.0), 101.0, status="finished") == "finished"
    assert run_state(False, Activity(100.0), 101.0, status="failed") == "failed"
    assert run_state(False, Activity(100.0), 101.0, status="running") == "live"
    assert run_state(True, Activity(100.0), 101.0, status="finished") == "deleted"


def test_the_runs_list_shows_what_mlflow_and_wandb_recorded(tmp_path):
    with gzip.open(FIXTURES / "mlflow.db.gz", "rb") as source, open(tmp_path / "mlflow.db", "wb") as out:
        shutil.copyfileobj(source, out)
    shutil.copytree(FIXTURES / "wandb", tmp_path / "wandb")
    store, _, _ = load([str(tmp_path)])
    selection = Selection(None)
    activity = Activities()
    for run in store:
        selection.add(run.id)
        activity.grew(run.id, 1000.0)  # every run grew just now
    rows = list_rows(list(store), selection, plain=True, at_cursor=None, findings={}, stalled=(), new=(),
                     activity=activity, now=1001.0)
    states = {row.label: row.state for row in rows}
    assert states == {"base-lr3e-4": "finished", "sweep-lr1e-2": "failed", "sweep-lr1e-3": "live",
                      "wandb-lr1e-3": "finished"}
