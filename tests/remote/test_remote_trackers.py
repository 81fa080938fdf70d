"""Trackers' folders on remote roots: TensorBoard logdirs, MLflow file stores, Trainer outputs and W&B
runs in a bucket or on another node give the runs, names, configs and findings the same tree gives
on disk."""

from __future__ import annotations

import json
import subprocess
import sys

from trackers import build_tree, upload


def report(root: str, env: dict | None = None) -> dict:
    done = subprocess.run([sys.executable, "-m", "tuiloss", "report", root, "--json"], capture_output=True,
                          text=True, env=env, timeout=120)
    assert done.returncode in (0, 1), done.stderr
    assert "Traceback" not in done.stderr
    return json.loads(done.stdout)


def normalised(found: dict, root: str) -> dict:
    """A report with its root written as ROOT, runs in id order and the fields that name the
    place (the root itself, each run's source path) left out."""
    text = json.dumps(found, sort_keys=True).replace(root.rstrip("/"), "ROOT")
    out = json.loads(text)
    out.pop("root", None)
    for run in out["runs"]:
        run.pop("source", None)
    out["runs"].sort(key=lambda run: run["id"])
    out["ignored"] = sorted(out["ignored"], key=lambda item: json.dumps(item, sort_keys=True))
    return out


def test_a_tracker_tree_in_s3_and_over_sftp_reports_as_on_disk(tmp_path, s3, bucket, sshd):
    tree = build_tree(tmp_path / "tree")
    upload(s3.client(), bucket, tree, "logs")
    local = report(str(tree))
    formats = sorted(run["format"] for run in local["runs"])
    assert formats == ["csv", "hf_trainer", "hf_trainer", "mlflow", "mlflow",
                       "tfevents", "tfevents", "tfevents", "tfevents", "wandb"], formats
    expected = normalised(local, str(tree))
    labels = sorted(run["label"] for run in expected["runs"])
    assert "calm-fox" in labels and "wild-owl" in labels and "keras" in labels
    mlflow = [run for run in expected["runs"] if run["format"] == "mlflow"]
    assert {run["config"]["lr"] for run in mlflow} == {0.001, 0.1}
    assert any(run["metrics"]["loss"]["anomalies"] for run in expected["runs"] if run["format"] == "tfevents")
    for remote, env in ((f"s3://{bucket}/logs", s3.env()), (f"sftp://tuiloss-test{tree}", sshd.env())):
        got = normalised(report(remote, env), remote)
        assert got["runs"] == expected["runs"], remote
        assert got["observations"] == expected["observations"], remote
        assert got["configurations"] == expected["configurations"], remote
        assert got["configuration_findings"] == expected["configuration_findings"], remote
        assert got["jobs"] == expected["jobs"], remote
        assert got["ignored"] == expected["ignored"], remote  # what is passed over, and why


def _same_as_on_disk(tmp_path, tree, env: dict) -> None:
    disk = build_tree(tmp_path / "tree")
    for path in sorted(disk.rglob("*")):
        if path.is_file():
            tree.write(path.relative_to(disk).as_posix(), path.read_bytes())
    expected = normalised(report(str(disk)), str(disk))
    got = normalised(report(tree.root, env), tree.root)
    for key in ("runs", "observations", "configurations", "configuration_findings", "jobs", "ignored"):
        assert got[key] == expected[key], key


def test_a_tracker_tree_in_gcs_reports_as_on_disk(tmp_path, gcs, gcs_bucket):
    from backends import ObjectTree

    _same_as_on_disk(tmp_path, ObjectTree(gcs.fs(), "gs", gcs_bucket), gcs.env())


def test_a_tracker_tree_in_azure_blob_storage_reports_as_on_disk(tmp_path, azurite, container):
    from backends import ObjectTree

    _same_as_on_disk(tmp_path, ObjectTree(azurite.fs(), "az", container), azurite.env())


# -- event files growing, cut short and replaced, over both servers --------------------------------

import pytest  # noqa: E402

from test_remote_tail import Follower  # noqa: E402
from trackers import event_records  # noqa: E402

EVENTS = "events.out.tfevents.1700000000.node01.4242.0"


def idle_step_lists_only(follow) -> bool:
    """Whether a step of ``follow`` with nothing new costs its root's listing alone, no read."""
    remote = follow.engine.remote.trees[0].remote
    before = remote.operations
    remote.listing()
    listing = remote.operations - before
    before = remote.operations
    follow.step()
    return remote.operations - before == listing


def test_an_event_file_is_read_record_by_record_and_a_half_written_record_waits(tree):
    values = [2.0 - k / 100 for k in range(40)]
    records = event_records({"loss": values})
    rel = f"runs/a/{EVENTS}"
    whole = b"".join(records[:11])  # the version record and 10 events
    tree.write(rel, whole + records[11][:9])  # and a record cut inside its header
    follow = Follower(tree.root)
    follow.step()
    run = f"{tree.root}/runs/a"
    assert follow.values(run) == pytest.approx(values[:10])
    remote = follow.engine.remote.trees[0].remote
    before = remote.operations
    tree.append(rel, records[11][9:-3])  # still not whole: its data CRC is missing
    follow.step()
    assert follow.values(run) == pytest.approx(values[:10])
    tree.append(rel, records[11][-3:] + b"".join(records[12:25]))
    before = remote.operations
    remote.listing()
    listing = remote.operations - before
    follow.step()
    assert remote.operations - before - listing == listing + 1  # the poll's listing and one ranged read
    assert follow.values(run) == pytest.approx(values[:24])  # exactly the points written, each once
    assert follow.reasons(run) == ["start"]
    tree.settle(rel)  # written before the last second (SFTP's mtimes are whole seconds)
    follow.step()
    assert idle_step_lists_only(follow)
    assert follow.values(run) == pytest.approx(values[:24])


