"""Weights & Biases run files (``run-<id>.wandb``): from framed records to points.

``wandb offline`` (and an online run, as its local copy) writes every call of the
run into one transaction log, ``wandb/offline-run-<time>-<id>/run-<id>.wandb``.
Its framing is LevelDB's log format with W&B's own file header:

* a 7-byte header: ``:W&B``, the magic ``0xBEE1`` (little endian) and a version byte;
* 32 KiB blocks of records, each with a 7-byte header (CRC-32 of the type byte and
  the data, the data's length, the type) and a record never crossing a block: a
  longer one is cut into FIRST, MIDDLE and LAST pieces. Fewer than 7 bytes left at
  the end of a block are zeros.

Each whole record is a ``Record`` protocol buffer, decoded with the class the
``wandb`` package ships (``wandb.proto.wandb_internal_pb2``: the optional extra
``tuiloss[wandb]``), imported when a source first reads. ``wandb`` itself reads
these files only in Go (wandb-core), so the framing is read here.

What is used: ``history`` records (a row of ``wandb.log``: ``_step``, the metrics,
``_runtime``, ``_timestamp``), the ``run`` record (name, project, group, tags, the
config), ``config`` updates, ``summary`` updates and ``exit`` (the exit code).
``_step`` is the step; ``_runtime`` and ``_timestamp`` are kept as series (wall-clock
axes, never a primary metric); W&B's other ``_`` keys are its own. Values that are not
numbers (media, tables, histograms, strings) are passed over without being counted.

What happens to damaged input:

* A partial record at the end of what was read waits for the rest: a live writer
  leaves one at every flush.
* A piece whose CRC fails, or whose length runs past its block, is skipped with the
  rest of its block and counted as ``bad record``: reading goes on at the next block,
  which is where LevelDB's format resynchronises.
* A file whose first bytes are not W&B's header is not read (``broken_at`` 0).
"""

from __future__ import annotations

import json
import math
import os
import re
import struct
import zlib
from dataclasses import dataclass, field

import numpy as np

from tuiloss.core.model import Batch

MISSING_EXTRA = "W&B run files need the optional extra: pip install 'tuiloss[wandb]'"

FILE_HEADER = struct.Struct("<4sHB")
IDENT = b":W&B"
MAGIC = 0xBEE1
RECORD_HEADER = struct.Struct("<IHB")
HEADER_LEN = 7
BLOCK = 32 * 1024
FULL, FIRST, MIDDLE, LAST = 1, 2, 3, 4
_TYPE_CRC = [zlib.crc32(bytes([kind])) for kind in range(5)]

#: A W&B run folder: ``run-<time>-<id>`` (online) or ``offline-run-<time>-<id>``.
RUN_FOLDER = re.compile(r"^(?:offline-)?run-\d{8}_\d{6}-[A-Za-z0-9]+$")
RUN_FILE = re.compile(r"^run-[A-Za-z0-9]+\.wandb$")
#: W&B's own history keys read: the step, and the wall-clock axes (series of the "time" role).
_OWN_SERIES = frozenset(("_step", "_runtime", "_timestamp"))
#: Bytes read from a run file's start to find its ``run`` record (name and config).
META_BYTES = 4 * 1024 * 1024


def run_file(folder: str | os.PathLike) -> str | None:
    """The ``run-<id>.wandb`` file of a W&B run folder, or None when ``folder`` is none."""
    folder = os.fspath(folder)
    if not RUN_FOLDER.match(os.path.basename(folder.rstrip(os.sep))):
        return None
    try:
        with os.scandir(folder) as entries:
            names = sorted(entry.name for entry in entries if RUN_FILE.match(entry.name) and entry.is_file())
    except OSError:
        return None
    return os.path.join(folder, names[0]) if names else None


def is_debug_log(path: str | os.PathLike) -> bool:
    """Whether ``path`` is W&B's own log of a run (``logs/debug.log``, ``logs/debug-internal.log``,
    or the links to them W&B keeps in ``wandb/``): no training metrics."""
    name = os.path.basename(os.fspath(path))
    if not (name.startswith("debug") and name.endswith(".log")):
        return False
    logs = os.path.dirname(os.path.realpath(path))
    return os.path.basename(logs) == "logs" and bool(RUN_FOLDER.match(os.path.basename(os.path.dirname(logs))))


