"""Discovery: which files are runs, what they are called, what is passed over."""

import json
import os
import threading

import pytest

from tuiloss.core.discover import discover, make_labels, sniff
from tuiloss.core.engine import load


def write(path, data: bytes | str):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data.encode() if isinstance(data, str) else data)
    return path


def test_sniffing_by_name_and_first_bytes(tmp_path):
    cases = {
        "metrics.csv": ("step,loss\n1,2\n", "csv"),
        "training.log": ("epoch,loss,val_loss\n0,0.5,0.6\n1,0.4,0.5\n", "csv"),  # Keras CSVLogger
        "metrics.json": ('{"iteration": 1, "total_loss": 2}\n{"iteration": 2, "total_loss": 1}\n', "jsonl"),
        "run.jsonl": ('{"step": 1, "loss": 2}\n', "jsonl"),
        "train.out": ("iter 1: loss 2.0, time 1ms\n", "text"),
        "stdout": ("banner\niter 1: loss 2.0, time 1ms\n", "text"),
        "trainer_state.json": ('{"log_history": []}', "hf_trainer"),
    }
    for name, (content, expected) in cases.items():
        assert sniff(str(write(tmp_path / name, content)))[0] == expected, name


def test_non_logs_are_passed_over_with_a_reason(tmp_path):
    write(tmp_path / "model.safetensors", b"\x00" * 10)
    write(tmp_path / "weights.bin", b"\x00\x01")
    write(tmp_path / "notes.json", '{"a": 1}')
    write(tmp_path / "blob", b"\x00\x01\x02" * 100)
    write(tmp_path / "README.md", "# hi\n")
    write(tmp_path / "run.log", "iter 1: loss 2.0, time 1ms\n")
    found = discover([str(tmp_path)])
    assert [os.path.basename(r.path) for r in found.runs] == ["run.log"]
    reasons = {os.path.basename(p): why for p, why in found.ignored}
    assert reasons["blob"] == "binary file"
    assert "not a log" in reasons["model.safetensors"]
    assert "JSON document" in reasons["notes.json"]


def test_config_files_feed_runs_and_folder_pairs_become_config(tmp_path):
    write(tmp_path / "lr=3e-4_seed=1" / "metrics.csv", "step,loss\n1,2\n")
    write(tmp_path / "lr=1e-3_seed=1" / "metrics.csv", "step,loss\n1,2\n")
    write(tmp_path / "lr=1e-3_seed=1" / "hparams.yaml", "batch_size: 64\noptimizer:\n  name: adamw\n")
    found = discover([str(tmp_path)])
    configs = {os.path.basename(os.path.dirname(r.path)): r.config for r in found.runs}
    assert configs["lr=3e-4_seed=1"] == {"lr": 3e-4, "seed": 1}
    assert configs["lr=1e-3_seed=1"] == {"lr": 1e-3, "seed": 1, "batch_size": 64, "optimizer.name": "adamw"}


def test_labels_use_shortest_distinguishing_suffix_and_differing_keys():
    labels = make_labels([
        ("a", "exp/version_0/metrics.csv", {"lr": 0.1, "seed": 1}),
        ("b", "exp/version_1/metrics.csv", {"lr": 0.2, "seed": 1}),
    ])
    assert labels == {"a": "version_0 | lr=0.1", "b": "version_1 | lr=0.2"}


def test_run_name_in_config_wins():
    labels = make_labels([
        ("a", "x/metrics.csv", {"run_name": "Pre-Norm | Gradient Clip=10 | Run 1"}),
        ("b", "y/metrics.csv", {"run_name": "Pre-Norm | Gradient Clip=1 | Run 2"}),
    ])
    assert labels["a"] == "Pre-Norm | Gradient Clip=10 | Run 1"