def test_a_cut_or_replaced_event_file_is_read_again_from_its_start(tree):
    first = event_records({"loss": [3.0 - k / 10 for k in range(20)]})
    rel = f"runs/b/{EVENTS}"
    tree.write(rel, b"".join(first))
    follow = Follower(tree.root)
    follow.step()
    run = f"{tree.root}/runs/b"
    assert len(follow.values(run)) == 20
    tree.write(rel, b"".join(first[:6]))  # cut short: read again from 0 as a new segment
    tree.settle(rel)
    follow.step()
    assert follow.reasons(run)[-1] == "replaced"
    series = follow.run(run).series["loss"]
    assert series.values.view.tolist()[-5:] == pytest.approx([3.0 - k / 10 for k in range(5)])
    second = event_records({"loss": [9.0 + k for k in range(30)]}, start=100)
    tree.replace(rel, b"".join(second))  # a longer file over it, its first bytes new
    follow.step()
    values = follow.values(run)
    assert values[-30:] == pytest.approx([9.0 + k for k in range(30)])
    assert 100.0 in follow.run(run).series["loss"].steps.view.tolist()
    assert not any(n.level == "error" for n in follow.notices)


def test_a_new_event_file_of_a_resumed_run_is_read_after_the_first(tree):
    tree.write(f"runs/c/{EVENTS}", b"".join(event_records({"loss": [1.0] * 10})))
    follow = Follower(tree.root)
    follow.step()
    run = f"{tree.root}/runs/c"
    later = EVENTS.replace("1700000000", "1700000500")
    tree.write(f"runs/c/{later}", b"".join(event_records({"loss": [0.5] * 5}, start=10)))
    changed, new_files = follow.engine.remote.poll(every=True)  # as the driver polls: what it reads is
    assert new_files and {r for url in changed for r in follow.engine.runs_for_path(url)} == {run}  # the run's
    follow.step()
    assert follow.values(run) == [1.0] * 10 + [0.5] * 5
    assert len(follow.store) == 1


def test_a_wandb_run_file_written_in_pieces_holds_every_row_once(tree, tmp_path):
    from pathlib import Path

    from tuiloss.core.engine import load

    fixture = Path(__file__).resolve().parents[1] / "fixtures" / "stores" / "wandb"
    (folder,) = fixture.iterdir()
    (run_file,) = folder.iterdir()
    data = run_file.read_bytes()
    whole, _, _ = load([str(fixture)])
    (expected,) = whole.runs.values()
    rel = f"wandb/{folder.name}/{run_file.name}"
    cut = len(data) // 2 + 5  # inside a record
    tree.write(rel, data[:cut])
    follow = Follower(tree.root)
    follow.step()
    run = follow.run(f"{tree.root}/wandb/{folder.name}")
    first = run.series["train/loss"].values.view.tolist()
    assert 0 < len(first) < len(expected.series["train/loss"].values.view)
    tree.append(rel, data[cut:])
    follow.step()
    assert run.series["train/loss"].values.view.tolist() == expected.series["train/loss"].values.view.tolist()
    assert run.label == expected.label and run.config == expected.config


def test_a_state_file_saved_twice_in_one_second_at_one_size_is_read_again(sshd, tmp_path, monkeypatch):
    """Over SFTP a listing tells a file's versions by size and whole-second mtime alone: a history
    cut back and written on, as long as before, in the same second, lists alike. It is read again
    while its second may still be going on, and no more after."""
    import os
    from types import SimpleNamespace

    from backends import SftpTree
    from tuiloss.core.remote import sources

    def state(losses: list[float]) -> bytes:
        history = [{"loss": loss, "learning_rate": 1e-4, "step": 10 * (k + 1)} for k, loss in enumerate(losses)]
        return json.dumps({"global_step": 10 * len(losses), "log_history": history}, indent=2).encode()

    first, second = state([2.5, 2.25, 2.125, 1.75]), state([2.5, 2.25, 2.125, 1.25])  # the last entry redone
    assert len(first) == len(second)
    tree = SftpTree(tmp_path / "logs")
    path = tmp_path / "logs" / "out" / "trainer_state.json"
    saved = 1_700_000_000
    clock = SimpleNamespace(time=lambda: saved + 0.4)  # the reader's looks: within the second of the saves
    monkeypatch.setattr(sources, "time", clock)
    tree.write("out/trainer_state.json", first)
    os.utime(path, (saved, saved))
    follow = Follower(tree.root)
    follow.step()
    url = tree.url("out/trainer_state.json")
    assert follow.values(url) == [2.5, 2.25, 2.125, 1.75]
    tree.write("out/trainer_state.json", second)
    os.utime(path, (saved, saved))  # the same second, the same size: the same listing
    follow.step()
    assert follow.values(url)[-1] == 1.25 and follow.reasons(url)[-1] == "replaced"
    clock.time = lambda: saved + 5.0  # the second is long over: a look now is the last one needed
    follow.step()
    assert idle_step_lists_only(follow)  # sure of it now
    assert follow.values(url)[-1] == 1.25
