"""A chaos writer: one process appending to several training logs the hostile way.

Run as ``python chaos_writer.py SPEC_JSON``. It talks to the test over its
standard streams, one JSON object per line:

* it prints ``{"ready": true}`` once every log has its opening lines, then waits
  for ``go``;
* before anything that destroys bytes (truncation, atomic replacement, deletion,
  rewriting trainer_state.json's history) it flushes every complete line and
  prints ``{"sync": "caught_up", "run": ..., "points": N, "rejected": R}``, then
  waits for ``ok``: the test answers once tuiloss holds at least that many points
  and rejected lines for the run. After a deletion it asks ``{"sync": "deleted"}``
  the same way. So every byte ever written was readable by tuiloss before it was
  destroyed, and the ground truth is exact (see test_chaos.py);
* at the end it prints ``{"done": true, "runs": {...}}``: the journal of every run.
  A rotated copy (``train.log.1``) is part of its log's run, never a run of its own.

A journal is a list of entries in file order: ``["p", {metric: [[step, value],
...]}]`` for points (numbers as ``repr`` strings, so NaN and Inf survive JSON),
``["e", kind]`` for an event (truncate, rotate, replace, recreate, rewrite) and
``["r", reason]`` for a line that must be counted as rejected (``unmatched`` for
plain-text lines that match no pattern).

Some changes do not wait, as real tools do not: a restarted job rewriting its log
past the old size (``restart``), logrotate's ``copytruncate``, rsync's temp file
renamed over the log (``rsync``, which only extends it), Lightning's CSVLogger
rewriting ``metrics.csv`` with a wider header (``lightning``), and a rewrite in place
to the very same size with every value new (``samesize``). The three that
destroy bytes are journaled as ``["u", kind]``: whatever was written before may
have been read in part only (a prefix of it), and what follows must be held exactly.
A log that had one never waits for a sync again. The other two destroy nothing:
every point must be held exactly, with no new segment.
"""

from __future__ import annotations

import json
import math
import os
import random
import select
import string
import struct
import sys
import time

SYNC_TIMEOUT = 60.0
PAGE = 4096
ACTIONS_PER_SECOND = 300


def send(message: dict) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def wait_for(word: str) -> None:
    deadline = time.monotonic() + SYNC_TIMEOUT
    line = b""
    while not line.endswith(b"\n"):
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([sys.stdin], [], [], left)[0]:
            raise SystemExit(f"no {word!r} from the test within {SYNC_TIMEOUT}s")
        byte = os.read(sys.stdin.fileno(), 1)
        if not byte:
            raise SystemExit("the test went away")
        line += byte
    if line.strip().decode() != word:
        raise SystemExit(f"expected {word!r}, got {line!r}")


def num(value: float) -> str:
    return repr(float(value))


def loss_value(rng: random.Random) -> float:
    roll = rng.random()
    if roll < 0.02:
        return float("nan")
    if roll < 0.03:
        return rng.choice([float("inf"), float("-inf")])
    return float(f"{rng.uniform(0.01, 5.0):.6g}")