def test_yaml_config_is_read_safely(tmp_path):
    marker = tmp_path / "pwned"
    write(tmp_path / "r" / "config.yaml", f"x: !!python/object/apply:os.system ['touch {marker}']\nlr: 0.1\n")
    write(tmp_path / "r" / "log.jsonl", '{"step": 1, "loss": 1}\n')
    found = discover([str(tmp_path)])
    (run,) = found.runs
    # the plain key is read, the tagged value is skipped (never built, never run) and said
    assert run.config == {"lr": 0.1}
    assert not marker.exists()
    assert any("tagged for Python" in notice.message and "x" in notice.message for notice in found.notices)


def test_symlink_loop_is_reported_not_followed_forever(tmp_path):
    write(tmp_path / "a" / "log.jsonl", '{"step": 1, "loss": 1}\n')
    os.symlink(tmp_path, tmp_path / "a" / "loop")
    found = discover([str(tmp_path)])
    assert len(found.runs) == 1
    assert any("symlink loop" in n.message for n in found.notices)


def test_missing_path_is_a_notice(tmp_path):
    found = discover([str(tmp_path / "nope")])
    assert not found.runs and "no such file" in found.notices[0].message


def test_trainer_output_folder_is_one_run_following_the_newest_checkpoint(tmp_path):
    out = tmp_path / "out"
    history = [{"loss": 1.0 - i / 10, "step": (i + 1) * 10} for i in range(5)]
    write(out / "checkpoint-20" / "trainer_state.json", json.dumps({"log_history": history[:2]}))
    write(out / "checkpoint-50" / "trainer_state.json", json.dumps({"log_history": history}))
    store, _, _ = load([str(tmp_path)])
    (run,) = list(store)
    assert run.format == "hf_trainer"
    assert run.series["loss"].visible()[0].tolist() == [10, 20, 30, 40, 50]


def test_empty_and_unreadable_files_do_not_stop_loading(tmp_path, monkeypatch):
    write(tmp_path / "empty.log", b"")
    write(tmp_path / "good.jsonl", '{"step": 1, "loss": 1}\n')
    store, _, _ = load([str(tmp_path)])
    assert {run.source: run.points for run in store} == {"empty.log": 0, "good.jsonl": 1}


def test_rescans_do_not_reread_known_runs_or_unchanged_non_logs(tmp_path, monkeypatch):
    from tuiloss.core import discover as discover_module
    from tuiloss.core.engine import Engine

    write(tmp_path / "a.jsonl", '{"step": 1, "loss": 1}\n')
    write(tmp_path / "notes.txt", "just words\n")
    engine = Engine([str(tmp_path)])
    assert len(engine.scan().new_runs) == 1
    sniffed = []
    real = discover_module.sniff
    monkeypatch.setattr(discover_module, "sniff", lambda path: sniffed.append(path) or real(path))
    assert engine.scan().new_runs == []
    assert sniffed == []
    write(tmp_path / "notes.txt", "iter 1: loss 2.0, time 1ms\n")  # it became a log
    assert [os.path.basename(s.path) for s in engine.scan().new_runs] == ["notes.txt"]


def test_labels_of_thousands_of_runs_are_unique_and_short():
    specs = [(f"/r/run{d:03d}/w{f:03d}.log", f"run{d:03d}/w{f:03d}.log", {}) for d in range(40) for f in range(50)]
    labels = make_labels(specs)
    assert len(set(labels.values())) == len(specs)
    assert labels["/r/run007/w003.log"] == "run007/w003.log"
    named = make_labels([("a", "x/a.log", {"run_name": "same"}), ("b", "y/a.log", {"run_name": "same"})])
    assert named == {"a": "same (x)", "b": "same (y)"}


def test_a_log_with_a_torn_nul_line_is_still_a_log(tmp_path):
    assert sniff(str(write(tmp_path / "train.log", b"iter 1: loss 1.0\n\x00\x00\x00\niter 2: loss 0.5\n")))[0] == "text"
    assert sniff(str(write(tmp_path / "m.csv", b"step,loss\n1,0.5\n\x00\x00\n2,0.4\n")))[0] == "csv"
    assert sniff(str(write(tmp_path / "blob", b"\x00\x01\x02" * 100)))[0] is None


