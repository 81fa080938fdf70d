"""MLflow file store: metric files tailed per run, params and tags as config."""

import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tuiloss.core.formats.mlflow import (
    MlflowMetricParser,
    is_mlflow_run_dir,
    mlflow_config,
    mlflow_run_info,
)
from tuiloss.core.model import Batch, Notice, SegmentEvent
from tuiloss.core.sources import mlflow as mlflow_source
from tuiloss.core.sources.mlflow import MlflowRunSource
from source_helpers import drain, points, skipped

REAL_RUN = "mlflow/moreh_diffusers_interval_loss/mlruns/108087542544038754/888293e0c4a047a4aa99c13869a08738"

# -- a run folder laid out the way mlflow's FileStore writes it ------------------------


class FileStoreRun:
    """Writes a run folder the way ``mlflow.store.tracking.file_store.FileStore`` does."""

    def __init__(self, root: Path, experiment_id="271828", run_id="5d2c8f0e6a1b4c3d9e7f001122334455"):
        experiment = root / "mlruns" / experiment_id
        experiment.mkdir(parents=True)
        (experiment / "meta.yaml").write_text(
            f"artifact_location: file://{experiment}\ncreation_time: 1700000000000\n"
            f"experiment_id: '{experiment_id}'\nlast_update_time: 1700000000000\n"
            "lifecycle_stage: active\nname: musical-mlm\n"
        )
        self.path = experiment / run_id
        for folder in ("metrics", "params", "tags", "artifacts"):
            (self.path / folder).mkdir(parents=True)
        (self.path / "meta.yaml").write_text(
            f"artifact_uri: file://{self.path}/artifacts\nend_time: null\nentry_point_name: ''\n"
            f"experiment_id: '{experiment_id}'\nlifecycle_stage: active\nrun_id: {run_id}\n"
            f"run_name: gentle-owl-42\nrun_uuid: {run_id}\nsource_name: ''\nsource_type: 4\n"
            "source_version: ''\nstart_time: 1700000000000\nstatus: 1\ntags: []\nuser_id: ubuntu\n"
        )

    def log_metric(self, key, value, step=0, timestamp=1700000000000):
        path = self.path / "metrics" / key
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "a") as handle:
            handle.write(f"{timestamp} {value} {step}\n")

    def log_param(self, key, value):
        path = self.path / "params" / key
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(str(value))

    def set_tag(self, key, value):
        path = self.path / "tags" / key
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(str(value))


@pytest.fixture
def run(tmp_path):
    return FileStoreRun(tmp_path)


@pytest.fixture
def settled(monkeypatch):
    """Trust folder listings at once (tests write folders faster than any mtime tick)."""
    monkeypatch.setattr(mlflow_source, "_MTIME_SLACK", -1e9)





# -- the real store ---------------------------------------------------------------------


def test_real_mlflow_store(real_logs):
    run_dir = real_logs / REAL_RUN
    raw = [line.split() for line in (run_dir / "metrics" / "interval_loss").read_text().splitlines()]

    assert is_mlflow_run_dir(run_dir)
    assert not is_mlflow_run_dir(run_dir.parent)
    items = drain(MlflowRunSource(run_dir))

    steps, values = points(items, "interval_loss")
    assert len(steps) == 12
    assert steps[:4] == [2.0, 5.0, 7.0, 10.0]
    assert steps == [float(fields[2]) for fields in raw]
    assert values == [float(fields[1]) for fields in raw]
    assert points(items, "one_epoch_time") == ([0.0], [144.65826058387756])
    series = {name for item in items if isinstance(item, Batch) for name in item.series}
    assert series == {"interval_loss", "interval_throughput", "avg_throughput", "one_epoch_time"}
    assert skipped(items) == {}
    assert not [item for item in items if not isinstance(item, Batch)]

    config = mlflow_config(run_dir)
    assert config == {
        "batch_size": 10,
        "model": "CompVis/stable-diffusion-v1-4",
        "run_name": "bs10_2023-07-26_23:44:21",
    }
    info = mlflow_run_info(run_dir)
    assert info.experiment_name == "CompVis/stable-diffusion-v1-4"
    assert info.run_id == "888293e0c4a047a4aa99c13869a08738"
    assert info.status == "FINISHED"


