"""MLflow's SQLite store (``mlflow.db``, the default tracking store since MLflow 3.7).

The tables read (MLflow's SQLAlchemy schema, stable since MLflow 1.x):

* ``experiments(experiment_id, name, lifecycle_stage, ...)``
* ``runs(run_uuid, name, status, start_time, end_time, lifecycle_stage, experiment_id, ...)``
* ``params(key, value, run_uuid)`` and ``tags(key, value, run_uuid)``
* ``metrics(key, value, timestamp, run_uuid, step, is_nan)``: every logged value, one
  row each, appended in the order they were logged. The index on ``run_uuid`` holds
  the row id too, so ``run_uuid = ? AND rowid > ?`` reads only the rows a run
  gained since the last read.

MLflow stores a NaN as ``value = 0, is_nan = 1`` and clamps an infinity to
``±sys.float_info.max``; both are read back as the NaN and infinities they were.
Metrics logged without a step sit at step 0: as in the file store, while every
step of a metric is 0 its rows are numbered in timestamp order (see
:mod:`tuiloss.core.formats.mlflow`). Deleted runs (``lifecycle_stage = 'deleted'``)
are not listed.
"""

from __future__ import annotations

import sqlite3
import sys
from dataclasses import dataclass, field

import numpy as np

from tuiloss.core.formats.mlflow import MlflowMetricParser, param_value
from tuiloss.core.model import Batch

_CLAMP = sys.float_info.max
#: MLflow's run statuses, as the runs list says them.
STATUSES = {"RUNNING": "running", "SCHEDULED": "running", "FINISHED": "finished", "FAILED": "failed",
            "KILLED": "failed"}


@dataclass(frozen=True, slots=True)
class StoreRun:
    """One run of a tracker's SQLite store, as listed before its metrics are read."""

    key: str  # the store's id of the run (MLflow's run_uuid, trackio's run_id)
    name: str | None
    experiment: str | None
    status: str | None = None
    config: dict = field(default_factory=dict)


def list_runs(conn: sqlite3.Connection, known: frozenset[str] | set[str] = frozenset()) -> list[StoreRun]:
    """Every live run of the store not in ``known``, with its params, user tags and name."""
    rows = conn.execute(
        "SELECT r.run_uuid, r.name, r.status, r.experiment_id, e.name FROM runs r"
        " LEFT JOIN experiments e ON e.experiment_id = r.experiment_id"
        " WHERE r.lifecycle_stage IS NULL OR r.lifecycle_stage != 'deleted'"
        " ORDER BY r.start_time, r.run_uuid"
    ).fetchall()
    runs = []
    for run_uuid, name, status, experiment_id, experiment in rows:
        if run_uuid in known:
            continue
        config: dict = {}
        for key, value in conn.execute("SELECT key, value FROM params WHERE run_uuid = ?", (run_uuid,)):
            config[key] = param_value(str(value))
        tags = dict(conn.execute("SELECT key, value FROM tags WHERE run_uuid = ?", (run_uuid,)).fetchall())
        for key, value in sorted(tags.items()):
            if not key.startswith("mlflow.") and key not in config and value is not None:
                config[key] = value
        name = tags.get("mlflow.runName") or name
        if name and "run_name" not in config:
            config["run_name"] = name
        experiment = experiment or (str(experiment_id) if experiment_id is not None else None)
        if experiment and "experiment" not in config:
            config["experiment"] = experiment
        runs.append(StoreRun(str(run_uuid), name or None, experiment, status, config))
    return runs


def run_status(conn: sqlite3.Connection, key: str) -> tuple[str | None, bool]:
    """A run's status (``RUNNING``, ``FINISHED``, ``FAILED``, ``KILLED``) and whether it still exists."""
    row = conn.execute("SELECT status, lifecycle_stage FROM runs WHERE run_uuid = ?", (key,)).fetchone()
    if row is None or row[1] == "deleted":
        return None, False
    return row[0], True


def metric_rows(conn: sqlite3.Connection, key: str, after: int, limit: int) -> list[tuple]:
    """Up to ``limit`` metric rows of run ``key`` past row id ``after``, in the order logged:
    ``(rowid, key, value, step, timestamp, is_nan)``."""
    return conn.execute(
        "SELECT rowid, key, value, step, timestamp, is_nan FROM metrics"
        " WHERE run_uuid = ? AND rowid > ? ORDER BY rowid LIMIT ?",
        (key, after, limit),
    ).fetchall()


class MetricRows:
    """Turns a run's metric rows into points, metric by metric (keeps each metric's step numbering)."""

    def __init__(self) -> None:
        self._numbering: dict[str, MlflowMetricParser] = {}

    def restart(self) -> None:
        self._numbering.clear()

    def feed(self, rows: list[tuple], batch: Batch) -> None:
        if not rows:
            return
        _, keys, values, steps, stamps, nans = zip(*rows)
        codes: dict[str, int] = {}
        index = np.fromiter((codes.setdefault(k, len(codes)) for k in keys), dtype=np.int64, count=len(keys))
        values = np.array(values, dtype=np.float64)
        steps = np.array(steps, dtype=np.float64)
        stamps = np.array(stamps, dtype=np.float64)
        values[np.array(nans, dtype=bool)] = np.nan
        values[values >= _CLAMP] = np.inf
        values[values <= -_CLAMP] = -np.inf
        order = np.argsort(index, kind="stable") if len(codes) > 1 else None
        if order is not None:
            index, values, steps, stamps = index[order], values[order], steps[order], stamps[order]
        bounds = np.flatnonzero(np.diff(index)) + 1
        starts = np.concatenate(([0], bounds))
        ends = np.concatenate((bounds, [len(index)]))
        names = list(codes)
        for start, end in zip(starts, ends):
            name = names[int(index[start])]
            numbering = self._numbering.get(name)
            if numbering is None:
                numbering = self._numbering[name] = MlflowMetricParser(name)
            run_steps, run_values = numbering.number_rows(stamps[start:end], steps[start:end], values[start:end])
            batch.add(name, run_steps, run_values)