def test_links_to_folders_outside_the_tree_are_passed_over_with_a_reason(tmp_path):
    outside = tmp_path / "datasets"
    write(outside / "train.log", "iter 1: loss 1.0, time 1ms\n")
    root = tmp_path / "runs"
    write(root / "a" / "train.log", "iter 1: loss 1.0, time 1ms\n")
    (root / "data").symlink_to(outside)
    (root / "alias").symlink_to(root / "a")  # inside the tree: followed (the loop guard dedups)
    found = discover([str(root)])
    assert [run.path for run in found.runs] == [str(root / "a" / "train.log")]
    assert dict(found.ignored)[str(root / "data")].startswith("link to a folder outside")
    assert len(discover([str(root), str(outside)]).runs) == 2


def test_load_reads_ahead_on_a_thread_and_stores_every_read_in_order(tmp_path, monkeypatch):
    from tuiloss.core import engine as engine_module
    from tuiloss.core.sources import line as line_module

    write(tmp_path / "a.csv", "step,loss\n" + "".join(f"{i},{1 / (i + 1):.6f}\n" for i in range(300_000)))
    reads = []
    real = engine_module.Engine.read

    def read(self, *args, **kwargs):
        reads.append(threading.current_thread().name)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(engine_module.Engine, "read", read)
    monkeypatch.setattr(line_module, "DEFAULT_MAX_READ", 1)  # reads of the smallest size: several
    store, _, _ = engine_module.load([str(tmp_path)])
    (run,) = list(store)
    steps, values = run.series["loss"].visible()
    assert steps.tolist() == list(range(300_000))
    assert len(reads) > 1 and set(reads) == {"tuiloss-load"}
    assert not [t for t in threading.enumerate() if t.name == "tuiloss-load"]


def test_batches_read_while_the_last_was_handed_on_are_handed_on_as_one(tmp_path, monkeypatch):
    """A caller slower than the reads (a report analysing each batch) is handed what waits at once."""
    from tuiloss.core import driver as driver_module
    from tuiloss.core import engine as engine_module
    from tuiloss.core.sources import line as line_module

    write(tmp_path / "a.csv", "step,loss\n" + "".join(f"{i},{1 / (i + 1):.6f}\n" for i in range(600_000)))
    monkeypatch.setattr(line_module, "DEFAULT_MAX_READ", 1)  # reads of the smallest size: several
    posted, ready = [], threading.Condition()
    real = driver_module.Ingestor._post

    def post(self, message):
        real(self, message)
        with ready:
            posted.append(message)
            ready.notify_all()

    monkeypatch.setattr(driver_module.Ingestor, "_post", post)
    handed = []  # (points stored, batches posted) at each hand-on

    def stored(store):
        with ready:
            handed.append((store.points, len(posted)))
            if len(handed) == 1:  # slow the first time: the next two batches are read meanwhile
                more = len(posted) + 2  # as many as may wait unacknowledged
                assert ready.wait_for(lambda: len(posted) >= more, timeout=30)

    store, _, _ = engine_module.load([str(tmp_path)], stored=stored)
    assert store.points == 600_000 and len(posted) > 3
    points = [p for p, _ in handed]
    assert points == sorted(points) and points[-1] == 600_000
    # the batches posted while the first hand-on was slow came in one hand-on; then one each
    assert max(b - a for (_, a), (_, b) in zip(handed, handed[1:])) >= 2
    assert len(handed) < len(posted) + 1
    assert not [t for t in threading.enumerate() if t.name == "tuiloss-load"]


def test_load_raises_what_a_read_raised_and_leaves_no_reader_behind(tmp_path, monkeypatch):
    from tuiloss.core import engine as engine_module

    write(tmp_path / "a.jsonl", '{"step": 1, "loss": 1}\n')
    monkeypatch.setattr(engine_module.Engine, "read", lambda self, *a, **k: 1 / 0)
    with pytest.raises(ZeroDivisionError):
        engine_module.load([str(tmp_path)])
    assert not [t for t in threading.enumerate() if t.name == "tuiloss-load"]


