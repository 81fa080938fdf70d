"""MLflow's SQLite store (mlflow.db): discovery, every point, live reading, locks and damage.

The fixture is written by MLflow itself (tests/fixtures/stores/make_fixtures.py); rows
appended in the tests go in through MLflow's schema with sqlite3, or through MLflow's
own client when it is installed.
"""

from __future__ import annotations

import importlib.util
import math
import shutil
import sqlite3
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from tuiloss.core.engine import Engine, apply_result, load
from tuiloss.core.formats import sqlitedb
from tuiloss.core.model import Batch, Notice, SegmentEvent
from tuiloss.core.sources.sqlite_store import StoreRunSource
from tuiloss.core.store import Store

import store_helpers
from store_helpers import FIXTURES, made, points_of


def unpack(folder: Path, name: str = "mlflow.db") -> Path:
    return store_helpers.unpack("mlflow.db.gz", folder / name)


def run_uuid(db: Path, name: str) -> str:
    conn = sqlite3.connect(db)
    try:
        return conn.execute("SELECT run_uuid FROM runs WHERE name = ?", (name,)).fetchone()[0]
    finally:
        conn.close()


def insert(conn: sqlite3.Connection, run: str, key: str, value: float, step: int, stamp: int) -> None:
    """A metric row as MLflow's SQLAlchemy store writes it (NaN as is_nan, infinities clamped)."""
    is_nan = math.isnan(value)
    stored = 0.0 if is_nan else max(-sys.float_info.max, min(sys.float_info.max, value))
    conn.execute(
        "INSERT INTO metrics (key, value, timestamp, run_uuid, step, is_nan) VALUES (?, ?, ?, ?, ?, ?)",
        (key, stored, stamp, run, step, int(is_nan)),
    )


# -- discovery and a whole read -------------------------------------------------------


def test_every_live_run_is_a_run_with_its_name_params_tags_and_status(tmp_path):
    unpack(tmp_path)
    store, _, notices = load([str(tmp_path)])
    runs = {run.label: run for run in store}
    assert set(runs) == {"base-lr3e-4", "sweep-lr1e-2", "sweep-lr1e-3"}  # the deleted run is left out
    base = runs["base-lr3e-4"]
    assert base.format == "mlflow"
    assert base.config["lr"] == 3e-4 and base.config["batch_size"] == 32 and base.config["optimizer"] == "adamw"
    assert base.config["team"] == "vision" and base.config["experiment"] == "baseline"
    assert not any(key.startswith("mlflow.") for key in base.config)
    assert base.status == "finished"
    assert runs["sweep-lr1e-2"].status == "failed"
    assert runs["sweep-lr1e-3"].status == "running"
    assert any("FAILED" in n.message for n in runs["sweep-lr1e-2"].notices)
    assert not [n for n in notices if n.level == "error"]


def test_every_point_with_its_step_nan_and_infinity(tmp_path):
    unpack(tmp_path)
    store, _, _ = load([str(tmp_path)])
    runs = {run.label: run for run in store}
    loss = runs["base-lr3e-4"].series["loss"]
    assert loss.steps.view.tolist() == list(range(made.STEPS))
    assert np.allclose(loss.values.view, [made.loss(s, 3e-4) for s in range(made.STEPS)], rtol=0, atol=1e-12)
    val = runs["base-lr3e-4"].series["val_loss"]
    assert val.steps.view.tolist() == [9, 19, 29, 39]
    assert np.allclose(val.values.view, [made.val_loss(s, 3e-4) for s in (9, 19, 29, 39)])
    # logged without a step: MLflow stores step 0 for each; they are numbered in logging order
    lr = runs["base-lr3e-4"].series["learning_rate"]
    assert lr.steps.view.tolist() == [0, 1, 2]
    assert lr.values.view.tolist() == [3e-4, 2e-4, 1e-4]
    failed = runs["sweep-lr1e-2"].series["loss"]
    assert failed.steps.view.tolist() == list(range(12))
    assert np.allclose(failed.values.view[:10], [made.loss(s, 1e-2) for s in range(10)])
    assert math.isnan(failed.values.view[10]) and failed.values.view[11] == math.inf


