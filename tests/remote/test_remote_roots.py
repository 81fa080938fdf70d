"""Remote roots as the user gives them: URLs parsed and shown without secrets, missing extras named,
errors that name the URL and nothing secret, many nodes at once, discovery from one listing."""

from __future__ import annotations

import json
import subprocess
import sys
from importlib.util import find_spec

import pytest

from backends import S3Tree, SftpTree
from tuiloss.core.engine import Engine, Options, load
from tuiloss.core.remote import is_url, scheme_of
from tuiloss.core.remote.tree import GROWTH, RemoteTree
from tuiloss.core.remote.url import BadURL, check, parse, redact


def tuiloss(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tuiloss", *args], capture_output=True, text=True, env=env,
                          timeout=120)


# -- URLs ---------------------------------------------------------------------------------------


def test_urls_are_told_from_paths():
    assert is_url("s3://bucket/logs") and is_url("SFTP://node01/x") and is_url("ssh://h") and is_url("hdfs://nn/x")
    assert not is_url("logs/run1") and not is_url("/abs/path") and not is_url("C:/logs")
    assert scheme_of("ftp://host/x") == "ftp" and not is_url("ftp://host/x")


def test_a_url_is_parsed_and_shown_without_its_password():
    url = parse("sftp://alice:s3cr%40t@node01:2222/scratch/run/")
    assert (url.protocol, url.host, url.port, url.user, url.path) == ("sftp", "node01", 2222, "alice", "/scratch/run")
    assert url.password == "s3cr@t"
    assert url.shown == "sftp://alice@node01:2222/scratch/run"
    assert "s3cr" not in repr(url) and "s3cr" not in url.shown
    bucket = parse("s3://bucket/prefix/run?versionId=3")
    assert (bucket.protocol, bucket.host, bucket.path, bucket.fs_path) == ("s3", "bucket", "prefix/run", "bucket/prefix/run")
    assert bucket.url_of("bucket/prefix/run/metrics.csv") == "s3://bucket/prefix/run/metrics.csv"
    assert parse("ssh://node02").protocol == "sftp" and parse("gs://b/x").protocol == "gcs"
    assert parse("az://container/x").protocol == "abfs" and parse("hdfs://namenode:8020/logs").port == 8020


@pytest.mark.parametrize("bad, said", [
    ("sftp://:pw@/x", "no host"), ("s3:///key", "no bucket"), ("sftp://h:99999/x", "port"),
    ("ftp://user:pw@host/x", "ftp:// is not read"),
])
def test_bad_urls_say_why_without_the_secret(bad, said):
    with pytest.raises(BadURL) as caught:
        parse(bad)
    assert said in str(caught.value)
    assert "pw" not in str(caught.value).replace("sftp://", "")


def test_redaction_strips_passwords_signatures_and_given_secrets():
    text = ("cannot open sftp://bob:hunter2@h/x; see https://acct.blob.core.windows.net/c?sv=2020&sig=AbC%2F&se=1 "
            "and https://b.s3.amazonaws.com/k?X-Amz-Signature=deadbeef&X-Amz-Credential=AKIA/1 token=xyz")
    out = redact(text, ("topsecret",))
    for secret in ("hunter2", "AbC%2F", "deadbeef", "AKIA", "xyz"):
        assert secret not in out
    assert "sftp://bob@h/x" in out
    assert redact("key topsecret here", ("topsecret",)) == "key *** here"


def _missing_scheme() -> str | None:
    for scheme, package in (("gs", "gcsfs"), ("az", "adlfs"), ("hdfs", "pyarrow")):
        if find_spec(package) is None:
            return scheme
    return None


def test_a_missing_extra_is_one_line_naming_the_pip_command():
    scheme = _missing_scheme()
    if scheme is None:
        pytest.skip("every protocol's library is installed here")
    extra = {"gs": "gcs", "az": "az", "hdfs": "hdfs"}[scheme]
    assert check(f"{scheme}://user:pw@bucket/x") == (
        f"{scheme}://user@bucket/x: reading {scheme}:// needs {parse(scheme + '://b').package}: "
        f"pip install 'tuiloss[{extra}]'")
    done = tuiloss("report", f"{scheme}://bucket/logs")
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        f"tuiloss: {scheme}://bucket/logs: reading {scheme}:// needs {parse(scheme + '://b').package}: "
        f"pip install 'tuiloss[{extra}]'"]
    assert "Traceback" not in done.stderr


def test_an_unreadable_scheme_is_a_usage_error():
    done = tuiloss("report", "ftp://user:pw@host/logs")
    assert done.returncode == 2 and "ftp:// is not read" in done.stderr and "pw" not in done.stderr.split("ftp://")[1]


# -- against the servers --------------------------------------------------------------------------


def test_a_refused_login_names_the_url_and_never_the_password(sshd, tmp_path):
    done = tuiloss("report", f"sftp://nobody-here:hunter2@127.0.0.1:{sshd.port}{tmp_path}", "--json", env=sshd.env())
    assert done.returncode == 2
    assert "hunter2" not in done.stdout + done.stderr
    assert f"sftp://nobody-here@127.0.0.1:{sshd.port}{tmp_path}" in done.stderr
    assert "Traceback" not in done.stderr


def test_a_missing_bucket_names_the_url(s3):
    done = tuiloss("report", "s3://no-such-bucket-here/logs", env=s3.env())
    assert done.returncode == 2
    assert "s3://no-such-bucket-here/logs" in done.stderr and "Traceback" not in done.stderr
    assert "testing" not in done.stderr  # the test credentials are never printed