# -- labels: a run's own name, never a generic file name --------------------------------------


def test_a_run_is_labelled_by_its_folder_not_a_generic_file_name():
    labels = make_labels([
        ("/w/hf/whisper_large_v2_ja_overfit/trainer_state.json", "trainer_state.json", {}),
    ])
    assert labels == {"/w/hf/whisper_large_v2_ja_overfit/trainer_state.json": "whisper_large_v2_ja_overfit"}
    labels = make_labels([
        ("/w/lightning_logs/version_3/metrics.csv", "lightning_logs/version_3/metrics.csv", {}),
        ("/w/keras/runs/unet_a/logs/train.log", "keras/runs/unet_a/logs/train.log", {}),
        ("/w/ds/opt-1.3b-globalBatchSize128.log", "ds/opt-1.3b-globalBatchSize128.log", {}),
    ])
    assert sorted(labels.values()) == ["opt-1.3b-globalBatchSize128.log", "unet_a", "version_3"]


def test_a_log_named_by_a_time_or_a_number_is_labelled_by_its_folder():
    """mmdetection names its logs by their start time, torchtune by a Unix time, Slurm by the
    job id, ms-swift writes ``logging.jsonl`` in each run's folder: the folder (the config,
    the experiment) is what names the run."""
    labels = make_labels([
        ("/w/work_dirs/faster_rcnn_r50_fpn_1x/20211207_135738.log.json", "faster_rcnn_r50_fpn_1x/20211207_135738.log.json", {}),
        ("/w/tune/llama3_lora/log_1733000000.txt", "llama3_lora/log_1733000000.txt", {}),
        ("/w/jobs/gpt2_small/slurm-4242.out", "gpt2_small/slurm-4242.out", {}),
        ("/w/sweep/bs10_2023-07-26_23:44:21", "sweep/bs10_2023-07-26_23:44:21", {}),
        ("/w/output/qwen_sft/v0-20250101-100000/logging.jsonl", "qwen_sft/v0-20250101-100000/logging.jsonl", {}),
    ])
    assert sorted(labels.values()) == ["bs10_2023-07-26_23:44:21", "faster_rcnn_r50_fpn_1x", "gpt2_small", "llama3_lora",
                                       "v0-20250101-100000"]
    two = make_labels([
        ("/w/work_dirs/retinanet/20211207_135738.log", "retinanet/20211207_135738.log", {}),
        ("/w/work_dirs/retinanet/20211208_101010.log", "retinanet/20211208_101010.log", {}),
    ])
    assert sorted(two.values()) == ["retinanet (20211207_135738.log)", "retinanet (20211208_101010.log)"]


def test_runs_sharing_a_folder_fall_back_to_telling_paths():
    labels = make_labels([
        ("/w/ppo/logs/progress.csv", "logs/progress.csv", {}),
        ("/w/ppo/logs", "logs", {}),
    ])
    assert len(set(labels.values())) == 2
    assert all(label not in ("", "ppo") for label in labels.values())


def test_a_single_watched_file_is_labelled_by_its_folder(tmp_path):
    log = write(tmp_path / "whisper_small_run" / "trainer_state.json",
                json.dumps({"log_history": [{"loss": 1.0, "step": 10}, {"loss": 0.5, "step": 20}]}))
    store, _, _ = load([str(log)])
    (run,) = list(store)
    assert run.label == "whisper_small_run"


def test_a_folder_key_is_the_hyperparameter_not_the_prefix(tmp_path):
    write(tmp_path / "newrun_lr=1e-3" / "metrics.csv", "step,loss\n1,2\n")
    write(tmp_path / "batch_size=32_seed=2" / "metrics.csv", "step,loss\n1,2\n")
    found = discover([str(tmp_path)])
    configs = sorted((r.config for r in found.runs), key=len)
    assert {"lr": 1e-3} in configs and {"batch_size": 32, "seed": 2} in configs


