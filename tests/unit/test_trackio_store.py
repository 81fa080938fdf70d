"""trackio's project databases: discovery, every point, live reading, old stores without run ids.

The fixture is written by trackio itself (tests/fixtures/stores/make_fixtures.py); a
test logs through trackio in a child process when it is installed.
"""

from __future__ import annotations

import importlib.util
import math
import sqlite3
import textwrap
import time
from pathlib import Path

import numpy as np
import orjson
import pytest

from tuiloss.core.engine import load
from tuiloss.core.formats import trackio
from tuiloss.core.model import Batch, Notice
from tuiloss.core.sources.sqlite_store import StoreRunSource

import store_helpers
from store_helpers import follow_writer, made, points_of

def unpack(folder: Path) -> Path:
    return store_helpers.unpack("trackio/vision.db.gz", folder / "vision.db")


def run_id(db: Path, name: str) -> str:
    conn = sqlite3.connect(db)
    try:
        return conn.execute("SELECT run_id FROM configs WHERE run_name = ?", (name,)).fetchone()[0]
    finally:
        conn.close()


def log_row(conn, run: str, name: str, step: int, metrics: dict) -> None:
    """A row as trackio's SQLiteStorage.bulk_log writes it."""
    conn.execute(
        "INSERT INTO metrics (timestamp, run_id, run_name, step, metrics) VALUES (?, ?, ?, ?, ?)",
        ("2024-01-01T00:00:00+00:00", run, name, step, orjson.dumps(metrics)),
    )


def test_every_run_with_its_config_group_and_points(tmp_path):
    unpack(tmp_path)
    store, _, notices = load([str(tmp_path)])
    runs = {run.label: run for run in store}
    assert set(runs) == {"trackio-a", "trackio-b"}
    a, b = runs["trackio-a"], runs["trackio-b"]
    assert a.format == "trackio"
    assert a.config["lr"] == 1e-3 and a.config["model.depth"] == 4 and a.config["group"] == "g1"
    assert a.config["project"] == "vision" and not any(key.startswith("_") for key in a.config)
    loss = a.series["train/loss"]
    assert loss.steps.view.tolist() == list(range(made.STEPS))
    assert np.allclose(loss.values.view, [made.loss(s, 1e-3) for s in range(made.STEPS)], rtol=0, atol=1e-12)
    assert np.allclose(a.series["eval/acc"].values.view, [s / made.STEPS for s in range(made.STEPS)])
    # logged without steps: trackio numbers them; its NaN comes back as NaN
    b_loss = b.series["train/loss"]
    assert b_loss.steps.view.tolist() == list(range(6))
    assert math.isnan(b_loss.values.view[-1])
    assert np.allclose(b_loss.values.view[:5], [made.loss(s, 1e-2) for s in range(5)])
    assert a.status is None  # trackio records no status: the state comes from activity
    assert not [n for n in notices if n.level == "error"]


@pytest.mark.parametrize("chunk", [3, 1000])
def test_rows_logged_while_reading_are_read_once_each(tmp_path, chunk):
    db = unpack(tmp_path)
    key = run_id(db, "trackio-a")
    other = run_id(db, "trackio-b")
    source = StoreRunSource(db, "trackio", key, chunk_rows=chunk)
    points, _ = points_of(source)
    assert points["train/loss"][0] == list(range(made.STEPS))
    writer = sqlite3.connect(db, isolation_level=None)
    writer.execute("PRAGMA journal_mode = WAL")  # as trackio writes
    expected = []
    for step in range(made.STEPS, made.STEPS + 20):
        log_row(writer, key, "trackio-a", step, {"train/loss": 1.0 / step, "note": "text is no metric"})
        log_row(writer, other, "trackio-b", step, {"train/loss": 9.0})  # another run's rows are not this run's
        expected.append(step)
        if step % 6 == 0:
            deadline = time.monotonic() + 10
            while not source.changed():
                assert time.monotonic() < deadline
                time.sleep(0.01)
            got, _ = points_of(source)
            points["train/loss"][0].extend(got["train/loss"][0])
            points["train/loss"][1].extend(got["train/loss"][1])
    writer.close()
    got, _ = points_of(source)
    points["train/loss"][0].extend(got.get("train/loss", ([], []))[0])
    points["train/loss"][1].extend(got.get("train/loss", ([], []))[1])
    assert points["train/loss"][0] == list(range(made.STEPS)) + expected
    assert points["train/loss"][1][made.STEPS:] == [1.0 / s for s in expected]


