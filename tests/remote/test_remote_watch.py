"""The viewer on remote roots: runs of two nodes on screen, an append shown, the status bar per root."""

from __future__ import annotations

import asyncio
import time

import pytest

from backends import SftpTree
from tuiloss.config import Config
from tuiloss.core.remote.tree import RootStatus
from tuiloss.ui.app import make_app
from tuiloss.ui.widgets.status_bar import Status, interval, remote_name, status_text


def test_the_status_bar_names_each_remote_root_its_poll_and_its_last_error():
    status = Status(runs=2, shown=2, mode="polling", reason="remote roots", remote=(
        RootStatus("sftp://node01/scratch/run", "sftp", 2.0),
        RootStatus("s3://bucket/exp/logs", "s3", 60.0, "s3://bucket/exp/logs: cannot list: timed out"),
    ))
    text = status_text(status).plain
    assert "sftp node01/run every 2s" in text
    assert "s3 bucket/logs every 1m s3://bucket/exp/logs: cannot list: timed out" in text
    assert remote_name("ssh://node02") == "node02" and interval(3.375) == "every 3.4s"


async def _wait(pilot, predicate, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        await pilot.pause(0.05)


def test_watching_two_nodes_shows_both_and_follows_an_append(sshd, tmp_path):
    trees = [SftpTree(tmp_path / node / "run", host=node) for node in ("node01", "node02")]
    for tree in trees:
        tree.write("train.log", "".join(f"iter {i}: loss {4 - i / 50:.3f}\n" for i in range(1, 40)).encode())

    async def watch() -> None:
        app = make_app(Config(paths=tuple(tree.root for tree in trees), poll=0.2))
        async with app.run_test(size=(120, 40)) as pilot:
            await _wait(pilot, lambda: app.loaded and len(app.store) == 2, 30, "both nodes' runs")
            assert sorted(run.label for run in app.store) == ["node01", "node02"]
            run = app.store.runs[trees[1].url("train.log")]
            trees[1].append("train.log", b"iter 40: loss 0.5\n")
            await _wait(pilot, lambda: len(run.series["loss"]) == 40, 15, "the appended point")
            await _wait(pilot, lambda: len(app.status_bar.status.remote) == 2, 5, "the status of both roots")
            text = status_text(app.status_bar.status).plain
            assert "sftp node01/run every" in text and "sftp node02/run every" in text
            assert "polling (--poll 0.2s)" in text
            await pilot.press("q")

    asyncio.run(watch())


def test_watching_a_tensorboard_logdir_in_a_bucket_follows_its_event_files(s3, bucket):
    """The viewer on an S3 logdir of two TensorBoard runs: both on screen, a record appended to one
    event file in two flushes, the first cut inside a record, shown once whole."""
    from backends import S3Tree
    from trackers import event_records

    tree = S3Tree(s3.client(), bucket)
    records = {name: event_records({"loss": [2.0 - k / 50 for k in range(30)]}) for name in ("a", "b")}
    name = "events.out.tfevents.1700000000.node01.1.0"
    for run, framed in records.items():
        tree.write(f"tb/{run}/{name}", b"".join(framed[:21]))

    async def watch() -> None:
        app = make_app(Config(paths=(tree.root,), poll=0.2))
        async with app.run_test(size=(120, 40)) as pilot:
            await _wait(pilot, lambda: app.loaded and len(app.store) == 2, 30, "both TensorBoard runs")
            assert sorted(run.label for run in app.store) == ["a", "b"]
            run = app.store.runs[tree.url("tb/b")]
            assert len(run.series["loss"]) == 20
            tree.append(f"tb/b/{name}", records["b"][21][:10])  # a flush that cut a record, then its rest
            tree.append(f"tb/b/{name}", records["b"][21][10:] + b"".join(records["b"][22:25]))
            await _wait(pilot, lambda: len(run.series["loss"]) == 24, 15, "the appended records")
            assert run.series["loss"].values.view.tolist()[-4:] == pytest.approx([2.0 - k / 50 for k in range(20, 24)])
            await pilot.press("q")

    asyncio.run(watch())