def test_a_rotated_copy_of_a_file_that_is_no_log_is_judged_on_its_own(tmp_path):
    (tmp_path / "train.log").mkdir()  # a folder of that name: no log for the copy to join
    (tmp_path / "train.log.1").write_text("iter 1: loss 0.5, time 1.00ms\niter 2: loss 0.4, time 1.00ms\n")
    found = discover([str(tmp_path)])
    assert [run.path for run in found.runs] == [str(tmp_path / "train.log.1")]
    (tmp_path / "train.log").rmdir()
    (tmp_path / "train.log").write_text("iter 3: loss 0.3, time 1.00ms\n")  # now a log: the copy joins it
    found = discover([str(tmp_path)])
    assert [run.path for run in found.runs] == [str(tmp_path / "train.log")]


# -- thousands of run folders: what one discovery costs per run ---------------------------------

def many_runs(root, count, body="step,loss\n1,2.0\n2,1.5\n"):
    for k in range(count):
        write(root / f"lr=0.{k + 1}" / f"run{k}" / "metrics.csv", body)


class CountedPaths:
    """Known paths that count how often they are gone through whole."""

    def __init__(self, paths):
        self.paths, self.walks = set(paths), 0

    def __contains__(self, path):
        return path in self.paths

    def __iter__(self):
        self.walks += 1
        return iter(self.paths)


def test_a_rescan_looks_each_known_run_up_and_never_goes_through_them_all(tmp_path):
    many_runs(tmp_path, 40)
    first = discover([str(tmp_path)])
    known = CountedPaths(spec.path for spec in first.runs)
    again = discover([str(tmp_path)], known=known)
    assert again.runs == [] and known.walks == 0  # once per folder, it was quadratic in the runs


def test_a_config_file_above_many_runs_is_read_once_per_discovery(tmp_path, monkeypatch):
    from tuiloss.core import discover as discovery

    write(tmp_path / "config.yaml", "optimizer: adam\nbatch_size: 64\n")
    write(tmp_path / "lr=0.1" / "hparams.yaml", "seed: 3\n")
    many_runs(tmp_path, 30)
    reads = []
    real = discovery.load_config_file
    monkeypatch.setattr(discovery, "load_config_file", lambda path, skipped=None: reads.append(path) or real(path, skipped))
    found = discover([str(tmp_path)])
    assert len(found.runs) == 30
    assert sorted(reads) == sorted([str(tmp_path / "config.yaml"), str(tmp_path / "lr=0.1" / "hparams.yaml")])
    by_label = {spec.source: spec.config for spec in found.runs}
    assert by_label["lr=0.1/run0/metrics.csv"] == {"optimizer": "adam", "batch_size": 64, "lr": 0.1, "seed": 3}
    assert by_label["lr=0.2/run1/metrics.csv"] == {"optimizer": "adam", "batch_size": 64, "lr": 0.2}


def test_trackers_checks_run_only_where_the_listing_names_their_files(tmp_path, monkeypatch):
    from tuiloss.core import discover as discovery

    many_runs(tmp_path, 10)
    write(tmp_path / "hf" / "checkpoint-10" / "trainer_state.json",
          json.dumps({"log_history": [{"step": 10, "loss": 1.0}]}))
    looked = []
    for name in ("is_trainer_output_dir", "is_mlflow_run_dir"):
        real = getattr(discovery, name)
        monkeypatch.setattr(discovery, name, lambda folder, real=real, name=name: looked.append((name, folder)) or real(folder))
    found = discover([str(tmp_path)])
    assert looked == [("is_trainer_output_dir", str(tmp_path / "hf"))]
    assert [spec.format for spec in found.runs].count("hf_trainer") == 1 and len(found.runs) == 11


def test_a_csv_named_log_is_taken_by_its_name_without_reading_it(tmp_path, monkeypatch):
    path = write(tmp_path / "metrics.csv", "x" * 100_000)
    assert sniff(str(path)) == ("csv", "")
    os.chmod(path, 0)
    try:
        if os.access(path, os.R_OK):
            pytest.skip("root reads everything")
        assert sniff(str(path)) == (None, "permission denied")
    finally:
        os.chmod(path, 0o644)
