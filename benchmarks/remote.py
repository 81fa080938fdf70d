"""Remote roots: append -> screen over SFTP and S3, the cost of an idle run, discovery of 10,000 objects.

The servers are the remote tests' own (``tests/remote/servers.py``): an sshd on a free
localhost port reached through a generated ``~/.ssh/config``, and moto's S3 server. Each row
has its baseline measured in the same run:

* ``remote-latency-sftp`` / ``remote-latency-s3``: a line appended to a JSONL run until a
  frame holding it is drawn (the viewer headless, as ``latency-poll``), watching the remote
  root with ``--poll 1``, against the same appends to a local folder polled every second.
  Over S3 an append rewrites the object larger (a PUT of the whole object).
* ``remote-idle``: requests per idle run per hour, with the back-off, against polling every
  second without it; ten idle runs under one root, the hour's polls replayed on a simulated
  clock (every poll and read is real, only the waits between them are skipped).
* ``remote-idle-tfevents``: the same for ten idle TensorBoard runs (a run folder of two event
  files each, a resumed run) under one S3 root: a folder's event files cost no request of their
  own while nothing grows.
* ``remote-discovery``: the first scan of a tree of 10,000 objects (100 runs of a CSV, a text
  log and a config, among checkpoints) in moto, against the same tree on the local disk.
"""

from __future__ import annotations

import asyncio
import math
import os
import shutil
import sys
import time
from pathlib import Path

from benchmarks import ui
from benchmarks.datagen import DATA_DIR, write_log
from benchmarks.measure import Row, Skip, median, percentile

ROOT = Path(__file__).resolve().parents[1]
WORK = Path(DATA_DIR) / "remote"


def _servers():
    sys.path.insert(0, str(ROOT / "tests" / "remote"))
    import servers

    from tuiloss.core.remote import fs

    fs._OPEN.clear()  # connections to the servers of an earlier row (their ports are gone)
    return servers


class _Sftp:
    """The sshd, with this process's HOME at its ``~/.ssh`` while a row runs."""

    def __enter__(self):
        servers = _servers()
        shutil.rmtree(WORK / "sshd", ignore_errors=True)
        try:
            self.server = servers.start_sshd(WORK / "sshd")
        except servers.Unavailable as why:
            raise Skip(str(why)) from None
        self.home = os.environ.get("HOME")
        os.environ["HOME"] = str(self.server.home)
        os.environ.pop("SSH_AUTH_SOCK", None)
        return self

    def __exit__(self, *_):
        if self.home is not None:
            os.environ["HOME"] = self.home
        self.server.stop()


class _S3:
    def __enter__(self):
        servers = _servers()
        try:
            self.server = servers.start_moto()
        except servers.Unavailable as why:
            raise Skip(str(why)) from None
        self.saved = {key: os.environ.get(key) for key in (*servers.S3_ENV, "AWS_ENDPOINT_URL")}
        os.environ.update(servers.S3_ENV, AWS_ENDPOINT_URL=self.server.endpoint)
        self.client = self.server.client()
        return self

    def __exit__(self, *_):
        for key, value in self.saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        self.server.stop()


# -- append -> screen ---------------------------------------------------------------------------


def _local_appender(path: Path):
    def append(data: bytes) -> None:
        with open(path, "ab") as handle:
            handle.write(data)

    return append


def _fresh(name: str, lines: int) -> Path:
    folder = WORK / name
    shutil.rmtree(folder, ignore_errors=True)
    path = folder / "run" / "metrics.jsonl"
    path.parent.mkdir(parents=True)
    write_log(str(path), "jsonl", lines)
    return path