def load_record_class():
    """``wandb``'s ``Record`` message class, or None when the package is missing."""
    try:
        from wandb.proto import wandb_internal_pb2
    except Exception:  # not installed, or a broken install: the notice names the extra
        return None
    return wandb_internal_pb2.Record


@dataclass(slots=True)
class Framed:
    """What :meth:`RecordReader.feed` found in one chunk."""

    records: list[bytes] = field(default_factory=list)
    consumed: int = 0  # bytes of the chunk used up (whole records, padding, skipped blocks)
    bad: int = 0  # pieces skipped (bad CRC, impossible length, a piece without its start)
    broken_at: int | None = None  # offset in the chunk where the file stops being W&B's
    partial: bool = False  # the chunk ended inside a record


class RecordReader:
    """Cuts LevelDB-framed bytes into whole records, from any offset of the file."""

    def feed(self, data: bytes, offset: int, final: bool = False) -> Framed:
        """The whole records in ``data``, which starts at byte ``offset`` of the file.

        Only bytes up to the end of the last whole record (or skipped block) are
        consumed; a record cut by the end of ``data`` is read again with the next chunk.
        With ``final``, what is left is a torn last record, counted as bad.
        """
        out = Framed()
        size = len(data)
        pos = 0
        if offset == 0:
            if size < HEADER_LEN:
                out.partial = size > 0
                return self._end(out, final, size)
            ident, magic, _version = FILE_HEADER.unpack_from(data, 0)
            if ident != IDENT or magic != MAGIC:
                out.broken_at = 0
                return out
            pos = out.consumed = HEADER_LEN
        pieces: list[bytes] = []  # the pieces of the record being assembled
        while pos < size:
            at = offset + pos
            left = BLOCK - at % BLOCK
            room = left >= HEADER_LEN  # else the block ends in fewer zeros than a header
            if room and pos + HEADER_LEN > size:
                out.partial = True
                break
            crc, length, kind = RECORD_HEADER.unpack_from(data, pos) if room else (0, 0, 0)
            end = pos + HEADER_LEN + length
            if kind == 0 and length == 0 and crc == 0:
                # zeros: the end of a block, or bytes not written yet
                if pos + left > size or (room and any(data[pos:pos + left])):
                    out.partial = True
                    break
                pos += left
                if not pieces:
                    out.consumed = pos
                continue
            if HEADER_LEN + length > left or not FULL <= kind <= LAST:
                pos = self._skip_block(out, pieces, pos, left, size)
                if pos < 0:
                    break
                continue
            if end > size:
                out.partial = True
                break
            piece = data[pos + HEADER_LEN:end]
            if zlib.crc32(piece, _TYPE_CRC[kind]) != crc:
                pos = self._skip_block(out, pieces, pos, left, size)
                if pos < 0:
                    break
                continue
            pos = end
            if kind == FULL:
                if pieces:
                    out.bad += 1
                    pieces.clear()
                out.records.append(piece)
            elif kind == FIRST:
                if pieces:
                    out.bad += 1
                pieces[:] = [piece]
                continue
            elif kind == MIDDLE:
                if pieces:
                    pieces.append(piece)
                    continue
                out.bad += 1  # the middle of a record whose start was lost: passed over
            else:  # LAST
                if pieces:
                    pieces.append(piece)
                    out.records.append(b"".join(pieces))
                    pieces.clear()
                else:
                    out.bad += 1
            out.consumed = pos
        if pieces:
            out.partial = True
        return self._end(out, final, size)

    @staticmethod
    def _skip_block(out: Framed, pieces: list[bytes], pos: int, left: int, size: int) -> int:
        """Pass over the rest of a block holding a bad piece; -1 when it is not all read yet."""
        if pos + left > size:
            out.partial = True
            return -1
        out.bad += 1 + (1 if pieces else 0)
        pieces.clear()
        out.consumed = pos + left
        return pos + left

    @staticmethod
    def _end(out: Framed, final: bool, size: int) -> Framed:
        if final and out.partial:  # no more bytes will come: the torn record is counted, and passed
            out.bad += 1
            out.partial = False
            out.consumed = size
        return out