def test_a_folder_with_every_kind_of_log_shows_all_of_them(tmp_path):
    """mlruns/ (the file store), mlflow.db, wandb/ and a CSV log side by side."""
    unpack(tmp_path)
    run_dir = tmp_path / "mlruns" / "1" / "abc"
    (run_dir / "metrics").mkdir(parents=True)
    (run_dir / "meta.yaml").write_text("run_id: abc\nrun_name: file-store-run\nstatus: 3\n")
    (run_dir / "metrics" / "loss").write_text("".join(f"1700000000000 {2 - i / 10} {i}\n" for i in range(5)))
    shutil.copytree(FIXTURES / "wandb", tmp_path / "wandb")
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "metrics.csv").write_text("step,loss\n1,2.0\n2,1.5\n3,1.25\n")
    store_helpers.unpack("trackio/vision.db.gz", tmp_path / "vision.db")
    store, engine, _ = load([str(tmp_path)])
    formats = sorted(run.format for run in store)
    assert formats == ["csv", "mlflow", "mlflow", "mlflow", "mlflow", "trackio", "trackio", "wandb"]
    labels = {run.label for run in store}
    assert {"file-store-run", "base-lr3e-4", "wandb-lr1e-3", "trackio-a"} <= labels
    assert all(run.points for run in store)


def test_side_files_and_other_databases_are_passed_over_with_a_reason(tmp_path):
    db = unpack(tmp_path)
    other = sqlite3.connect(tmp_path / "cache.sqlite")
    other.execute("CREATE TABLE t (x)")
    other.commit()
    other.close()
    (tmp_path / "mlflow.db-journal").write_bytes(b"")
    engine = Engine([str(tmp_path)])
    engine.scan()
    assert engine.ignored[str(tmp_path / "mlflow.db-journal")] == "part of the SQLite database mlflow.db"
    assert "no tracker" in engine.ignored[str(tmp_path / "cache.sqlite")]
    assert len(engine.specs) == 3 and all(spec.path == str(db) for spec in engine.specs.values())


def test_a_forced_format_reads_only_its_own_stores(tmp_path):
    unpack(tmp_path)
    store, _, _ = load([str(tmp_path)], options=_options("mlflow"))
    assert sorted(run.format for run in store) == ["mlflow"] * 3
    engine = Engine([str(tmp_path)], _options("trackio"))
    assert not engine.scan().new_runs
    assert "mlflow's store, not trackio's" in engine.ignored[str(tmp_path / "mlflow.db")]


def _options(format: str):
    from tuiloss.core.engine import Options

    return Options(format=format)


# -- live -------------------------------------------------------------------------------


@pytest.mark.parametrize("journal", ["delete", "wal"])
def test_rows_appended_while_reading_are_read_once_each_exactly(tmp_path, journal):
    db = unpack(tmp_path)
    run = run_uuid(db, "sweep-lr1e-3")
    writer = sqlite3.connect(db, isolation_level=None)
    writer.execute(f"PRAGMA journal_mode = {journal}")
    source = StoreRunSource(db, "mlflow", run)
    points, _ = points_of(source)
    assert points["loss"][0] == [0, 1, 2, 3, 4]
    assert not source.changed() or points_of(source)[0] == {}
    expected = list(range(5))
    stamp = 1800000000000
    for chunk in range(4):
        writer.execute("BEGIN")
        for step in range(5 + chunk * 3, 8 + chunk * 3):
            insert(writer, run, "loss", made.loss(step, 1e-3), step, stamp + step)
            expected.append(step)
        writer.execute("COMMIT")
        _wait(source.changed)
        got, _ = points_of(source)
        for step, value in zip(*got["loss"]):
            points["loss"][0].append(step)
            points["loss"][1].append(value)
    writer.close()
    assert points["loss"][0] == expected
    assert np.allclose(points["loss"][1], [made.loss(s, 1e-3) for s in expected])


