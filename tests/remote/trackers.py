"""Trackers' trees written the way the trackers write them, for the remote tests.

A TensorBoard logdir of several runs (one resumed into a second event file, one a Keras
``train``/``validation`` pair) written by tensorboard's own ``EventFileWriter``; an offline W&B run
(the fixture wandb wrote, tests/fixtures/stores/wandb); an MLflow
file store (``mlruns/<experiment>/<run>/`` with ``meta.yaml``, ``metrics/``, ``params/`` and
``tags/``, the lines MLflow writes); a Trainer ``output_dir`` with checkpoint folders, and a
lone ``trainer_state.json``. Each curve holds something to find: a spike, a NaN, a plateau.
"""

from __future__ import annotations

import json
import math
import os
import shutil
from pathlib import Path

import pytest


def loss_curve(n: int, *, spike: int | None = None, nan: int | None = None, flat_from: int | None = None,
               scale: float = 1.0) -> list[float]:
    out = []
    for step in range(n):
        value = scale * (0.4 + 2.0 * math.exp(-step / (n / 6))) + 0.01 * math.sin(step * 1.7)
        if flat_from is not None and step >= flat_from:
            value = scale * (0.4 + 2.0 * math.exp(-flat_from / (n / 6))) + 0.001 * math.sin(step)
        if spike is not None and step == spike:
            value *= 6
        if nan is not None and step == nan:
            value = float("nan")
        out.append(value)
    return out


def write_events(folder: Path, scalars: dict[str, list[float]], *, start: int = 0, wall: float = 1.7e9,
                 suffix: str = "") -> Path:
    """One event file in ``folder`` with each tag's values at steps ``start``..., as tensorboard writes it."""
    pytest.importorskip("tensorboard")
    from tensorboard.compat.proto import event_pb2, summary_pb2
    from tensorboard.summary.writer.event_file_writer import EventFileWriter

    folder.mkdir(parents=True, exist_ok=True)
    before = set(folder.iterdir())
    writer = EventFileWriter(str(folder), filename_suffix=suffix)
    steps = max(len(values) for values in scalars.values())
    for k in range(steps):
        values = [summary_pb2.Summary.Value(tag=tag, simple_value=series[k])
                  for tag, series in scalars.items() if k < len(series)]
        writer.add_event(event_pb2.Event(wall_time=wall + k, step=start + k, summary=summary_pb2.Summary(value=values)))
    writer.close()
    (made,) = set(folder.iterdir()) - before
    return made


def event_records(scalars: dict[str, list[float]], *, start: int = 0) -> list[bytes]:
    """The framed records of an event file holding ``scalars`` (a version record first), one by one."""
    pytest.importorskip("tensorboard")
    from tensorboard.compat.proto import event_pb2, summary_pb2
    from tensorboard.summary.writer.record_writer import RecordWriter

    import io

    records = []
    events = [event_pb2.Event(wall_time=1.7e9, file_version="brain.Event:2")]
    steps = max(len(values) for values in scalars.values())
    for k in range(steps):
        values = [summary_pb2.Summary.Value(tag=tag, simple_value=series[k])
                  for tag, series in scalars.items() if k < len(series)]
        events.append(event_pb2.Event(wall_time=1.7e9 + k, step=start + k, summary=summary_pb2.Summary(value=values)))
    for event in events:
        buffer = io.BytesIO()
        RecordWriter(buffer).write(event.SerializeToString())
        records.append(buffer.getvalue())
    return records


def write_mlflow_run(store: Path, experiment: str, run_id: str, metrics: dict[str, list[float]],
                     params: dict[str, str], run_name: str, *, status: int = 3) -> Path:
    """One run of an MLflow file store, in MLflow's own layout and line format."""
    exp = store / experiment
    exp.mkdir(parents=True, exist_ok=True)
    if not (exp / "meta.yaml").exists():
        (exp / "meta.yaml").write_text(f"artifact_location: file://{exp}\nexperiment_id: '{experiment}'\n"
                                       f"lifecycle_stage: active\nname: sweep\n")
    run = exp / run_id
    for sub in ("metrics", "params", "tags", "artifacts"):
        (run / sub).mkdir(parents=True, exist_ok=True)
    (run / "meta.yaml").write_text(
        f"artifact_uri: file://{run}/artifacts\nend_time: 1700000900000\nentry_point_name: ''\n"
        f"experiment_id: '{experiment}'\nlifecycle_stage: active\nrun_id: {run_id}\nrun_name: {run_name}\n"
        f"run_uuid: {run_id}\nsource_name: ''\nsource_type: 4\nsource_version: ''\nstart_time: 1700000000000\n"
        f"status: {status}\ntags: []\nuser_id: tester\n")
    for name, values in metrics.items():
        path = run / "metrics" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(f"{1700000000000 + 1000 * k} {value!r} {k}\n" for k, value in enumerate(values)))
    for name, value in params.items():
        (run / "params" / name).write_text(value)
    (run / "tags" / "mlflow.runName").write_text(run_name)
    (run / "tags" / "mlflow.user").write_text("tester")
    return run


