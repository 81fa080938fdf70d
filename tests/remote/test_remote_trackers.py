"""Trackers' folders on remote roots: TensorBoard logdirs, MLflow file stores and Trainer outputs in a
bucket or on another node give the runs, names, configs and findings the same tree gives on disk."""

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
    out["ignored"] = sorted(map(tuple, out["ignored"])) if isinstance(out["ignored"], list) else out["ignored"]
    return out


def test_a_tracker_tree_in_s3_and_over_sftp_reports_as_on_disk(tmp_path, s3, bucket, sshd):
    tree = build_tree(tmp_path / "tree")
    upload(s3.client(), bucket, tree, "logs")
    local = report(str(tree))
    formats = sorted(run["format"] for run in local["runs"])
    assert formats == ["csv", "hf_trainer", "hf_trainer", "mlflow", "mlflow",
                       "tfevents", "tfevents", "tfevents", "tfevents"], formats
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
