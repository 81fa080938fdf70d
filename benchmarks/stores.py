"""Store rows: tuiloss's readers of ``mlflow.db`` and W&B run files against each library's own.

* ``mlflow-db``: one run of 1M metric rows (``loss`` and ``lr`` at 500k steps) in an
  ``mlflow.db`` that MLflow created (its schema and migrations, its first rows through
  ``MlflowClient.log_batch``); the rest of the rows are inserted with ``sqlite3`` as
  MLflow's SQLAlchemy store inserts them (through MLflow it takes many minutes). tuiloss's
  :class:`~tuiloss.core.sources.sqlite_store.StoreRunSource` reads every point; the baseline
  is ``MlflowClient.get_metric_history`` of each metric, the client made beforehand.
* ``wandb-file``: a ``run-<id>.wandb`` file of 500k history records of two metrics (1M
  points), framed as W&B frames them with records of wandb's own protocol buffer classes
  (``wandb.log`` through wandb-core writes ~10k rows a second). tuiloss's
  :class:`~tuiloss.core.sources.wandb.WandbRunSource` reads every point; the baseline is the
  reader wandb ships, ``wandb leet inspect --json`` (wandb-core decodes every record and
  prints it as JSON; its history lines are counted, not parsed, which favours it).

A row is skipped, with the reason, when its library is not installed.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import struct
import subprocess
import sys
import zlib

from benchmarks.datagen import DATA_DIR
from benchmarks.measure import Row, Skip, paired, ratio_row

TARGET = 0.5
_VERSION = 1


def _rows(points: int):
    steps = points // 2
    for step in range(steps):
        yield "loss", 0.2 + 2.0 / (1.0 + step * 1e-4), step
        yield "lr", 3e-4 * (1.0 - step / steps), step


# -- mlflow.db ---------------------------------------------------------------------------


def cached_mlflow_db(points: int) -> tuple[str, str]:
    """An mlflow.db holding one run of ``points`` metric rows; returns (path, run id)."""
    folder = os.path.join(DATA_DIR, f"v{_VERSION}-mlflow-db-{points}")
    path = os.path.join(folder, "mlflow.db")
    marker = os.path.join(folder, "run_id")
    if not os.path.exists(marker):
        shutil.rmtree(folder, ignore_errors=True)
        os.makedirs(folder)
        from mlflow.entities import Metric
        from mlflow.tracking import MlflowClient

        client = MlflowClient(tracking_uri=f"sqlite:///{path}")
        experiment = client.create_experiment("bench", artifact_location=os.path.join(folder, "artifacts"))
        run = client.create_run(experiment, run_name="bench").info.run_id
        rows = _rows(points)
        first = [next(rows) for _ in range(1000)]
        client.log_batch(run, metrics=[Metric(key, value, 1700000000000 + step, step) for key, value, step in first])
        conn = sqlite3.connect(path)
        conn.executemany(
            "INSERT INTO metrics (key, value, timestamp, run_uuid, step, is_nan) VALUES (?, ?, ?, ?, ?, 0)",
            ((key, value, 1700000000000 + step, run, step) for key, value, step in rows),
        )
        conn.commit()
        conn.close()
        client.set_terminated(run)
        with open(marker, "w") as handle:
            handle.write(run)
    with open(marker) as handle:
        return path, handle.read().strip()


def read_tuiloss_db(path: str, run: str) -> int:
    from tuiloss.core.model import Batch
    from tuiloss.core.sources.sqlite_store import StoreRunSource

    source = StoreRunSource(path, "mlflow", run)
    points, more = 0, True
    while more:
        items, more = source.read()
        points += sum(item.points for item in items if isinstance(item, Batch))
    return points


def mlflow_db(points: int, repeat: int) -> Row:
    try:
        import mlflow  # noqa: F401
    except ImportError:
        raise Skip("mlflow is not installed: pip install 'tuiloss[bench]'") from None
    from mlflow.tracking import MlflowClient

    path, run = cached_mlflow_db(points)
    client = MlflowClient(tracking_uri=f"sqlite:///{path}")

    def theirs() -> int:
        return sum(len(client.get_metric_history(run, key)) for key in ("loss", "lr"))

    ours = read_tuiloss_db(path, run)
    if ours != points or theirs() != points:
        raise AssertionError(f"mlflow-db: tuiloss read {ours} points, MLflow {theirs()}, wrote {points}")
    timing = paired(lambda: read_tuiloss_db(path, run), theirs, repeat)
    note = (
        f"{points:,} metric rows, {os.path.getsize(path) / 1e6:,.0f} MB; tuiloss"
        f" {points / min(timing.ours) / 1e3:,.0f}K points/s, MLflow {points / min(timing.baseline) / 1e3:,.0f}K points/s"
    )
    return ratio_row("mlflow-db", "mlflow.db (SQLite) / `MlflowClient.get_metric_history`", timing, TARGET, note)


# -- W&B run file ------------------------------------------------------------------------


def _frame(records, handle) -> None:
    """Write ``records`` with W&B's framing (LevelDB's log: 32 KiB blocks, 7-byte headers)."""
    from tuiloss.core.formats import wandb as wb

    crcs = [zlib.crc32(bytes([kind])) for kind in range(5)]
    out = bytearray(wb.FILE_HEADER.pack(wb.IDENT, wb.MAGIC, 0))
    written = 0
    for data in records:
        first = True
        while True:
            left = wb.BLOCK - (written + len(out)) % wb.BLOCK
            if left < wb.HEADER_LEN:
                out += b"\x00" * left
                continue
            piece, data = data[: left - wb.HEADER_LEN], data[left - wb.HEADER_LEN:]
            kind = (wb.FULL if not data else wb.FIRST) if first else (wb.LAST if not data else wb.MIDDLE)
            out += struct.pack("<IHB", zlib.crc32(piece, crcs[kind]), len(piece), kind) + piece
            first = False
            if not data:
                break
        if len(out) > 1 << 20:
            handle.write(out)
            written += len(out)
            out.clear()
    handle.write(out)


def cached_wandb_file(points: int) -> str:
    folder = os.path.join(DATA_DIR, f"v{_VERSION}-wandb-{points}", "offline-run-20240101_000000-bench")
    path = os.path.join(folder, "run-bench.wandb")
    if not os.path.exists(path):
        from wandb.proto import wandb_internal_pb2 as pb

        os.makedirs(folder, exist_ok=True)

        def records():
            run = pb.Record(num=1)
            run.run.run_id, run.run.display_name, run.run.project = "bench", "bench", "bench"
            yield run.SerializeToString()
            steps = points // 2
            for step in range(steps):
                record = pb.Record(num=step + 2)
                for key, value in (("loss", 0.2 + 2.0 / (1.0 + step * 1e-4)), ("lr", 3e-4 * (1.0 - step / steps)),
                                   ("_step", step), ("_runtime", step * 0.01), ("_timestamp", 1.7e9 + step * 0.01)):
                    item = record.history.item.add()
                    item.nested_key.append(key)
                    item.value_json = repr(value)
                yield record.SerializeToString()
            done = pb.Record(num=steps + 2)
            done.exit.exit_code = 0
            yield done.SerializeToString()

        with open(path + ".part", "wb") as handle:
            _frame(records(), handle)
        os.replace(path + ".part", path)
    return path


def read_tuiloss_wandb(path: str) -> int:
    """The metric points read (``_runtime`` and ``_timestamp`` are read and stored too, not counted)."""
    from tuiloss.core.model import Batch
    from tuiloss.core.sources.wandb import WandbRunSource

    source = WandbRunSource(os.path.dirname(path))
    points, more = 0, True
    while more:
        items, more = source.read()
        for item in items:
            if isinstance(item, Batch):
                points += sum(len(steps) for name, (steps, _) in item.series.items() if not name.startswith("_"))
    return points


def read_leet(path: str) -> int:
    """History records as wandb's own reader (wandb-core's ``leet inspect``) prints them."""
    command = [sys.executable, "-m", "wandb", "leet", "inspect", "--json", path]
    done = subprocess.run(command, capture_output=True, check=True)
    return done.stdout.count(b'"type":"history"') * 2


def wandb_file(points: int, repeat: int) -> Row:
    try:
        import wandb  # noqa: F401
    except ImportError:
        raise Skip("wandb is not installed (pip install 'tuiloss[wandb]')") from None
    path = cached_wandb_file(points)
    ours, theirs = read_tuiloss_wandb(path), read_leet(path)
    if ours != points or theirs != points:
        raise AssertionError(f"wandb-file: tuiloss read {ours} points, wandb leet {theirs}, wrote {points}")
    timing = paired(lambda: read_tuiloss_wandb(path), lambda: read_leet(path), repeat)
    note = (
        f"{points:,} points in {points // 2:,} history records (and their `_runtime` and `_timestamp`, read"
        f" as series too), {os.path.getsize(path) / 1e6:,.0f} MB; tuiloss"
        f" {points / min(timing.ours) / 1e3:,.0f}K points/s, wandb leet {points / min(timing.baseline) / 1e3:,.0f}K points/s"
    )
    return ratio_row("wandb-file", "W&B run file / wandb's own reader (`wandb leet inspect --json`)", timing, TARGET, note)
