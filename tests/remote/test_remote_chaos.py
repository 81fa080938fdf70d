"""Chaos over the network: the reliability suite's chaos writers against the sshd and moto's S3.

The writers (``tests/reliability/chaos_writer.py``) append to CSV, JSON-lines and nanoGPT
logs with partial lines, garbage, NaN and step resets while truncating, rotating, replacing,
deleting and re-creating them, and the viewer's own driver follows them through a remote
root. Over SFTP they write the very files the sshd serves. Over S3 they write a local folder
that a mirror uploads as it changes: every change is a new object (an append rewrites the
object larger; a rename is a new object and a deletion), new names first, so a rotated copy
is listed before the log that replaced it, as a rename would show it. The invariant is the
local chaos test's: exactly the points written, nothing invented (see test_chaos.py).
"""

from __future__ import annotations

import os
import queue
import random
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parents[1] / "reliability"))
from test_chaos import Outcome, WriterProcess, _Applier, _follow, _wait_ready, differences  # noqa: E402

from tuiloss.core.discover import rotated_base  # noqa: E402
from tuiloss.core.driver import Ingestor  # noqa: E402
from tuiloss.core.engine import Engine, Options  # noqa: E402
from tuiloss.core.store import Store  # noqa: E402
from tuiloss.ui.watcher import Watcher  # noqa: E402

SETTLE_DEADLINE = 30.0
NAMES = {"csv": "metrics.csv", "jsonl": "metrics.jsonl", "text": "train.log"}


def remote_plan(seed: int, root: Path, stage: Path, seconds: float, run_of) -> list[dict]:
    """Two writers over the line logs, one late log each, and a third over a TensorBoard run folder
    (records appended in any byte chunks, damaged records, resumed files), an MLflow run and a
    Trainer's trainer_state.json (rewritten whole, atomically or in place)."""
    rng = random.Random(seed)
    writers = []
    for w in range(2):
        logs = []
        for k, kind in enumerate(rng.sample(["csv", "jsonl", "text"], 3)):
            path = root / f"exp{w}{k}" / NAMES[kind]
            logs.append({"kind": kind, "path": str(path), "run": run_of(path)})
        kind = rng.choice(["csv", "jsonl", "text"])
        late = root / f"late{w}" / NAMES[kind]
        writers.append({"seed": rng.randrange(1 << 32), "seconds": seconds, "stage": str(stage), "logs": logs,
                        "late": [{"kind": kind, "path": str(late), "run": run_of(late)}]})
    trackers = [("tfevents", root / "tb" / "run0"), ("mlflow", root / "mlruns" / "0" / "run1"),
                ("hf_trainer", root / "hf" / "trainer_state.json")]
    writers.append({"seed": rng.randrange(1 << 32), "seconds": seconds, "stage": str(stage), "late": [],
                    "logs": [{"kind": kind, "path": str(path), "run": run_of(path)} for kind, path in trackers]})
    return writers


class Mirror(threading.Thread):
    """Uploads a local folder to S3 as it changes: rotated copies first (once whole), new files before
    changed ones, then deletions."""

    def __init__(self, folder: Path, client, bucket: str, prefix: str) -> None:
        super().__init__(daemon=True, name="s3-mirror")
        self.folder, self.client, self.bucket, self.prefix = folder, client, bucket, prefix
        self.stopped = threading.Event()
        self.error: BaseException | None = None

    def run(self) -> None:
        uploaded: dict[str, bytes] = {}
        seen: dict[str, bytes] = {}  # what each file held at the last look
        try:
            while not self.stopped.is_set():
                now: dict[str, bytes] = {}
                for folder, _, files in os.walk(self.folder):
                    for name in files:
                        path = os.path.join(folder, name)
                        try:
                            with open(path, "rb") as handle:
                                now[os.path.relpath(path, self.folder)] = handle.read()
                        except OSError:
                            continue
                # A PUT is whole: a rotated copy (made in one go, never changed after) is uploaded once
                # it holds still, and its log waits for it, as a copy is made before the log is emptied.
                waiting = {rel for rel in now if rotated_base(os.path.basename(rel)) and uploaded.get(rel) != now[rel]
                           and seen.get(rel) != now[rel]}
                held = {os.path.join(os.path.dirname(rel), rotated_base(os.path.basename(rel))) for rel in waiting}
                order = sorted(now, key=lambda rel: (rotated_base(os.path.basename(rel)) is None, rel in uploaded, rel))
                for rel in order:
                    if uploaded.get(rel) != now[rel] and rel not in waiting and rel not in held:
                        self.client.put_object(Bucket=self.bucket, Key=f"{self.prefix}/{rel}", Body=now[rel])
                        uploaded[rel] = now[rel]
                for rel in sorted(set(uploaded) - set(now)):
                    self.client.delete_object(Bucket=self.bucket, Key=f"{self.prefix}/{rel}")
                    del uploaded[rel]
                seen = now
                self.stopped.wait(0.01)
        except BaseException as exc:  # said by the test
            self.error = exc