class Log:
    """One run being written. Subclasses say how records and garbage look."""

    format = ""
    rotates = True
    destructive = ("truncate", "rotate", "replace", "delete", "restart", "rsync", "copytruncate", "samesize")
    #: Changes after which what was written before is not known to have been read.
    unwaited = ("restart", "copytruncate", "samesize")

    def __init__(self, writer: "Writer", spec: dict) -> None:
        self.writer = writer
        self.rng = writer.rng
        self.path = spec["path"]
        self.run = spec.get("run", self.path)
        self.stage = spec["stage"]
        self.entries: list = []
        self.generation: list = []
        self.pending = b""
        self.last_put = b""
        self.step = 0
        self.fd: int | None = None
        self.deleted = False
        self.rotations = 0
        self.events = 0
        self.rotated: dict[str, dict] = {}
        self.unknown = False  # a change that did not wait happened: never sync again
        self.copied = -1  # the whole second the time of this log's last rotated copy is in

    # -- what the journal says ------------------------------------------------------------

    def points(self) -> int:
        return sum(len(p) for kind, body in self.entries if kind == "p" for p in body.values())

    def rejected(self) -> int:
        return sum(1 for kind, _ in self.entries if kind == "r")

    def note(self, entry: list) -> None:
        self.entries.append(entry)
        if entry[0] != "e":
            self.generation.append(entry)

    # -- writing --------------------------------------------------------------------------

    def open(self, create: bool = False) -> None:
        flags = os.O_WRONLY | os.O_APPEND | (os.O_CREAT if create else 0)
        self.fd = os.open(self.path, flags, 0o644)

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None

    def put(self, data: bytes, entry: list | None) -> None:
        self.pending += data
        self.last_put = data
        if entry is not None:
            self.note(entry)

    def flush(self, everything: bool = True) -> None:
        if not self.pending or self.fd is None:
            return
        n = len(self.pending) if everything else self.rng.randint(1, len(self.pending))
        os.write(self.fd, self.pending[:n])
        self.pending = self.pending[n:]

    def start_generation(self) -> None:
        self.generation = []
        self.step = 0
        for data, entry in self.opening():
            self.put(data, entry)

    def caught_up(self) -> None:
        self.flush()
        self.writer.sync({"sync": "caught_up", "run": self.run, "points": self.points(),
                          "rejected": self.rejected()})

    # -- actions --------------------------------------------------------------------------

    def setup(self) -> None:
        os.makedirs(os.path.dirname(self.path), exist_ok=True)
        self.open(create=True)
        self.start_generation()
        self.flush()

    def act(self) -> None:
        rng = self.rng
        if self.deleted:
            if rng.random() < 0.3:
                self.recreate()
            return
        roll = rng.random()
        if roll < 0.55:
            self.put(*self.record())
        elif roll < 0.85:
            self.flush(everything=False)
        elif roll < 0.93:
            data, reason = self.garbage()
            if data is not None:
                self.put(data, ["r", reason])
        elif roll < 0.97:
            self.step = max(0, self.step - rng.randint(1, 40))  # a resumed run: the step goes back
        elif self.events < 3 and self.destructive:
            self.events += 1
            choices = self.destructive
            if self.unknown:  # a sync would wait for points that may be gone for good
                choices = tuple(c for c in choices if c in self.unwaited or c in ("rsync", "lightning"))
            if choices:
                getattr(self, rng.choice(choices))()

    def spaced(self, path: str) -> None:
        """Wait until the next rotated copy of this log, at ``path`` once made, can have a time in a later
        whole second than the last one. SFTP and S3 list times in whole seconds, by which a reader orders
        a log's copies: these copies count up (``.1`` the oldest), logrotate's count down, and two of them
        made in one second cannot be told apart (tuiloss takes logrotate's order then). Real rotations
        are hours apart; these are only a second apart. A file renamed keeps its time: it is touched."""
        wait = self.copied + 1.05 - time.time()  # the file system's clock may lag time.time() by a tick
        if wait > 0:
            time.sleep(wait)
        if os.path.exists(path) and int(os.stat(path).st_mtime) <= self.copied:
            os.utime(path)

    def truncate(self) -> None:
        self.caught_up()
        os.truncate(self.path, 0)
        self.note(["e", "truncate"])
        self.start_generation()

    def rotate(self) -> None:
        # Only the tailer's position must be known: lines written after the sync are
        # still in the renamed file, which the tailer drains.
        self.caught_up()
        for _ in range(self.rng.randint(0, 4)):
            self.put(*self.record())
        self.flush()
        self.close()
        self.rotations += 1
        target = f"{self.path}.{self.rotations}"
        self.spaced(self.path)
        os.rename(self.path, target)  # a rotated copy: an earlier part of this run, not a run of its own
        self.copied = int(os.stat(target).st_mtime)
        self.open(create=True)
        self.note(["e", "rotate"])
        self.start_generation()
        self.flush()

    def replace(self) -> None:
        self.caught_up()
        self.close()
        tmp = os.path.join(self.stage, f"replace-{os.getpid()}-{self.rng.randrange(1 << 30)}")
        self.note(["e", "replace"])
        self.start_generation()
        for _ in range(self.rng.randint(0, 6)):
            self.put(*self.record())
        with open(tmp, "wb") as handle:
            handle.write(self.pending)
        self.pending = b""
        os.replace(tmp, self.path)
        self.open()

    # -- changes that do not wait for the reader ---------------------------------------------

    def file_bytes(self) -> bytes:
        with open(self.path, "rb") as handle:
            return handle.read()

    def restart(self) -> None:
        """A restarted job: ``open(p, "w")``, then more than the old size, before any read."""
        self.flush()
        old = os.path.getsize(self.path)
        self.note(["u", "truncate"])
        self.unknown = True
        self.start_generation()
        while len(self.pending) <= old:
            self.put(*self.record())
        self.close()
        with open(self.path, "wb") as handle:  # one write: emptied and past the old size at once
            handle.write(self.pending)
        self.pending = b""
        self.open()

    def samesize(self) -> None:
        """Rewritten in place to the very same size, every value new (``seek(0); write(...)``).

        Only while the file fits in one page: the kernel copies a longer write into the page
        cache a page at a time, with no lock a reader takes, so a read that lands in the middle
        of it sees new pages and old ones, which no reader can tell from a file written so.
        """
        self.flush()
        old = os.path.getsize(self.path)
        if old > PAGE:
            return
        step, self.step = self.step, 0
        parts = self.opening()
        while True:
            part = self.record()
            if sum(len(data) for data, _ in parts) + len(part[0]) + 3 > old:
                break
            parts.append(part)
        room = old - sum(len(data) for data, _ in parts)
        if room < 3:  # the new opening alone is longer than the file: not this time
            self.step = step
            return
        self.note(["u", "samesize"])
        self.unknown = True
        self.generation = []
        for data, entry in [*parts, self.filler(room)]:
            self.put(data, entry)
        fd = os.open(self.path, os.O_WRONLY)
        try:
            os.pwrite(fd, self.pending, 0)  # one write over the whole file: the same inode, the same size
        finally:
            os.close(fd)
        self.pending = b""

    def letters(self, n: int) -> bytes:
        return "".join(self.rng.choice(string.ascii_lowercase) for _ in range(n)).encode()

    def copytruncate(self) -> None:
        """logrotate's copytruncate: copy the file aside, empty it; the writer goes on appending."""
        if getattr(self, "widened", False):
            # A CSV header rewritten and then copy-truncated before any read is in the copy
            # alone: rows under it cannot be read from the live file (a known limit).
            return
        self.flush()
        self.rotations += 1
        target = f"{self.path}.{self.rotations}"
        self.spaced(target)
        with open(target, "wb") as handle:  # an earlier part of this run, not a run of its own
            handle.write(self.file_bytes())
        self.copied = int(os.stat(target).st_mtime)
        os.truncate(self.path, 0)
        self.note(["u", "copytruncate"])
        self.unknown = True
        self.generation = []
        self.put(*self.record())  # a row first: the next line after the truncation is data

    def rsync(self) -> None:
        """rsync: the whole file and more into ``.name.XXXXXX`` beside it, renamed over it."""
        self.flush()
        data = self.file_bytes()
        for _ in range(self.rng.randint(1, 6)):
            self.put(*self.record())
        suffix = "".join(self.rng.choice(string.ascii_letters + string.digits) for _ in range(6))
        temp = os.path.join(os.path.dirname(self.path), f".{os.path.basename(self.path)}.{suffix}")
        with open(temp, "wb") as handle:
            handle.write(data + self.pending)
        self.pending = b""
        self.close()
        os.replace(temp, self.path)
        self.open()

    def delete(self) -> None:
        self.caught_up()
        self.close()
        os.unlink(self.path)
        self.deleted = True
        self.writer.sync({"sync": "deleted", "run": self.run})

    def recreate(self) -> None:
        self.deleted = False
        self.open(create=True)
        self.note(["e", "recreate"])
        self.start_generation()
        self.flush()

    def finish(self) -> None:
        if self.deleted:
            self.recreate()
        self.flush()
        self.close()

    def journal(self) -> dict:
        runs = {self.run: {"format": self.format, "entries": self.entries}}
        runs.update(self.rotated)
        return runs

    # -- to be defined per format ---------------------------------------------------------

    def opening(self) -> list:
        raise NotImplementedError

    def record(self) -> tuple[bytes, list]:
        raise NotImplementedError

    def garbage(self) -> tuple[bytes | None, str]:
        raise NotImplementedError

    def filler(self, n: int) -> tuple[bytes, list]:
        """A rejected line of exactly ``n`` bytes (``n >= 3``), and its journal entry."""
        raise NotImplementedError

    def binary(self) -> bytes:
        """A line of random bytes holding a NUL (never a newline)."""
        body = bytes(self.rng.choice([b for b in range(256) if b != 10]) for _ in range(self.rng.randint(1, 40)))
        cut = self.rng.randint(0, len(body))
        return body[:cut] + b"\x00" + body[cut:] + b"\x01\n"  # a control byte: never NUL padding