def latency(protocol: str, appends: int, poll: float = 1.0) -> Row:
    lines = 10_000
    local = _fresh("latency-local", lines)
    if protocol == "sftp":
        context = _Sftp()
    else:
        context = _S3()
    with context as server:
        if protocol == "sftp":
            path = _fresh("latency-sftp", lines)
            root, append = f"sftp://tuiloss-test{path.parent.parent}", _local_appender(path)
        else:
            server.client.create_bucket(Bucket="latency")
            body = [_fresh("latency-s3", lines).read_bytes()]
            server.client.put_object(Bucket="latency", Key="logs/run/metrics.jsonl", Body=body[0])

            def append(data: bytes) -> None:
                body[0] += data  # an object is rewritten whole: the append is a PUT of it all, larger
                server.client.put_object(Bucket="latency", Key="logs/run/metrics.jsonl", Body=body[0])

            root = "s3://latency/logs"
        ours, _ = asyncio.run(ui._latencies(root, append, poll, appends, lines))
    baseline, _ = asyncio.run(ui._latencies(str(local.parent.parent), str(local), poll, appends, lines))
    p95, base95 = percentile(ours, 0.95), percentile(baseline, 0.95)
    limit = poll + 0.5
    return Row(
        f"remote-latency-{protocol}",
        f"append -> on screen over {protocol}, polling every {poll:g}s (p95) / the same on a local folder",
        p95, base95, p95 / base95, f"p95 <= {limit * 1000:.0f} ms", p95 <= limit, "s",
        f"{protocol}: p50 {median(ours) * 1000:.0f} ms, p95 {p95 * 1000:.0f} ms, max {max(ours) * 1000:.0f} ms; "
        f"local: p50 {median(baseline) * 1000:.0f} ms, p95 {base95 * 1000:.0f} ms; {len(ours)} appends each",
        (min(ours) / median(baseline), max(ours) / median(baseline)),
    )


# -- an idle run's cost ---------------------------------------------------------------------------


def _idle_hour(root: str, runs: int, base: float, most: float | None) -> tuple[float, float, int]:
    """(requests, bytes, polls) over one simulated hour of ``runs`` idle runs under ``root``."""
    from tuiloss.core.engine import Engine, Options
    from tuiloss.core.remote.fs import listed_bytes

    engine = Engine([root], Options(poll=base))
    engine.scan()
    while engine.read(check_all=True).more:
        pass
    tree = engine.remote.trees[0]
    if most is not None:
        tree.most = most
    now = [0.0]
    tree.clock = lambda: now[0]
    tree.interval = tree.base
    tree._next = tree.base
    remote = tree.remote
    requests, received, listed = remote.requests, remote.received, listed_bytes(remote) or 0
    polls = 0
    while True:
        now[0] = tree._next
        if now[0] > 3600:
            break
        changed, _ = engine.remote.poll()
        engine.read(sorted({run for url in changed for run in engine.runs_for_path(url)}) or None)
        polls += 1
    if tree.error:
        raise RuntimeError(tree.error)
    spent = remote.requests - requests
    bytes_ = remote.received - received + ((listed_bytes(remote) or 0) - listed)
    return spent, bytes_, polls