def test_a_run_started_while_watching_is_found_by_the_next_scan(tmp_path):
    db = unpack(tmp_path)
    engine = Engine([str(tmp_path)], hold=0.0)
    store = Store()
    apply_result(store, engine.scan())
    apply_result(store, engine.read(check_all=True))
    writer = sqlite3.connect(db)
    experiment = writer.execute("SELECT experiment_id FROM experiments WHERE name = 'sweep'").fetchone()[0]
    writer.execute(
        "INSERT INTO runs (run_uuid, name, status, start_time, lifecycle_stage, experiment_id, source_type)"
        " VALUES ('newrun', 'sweep-lr5e-3', 'RUNNING', 1800000000000, 'active', ?, 'LOCAL')",
        (experiment,),
    )
    insert(writer, "newrun", "loss", 1.5, 0, 1800000000000)
    insert(writer, "newrun", "loss", 1.25, 1, 1800000000001)
    writer.commit()
    writer.close()
    result = engine.scan()
    assert [spec.config["run_name"] for spec in result.new_runs] == ["sweep-lr5e-3"]
    apply_result(store, result)
    apply_result(store, engine.read())
    run = next(run for run in store if run.label == "sweep-lr5e-3")
    assert run.series["loss"].values.view.tolist() == [1.5, 1.25]
    # every run of the store answers for the store's files (the watcher's events)
    assert len(engine.runs_for_path(str(db))) == 4
    assert engine.runs_for_path(str(db) + "-wal") == engine.runs_for_path(str(db))


def test_the_status_follows_the_run(tmp_path):
    db = unpack(tmp_path)
    run = run_uuid(db, "sweep-lr1e-3")
    engine = Engine([str(tmp_path)], hold=0.0)
    store = Store()
    apply_result(store, engine.scan())
    apply_result(store, engine.read(check_all=True))
    run_id = next(r.id for r in store if r.label == "sweep-lr1e-3")
    assert store.runs[run_id].status == "running"
    writer = sqlite3.connect(db)
    writer.execute("UPDATE runs SET status = 'KILLED', end_time = 1800000000000 WHERE run_uuid = ?", (run,))
    writer.commit()
    writer.close()
    source = engine.sources[run_id]
    _wait(source.changed)
    apply_result(store, engine.read([run_id]))
    assert store.runs[run_id].status == "failed"
    assert any("KILLED" in n.message for n in store.runs[run_id].notices)


@pytest.mark.skipif(importlib.util.find_spec("mlflow") is None, reason="mlflow is not installed")
def test_mlflow_writing_while_tuiloss_reads(tmp_path):
    """MLflow's own client logs to the store between reads: every point, exactly once."""
    from mlflow.tracking import MlflowClient

    db = unpack(tmp_path)
    client = MlflowClient(tracking_uri=f"sqlite:///{db}")
    experiment = client.get_experiment_by_name("sweep").experiment_id
    run = client.create_run(experiment, run_name="live").info.run_id
    client.log_metric(run, "loss", 2.0, step=0)
    source = StoreRunSource(db, "mlflow", run)
    steps, values = [], []
    for step in range(1, 30):
        if step % 7 == 0:
            got, _ = points_of(source)
            steps += got.get("loss", ([], []))[0]
            values += got.get("loss", ([], []))[1]
        client.log_metric(run, "loss", 2.0 / (1 + step), step=step, timestamp=1800000000000 + step)
    client.set_terminated(run)
    _wait(source.changed)
    got, _ = points_of(source)
    steps += got["loss"][0]
    values += got["loss"][1]
    assert steps == list(range(30))
    assert np.allclose(values, [2.0 / (1 + s) for s in range(30)])
    assert source.status == "FINISHED"


# -- locks and damage --------------------------------------------------------------------