class CsvLog(Log):
    format = "csv"
    header = b"step,loss,lr\n"
    destructive = Log.destructive + ("lightning",)

    def opening(self) -> list:
        return [(self.header, None)] + [self.record() for _ in range(5)]

    def record(self) -> tuple[bytes, list]:
        self.step += self.rng.randint(1, 3)
        loss, lr = loss_value(self.rng), float(f"{self.rng.uniform(1e-5, 1e-3):.3g}")
        line = f"{self.step},{_csv_number(loss)},{_csv_number(lr)}"
        points = {"loss": [[num(self.step), num(loss)]], "lr": [[num(self.step), num(lr)]]}
        if self.header.endswith(b",val_loss\n") and self.rng.random() < 0.3:
            val = loss_value(self.rng)
            line += f",{_csv_number(val)}"
            points["val_loss"] = [[num(self.step), num(val)]]
        return f"{line}\n".encode(), ["p", points]

    def lightning(self) -> None:
        """Lightning's CSVLogger on a new key: the whole file again, under a wider header."""
        self.flush()
        data = self.file_bytes()
        first = data.find(b"\n") + 1
        if self.header.endswith(b",val_loss\n") or data[:first] != self.header:
            return  # wide already, or a copy-truncated file that starts with a row
        self.header = b"step,loss,lr,val_loss\n"
        self.widened = True
        with open(self.path, "wb") as handle:  # open(p, "w"): the same file, emptied and written
            handle.write(self.header + data[first:])

    def garbage(self) -> tuple[bytes | None, str]:
        # Never two binary lines in a row: blanked, they make the CSV parser invent a bad row
        # (test_findings.py::test_csv_consecutive_blank_lines_are_not_bad_rows).
        if self.rng.random() < 0.5 and not self.last_put.endswith(b"\x01\n"):
            return self.binary(), "binary data"
        return self.header, "repeated header"

    def filler(self, n: int) -> tuple[bytes, list]:
        # "x" first: random letters alone may spell a missing value or a number ("null", "nan", "inf")
        return b"x" + self.letters(n - 2) + b"\n", ["r", "non-numeric value"]