@dataclass(slots=True)
class RunMeta:
    """What a run file says about its run besides the points."""

    run_id: str | None = None
    name: str | None = None
    project: str | None = None
    group: str | None = None
    job_type: str | None = None
    tags: tuple[str, ...] = ()
    config: dict = field(default_factory=dict)
    summary: dict = field(default_factory=dict)
    exit_code: int | None = None

    @property
    def status(self) -> str:
        """``running`` until the run's exit record, then ``finished`` or ``failed``."""
        if self.exit_code is None:
            return "running"
        return "finished" if self.exit_code == 0 else "failed"

    def labels(self) -> dict:
        """The config as a flat dict, with the run's name, project and group (for labels)."""
        out = dict(self.config)
        for key, value in (("run_name", self.name), ("project", self.project), ("group", self.group),
                           ("job_type", self.job_type)):
            if value and key not in out:
                out[key] = value
        if self.tags and "tags" not in out:
            out["tags"] = ", ".join(self.tags)
        return out


class HistoryDecoder:
    """Turns whole records into points and run metadata, one record at a time."""

    def __init__(self, record_class) -> None:
        self.record_class = record_class
        self.meta = RunMeta()
        self.rows = 0  # history rows read: the step of a row that has no ``_step``

    def feed(self, records: list[bytes], batch: Batch, first: int = 1) -> None:
        """Add the points of ``records`` to ``batch``; ``first`` numbers them for skip reports.

        History rows are gathered by their keys (rows of the same keys become one table), so
        the points of a chunk are made with a few numpy calls per set of keys.
        """
        shapes: dict[tuple[str, ...], tuple[list[int], list[float], list[list[float]]]] = {}
        record = self.record_class()
        for number, data in enumerate(records, start=first):
            try:
                record.ParseFromString(data)
            except Exception:  # protobuf's DecodeError, or worse on hostile bytes
                batch.skip("undecodable record", number)
                continue
            kind = record.WhichOneof("record_type")
            if kind == "history":
                row = self._history(record.history)
                if row is not None:
                    block = shapes.get(row[0])
                    if block is None:
                        block = shapes[row[0]] = ([], [], [])
                    block[0].append(number)
                    block[1].append(row[2])
                    block[2].append(row[1])
            elif kind == "run":
                self._run(record.run)
            elif kind == "config":
                _apply_updates(self.meta.config, record.config.update, record.config.remove, config=True)
            elif kind == "summary":
                _apply_updates(self.meta.summary, record.summary.update, record.summary.remove)
            elif kind == "exit":
                self.meta.exit_code = int(record.exit.exit_code)
        _add_rows(shapes, batch)

    def _history(self, history) -> tuple[tuple[str, ...], list[float], float] | None:
        """One history row: its metric names, their values and its step (None without a usable step)."""
        row: dict[str, float] = {}
        step = None
        for item in history.item:
            nested = item.nested_key  # what wandb >= 0.19 writes; older ones write key
            size = len(nested)
            key = nested[0] if size == 1 else ".".join(nested) if size else item.key
            if key.startswith("_") and key not in _OWN_SERIES:
                continue
            try:
                value = float(item.value_json)  # the common case: a number as JSON text ("NaN" too)
            except ValueError:
                value = _item_value(item)
            if key == "_step":
                step = value if type(value) is float or _is_number(value) else None
            elif type(value) is float:
                row[key] = value
            else:
                _numbers(key, value, row)
        if step is None and history.HasField("step"):
            step = history.step.num
        self.rows += 1
        step = float(step) if step is not None else float(self.rows - 1)
        if not math.isfinite(step) or not row:
            return None
        return tuple(row), list(row.values()), step


    def _run(self, run) -> None:
        meta = self.meta
        meta.run_id = run.run_id or meta.run_id
        meta.name = run.display_name or meta.name
        meta.project = run.project or meta.project
        meta.group = run.run_group or meta.group
        meta.job_type = run.job_type or meta.job_type
        if run.tags:
            meta.tags = tuple(run.tags)
        _apply_updates(meta.config, run.config.update, run.config.remove, config=True)