def idle(runs: int, sample_polls: int) -> Row:
    notes = []
    per_run = {}
    with _S3() as server:
        server.client.create_bucket(Bucket="idle")
        body = Path(_fresh("idle", 1_000)).read_bytes()
        for k in range(runs):
            server.client.put_object(Bucket="idle", Key=f"logs/run{k}/metrics.jsonl", Body=body)
        requests, bytes_, polls = _idle_hour("s3://idle/logs", runs, 1.0, None)
        # without the back-off: a poll every second, its cost measured on a sample of real polls
        flat, flat_bytes, flat_polls = _idle_hour_sample("s3://idle/logs", sample_polls)
        per_run["s3"] = (requests / runs, bytes_ / runs, 3600 * flat / flat_polls / runs)
        notes.append(f"s3: {requests / runs:.1f} requests and {bytes_ / runs / 1024:.1f} KiB per idle run per hour "
                     f"({polls} listings of {runs} runs), {3600 * flat / flat_polls / runs:.0f} requests and "
                     f"{3600 * flat_bytes / flat_polls / runs / 1024:.0f} KiB without the back-off")
    with _Sftp():
        folder = WORK / "idle-sftp"
        shutil.rmtree(folder, ignore_errors=True)
        for k in range(runs):
            (folder / f"run{k}").mkdir(parents=True)
            shutil.copyfile(WORK / "idle" / "run" / "metrics.jsonl", folder / f"run{k}" / "metrics.jsonl")
            os.utime(folder / f"run{k}" / "metrics.jsonl", (time.time() - 600, time.time() - 600))
        root = f"sftp://tuiloss-test{folder}"
        requests, bytes_, polls = _idle_hour(root, runs, 1.0, None)
        flat, _, flat_polls = _idle_hour_sample(root, sample_polls)
        per_run["sftp"] = (requests / runs, bytes_ / runs, 3600 * flat / flat_polls / runs)
        notes.append(f"sftp: {requests / runs:.1f} directory reads per idle run per hour ({polls} listings of "
                     f"{runs} runs in {runs + 1} folders), {3600 * flat / flat_polls / runs:.0f} without the back-off; "
                     f"{bytes_ / runs:.0f} bytes of file data read")
    ours, baseline = per_run["s3"][0], per_run["s3"][2]
    return Row("remote-idle", "requests per idle run per hour over S3, with the back-off / polling every 1 s without it",
               ours, baseline, ours / baseline, "<= 0.05", ours / baseline <= 0.05, "requests", "; ".join(notes),
               (per_run["sftp"][0] / per_run["sftp"][2], per_run["sftp"][0] / per_run["sftp"][2]))


def _event_file(steps: int, start: int = 0) -> bytes:
    """An event file of ``steps`` scalar events (tensorboard's own framing)."""
    import io

    from tensorboard.compat.proto import event_pb2, summary_pb2
    from tensorboard.summary.writer.record_writer import RecordWriter

    buffer = io.BytesIO()
    writer = RecordWriter(buffer)
    writer.write(event_pb2.Event(wall_time=1.7e9, file_version="brain.Event:2").SerializeToString())
    for k in range(steps):
        value = summary_pb2.Summary.Value(tag="loss", simple_value=2.0 / (1 + k / 100))
        writer.write(event_pb2.Event(wall_time=1.7e9 + k, step=start + k,
                                     summary=summary_pb2.Summary(value=[value])).SerializeToString())
    return buffer.getvalue()


def idle_events(runs: int, sample_polls: int) -> Row:
    try:
        import tensorboard  # noqa: F401
    except ImportError:
        raise Skip("tensorboard is not installed: pip install 'tuiloss[tensorboard]'") from None
    with _S3() as server:
        server.client.create_bucket(Bucket="idle-tb")
        first, second = _event_file(500), _event_file(500, start=500)
        for k in range(runs):
            for n, body in enumerate((first, second)):
                key = f"tb/run{k}/events.out.tfevents.{1_700_000_000 + n}.bench.{k}.{n}"
                server.client.put_object(Bucket="idle-tb", Key=key, Body=body)
        requests, bytes_, polls = _idle_hour("s3://idle-tb/tb", runs, 1.0, None)
        flat, _, flat_polls = _idle_hour_sample("s3://idle-tb/tb", sample_polls)
    ours, baseline = requests / runs, 3600 * flat / flat_polls / runs
    return Row("remote-idle-tfevents", "requests per idle TensorBoard run per hour over S3, with the back-off / "
               "polling every 1 s without it", ours, baseline, ours / baseline, "<= 0.05", ours / baseline <= 0.05,
               "requests", f"{runs} runs of 2 event files under one root: {polls} listings in the hour, "
               f"{bytes_ / runs / 1024:.1f} KiB per run (the listings' answers)")