def _csv_number(value: float) -> str:
    if math.isnan(value):
        return "nan"
    if value in (float("inf"), float("-inf")):
        return "inf" if value > 0 else "-inf"
    return repr(value)


class JsonlLog(Log):
    format = "jsonl"

    def opening(self) -> list:
        return [self.record() for _ in range(5)]

    def record(self) -> tuple[bytes, list]:
        self.step += self.rng.randint(1, 3)
        loss, lr = loss_value(self.rng), float(f"{self.rng.uniform(1e-5, 1e-3):.3g}")
        line = json.dumps({"step": self.step, "loss": loss, "lr": lr}).encode() + b"\n"
        return line, ["p", {"loss": [[num(self.step), num(loss)]], "lr": [[num(self.step), num(lr)]]}]

    def garbage(self) -> tuple[bytes | None, str]:
        kind = self.rng.randrange(4)
        if kind == 0:
            return self.binary(), "binary data"
        if kind == 1:
            return b'{"step": 12, "loss": 0.5\n', "invalid JSON"
        if kind == 2:
            return b'"checkpoint saved"\n', "not a JSON object"
        return b'{"step": %d}\n' % self.step, "no numeric field"

    def filler(self, n: int) -> tuple[bytes, list]:
        return b'"' + self.letters(n - 3) + b'"\n', ["r", "not a JSON object"]