def test_a_locked_store_is_said_and_read_once_the_lock_is_gone(tmp_path):
    db = unpack(tmp_path)
    run = run_uuid(db, "sweep-lr1e-3")
    source = StoreRunSource(db, "mlflow", run)
    points_of(source)
    writer = sqlite3.connect(db, isolation_level=None)
    writer.execute("BEGIN EXCLUSIVE")
    insert(writer, run, "loss", 0.5, 5, 1800000000000)
    items, more = source.read()
    assert not more
    assert [type(item) for item in items] == [Notice]
    assert "locked" in items[0].message and items[0].level == "warning"
    assert source.changed()  # tried again at the next check
    assert source.read() == ([], False)  # said once
    writer.execute("COMMIT")
    writer.close()
    points, others = points_of(source)
    assert points["loss"] == ([5.0], [0.5])
    assert any(isinstance(item, Notice) and "readable again" in item.message for item in others)


def test_a_damaged_store_is_said_and_keeps_what_was_read(tmp_path):
    db = unpack(tmp_path)
    run = run_uuid(db, "base-lr3e-4")
    source = StoreRunSource(db, "mlflow", run, chunk_rows=16)
    items, more = source.read()
    assert more
    first = sum(item.points for item in items if isinstance(item, Batch))
    assert first == 16
    data = bytearray(db.read_bytes())
    page = 4096
    for start in range(page, len(data), page):  # every page but the first: the tables are gone
        data[start:start + page] = b"\xa5" * page
    damaged = tmp_path / "partial-copy"
    damaged.write_bytes(bytes(data))
    damaged.replace(db)  # a copy that arrived damaged (an interrupted rsync)
    items, more = source.read()
    assert not more
    notices = [item for item in items if isinstance(item, Notice)]
    assert len(notices) == 1 and notices[0].level == "error" and "damaged" in notices[0].message
    assert source.read() == ([], False)  # said once
    # discovery says it too, and reads nothing of it
    store, _, found = load([str(tmp_path)])
    assert not list(store)
    assert any("mlflow.db" in n.message and ("damaged" in n.message or "malformed" in n.message) for n in found)


def test_a_store_replaced_by_a_copy_continues_where_reading_stood(tmp_path):
    """rsync from a cluster writes a new file each time: the rows read stay, the new ones follow."""
    db = unpack(tmp_path)
    run = run_uuid(db, "sweep-lr1e-3")
    source = StoreRunSource(db, "mlflow", run)
    points_of(source)
    copy = tmp_path / "copy.db"
    shutil.copyfile(db, copy)
    writer = sqlite3.connect(copy)
    insert(writer, run, "loss", 0.75, 5, 1800000000000)
    writer.commit()
    writer.close()
    copy.replace(db)
    points, others = points_of(source)
    assert points == {"loss": ([5.0], [0.75])}
    assert not [item for item in others if isinstance(item, SegmentEvent)]


def test_a_deleted_run_and_a_deleted_store_keep_their_points(tmp_path):
    db = unpack(tmp_path)
    run = run_uuid(db, "sweep-lr1e-3")
    source = StoreRunSource(db, "mlflow", run)
    points_of(source)
    writer = sqlite3.connect(db)
    writer.execute("UPDATE runs SET lifecycle_stage = 'deleted' WHERE run_uuid = ?", (run,))
    writer.commit()
    writer.close()
    _, others = points_of(source)
    assert [item.reason for item in others if isinstance(item, SegmentEvent)] == ["deleted"]
    writer = sqlite3.connect(db)  # another run logs: this one stays deleted, said once
    insert(writer, run_uuid(db, "base-lr3e-4"), "loss", 0.1, 99, 1800000000000)
    writer.commit()
    writer.close()
    assert points_of(source) == ({}, [])
    db.unlink()
    items, _ = source.read()
    assert not [item for item in items if isinstance(item, Batch)]


def test_store_kind_never_raises(tmp_path):
    junk = tmp_path / "junk.db"
    junk.write_bytes(sqlitedb.SQLITE_HEADER + b"\x00" * 50)
    kind, why = sqlitedb.store_kind(junk)
    assert kind is None and why
    (tmp_path / "empty.db").write_bytes(b"")
    assert sqlitedb.store_kind(tmp_path / "empty.db") == (None, "not a SQLite database")


def _wait(condition, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("timed out")
        time.sleep(0.01)
