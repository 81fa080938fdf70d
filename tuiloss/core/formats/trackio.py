"""trackio's local store: one SQLite database per project, ``<project>.db``.

trackio keeps them in ``$TRACKIO_DIR``, by default ``~/.cache/huggingface/trackio/``
(``$HF_HOME/trackio``), in WAL mode. The tables read:

* ``metrics(id INTEGER PRIMARY KEY AUTOINCREMENT, run_id, timestamp, run_name, step,
  metrics)``: one row per ``trackio.log`` call, ``metrics`` a JSON object of that
  call's values (``NaN``, ``Infinity`` and ``-Infinity`` as strings; a nested dict
  stays nested and is read as ``outer/inner``). Stores of trackio before run ids
  have no ``run_id`` column: runs are then told apart by name.
* ``configs(run_id, run_name, config, created_at)``: one row per run, written when it
  starts, its config a JSON object (trackio's own keys start with ``_``).

The first read of a run walks trackio's index on ``run_id``; later reads take the
rows past the last id read, by the primary key, so a live read costs the rows that
the whole project gained since (trackio has no index that orders a run's rows by id).
trackio records no run status.
"""

from __future__ import annotations

import math
import sqlite3

import numpy as np
import orjson

from tuiloss.core.formats.mlflow_db import StoreRun
from tuiloss.core.model import Batch

_SPECIAL = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}


def run_column(tables: dict[str, set[str]]) -> str:
    """The column that tells runs apart: ``run_id``, or ``run_name`` in older stores."""
    return "run_id" if "run_id" in tables.get("metrics", ()) else "run_name"


def list_runs(conn: sqlite3.Connection, tables: dict[str, set[str]], project: str,
              known: frozenset[str] | set[str] = frozenset()) -> list[StoreRun]:
    """Every run of the store not in ``known``, with its config and name."""
    column = run_column(tables)
    config_column = column if column in tables.get("configs", ()) else "run_name"
    runs: dict[str, StoreRun] = {}
    order = "created_at, id" if {"created_at", "id"} <= tables.get("configs", set()) else "rowid"
    for key, name, text in conn.execute(
        f"SELECT {config_column}, run_name, config FROM configs ORDER BY {order}"
    ):
        key = str(key)
        if key in known or key in runs:
            continue
        config = _config(text)
        if name and "run_name" not in config:
            config["run_name"] = name
        config.setdefault("project", project)
        runs[key] = StoreRun(key, name or None, project, None, config)
    if not runs and not known:
        # no configs written (an old or partly copied store): the runs the metrics name
        for key, name in conn.execute(f"SELECT DISTINCT {column}, run_name FROM metrics"):
            key = str(key)
            if key not in runs:
                runs[key] = StoreRun(key, name or None, project, None, {"run_name": name, "project": project})
    return list(runs.values())


def run_exists(conn: sqlite3.Connection, tables: dict[str, set[str]], key: str) -> bool:
    column = run_column(tables)
    config_column = column if column in tables.get("configs", ()) else "run_name"
    if conn.execute(f"SELECT 1 FROM configs WHERE {config_column} = ? LIMIT 1", (key,)).fetchone():
        return True
    return conn.execute(f"SELECT 1 FROM metrics WHERE {column} = ? LIMIT 1", (key,)).fetchone() is not None


def metric_rows(conn: sqlite3.Connection, tables: dict[str, set[str]], key: str, after: int,
                limit: int) -> list[tuple]:
    """Up to ``limit`` rows ``(id, step, metrics)`` of run ``key`` past id ``after``, in id order."""
    column = run_column(tables)
    # From the start, the index on the run reads only this run's rows; past a known id the
    # primary key reads only the newer rows of the project (the unary + keeps the planner
    # from walking the whole run through its index again).
    where = f"{column} = ? AND id > ?" if after <= 0 else f"+{column} = ? AND id > ?"
    return conn.execute(
        f"SELECT id, step, metrics FROM metrics WHERE {where} ORDER BY id LIMIT ?", (key, after, limit)
    ).fetchall()


def rows_to_batch(rows: list[tuple], batch: Batch) -> None:
    """Add the values of ``rows`` to ``batch``, metric by metric, in row order."""
    steps: dict[str, list[float]] = {}
    values: dict[str, list[float]] = {}
    for number, (row_id, step, text) in enumerate(rows):
        try:
            logged = orjson.loads(text)
        except (orjson.JSONDecodeError, TypeError):
            batch.skip("malformed metrics row", int(row_id), str(text)[:200])
            continue
        if not isinstance(logged, dict):
            batch.skip("malformed metrics row", int(row_id), str(text)[:200])
            continue
        try:
            step = float(step)
        except (TypeError, ValueError):
            batch.skip("missing step", int(row_id))
            continue
        if not math.isfinite(step):
            batch.skip("missing step", int(row_id))
            continue
        row: dict[str, float] = {}
        _numbers("", logged, row)
        for name, value in row.items():
            if name not in steps:
                steps[name], values[name] = [], []
            steps[name].append(step)
            values[name].append(value)
    for name in steps:
        batch.add(name, np.asarray(steps[name]), np.asarray(values[name]))


def _numbers(prefix: str, logged: dict, row: dict[str, float], depth: int = 0) -> None:
    for key, value in logged.items():
        name = f"{prefix}{key}"
        if isinstance(value, bool):
            continue
        if isinstance(value, (int, float)):
            row[name] = float(value)
        elif isinstance(value, str) and value in _SPECIAL:
            row[name] = _SPECIAL[value]
        elif isinstance(value, dict) and "_type" not in value and depth < 4:
            _numbers(name + "/", value, row, depth + 1)


def _config(text) -> dict:
    try:
        loaded = orjson.loads(text)
    except (orjson.JSONDecodeError, TypeError):
        return {}
    if not isinstance(loaded, dict):
        return {}
    out: dict = {}
    _flat("", loaded, out)
    group = loaded.get("_Group")
    if isinstance(group, str) and group and "group" not in out:
        out["group"] = group  # trackio's run group
    return out


def _flat(prefix: str, config: dict, out: dict, depth: int = 0) -> None:
    for key, value in config.items():
        if not prefix and str(key).startswith("_"):
            continue  # trackio's own: _Username, _Created, _Group
        name = f"{prefix}{key}"
        if isinstance(value, dict) and depth < 4:
            _flat(name + ".", value, out, depth + 1)
        elif isinstance(value, (str, int, float, bool)) or value is None:
            out[name] = value
        elif isinstance(value, list) and len(value) <= 8:
            out[name] = ", ".join(map(str, value))