NOISE = (
    b"Saving checkpoint to out/ckpt.pt\n",
    b"warning: gradient overflow, skipping update\n",
    b"Traceback (most recent call last):\n",
    b"\n",
    b"  compiling the model... (takes a minute)\n",
)


class TextLog(Log):
    """nanoGPT's stdout: ``iter N: loss X, time Yms`` and eval lines."""

    format = "text"

    def opening(self) -> list:
        banner = f"=== training starts: generation {self.rng.randrange(1 << 40):x} ===\n".encode()
        # The opening holds no eval line: one read before any "iter" line would miss it
        # (test_findings.py::test_nanogpt_eval_line_before_any_iter_line_is_read).
        return [(banner, ["r", "unmatched"])] + [self.record(evals=False) for _ in range(5)]

    def record(self, evals: bool = True) -> tuple[bytes, list]:
        self.step += self.rng.randint(1, 3)
        if evals and self.rng.random() < 0.1:
            train, val = loss_value(self.rng), loss_value(self.rng)
            line = f"step {self.step}: train loss {_text_number(train)}, val loss {_text_number(val)}\n"
            return line.encode(), ["p", {"train loss": [[num(self.step), num(train)]],
                                         "val loss": [[num(self.step), num(val)]]}]
        loss, ms = loss_value(self.rng), float(f"{self.rng.uniform(10, 900):.2f}")
        line = f"iter {self.step}: loss {_text_number(loss)}, time {ms:.2f}ms\n"
        return line.encode(), ["p", {"loss": [[num(self.step), num(loss)]], "time": [[num(self.step), num(ms)]]}]

    def garbage(self) -> tuple[bytes | None, str]:
        kind = self.rng.randrange(3)
        if kind == 0:
            return self.binary(), "binary data"
        if kind == 1:
            return b"iter %d: loss went missing\n" % self.step, "malformed line"
        return self.rng.choice(NOISE), "unmatched"

    def filler(self, n: int) -> tuple[bytes, list]:
        return self.letters(n - 1) + b"\n", ["r", "unmatched"]


def _text_number(value: float) -> str:
    return repr(value) if math.isfinite(value) else str(value)