# -- reading ---------------------------------------------------------------------------


def test_metrics_params_and_tags(run):
    for step in range(0, 300, 100):
        run.log_metric("train/loss", 1.0 / (step + 1), step, 1700000000000 + step)
        run.log_metric("lr", 3e-4, step, 1700000000000 + step)
    run.log_metric("val/loss", float("nan"), 200)
    run.log_param("batch_size", 32)
    run.log_param("optimizer/lr", "3e-4")
    run.log_param("norm", "pre")
    run.set_tag("mlflow.runName", "Pre-Norm | Gradient Clip=10 | Run 1")
    run.set_tag("mlflow.user", "ubuntu")
    run.set_tag("mlflow.source.git.commit", "0123abcd")
    run.set_tag("team", "music")

    items = drain(MlflowRunSource(run.path))

    assert points(items, "train/loss") == ([0.0, 100.0, 200.0], [1.0, 1 / 101, 1 / 201])
    assert points(items, "lr") == ([0.0, 100.0, 200.0], [3e-4] * 3)
    steps, values = points(items, "val/loss")
    assert steps == [200.0] and np.isnan(values[0])
    assert mlflow_config(run.path) == {
        "batch_size": 32,
        "norm": "pre",
        "optimizer/lr": 3e-4,
        "team": "music",
        "run_name": "Pre-Norm | Gradient Clip=10 | Run 1",
    }
    info = mlflow_run_info(run.path)
    assert info.tags["mlflow.source.git.commit"] == "0123abcd"
    assert info.experiment_name == "musical-mlm" and info.status == "RUNNING"


def test_run_name_falls_back_to_meta_yaml(run):
    assert mlflow_config(run.path) == {"run_name": "gentle-owl-42"}


def test_config_never_raises(tmp_path, run):
    (run.path / "meta.yaml").write_text("run_name: !!python/object:os.system ['echo no']\n")
    assert mlflow_config(run.path) == {}
    (run.path / "meta.yaml").write_bytes(b"\xff\xfe: [unclosed\n")
    assert mlflow_config(run.path) == {}
    assert mlflow_config(tmp_path / "nowhere") == {}


def test_old_lines_without_step_are_numbered_in_timestamp_order():
    parser = MlflowMetricParser("loss")
    batch = parser.feed(b"1700000000300 0.3\n1700000000100 0.1\n1700000000200 0.2\n", 1)
    assert batch.series["loss"][0].tolist() == [0.0, 1.0, 2.0]
    assert batch.series["loss"][1].tolist() == [0.1, 0.2, 0.3]

    # The numbering goes on across chunks.
    batch = parser.feed(b"1700000000500 0.5 0\n1700000000400 0.4 0\n", 4)
    assert batch.series["loss"][0].tolist() == [3.0, 4.0]
    assert batch.series["loss"][1].tolist() == [0.4, 0.5]


def test_real_steps_take_over_once_one_is_not_zero():
    parser = MlflowMetricParser("loss")
    batch = parser.feed(b"1700000000000 1.0 0\n1700000000001 0.9 10\n1700000000002 0.8 20\n", 1)
    assert batch.series["loss"][0].tolist() == [0.0, 10.0, 20.0]
    batch = parser.feed(b"1700000000003 0.7 0\n", 4)  # a real step 0 now: a reset
    assert batch.series["loss"][0].tolist() == [0.0]

    parser.restart()
    batch = parser.feed(b"1700000000009 2.0 0\n1700000000008 3.0 0\n", 1)
    assert batch.series["loss"][0].tolist() == [0.0, 1.0]
    assert batch.series["loss"][1].tolist() == [3.0, 2.0]