def test_a_store_from_before_run_ids_tells_runs_apart_by_name(tmp_path):
    db = tmp_path / "old.db"
    conn = sqlite3.connect(db)
    conn.execute("CREATE TABLE metrics (id INTEGER PRIMARY KEY AUTOINCREMENT, timestamp TEXT NOT NULL,"
                 " run_name TEXT NOT NULL, step INTEGER NOT NULL, metrics TEXT NOT NULL)")
    conn.execute("CREATE TABLE configs (id INTEGER PRIMARY KEY AUTOINCREMENT, run_name TEXT NOT NULL,"
                 " config TEXT NOT NULL, created_at TEXT NOT NULL)")
    conn.execute("INSERT INTO configs (run_name, config, created_at) VALUES ('old-run', '{\"lr\": 0.1}', 'x')")
    for step in range(3):
        conn.execute("INSERT INTO metrics (timestamp, run_name, step, metrics) VALUES ('t', 'old-run', ?, ?)",
                     (step, orjson.dumps({"loss": 1.0 - step / 10, "acc": "Infinity" if step == 2 else 0.5})))
    conn.execute("INSERT INTO metrics (timestamp, run_name, step, metrics) VALUES ('t', 'old-run', 3, 'not json')")
    conn.commit()
    conn.close()
    store, _, _ = load([str(tmp_path)])
    (run,) = list(store)
    assert run.label == "old-run" and run.config["lr"] == 0.1
    assert run.series["loss"].values.view.tolist() == [1.0, 0.9, 0.8]
    assert run.series["acc"].values.view.tolist() == [0.5, 0.5, math.inf]
    assert run.skipped["malformed metrics row"] == 1


def test_nested_and_non_numeric_values(tmp_path):
    batch = Batch()
    trackio.rows_to_batch([(1, 0, b'{"a": {"b": 1, "c": {"_type": "image"}}, "s": "x", "t": true, "n": "NaN"}'),
                           (2, 1, b'[1, 2]')], batch)
    assert set(batch.series) == {"a/b", "n"}
    assert math.isnan(batch.series["n"][1][0])
    assert batch.skipped["malformed metrics row"] == 1


@pytest.mark.skipif(importlib.util.find_spec("trackio") is None, reason="trackio is not installed")
@pytest.mark.slow
def test_trackio_logging_while_tuiloss_reads(tmp_path):
    """trackio in a child process logs until told to stop; its rows are read while it writes."""
    stop = tmp_path / "stop"
    script = textwrap.dedent(
        f"""
        import os, time
        os.environ["TRACKIO_DIR"] = {str(tmp_path)!r}
        import trackio
        trackio.init(project="live", name="live-run", config={{"lr": 0.5}})
        step, deadline = 0, time.monotonic() + 60
        while not os.path.exists({str(stop)!r}) and time.monotonic() < deadline:
            trackio.log({{"loss": 1.0 / (step + 1)}}, step=step)
            step += 1
            time.sleep(0.005)
        for _ in range(10):
            trackio.log({{"loss": 1.0 / (step + 1)}}, step=step)
            step += 1
        trackio.finish()
        print(step)
        """
    )

    def make_source():
        store, _, _ = load([str(tmp_path)])
        ids = [run.id for run in store]
        return StoreRunSource(tmp_path / "live.db", "trackio", ids[0].rsplit("/", 1)[1]) if ids else None

    got, early, total = follow_writer(script, stop, make_source)
    assert early < total
    assert got["loss"][0] == list(range(total))
    assert np.allclose(got["loss"][1], [1.0 / (s + 1) for s in range(total)])


def test_a_locked_store_says_so_without_a_traceback(tmp_path):
    db = unpack(tmp_path)
    key = run_id(db, "trackio-a")
    source = StoreRunSource(db, "trackio", key)
    points_of(source)
    writer = sqlite3.connect(db, isolation_level=None)
    writer.execute("PRAGMA journal_mode = DELETE")
    writer.execute("BEGIN EXCLUSIVE")
    log_row(writer, key, "trackio-a", 99, {"train/loss": 0.1})
    items, _ = source.read()
    assert [type(item) for item in items] == [Notice] and "locked" in items[0].message
    writer.execute("COMMIT")
    writer.close()
    points, _ = points_of(source)
    assert points["train/loss"] == ([99.0], [0.1])