class MlflowLog(Log):
    """An MLflow file-store run: metric files appended line by line, new metrics appearing."""

    format = "mlflow"
    destructive = ()

    def __init__(self, writer: "Writer", spec: dict) -> None:
        super().__init__(writer, spec)
        # the run folder (Log set it from the spec: a remote root names it by URL)
        self.files: dict[str, int] = {}
        self.file_pending: dict[str, bytes] = {}
        self.steps: dict[str, int] = {}

    def setup(self) -> None:
        os.makedirs(os.path.join(self.path, "metrics"), exist_ok=True)
        os.makedirs(os.path.join(self.path, "params"), exist_ok=True)
        with open(os.path.join(self.path, "meta.yaml"), "w") as handle:
            handle.write(f"run_id: {os.path.basename(self.path)}\nstatus: 1\nlifecycle_stage: active\n")
        with open(os.path.join(self.path, "params", "lr"), "w") as handle:
            handle.write("0.0003")
        for name in ("loss", "lr"):
            self.add_metric(name)
            for _ in range(3):
                self.line(name)
        self.flush()

    def add_metric(self, name: str) -> None:
        self.files[name] = os.open(os.path.join(self.path, "metrics", name), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        self.file_pending[name] = b""
        self.steps[name] = 0

    def line(self, name: str) -> None:
        self.steps[name] += self.rng.randint(1, 3)
        value = loss_value(self.rng)
        stamp = 1_700_000_000_000 + len(self.entries)
        self.file_pending[name] += f"{stamp} {value!r} {self.steps[name]}\n".encode()
        self.note(["p", {name: [[num(self.steps[name]), num(value)]]}])

    def flush(self, everything: bool = True) -> None:
        for name, data in self.file_pending.items():
            if not data:
                continue
            n = len(data) if everything else self.rng.randint(1, len(data))
            os.write(self.files[name], data[:n])
            self.file_pending[name] = data[n:]

    def act(self) -> None:
        rng = self.rng
        name = rng.choice(sorted(self.files))
        roll = rng.random()
        if roll < 0.55:
            self.line(name)
        elif roll < 0.85:
            self.flush(everything=False)
        elif roll < 0.92:
            if rng.random() < 0.5:
                self.file_pending[name] += b"not a metric line\n"
                self.note(["r", "malformed metric line"])
            else:
                self.file_pending[name] += b"\x00\x00garbage\x00\n"
                self.note(["r", "binary data"])
        elif roll < 0.97:
            self.steps[name] = max(1, self.steps[name] - rng.randint(1, 40))
        elif "val_loss" not in self.files:
            self.add_metric("val_loss")
            self.line("val_loss")

    def finish(self) -> None:
        self.flush()
        for fd in self.files.values():
            os.close(fd)
        self.files = {}


class TrainerStateLog(Log):
    """trainer_state.json, rewritten whole at each save: atomically or in place."""

    format = "hf_trainer"
    destructive = ("rewrite",)

    def __init__(self, writer: "Writer", spec: dict) -> None:
        super().__init__(writer, spec)
        self.history: list[dict] = []
        self.dirty = False

    def setup(self) -> None:
        os.makedirs(os.path.dirname(self.path), exist_ok=True)
        for _ in range(3):
            self.add()
        self.save(atomic=True)

    def add(self) -> None:
        self.step += self.rng.randint(1, 5) * 10
        loss, lr = loss_value(self.rng), float(f"{self.rng.uniform(1e-5, 1e-3):.3g}")
        self.history.append({"loss": loss, "learning_rate": lr, "step": self.step})
        self.note(["p", {"loss": [[num(self.step), num(loss)]], "learning_rate": [[num(self.step), num(lr)]]}])
        self.dirty = True

    def document(self) -> bytes:
        state = {"global_step": self.step, "log_history": self.history, "best_metric": None}
        return json.dumps(state, indent=2).encode()

    def save(self, atomic: bool) -> None:
        data = self.document()
        if atomic:
            tmp = os.path.join(self.stage, f"state-{os.getpid()}-{self.rng.randrange(1 << 30)}")
            with open(tmp, "wb") as handle:
                handle.write(data)
            os.replace(tmp, self.path)
        else:
            with open(self.path, "r+b") as handle:  # in place: readers may see half of it
                handle.truncate(0)
                cut = self.rng.randint(0, len(data))
                handle.write(data[:cut])
                handle.flush()
                time.sleep(self.rng.choice([0, 0.001, 0.005]))
                handle.write(data[cut:])
        self.dirty = False

    def flush(self, everything: bool = True) -> None:
        if self.dirty:
            self.save(atomic=self.rng.random() < 0.7)

    def act(self) -> None:
        roll = self.rng.random()
        if roll < 0.6:
            self.add()
        elif roll < 0.9:
            self.flush()
        elif roll < 0.95 and self.events < 3 and len(self.history) > 2:
            self.events += 1
            self.rewrite()

    def rewrite(self) -> None:
        """Training restarted from an earlier checkpoint: history cut back, then new entries."""
        self.caught_up()
        cut = self.rng.randint(1, len(self.history) - 1)
        self.history = self.history[:cut]
        self.step = self.history[-1]["step"]
        self.note(["e", "rewrite"])
        self.add()
        self.save(atomic=True)

    def finish(self) -> None:
        if self.dirty:
            self.save(atomic=True)


class TfeventsLog(Log):
    """A TensorBoard run folder: records appended in arbitrary byte chunks, resumed files."""

    format = "tfevents"
    destructive = ()

    def __init__(self, writer: "Writer", spec: dict) -> None:
        super().__init__(writer, spec)
        from crc32c import crc32c
        from tensorboard.compat.proto import event_pb2, summary_pb2

        # the run folder: Log set it from the spec (a remote root names it by URL)
        self.crc = crc32c
        self.event_pb2, self.summary_pb2 = event_pb2, summary_pb2
        self.files = 0

    def masked(self, data: bytes) -> int:
        value = self.crc(data)
        return (((value >> 15) | (value << 17)) + 0xA282EAD8) & 0xFFFFFFFF

    def frame(self, body: bytes, damage: bool = False) -> bytes:
        header = struct.pack("<Q", len(body))
        footer = self.masked(body)
        if damage:
            footer ^= 0x5A5A
        return header + struct.pack("<I", self.masked(header)) + body + struct.pack("<I", footer)

    def new_file(self) -> None:
        self.close()
        self.files += 1
        name = f"events.out.tfevents.{1_700_000_000 + self.files}.chaoshost.{os.getpid()}.{self.files}"
        self.fd = os.open(os.path.join(self.path, name), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        self.pending += self.frame(self.event_pb2.Event(wall_time=1.7e9, file_version="brain.Event:2").SerializeToString())

    def setup(self) -> None:
        os.makedirs(self.path, exist_ok=True)
        self.new_file()
        for _ in range(3):
            self.put(*self.record())
        self.flush()

    def record(self) -> tuple[bytes, list]:
        import numpy as np

        self.step += self.rng.randint(1, 3)
        value = float(np.float32(loss_value(self.rng)))
        summary = self.summary_pb2.Summary(value=[self.summary_pb2.Summary.Value(tag="loss", simple_value=value)])
        body = self.event_pb2.Event(wall_time=1.7e9 + self.step, step=self.step, summary=summary).SerializeToString()
        return self.frame(body), ["p", {"loss": [[num(self.step), num(value)]]}]

    def act(self) -> None:
        roll = self.rng.random()
        if roll < 0.55:
            self.put(*self.record())
        elif roll < 0.85:
            self.flush(everything=False)
        elif roll < 0.92:
            framed, _ = self.record()  # its point is never journaled: the record is damaged
            self.put(self.frame(framed[12:-4], damage=True), ["r", "bad CRC"])
        elif roll < 0.97:
            self.step = max(0, self.step - self.rng.randint(1, 40))
        elif self.files < 4:
            self.flush()
            self.step = max(0, self.step - self.rng.randint(0, 30))  # resumed from a checkpoint
            self.new_file()

    def finish(self) -> None:
        self.flush()
        self.close()


KINDS = {
    "csv": CsvLog,
    "jsonl": JsonlLog,
    "text": TextLog,
    "mlflow": MlflowLog,
    "hf_trainer": TrainerStateLog,
    "tfevents": TfeventsLog,
}


class Writer:
    def __init__(self, spec: dict) -> None:
        self.rng = random.Random(spec["seed"])
        self.seconds = spec["seconds"]
        self.logs = [KINDS[log["kind"]](self, dict(log, stage=spec["stage"])) for log in spec["logs"]]
        self.late = [KINDS[log["kind"]](self, dict(log, stage=spec["stage"])) for log in spec.get("late", [])]

    def sync(self, message: dict) -> None:
        # Every log ends on a whole line while the writer waits: a last line without a
        # newline that stays as it is for a while is read as it is (the viewer's rule).
        for log in self.logs + self.late:
            log.flush()
        send(message)
        wait_for("ok")

    def run(self) -> None:
        for log in self.logs:
            log.setup()
        send({"ready": True})
        wait_for("go")
        started = time.monotonic()
        late_at = [self.rng.randrange(int(self.seconds * ACTIONS_PER_SECOND) + 1) for _ in self.late]
        active = list(self.logs)
        done = 0
        # A fixed number of actions, so a seed replays the same writes; the time cap only
        # guards against a machine far slower than expected.
        actions = int(self.seconds * ACTIONS_PER_SECOND)
        for _ in range(actions):
            if time.monotonic() - started > 4 * self.seconds + 10:
                break
            for k, log in enumerate(self.late):
                if late_at[k] is not None and late_at[k] <= done:
                    log.setup()
                    active.append(log)
                    late_at[k] = None
            done += 1
            self.rng.choice(active).act()
            time.sleep(self.rng.choice((0, 0, 0.0005, 0.001, 0.003, 0.01)))
        for log, when in zip(self.late, late_at):
            if when is not None:
                log.setup()
                active.append(log)
        runs: dict = {}
        for log in active:
            log.finish()
            runs.update(log.journal())
        send({"done": True, "runs": runs})


if __name__ == "__main__":
    Writer(json.loads(sys.argv[1])).run()