def test_malformed_lines_are_counted_and_specials_kept():
    parser = MlflowMetricParser("loss")
    data = (
        b"1700000000000 1.5 1\n"
        b"garbage\n"
        b"1700000000001 abc 2\n"
        b"\n"
        b"1700000000002 inf 3\n"
        b"1700000000003 -inf 4\n"
        b"1700000000004 0.5 nan\n"
        b"1700000000005 0.25 5 run-id dataset digest\n"
    )
    batch = parser.feed(data, 1)
    steps, values = batch.series["loss"]
    assert steps.tolist() == [1.0, 3.0, 4.0, 5.0]
    assert values.tolist() == [1.5, float("inf"), float("-inf"), 0.25]
    assert dict(batch.skipped) == {"malformed metric line": 2, "missing step": 1}
    assert [example.line for example in batch.examples] == [2, 3, 7]


# -- tailing ---------------------------------------------------------------------------


def test_appends_partial_lines_and_new_metric_files(run, settled):
    run.log_metric("loss", 1.0, 1)
    source = MlflowRunSource(run.path)
    assert points(drain(source), "loss") == ([1.0], [1.0])
    assert not source.changed()

    with open(run.path / "metrics" / "loss", "a") as handle:
        handle.write("1700000000001 0.5")
    assert source.changed()
    assert points(drain(source), "loss") == ([], [])
    with open(run.path / "metrics" / "loss", "a") as handle:
        handle.write(" 2\n")
    assert points(drain(source), "loss") == ([2.0], [0.5])

    run.log_metric("eval/loss", 0.7, 2)  # a new nested folder and file
    assert source.changed()
    items = drain(source)
    assert points(items, "eval/loss") == ([2.0], [0.7])
    assert source.metrics() == ["eval/loss", "loss"]
    assert source.paths() == [str(run.path / "metrics" / "eval" / "loss"), str(run.path / "metrics" / "loss")]

    run.log_metric("eval/acc", 0.9, 2)  # a new file in a folder that already exists
    assert source.changed()
    assert points(drain(source), "eval/acc") == ([2.0], [0.9])
    assert not source.changed()


def test_a_metric_file_created_in_the_same_mtime_tick_is_not_missed(run):
    import os

    run.log_metric("loss", 1.0, 1)
    metrics = run.path / "metrics"
    frozen = os.stat(metrics).st_mtime_ns
    source = MlflowRunSource(run.path)
    drain(source)
    run.log_metric("acc", 0.5, 1)
    os.utime(metrics, ns=(frozen, frozen))  # a coarse clock: the folder looks unchanged
    assert source.changed()
    assert points(drain(source), "acc") == ([1.0], [0.5])


def test_truncated_metric_file_starts_a_segment(run, settled):
    for step in range(3):
        run.log_metric("loss", 1.0, step, 1700000000000 + step)
    source = MlflowRunSource(run.path)
    drain(source)

    (run.path / "metrics" / "loss").write_text("1700000009999 2.0 0\n")
    items = drain(source)

    events = [item for item in items if isinstance(item, SegmentEvent)]
    assert [event.reason for event in events] == ["truncated"]
    assert "metrics/loss" in events[0].detail
    assert points(items, "loss") == ([0.0], [2.0])


def test_deleted_run_folder_is_reported_once(run, settled):
    run.log_metric("loss", 1.0, 1)
    run.log_metric("acc", 1.0, 1)
    source = MlflowRunSource(run.path)
    drain(source)
    shutil.rmtree(run.path)

    items = drain(source)
    assert [item.reason for item in items if isinstance(item, SegmentEvent)] == ["deleted"]
    assert [item.level for item in items if isinstance(item, Notice)] == ["warning"]
    assert not source.changed()
    assert drain(source) == []


def test_one_deleted_metric_file_is_a_notice_only(run, settled):
    run.log_metric("loss", 1.0, 1)
    run.log_metric("acc", 1.0, 1)
    source = MlflowRunSource(run.path)
    drain(source)
    (run.path / "metrics" / "acc").unlink()

    items = drain(source)
    assert not [item for item in items if isinstance(item, SegmentEvent)]
    (notice,) = items
    assert notice.level == "warning" and "acc" in notice.message


def test_importing_the_module_loads_neither_yaml_nor_tensorboard():
    code = (
        "import sys, tuiloss.core.sources.mlflow;"
        "print([m for m in ('yaml', 'tensorboard', 'google.protobuf') if m in sys.modules])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