def test_local_and_remote_roots_mix(sshd, s3, bucket, tmp_path):
    local = tmp_path / "local"
    local.mkdir()
    (local / "metrics.csv").write_text("step,loss\n" + "".join(f"{i},{2 - i / 100}\n" for i in range(50)))
    SftpTree(tmp_path / "far").write("train.log", "".join(f"iter {i}: loss {3 - i / 100:.3f}\n" for i in range(1, 40)).encode())
    S3Tree(s3.client(), bucket).write("exp/metrics.jsonl", "".join(f'{{"step": {i}, "loss": {1 - i / 100}}}\n' for i in range(30)).encode())
    env = {**sshd.env(), **{k: v for k, v in s3.env().items() if k.startswith("AWS_")}}
    done = tuiloss("report", str(local), f"sftp://tuiloss-test{tmp_path / 'far'}", f"s3://{bucket}/logs", "--json", env=env)
    assert done.returncode == 0, done.stderr
    runs = {run["id"]: run for run in json.loads(done.stdout)["runs"]}
    assert {run["format"] for run in runs.values()} == {"csv", "text", "jsonl"}
    assert runs[f"sftp://tuiloss-test{tmp_path / 'far'}/train.log"]["metrics"]["loss"]["points"] == 39
    assert runs[f"s3://{bucket}/logs/exp/metrics.jsonl"]["metrics"]["loss"]["points"] == 30


def test_many_nodes_are_runs_labelled_by_host(sshd, tmp_path):
    roots = []
    for node in ("node01", "node02"):
        tree = SftpTree(tmp_path / node / "scratch" / "run", host=node)
        tree.write("train.log", "".join(f"iter {i}: loss {4 - i / 50:.3f}\n" for i in range(1, 30)).encode())
        tree.write("lr=0.1/metrics.csv", b"step,loss\n1,2.0\n2,1.9\n3,1.8\n")
        roots.append(tree.root)
    store, engine, _ = load(roots)
    labels = sorted(run.label for run in store.runs.values())
    assert len(store) == 4
    assert [label for label in labels if "lr" not in label] == ["node01", "node02"]
    assert all(label.startswith(("node01", "node02")) or "node0" in label for label in labels)
    assert {run.id for run in store.runs.values()} == {
        f"{root}/{name}" for root in roots for name in ("train.log", "lr=0.1/metrics.csv")}
    assert all(run.config.get("lr") == 0.1 for run in store.runs.values() if "metrics" in run.id)


def test_discovery_of_thousands_of_objects_is_one_paginated_listing(s3, bucket):
    import s3fs

    objects = {}
    for k in range(1050):  # two pages of 1,000
        name = f"{bucket}/runs/r{k // 50}/ckpt-{k}.pt" if k % 50 else f"{bucket}/runs/r{k // 50}/metrics.csv"
        objects[name] = b"step,loss\n1,2.0\n" if name.endswith(".csv") else b"x"
    s3fs.S3FileSystem(skip_instance_cache=True).pipe(objects)  # concurrently
    engine = Engine([f"s3://{bucket}/runs"], Options())
    found = engine.scan()
    remote = engine.remote.trees[0].remote
    assert len(found.new_runs) == 21
    assert remote.requests == 2  # one listing, two pages; nothing read per object
    assert len(found.ignored) == 1050 - 21


def test_polls_back_off_while_idle_and_speed_up_on_change(sshd, tmp_path):
    tree = SftpTree(tmp_path / "logs")
    tree.write("train.log", b"iter 1: loss 2.0\n")
    now = [1000.0]
    remote = RemoteTree(parse(tree.root), base=1.0, most=8.0, clock=lambda: now[0])
    remote.poll()
    intervals = []
    for _ in range(7):
        now[0] += remote.due_in()
        assert remote.due_in() == 0
        assert remote.poll() == set()
        intervals.append(remote.interval)
    assert intervals == [min(8.0, GROWTH ** k) for k in range(1, 8)]
    tree.append("train.log", b"iter 2: loss 1.9\n")
    now[0] += remote.due_in()
    assert remote.poll() == {f"{tmp_path / 'logs'}/train.log"}
    assert remote.interval == 1.0 and remote.due_in() == 1.0
    assert remote.status.protocol == "sftp" and remote.status.error is None


def test_a_remote_root_is_read_on_every_store(tree):
    """The same small tree on each store (the sshd, S3, GCS, Azure): the same runs and points."""
    tree.write("a/metrics.csv", b"step,loss\n" + b"".join(b"%d,%f\n" % (i, 2 - i / 100) for i in range(40)))
    tree.write("b/train.log", "".join(f"iter {i}: loss {3 - i / 100:.3f}\n" for i in range(1, 30)).encode())
    tree.write("b/model.pt", b"\0" * 16)
    store, engine, _ = load([tree.root])
    assert {run.id: run.points for run in store.runs.values()} == {tree.url("a/metrics.csv"): 40,
                                                                   tree.url("b/train.log"): 29}
    (status,) = engine.remote.status()
    assert status.protocol == tree.protocol and status.error is None


def test_a_missing_bucket_or_container_names_the_url(tree):
    if tree.protocol == "sftp":
        pytest.skip("an sftp:// root names a host, not a bucket")
    root = f"{tree.protocol}://no-such-bucket-{tree.protocol}-here/logs"
    store, engine, notices = load([root])
    assert len(store) == 0
    said = " ".join(n.message for n in notices) + " ".join(str(t.error) for t in engine.remote.trees)
    assert root in said
