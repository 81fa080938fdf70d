"""Safety: tuiloss reads the watched tree and nothing else happens.

* It never writes inside the tree: a snapshot (names, sizes, modes, mtimes) is the
  same after ``tuiloss report`` and a watch, an audit hook sees no write, rename,
  delete or chmod under it, and a real read-only bind mount reads the same.
* It never opens a network socket (an audit hook and a refusing ``socket.socket``).
* It never evaluates anything from a log: YAML with Python tags, Python-looking
  dicts, pickles and code-shaped strings are read as data; an audit hook sees no
  ``exec``/``compile`` of log text, no process started and no pickle class looked up.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
from contextlib import contextmanager
from pathlib import Path

import pytest

from tuiloss.config import Config

REPO = Path(__file__).resolve().parents[2]
TUILOSS = Path(sys.executable).with_name("tuiloss")
MARKER = "PWNED-EVAL"

WRITE_EVENTS = {
    "os.mkdir", "os.rename", "os.remove", "os.rmdir", "os.truncate", "os.utime", "os.chmod", "os.chown",
    "os.symlink", "os.link", "os.chflags", "os.setxattr", "os.removexattr", "shutil.copyfile",
    "shutil.copymode", "shutil.copystat", "shutil.move", "shutil.rmtree", "shutil.make_archive",
}
RUN_EVENTS = {"os.system", "subprocess.Popen", "os.exec", "os.posix_spawn", "os.spawn", "os.fork", "os.forkpty",
              "pickle.find_class"}


class _Audit:
    """One process-wide audit hook (they cannot be removed), switched on per test."""

    def __init__(self) -> None:
        self.root: str | None = None
        self.seen: list[tuple[str, str]] = []
        sys.addaudithook(self._hook)

    def _hook(self, event: str, args: tuple) -> None:
        root = self.root
        if root is None:
            return
        try:
            if event == "open":
                path, mode, flags = args
                writing = (isinstance(mode, str) and any(c in mode for c in "wax+")) or (
                    isinstance(flags, int) and flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND))
                if writing and self._inside(path):
                    self.seen.append((event, repr(path)))
            elif event in WRITE_EVENTS:
                if any(self._inside(arg) for arg in args if isinstance(arg, (str, bytes, os.PathLike))):
                    self.seen.append((event, repr(args[:2])))
            elif event in RUN_EVENTS:
                self.seen.append((event, repr(args)[:200]))
            elif event in ("socket.__new__",):
                if len(args) > 1 and args[1] in (socket.AF_INET, socket.AF_INET6):
                    self.seen.append((event, repr(args[1:])))
            elif event in ("socket.connect", "socket.bind", "socket.sendto", "socket.getaddrinfo"):
                self.seen.append((event, repr(args[1:])[:200]))
            elif event in ("exec", "compile"):
                if MARKER in _text_of(args[0]):
                    self.seen.append((event, _text_of(args[0])[:200]))
        except Exception:  # an audit hook must never raise into the code it watches
            pass

    def _inside(self, path) -> bool:
        if isinstance(path, int):
            return False
        path = os.path.abspath(os.fsdecode(path))
        return path == self.root or path.startswith(self.root + os.sep)


def _text_of(value) -> str:
    if isinstance(value, (str, bytes)):
        return value.decode("utf-8", "replace") if isinstance(value, bytes) else value
    consts = getattr(value, "co_consts", ())
    return " ".join(_text_of(c) for c in consts if isinstance(c, (str, bytes)) or hasattr(c, "co_consts"))


_AUDIT: _Audit | None = None


@contextmanager
def audited(root: Path):
    global _AUDIT
    if _AUDIT is None:
        _AUDIT = _Audit()
    _AUDIT.root, _AUDIT.seen = os.path.realpath(root), []
    try:
        yield _AUDIT.seen
    finally:
        _AUDIT.root = None


# -- the tree --------------------------------------------------------------------------------------------------


def bait(root: Path) -> None:
    """Files that would run code if anything evaluated them."""
    evil = root / "evil"
    evil.mkdir(parents=True)
    touch = f"touch {root.parent / MARKER}"
    (evil / "config.yaml").write_text(
        f"run_name: !!python/object/apply:os.system ['{touch}']\nlr: !!python/name:os.system\n")
    (evil / "hparams.yaml").write_text(f"!!python/object/new:os.system ['{touch}']\n")
    (evil / "train.log").write_text(
        "".join(f"{{'loss': __import__('os').system('{touch}') or 0.{i}, 'epoch': {i}, 'note': '{MARKER}'}}\n"
                for i in range(1, 6))
        + "".join(f"{{'loss': 0.{i}, 'learning_rate': 1e-4, 'epoch': {i}}}\n" for i in range(1, 6)))
    (evil / "metrics.jsonl").write_text(
        "".join(json.dumps({"step": i, "loss": 0.5, "cmd": f"__import__('os').system('{touch}') # {MARKER}"}) + "\n"
                for i in range(5)))
    (evil / "metrics.pkl").write_bytes(
        b"cos\nsystem\n(V" + touch.encode() + b"\ntR.")  # a pickle that runs a command when loaded
    (evil / "args.json").write_text(json.dumps({"lr": f"eval('{MARKER}')", "seed": 1}))
    run = root / "mlruns" / "0" / "r1"
    (run / "metrics").mkdir(parents=True)
    (run / "params").mkdir()
    (run / "meta.yaml").write_text(f"run_id: r1\nstatus: !!python/object/apply:os.system ['{touch}']\n")
    (run / "metrics" / "loss").write_text("1700000000000 0.5 1\n1700000000001 0.4 2\n")
    (run / "params" / "code").write_text(f"__import__('os').system('{touch}') # {MARKER}")


@pytest.fixture
def tree(tmp_path) -> Path:
    root = tmp_path / "tree"
    shutil.copytree(REPO / "sample_logs", root / "samples")
    bait(root)
    return root


def snapshot(root: Path) -> dict:
    out = {}
    for folder, dirs, files in os.walk(root):
        for name in dirs + files:
            path = os.path.join(folder, name)
            st = os.lstat(path)
            out[os.path.relpath(path, root)] = (st.st_mode, st.st_size, st.st_mtime_ns, st.st_ino)
    return out


# -- never writes, never connects, never evaluates ------------------------------------------------------------------


@pytest.mark.parametrize("flags", [[], ["--json"], ["--markdown"], ["-v"]])
def test_report_leaves_the_tree_as_it_was(tree, flags):
    before = snapshot(tree)
    done = subprocess.run([str(TUILOSS), "report", *flags, str(tree)], capture_output=True, timeout=120,
                          cwd=tree)
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    assert snapshot(tree) == before
    assert not (tree.parent / MARKER).exists()


def test_report_in_process_writes_runs_and_connects_nothing(tree, monkeypatch, capsys):
    from tuiloss import cli

    def refuse(*args, **kwargs):
        raise AssertionError("tuiloss opened a network socket")

    monkeypatch.setattr(socket, "socket", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.chdir(tree)
    with audited(tree) as seen:
        assert cli.main(["report", "--json", str(tree)]) == 0
        assert cli.main(["report", str(tree)]) == 0
    assert not seen, seen
    report = json.loads(capsys.readouterr().out.split("\ntuiloss ")[0])
    assert not (tree.parent / MARKER).exists()
    runs = {run["source"]: run for run in report["runs"]}
    assert runs["evil/metrics.jsonl"]["metrics"]["loss"]["points"] == 5  # code-shaped strings are data
    assert "evil/metrics.pkl" not in runs  # a pickle is not a log, and it is never loaded


def test_watching_writes_runs_and_connects_nothing(tree, tmp_path, monkeypatch):
    """The viewer itself, under the pilot: load, keys, an export asked for inside the tree."""
    from tuiloss.ui.app import make_app

    monkeypatch.chdir(tree)  # the export must not land here
    exports = tmp_path / "tmp"
    exports.mkdir()
    monkeypatch.setenv("TMPDIR", str(exports))
    monkeypatch.setattr("tempfile.tempdir", str(exports))
    before = snapshot(tree)

    async def watch() -> None:
        app = make_app(Config(paths=(str(tree),), poll=0.2))
        async with app.run_test(size=(120, 40)) as pilot:
            deadline = time.monotonic() + 30
            while not (app.loaded and app.report is not None):
                assert time.monotonic() < deadline, "the first load never finished"
                await pilot.pause(0.05)
            for key in ("x", "y", "s", "v", "i", "i", "e"):
                await pilot.press(key)
                await pilot.pause(0.05)
            deadline = time.monotonic() + 10
            while app.last_export is None:
                assert time.monotonic() < deadline, "the export never finished"
                await pilot.pause(0.05)
            await pilot.pause(2.5)  # a safety poll and a rescan go by
            await pilot.press("q")

    with audited(tree) as seen:
        asyncio.run(watch())
    assert not seen, seen
    assert snapshot(tree) == before
    assert list(exports.rglob("tuiloss-report-*.md")), "the export went somewhere else"
    assert not (tree.parent / MARKER).exists()


def test_headless_watch_in_both_modes_touches_nothing(tree):
    from tuiloss.core.engine import Engine, Options
    from tuiloss.core.driver import Ingestor, LoadFinished
    from tuiloss.ui.watcher import Watcher

    before = snapshot(tree)
    with audited(tree) as seen:
        for poll in (None, 0.1):
            posted: list = []
            ingestor = Ingestor(Engine([str(tree)], Options()), Watcher([str(tree)], poll, mounts=[]),
                                posted.append, max_inflight=10**6)
            thread = threading.Thread(target=ingestor.run, daemon=True)
            thread.start()
            deadline = time.monotonic() + 30
            while not any(isinstance(p, LoadFinished) for p in posted):
                assert time.monotonic() < deadline
                time.sleep(0.02)
            time.sleep(0.5)  # some polls go by
            ingestor.stop()
            thread.join(timeout=10)
    assert not seen, seen
    assert snapshot(tree) == before


def _read_only_mount_works() -> bool:
    if shutil.which("unshare") is None or os.geteuid() != 0:
        return False
    probe = subprocess.run(["unshare", "-m", "sh", "-c", "mount -t tmpfs none /mnt && mount -o remount,ro /mnt"],
                           capture_output=True, timeout=30)
    return probe.returncode == 0


@pytest.mark.skipif(not _read_only_mount_works(), reason="cannot make a private read-only bind mount here")
def test_report_on_a_read_only_filesystem_reads_the_same(tree, tmp_path):
    mount = tmp_path / "ro"
    mount.mkdir()
    script = (f"mount --bind {tree} {mount} && mount -o remount,ro,bind {mount} && "
              f"touch {mount}/probe 2>/dev/null && exit 3; cd {mount} && exec {TUILOSS} report --json {mount}")
    done = subprocess.run(["unshare", "-m", "sh", "-c", script], capture_output=True, timeout=120)
    assert done.returncode == 0, (done.returncode, done.stderr.decode(errors="replace"))
    on_ro = json.loads(done.stdout)
    normal = json.loads(subprocess.run([str(TUILOSS), "report", "--json", str(tree)], capture_output=True,
                                       timeout=120, check=True).stdout)
    counts = lambda report: sorted((run["source"], sum(m["points"] for m in run["metrics"].values()))
                                   for run in report["runs"])
    assert counts(on_ro) == counts(normal)


def test_the_audit_sees_writes_sockets_and_evaluation(tmp_path):
    """The checks above can fail: the hook notices each kind of breach."""
    with audited(tmp_path) as seen:
        with open(tmp_path / "written", "w") as handle:
            handle.write("x")
        os.rename(tmp_path / "written", tmp_path / "moved")
        eval(compile(repr(MARKER), "<log>", "eval"))
        probe = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        probe.close()
    kinds = [event for event, _ in seen]
    assert "open" in kinds and "os.rename" in kinds and "socket.__new__" in kinds
    assert "compile" in kinds or "exec" in kinds