def _idle_hour_sample(root: str, polls: int) -> tuple[int, int, int]:
    """(requests, bytes, polls) of ``polls`` real idle polls in a row, no back-off."""
    from tuiloss.core.engine import Engine, Options
    from tuiloss.core.remote.fs import listed_bytes

    engine = Engine([root], Options(poll=1.0))
    engine.scan()
    while engine.read(check_all=True).more:
        pass
    remote = engine.remote.trees[0].remote
    requests, received, listed = remote.requests, remote.received, listed_bytes(remote) or 0
    for _ in range(polls):
        engine.remote.poll(every=True)
        engine.read()
    if engine.remote.trees[0].error:
        raise RuntimeError(engine.remote.trees[0].error)
    return (remote.requests - requests, remote.received - received + ((listed_bytes(remote) or 0) - listed), polls)


# -- discovery ----------------------------------------------------------------------------------


def _tree(objects: int) -> dict[str, bytes]:
    """100 runs' worth of keys (fewer for a smaller tree): a CSV, a text log and a config per run,
    and checkpoints and images to make up ``objects``."""
    runs = max(1, objects // 100)
    out: dict[str, bytes] = {}
    csv = b"step,loss\n" + b"".join(b"%d,%.4f\n" % (i, 2 - i / 1000) for i in range(200))
    text = b"".join(b"iter %d: loss %.4f, time 12.0ms\n" % (i, 2 - i / 1000) for i in range(200))
    for r in range(runs):
        run = f"exp/lr={r / 1000:g}_seed={r % 5}"
        out[f"{run}/metrics.csv"] = csv
        out[f"{run}/train.log"] = text
        out[f"{run}/hparams.yaml"] = f"lr: {r / 1000:g}\nseed: {r % 5}\n".encode()
    k = 0
    while len(out) < objects:
        run = f"exp/lr={(k % runs) / 1000:g}_seed={(k % runs) % 5}"
        out[f"{run}/checkpoints/step{k}.pt" if k % 3 else f"{run}/media/sample{k}.png"] = b"\0" * 16
        k += 1
    return out


def _put_all(client, bucket: str, objects: dict[str, bytes]) -> None:
    """The tree into moto: through its in-process backend when it can (fast), else over HTTP."""
    try:
        from moto.core import DEFAULT_ACCOUNT_ID
        from moto.s3.models import s3_backends

        backend = s3_backends[DEFAULT_ACCOUNT_ID]["aws"]
        for key, body in objects.items():
            backend.put_object(bucket, key, body)
    except Exception:
        for key, body in objects.items():
            client.put_object(Bucket=bucket, Key=key, Body=body)


def discovery(objects: int, repeat: int) -> Row:
    from tuiloss.core.engine import Engine, Options

    tree = _tree(objects)
    local = WORK / "discovery"
    shutil.rmtree(local, ignore_errors=True)
    for key, body in tree.items():
        path = local / key
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(body)
    ours, baseline, requests, runs = [], [], 0, 0
    with _S3() as server:
        server.client.create_bucket(Bucket="discovery")
        _put_all(server.client, "discovery", tree)
        for k in range(repeat + 1):
            began = time.perf_counter()
            engine = Engine(["s3://discovery/exp"], Options())
            found = engine.scan()
            took = time.perf_counter() - began
            requests, runs = engine.remote.trees[0].remote.requests, len(found.new_runs)
            began = time.perf_counter()
            local_found = Engine([str(local / "exp")], Options()).scan()
            local_took = time.perf_counter() - began
            if k:  # the first pair warms up (imports, the connection)
                ours.append(took)
                baseline.append(local_took)
            assert len(local_found.new_runs) == runs, (len(local_found.new_runs), runs)
    ratios = [a / b for a, b in zip(ours, baseline)]
    return Row("remote-discovery", f"discovery of {len(tree):,} objects in S3 (moto) / of the same tree on local disk",
               median(ours), median(baseline), median(ratios), "reported", None, "s",
               f"{runs} runs; {requests} requests: {math.ceil(len(tree) / 1000)} listing pages, one concurrent batch "
               f"of {runs // 2} first-64-KiB reads (the text logs, whose name does not say their format) and one of "
               f"{runs // 2} configs; median {median(ours):.2f} s against {median(baseline):.2f} s locally",
               (min(ratios), max(ratios)))