def run_remote_trial(seed: int, base: Path, seconds: float, url_root: str, run_of, tree: Path,
                     start_mirror=None) -> Outcome:
    began = time.monotonic()
    outcome = Outcome(seed, "remote")
    stage = base / "stage"
    tree.mkdir(parents=True)
    stage.mkdir()
    specs = remote_plan(seed, tree, stage, seconds, run_of)
    inbox: queue.Queue = queue.Queue()
    writers = [WriterProcess(spec, inbox, k) for k, spec in enumerate(specs)]
    posted: queue.Queue = queue.Queue()
    ingestor = thread = mirror = None
    try:
        _wait_ready(writers, inbox)
        if start_mirror is not None:
            mirror = start_mirror()
        engine = Engine([url_root], Options(poll=0.1))
        for remote in engine.remote.trees:
            remote.most = 0.5  # the writers wait for each sync: keep the idle back-off short
        ingestor = Ingestor(engine, Watcher([url_root], mounts=[]), posted.put)
        thread = threading.Thread(target=ingestor.run, name=f"ingest-{seed}", daemon=True)
        thread.start()
        store = Store()
        ui = _Applier(store, posted, ingestor, outcome)
        ui.until(lambda: ui.loaded, 30.0, "the first load")
        for writer in writers:
            writer.say("go")
        journals = _follow(writers, inbox, ui, outcome)
        if not outcome.problems:
            if not ui.until(lambda: not differences(store, journals), SETTLE_DEADLINE, None):
                outcome.problems += differences(store, journals)
        outcome.points, outcome.runs = store.points, len(store)
        for journal in journals.values():
            outcome.events.update(body for kind, body in journal["entries"] if kind in ("e", "u"))
        if mirror is not None and mirror.error is not None:
            outcome.problems.append(f"the mirror failed: {mirror.error!r}")
    finally:
        if ingestor is not None:
            ingestor.stop()
        if thread is not None:
            thread.join(timeout=10)
        if mirror is not None:
            mirror.stopped.set()
            mirror.join(timeout=10)
        for writer in writers:
            writer.stop()
    outcome.seconds = time.monotonic() - began
    return outcome


def _seeds(count: int) -> list[int]:
    replay = os.environ.get("TUILOSS_CHAOS_SEED")
    if replay:
        return [int(replay)]
    base = random.SystemRandom().randrange(1 << 31)
    return [base + k for k in range(count)]


def _check(outcomes: list[Outcome], protocol: str) -> None:
    for outcome in outcomes:
        print(outcome.line())
    failed = [o for o in outcomes if o.problems]
    report = "\n".join(
        f"{o.line()}\n  replay: TUILOSS_CHAOS_SEED={o.seed} pytest tests/remote/test_remote_chaos.py -k {protocol}\n"
        + "\n".join(f"  - {p}" for p in o.problems[:15]) for o in failed)
    assert not failed, f"{len(failed)} of {len(outcomes)} {protocol} chaos trials failed:\n{report}"
    assert sum(o.points for o in outcomes) > 0
    events = sum((o.events for o in outcomes), start=type(outcomes[0].events)())
    assert events, "the writers changed no file destructively"


def test_chaos_over_sftp(sshd, tmp_path):
    outcomes = []
    for k, seed in enumerate(_seeds(3)):
        base = tmp_path / f"trial{k}"
        tree = base / "tree"
        root = f"sftp://tuiloss-test{tree}"
        outcomes.append(run_remote_trial(seed, base, random.Random(seed).uniform(0.8, 2.0), root,
                                         lambda path, tree=tree, root=root: f"{root}/{path.relative_to(tree)}", tree))
    _check(outcomes, "sftp")


def test_chaos_over_s3(s3, bucket, tmp_path):
    outcomes = []
    client = s3.client()
    for k, seed in enumerate(_seeds(3)):
        base = tmp_path / f"trial{k}"
        tree = base / "tree"
        prefix = f"trial{k}"
        root = f"s3://{bucket}/{prefix}"

        def start_mirror(tree=tree, prefix=prefix):
            mirror = Mirror(tree, client, bucket, prefix)
            mirror.start()
            return mirror

        outcomes.append(run_remote_trial(seed, base, random.Random(seed).uniform(0.8, 2.0), root,
                                         lambda path, tree=tree, root=root: f"{root}/{path.relative_to(tree)}", tree,
                                         start_mirror))
    _check(outcomes, "s3")
