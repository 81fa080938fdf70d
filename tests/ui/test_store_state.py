"""A tracker's recorded status (MLflow, W&B) sets the run's state in the runs list."""

import gzip
import shutil
from pathlib import Path

from tuiloss.core.engine import load
from tuiloss.core.report import state_of
from tuiloss.core.store import Run
from tuiloss.ui.runstate import Activities, list_rows
from tuiloss.ui.selection import Selection

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "stores"


def test_a_recorded_end_wins_over_activity():
    def state(status, deleted=False):
        run = Run(id="r", label="r", source="r", format="mlflow", status=status, deleted=deleted, points=3)
        return state_of(run, silence=1.0, interval=1.0).state

    assert state("finished") == "finished"
    assert state("failed") == "crashed"
    assert state("running") == "running"
    assert state("finished", deleted=True) == "deleted"


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
    assert states == {"base-lr3e-4": "finished", "sweep-lr1e-2": "crashed", "sweep-lr1e-3": "running",
                      "wandb-lr1e-3": "finished"}