def trainer_state(losses: list[float], every: int = 10) -> str:
    history = []
    for k, loss in enumerate(losses):
        step = (k + 1) * every
        entry = {"epoch": round(step / 1000, 4), "grad_norm": 1.0 + 0.1 * math.sin(k), "learning_rate": 5e-5 * (1 - k / len(losses)),
                 "loss": loss, "step": step}
        history.append(entry)
        if (k + 1) % 20 == 0:
            history.append({"epoch": round(step / 1000, 4), "eval_loss": loss * 1.1, "eval_runtime": 1.2, "step": step})
    return json.dumps({"best_metric": None, "epoch": history[-1]["epoch"], "global_step": history[-1]["step"],
                       "log_history": history, "max_steps": len(losses) * every, "num_train_epochs": 1,
                       "total_flos": 1.0, "trial_name": None}, indent=2, allow_nan=True)


def build_tree(root: Path) -> Path:
    """The mixed tree: TensorBoard runs, an MLflow store, Trainer outputs, a W&B run and a CSV."""
    tb = root / "tb"
    write_events(tb / "baseline", {"loss": loss_curve(120, spike=70), "lr": [1e-3] * 120})
    write_events(tb / "lr=0.01", {"loss": loss_curve(120, nan=90, scale=1.3)})
    resumed = tb / "resumed"
    write_events(resumed, {"loss": loss_curve(120, flat_from=40)[:60]}, wall=1.7e9)
    write_events(resumed, {"loss": loss_curve(120, flat_from=40)[60:]}, start=60, wall=1.7e9 + 100)
    keras = tb / "keras"
    write_events(keras / "train", {"epoch_loss": loss_curve(40)}, suffix=".v2")
    write_events(keras / "validation", {"epoch_loss": loss_curve(40, scale=1.2)}, suffix=".v2")
    (tb / "baseline" / "hparams.yaml").write_text("batch_size: 32\nwarmup: 100\n")
    store = root / "mlruns"
    for k, (lr, name) in enumerate((("0.001", "calm-fox"), ("0.1", "wild-owl"))):
        write_mlflow_run(store, "1", f"{k:032x}", {"loss": loss_curve(100, spike=60 if k else None, scale=1 + k),
                                                   "val/acc": [0.5 + i / 400 for i in range(50)]},
                         {"lr": lr, "optimizer": "adamw"}, name)
    out = root / "hf_out"
    for step in (400, 800):
        folder = out / f"checkpoint-{step}"
        folder.mkdir(parents=True)
        (folder / "trainer_state.json").write_text(trainer_state(loss_curve(100, spike=50)[: step // 10]))
        (folder / "model.safetensors").write_bytes(b"\0" * 64)
    (out / "config.json").write_text(json.dumps({"model_type": "gpt2", "n_layer": 4}))
    lone = root / "finetune"
    lone.mkdir()
    (lone / "trainer_state.json").write_text(trainer_state(loss_curve(60, nan=30), every=5))
    fixture = Path(__file__).resolve().parents[1] / "fixtures" / "stores" / "wandb"
    shutil.copytree(fixture, root / "wandb")  # an offline W&B run, as wandb writes it
    (root / "csv_run").mkdir()
    (root / "csv_run" / "metrics.csv").write_text("step,loss\n" + "".join(
        f"{k},{v!r}\n" for k, v in enumerate(loss_curve(80, spike=40))))
    return root


def upload(client, bucket: str, folder: Path, prefix: str) -> None:
    """Every file under ``folder`` as an object under ``prefix`` (S3 has no folders: empty ones are not kept)."""
    for dirpath, _, files in os.walk(folder):
        for name in files:
            path = Path(dirpath) / name
            key = f"{prefix}/{path.relative_to(folder).as_posix()}"
            client.put_object(Bucket=bucket, Key=key, Body=path.read_bytes())