def _add_rows(shapes: dict, batch: Batch) -> None:
    """The rows gathered by :meth:`HistoryDecoder.feed`, each metric's points in record order."""
    if len(shapes) == 1:
        ((names, (_, steps, rows)),) = shapes.items()
        table = np.array(rows, dtype=np.float64).reshape(len(rows), len(names))
        batch.add_rows(np.array(steps, dtype=np.float64), {name: table[:, k] for k, name in enumerate(names)})
        return
    parts: dict[str, list[tuple[np.ndarray, np.ndarray, np.ndarray]]] = {}
    for names, (numbers, steps, rows) in shapes.items():
        table = np.array(rows, dtype=np.float64).reshape(len(rows), len(names))
        numbers, steps = np.array(numbers), np.array(steps, dtype=np.float64)
        for k, name in enumerate(names):
            parts.setdefault(name, []).append((numbers, steps, table[:, k]))
    for name, pieces in parts.items():
        if len(pieces) == 1:
            batch.add(name, pieces[0][1], pieces[0][2])
            continue
        order = np.argsort(np.concatenate([piece[0] for piece in pieces]), kind="stable")
        batch.add(name, np.concatenate([piece[1] for piece in pieces])[order],
                  np.concatenate([piece[2] for piece in pieces])[order])


def read_meta(path: str, record_class) -> RunMeta:
    """The name, config and status a run file holds in its first :data:`META_BYTES`.

    Never raises: what cannot be read is left out.
    """
    try:
        with open(path, "rb") as handle:
            data = handle.read(META_BYTES)
    except OSError:
        return RunMeta()
    return meta_from(data, record_class)


def meta_from(data: bytes, record_class) -> RunMeta:
    """:func:`read_meta` over a run file's first bytes (read elsewhere: a remote run)."""
    framed = RecordReader().feed(data[:META_BYTES], 0)
    decoder = HistoryDecoder(record_class)
    decoder.feed(framed.records, Batch())
    return decoder.meta


def _apply_updates(target: dict, updates, removes, config: bool = False) -> None:
    for update in updates:
        key = update.key or ".".join(update.nested_key)
        if config and key == "_wandb":
            continue
        value = _json(update.value_json)
        if config and isinstance(value, dict) and set(value) <= {"value", "desc"} and "value" in value:
            value = value["value"]  # the config as config.yaml holds it: {"value": ..., "desc": ...}
        _flat(key, value, target)
    for remove in removes:
        key = remove.key or ".".join(remove.nested_key)
        for name in [name for name in target if name == key or name.startswith(key + ".")]:
            del target[name]


def _flat(key: str, value, out: dict, depth: int = 0) -> None:
    if isinstance(value, dict) and depth < 4:
        for sub, item in value.items():
            _flat(f"{key}.{sub}", item, out, depth + 1)
    elif isinstance(value, (str, int, float, bool)) or value is None:
        out[key] = value
    elif isinstance(value, list) and len(value) <= 8 and all(not isinstance(v, (dict, list)) for v in value):
        out[key] = ", ".join(map(str, value))


def _numbers(key: str, value, row: dict[str, float], depth: int = 0) -> None:
    """The numbers of one logged value: a number, or a dict of them (``{"val": {"loss": ...}}``)."""
    if _is_number(value):
        row[key] = float(value)
    elif isinstance(value, dict) and "_type" not in value and depth < 4:
        for sub, item in value.items():
            _numbers(f"{key}.{sub}", item, row, depth + 1)


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and (
        not isinstance(value, int) or abs(value) < 2**63
    )


def _item_value(item):
    """A history item's value: typed (newer writers) or as JSON text."""
    try:
        kind = item.WhichOneof("value")
    except ValueError:  # a wandb whose HistoryItem has no typed values
        kind = None
    if kind is None:
        return _json(item.value_json)
    if kind == "json":
        return _json(item.json)
    if kind == "none":
        return None
    return getattr(item, kind)


def _json(text: str):
    try:
        return json.loads(text)  # W&B writes NaN and Infinity bare, as json does
    except (ValueError, RecursionError):
        return None

