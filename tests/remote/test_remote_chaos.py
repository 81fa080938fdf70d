"""Chaos over the network: the reliability suite's chaos writers against the sshd and moto's S3.

The writers (``tests/reliability/chaos_writer.py``) append to CSV, JSON-lines and nanoGPT
logs with partial lines, garbage, NaN and step resets while truncating, rotating, replacing,
deleting and re-creating them, and the viewer's own driver follows them through a remote
root. Over SFTP they write the very files the sshd serves. Over S3 they write a local folder
that a mirror uploads as it changes: every change is a new object (an append rewrites the
object larger; a rename is a new object and a deletion), in the order the files were written,
so a rotated copy is listed before the log that replaced it, as a rename would show it (see
:class:`Mirror`). The invariant is the
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
    """Uploads a local folder to S3 as it changes, as an uploader that watches it would: every PUT
    whole, and S3 showing only states the folder had, in the order it had them.

    * Each look is one instant of the folder: the files are read, then listed and stat-ed again,
      and those that changed meanwhile read again, until none did. Read one by one while the
      writers go on, a look would pair a file read before a change with one read after it: a
      TensorBoard run's next event file beside the one before without its last records, which
      were written first (a reader then holds them after the next file's).
    * Changed files are PUT in the order they were last written, so what was written first is in
      S3 first (a rotated copy before its emptied log, an event file's last records before the
      next file).
    * A rotated copy of a line log (made in one go, never changed after) is PUT once it holds still
      over two looks, the oldest first, and its log waits for it, a deletion of the log too: a copy
      is made before its log is emptied, and a rename shows its new name before the old one goes.
    * S3 lists times in whole seconds, and the copies of a log are ordered by them (by name when
      they tie, where logrotate's ``.1`` is the newest; the writers count up). No reader can order
      two copies made in one second, so each copy of a log is PUT in a later second than the one
      before it, as rotations are.
    """

    def __init__(self, folder: Path, client, bucket: str, prefix: str) -> None:
        super().__init__(daemon=True, name="s3-mirror")
        self.folder, self.client, self.bucket, self.prefix = folder, client, bucket, prefix
        self.stopped = threading.Event()
        self.error: BaseException | None = None
        self.copied: dict[str, int] = {}  # a log -> the second (wall clock) its last copy was PUT in

    def _stats(self) -> dict[str, tuple[int, int, int]]:
        found = {}
        for folder, _, files in os.walk(self.folder):
            for name in files:
                path = os.path.join(folder, name)
                try:
                    st = os.stat(path)
                except OSError:
                    continue
                found[os.path.relpath(path, self.folder)] = (st.st_ino, st.st_size, st.st_mtime_ns)
        return found

    def look(self) -> dict[str, tuple[int, bytes]] | None:
        """Every file's (mtime, bytes) at one instant; None if the folder never held still long enough."""
        read: dict[str, tuple[tuple[int, int, int], bytes]] = {}
        for _ in range(100):
            stats = self._stats()
            if stats.keys() == read.keys() and all(read[rel][0] == stat for rel, stat in stats.items()):
                return {rel: (stat[2], data) for rel, (stat, data) in read.items()}
            read = {rel: read[rel] for rel, stat in stats.items() if rel in read and read[rel][0] == stat}
            for rel, stat in stats.items():
                if rel not in read:
                    try:
                        with open(os.path.join(self.folder, rel), "rb") as handle:
                            read[rel] = (stat, handle.read())  # stat-ed before: checked by the next round
                    except OSError:
                        continue
        return None

    def run(self) -> None:
        uploaded: dict[str, bytes] = {}
        seen: dict[str, bytes] = {}  # what each file held at the last look
        try:
            while not self.stopped.is_set():
                now = self.look()
                if now is None:
                    self.stopped.wait(0.01)
                    continue
                copies = {rel: os.path.join(os.path.dirname(rel), base) for rel in now
                          if (base := _copy_of(rel)) and uploaded.get(rel) != now[rel][1]}
                ready: dict[str, str | None] = {}  # a log -> its oldest copy not PUT, if it can be now
                for rel in sorted(copies, key=lambda rel: now[rel][0]):
                    log = copies[rel]
                    if log not in ready:
                        still = seen.get(rel) == now[rel][1]
                        ready[log] = rel if still and int(time.time()) > self.copied.get(log, -1) else None
                held = {log for rel, log in copies.items() if ready.get(log) != rel}
                changed = [rel for rel in now if uploaded.get(rel) != now[rel][1] and rel not in held
                           and (rel not in copies or ready.get(copies[rel]) == rel)]
                for rel in sorted(changed, key=lambda rel: (now[rel][0], rel not in copies, rel)):
                    self.client.put_object(Bucket=self.bucket, Key=f"{self.prefix}/{rel}", Body=now[rel][1])
                    uploaded[rel] = now[rel][1]
                    if rel in copies:
                        self.copied[copies[rel]] = int(time.time())  # S3 dated it in this second or before
                for rel in sorted(set(uploaded) - set(now) - held):
                    self.client.delete_object(Bucket=self.bucket, Key=f"{self.prefix}/{rel}")
                    del uploaded[rel]
                seen = {rel: data for rel, (_, data) in now.items()}
                self.stopped.wait(0.01)
        except BaseException as exc:  # said by the test
            self.error = exc


def _copy_of(rel: str) -> str | None:
    """The line log that ``rel`` is a rotated copy of (``train.log.1``), or None: an event file's name
    ends in a number too (``events.out.tfevents.1700000002.host.5.2``), and it is no copy."""
    base = rotated_base(os.path.basename(rel))
    return base if base in NAMES.values() else None


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
