"""A run folder renamed while the viewer's driver watches it, under inotify and polling.

The watcher, the driver and the engine run as in the viewer (without Textual); this
thread applies what they post, as the UI thread does. The engine-level cases, with no
wait between the rename and the read, are in test_rewrites.py.
"""

from __future__ import annotations

import os
import queue
import threading
import time

import pytest

from tuiloss.core.driver import Ingested, Ingestor, LoadFinished
from tuiloss.core.engine import Engine, Options, apply_result
from tuiloss.core.store import Store
from tuiloss.ui.watcher import Watcher


class Viewer:
    """The viewer's driver on ``root``; :meth:`until` applies what it posts until a condition holds."""

    def __init__(self, root, poll: float | None) -> None:
        self.store = Store()
        self.posted: queue.SimpleQueue = queue.SimpleQueue()
        self.ingestor = Ingestor(Engine([str(root)], Options()), Watcher([str(root)], poll=poll, mounts=[]),
                                 self.posted.put)
        self.thread = threading.Thread(target=self.ingestor.run, daemon=True)
        self.thread.start()
        self.loaded = False
        self.until(lambda: self.loaded, "the first load")

    def until(self, done, what: str, seconds: float = 20.0) -> None:
        deadline = time.monotonic() + seconds
        while not done():
            assert time.monotonic() < deadline, f"timed out waiting for {what}"
            try:
                event = self.posted.get(timeout=0.05)
            except queue.Empty:
                continue
            if isinstance(event, Ingested):
                apply_result(self.store, event.result)
                self.ingestor.ack()
            elif isinstance(event, LoadFinished):
                self.loaded = True

    def stop(self) -> None:
        self.ingestor.stop()
        self.thread.join(timeout=10)
        assert not self.thread.is_alive()


@pytest.mark.parametrize("poll", [None, 0.2], ids=["inotify", "polling"])
def test_a_run_folder_renamed_while_watched_is_the_same_run(tmp_path, poll):
    root = tmp_path / "runs"
    (root / "exp1").mkdir(parents=True)
    (root / "exp2").mkdir()
    log = root / "exp1" / "metrics.jsonl"
    log.write_text("".join(f'{{"step": {s}, "loss": {1 / (s + 1):.5f}}}\n' for s in range(40)))
    (root / "exp2" / "metrics.jsonl").write_text('{"step": 0, "loss": 1.0}\n')
    viewer = Viewer(root, poll)
    try:
        store = viewer.store
        run = store.runs[str(log)]
        assert (run.label, len(run.series["loss"])) == ("exp1", 40)
        os.rename(root / "exp1", root / "exp1-warmup")
        with open(root / "exp1-warmup" / "metrics.jsonl", "a") as handle:
            handle.write('{"step": 40, "loss": 0.02}\n')
        viewer.until(lambda: len(run.series["loss"]) >= 41 and run.label == "exp1-warmup", "the moved run to grow")
        with open(root / "exp1-warmup" / "metrics.jsonl", "a") as handle:
            handle.write('{"step": 41, "loss": 0.019}\n')
        viewer.until(lambda: len(run.series["loss"]) >= 42, "a second append at the new place")
        assert len(store) == 2 and list(store.runs)[0] == str(log)  # the same id, first as before
        assert len(run.series["loss"]) == 42 and [s.reason for s in run.series["loss"].segments] == ["start"]
        assert not run.deleted and not any("deleted" in n.message for n in run.notices)
    finally:
        viewer.stop()
