"""``tuiloss report --follow`` on trackers' stores: what a tracker writes is printed as it is written.

The installed command watches (inotify, then polling) a folder holding an ``mlflow.db``
written in WAL mode (its commits land in ``mlflow.db-wal``) and a W&B run file that grows
by uneven pieces; every point arrives, exactly once.
"""

from __future__ import annotations

import signal
import sqlite3
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "unit"))
from store_helpers import FIXTURES, made, unpack  # noqa: E402
from test_follow import follow, lines_of, next_line  # noqa: E402


@pytest.mark.parametrize("poll", [None, "0.2"])
def test_follow_prints_rows_committed_to_an_mlflow_store(tmp_path, poll):
    db = unpack("mlflow.db.gz", tmp_path / "mlflow.db")
    writer = sqlite3.connect(db, isolation_level=None)
    writer.execute("PRAGMA journal_mode = WAL")
    run = writer.execute("SELECT run_uuid FROM runs WHERE name = 'sweep-lr1e-3'").fetchone()[0]
    proc = follow(tmp_path, *(["--poll", poll] if poll else []))
    out = lines_of(proc)
    try:
        first = {}
        for _ in range(3):
            line = next_line(out, proc)
            first[line["label"]] = line
        assert first["sweep-lr1e-3"]["points"] == {"loss": 5}
        for step in range(5, 9):
            writer.execute(
                "INSERT INTO metrics (key, value, timestamp, run_uuid, step, is_nan) VALUES ('loss', ?, ?, ?, ?, 0)",
                (made.loss(step, 1e-3), 1800000000000 + step, run, step),
            )
        counts = [5]
        while counts[-1] < 9:  # one line per read: the rows may come in one read or several
            line = next_line(out, proc)
            assert line["label"] == "sweep-lr1e-3"
            counts.append(line["points"]["loss"])
        assert counts == sorted(set(counts)) and counts[-1] == 9
        assert line["last"]["loss"] == pytest.approx(made.loss(8, 1e-3), abs=1e-5)
        assert out.empty()  # the other runs of the store did not change
    finally:
        writer.close()
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=20) == 130


def test_follow_prints_a_wandb_run_as_its_file_grows(tmp_path):
    pytest.importorskip("wandb")
    data = (FIXTURES / "wandb" / made.WANDB_RUN / "run-fixture1.wandb").read_bytes()
    folder = tmp_path / "wandb" / made.WANDB_RUN
    folder.mkdir(parents=True)
    path = folder / "run-fixture1.wandb"
    half = len(data) // 2
    path.write_bytes(data[:half])  # a partial record at the end, as a live writer leaves
    proc = follow(tmp_path)
    out = lines_of(proc)
    try:
        line = next_line(out, proc)
        early = line["points"]["train/loss"]
        assert 0 < early < made.STEPS
        with open(path, "ab") as handle:
            handle.write(data[half:])
        counts = early
        while counts < made.STEPS:
            line = next_line(out, proc)
            counts = line["points"]["train/loss"]
        assert counts == made.STEPS and line["points"]["val/loss"] == 4
        assert line["last"]["train/loss"] == pytest.approx(made.loss(made.STEPS - 1, 1e-3), abs=1e-5)
    finally:
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=20) == 130


def test_a_run_started_in_a_live_store_is_found_by_the_next_scan_not_the_periodic_one(tmp_path):
    db = unpack("mlflow.db.gz", tmp_path / "mlflow.db")
    writer = sqlite3.connect(db, isolation_level=None)
    writer.execute("PRAGMA journal_mode = WAL")
    experiment = writer.execute("SELECT experiment_id FROM experiments WHERE name = 'sweep'").fetchone()[0]
    proc = follow(tmp_path)  # inotify: the periodic scan is 30 s away
    out = lines_of(proc)
    try:
        assert {next_line(out, proc)["label"] for _ in range(3)} == {"base-lr3e-4", "sweep-lr1e-2", "sweep-lr1e-3"}
        writer.execute(
            "INSERT INTO runs (run_uuid, name, status, start_time, lifecycle_stage, experiment_id, source_type)"
            " VALUES ('newrun', 'sweep-lr5e-3', 'RUNNING', 1800000000000, 'active', ?, 'LOCAL')", (experiment,))
        writer.execute("INSERT INTO metrics (key, value, timestamp, run_uuid, step, is_nan)"
                       " VALUES ('loss', 1.5, 1800000000000, 'newrun', 0, 0)")
        line = next_line(out, proc, deadline=15.0)
        assert line["label"] == "sweep-lr5e-3"
        if line["points"] != {"loss": 1}:  # found by the scan before its first row was read
            line = next_line(out, proc, deadline=15.0)
        assert line["label"] == "sweep-lr5e-3" and line["points"] == {"loss": 1}
    finally:
        writer.close()
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=20) == 130
