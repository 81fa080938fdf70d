"""JSON lines: one object per line (detectron2 metrics.json, mmengine scalars.json, generic).

Numeric fields become metrics; nested objects flatten to ``a/b``. Python's json
module writes ``NaN`` and ``Infinity``, which strict parsers reject: such lines
are read with the standard library so those values are kept.

A logger writes its records with one format, so the lines of a big chunk mostly
share one layout (same keys, same spacing, numbers in the same places): a
:class:`~tuiloss.core.formats.layout.LineLayout` learnt from such a line reads them
all at once, and the other lines go through the record path below, in order. A
number that strict JSON forbids (``01``, ``1.``, ``+1``) in a line that otherwise
has the layout is read as that number rather than skipped.
"""

from __future__ import annotations

import json
import math

import re

from tuiloss.core.formats.base import COCO_STATS, STEP_KEYS, LineParser, counter_progress, step_rank
from tuiloss.core.formats.counters import INNER_COUNTERS, MAX_EPOCHS, WITHIN_EPOCH, EpochCounter, WithinEpoch, note_repeats
from tuiloss.core.formats.layout import LayoutReader, Pending
from tuiloss.core.model import Batch

try:
    import orjson

    _loads = orjson.loads
    _FastError = orjson.JSONDecodeError
except ImportError:  # pragma: no cover - orjson is a dependency
    _loads = json.loads
    _FastError = ValueError

_STEP_KEYS = frozenset(STEP_KEYS)
# mmengine writes validation lines whose "step" is the epoch: keep them apart.
_MODE_KEYS = ("mode", "split", "phase")
#: Step keys that count within an epoch when the record also holds ``epoch`` (mmdetection's ``iter``).
_PLANNED_KEYS = ("max_steps", "total_steps", "max_iters", "max_update")
_INNER_KEYS = frozenset(INNER_COUNTERS)
#: Keys whose numbers are no metrics: the model's size (DETR's and DeiT's ``log.txt``).
_NOT_METRICS = frozenset({"n_parameters"})
#: DETR's COCO evaluation as a list of pycocotools' twelve values (``"test_coco_eval_bbox": [...]``).
_COCO_LISTS = ("coco_eval_bbox", "coco_eval_masks")


_SETTLE_LINES = 256  # lines read one by one to find the step key before a layout read


class JsonlParser(LineParser):
    """Incremental parser of JSON-lines logs."""

    format = "jsonl"

    def __init__(self) -> None:
        self.rows = 0
        self.step_key: str | None = None
        self.counter: EpochCounter | None = None
        self.within = WithinEpoch()  # a step that may start again at every epoch logged beside it
        self.meta: dict = {}  # what Batch.meta says: the step key, the planned total
        self._pending: Pending = {}
        self.layouts = LayoutReader(self._parse_line, self._parse_odd, self._take_pending, self._fitted)

    def rest(self) -> None:
        self.layouts.rest()

    def restart(self) -> None:
        self.rows = 0
        self.step_key = None
        self.counter = None
        self.within = WithinEpoch()
        self.meta = {}
        self.layouts.reset()

    def feed(self, data: bytes, first_line: int) -> Batch:
        batch = Batch()
        self._pending = {}
        if self.layouts.wants(data):
            start, line = self._settle(data, first_line, batch)
            if self.step_key is None:
                self.layouts.miss()  # records numbered by row: read one by one
            elif self.layouts.feed(data[start:], line, batch) is not None:
                batch.meta.update(self.meta)
                self._note_held(batch)
                note_repeats(batch)
                return batch
            data, first_line = data[start:], line
        self._read_records(data, first_line, batch)
        for name, (steps, values) in self._take_pending().items():
            batch.add(name, steps, values)
        batch.meta.update(self.meta)
        self._note_held(batch)
        note_repeats(batch)
        return batch

    def _note_held(self, batch: Batch) -> None:
        """Say how many records wait for the epoch's length (see :mod:`~tuiloss.core.formats.counters`).

        With the planned epochs (mmdetection's config) and the epoch's length, the
        planned total of iterations is known too.
        """
        if self.counter is not None and self.counter.held:
            batch.meta["held"] = len(self.counter.held)
        if "planned_epochs" in self.meta and self.counter is not None and self.counter.size:
            self.meta["planned_steps"] = batch.meta["planned_steps"] = self.meta["planned_epochs"] * self.counter.size

    def _settle(self, data: bytes, first_line: int, batch: Batch) -> tuple[int, int]:
        """Read lines one by one until the step key is known (it shapes every record)."""
        start = 0
        for _ in range(_SETTLE_LINES):
            if self.step_key is not None:
                break
            end = data.find(b"\n", start) + 1
            if not end:
                break
            self._read_records(data[start:end], first_line, batch)
            start, first_line = end, first_line + 1
        return start, first_line

    def _read_records(self, data: bytes, first_line: int, batch: Batch) -> None:
        records = _load_all(data)
        if records is None:
            records = _load_each(data, first_line, batch)
        else:
            records = enumerate(records, start=first_line)
        self._add_each(records, batch)

    def _add_each(self, records, batch: Batch) -> None:
        for line_no, record in records:
            if not isinstance(record, dict):
                batch.skip("not a JSON object", line_no, str(record)[:80])
                continue
            self._add_record(record, line_no, self._pending, batch)

    def read_loaded(self, records, batch: Batch) -> None:
        """Records already loaded (a JSON document's list of them), as ``(number, record)``
        pairs, read into ``batch`` as lines of a JSON-lines log are."""
        self._pending = {}
        self._add_each(records, batch)
        for name, (steps, values) in self._take_pending().items():
            batch.add(name, steps, values)
        batch.meta.update(self.meta)
        self._note_held(batch)
        note_repeats(batch)

    def _add_record(self, record: dict, line_no: int, columns: dict, batch: Batch) -> None:
        config = record.get("config")
        if isinstance(config, str) and "planned_epochs" not in self.meta:
            planned = MAX_EPOCHS.search(config)  # mmdetection's first line holds its config
            if planned is not None:
                self.meta["planned_epochs"] = float(planned[1])
        flat = flatten_record(record)
        progress = _progress_of(flat)
        step = None
        key = self.step_key if self.step_key in flat else _first_step_key(flat)
        if key is not None:
            if self.step_key is None:
                self.step_key = self.meta["step_key"] = key
                for name in _PLANNED_KEYS:
                    planned = as_number(flat.get(name))
                    if planned is not None and planned > 0:
                        self.meta["planned_steps"] = planned
                        break
            if progress is not None and progress[0] == key and progress[1] > 0:
                self.meta["planned_steps"] = progress[1]
            step = as_number(flat.get(key))
            if step is None or not math.isfinite(step):
                batch.skip("missing step", line_no)
                return
        elif self.step_key is not None:
            # the file counts steps: a row number here would mix two scales
            batch.skip("missing step", line_no)
            return
        else:
            step = float(self.rows)
        self.rows += 1
        prefix = _mode_prefix(record)
        epoch = as_number(flat.get("epoch")) if key in _INNER_KEYS else None
        if epoch is None and key in WITHIN_EPOCH and self.within.restarts is not False and "epoch" in flat:
            step = self._within_epoch(step, as_number(flat["epoch"]))
        values = []
        for name, raw in flat.items():
            if name == key or name in _MODE_KEYS or (epoch is not None and name == "epoch") or name in _NOT_METRICS:
                continue
            value = as_number(raw)
            if value is not None:
                values.append((prefix + name, value))
            elif isinstance(raw, list):
                values += _coco_stats(prefix + name, raw)
        if not values:
            batch.skip("no numeric field", line_no)
            return
        if epoch is None or not math.isfinite(epoch):
            placed = [(step, values)]
        else:
            # the inner counter restarts every epoch: place the record on the global count
            if self.counter is None:
                self.counter = EpochCounter()
            placed = self.counter.add(epoch, None if prefix else step, values)
        for at, items in placed:
            for name, value in items:
                target = columns.get(name)
                if target is None:
                    target = columns[name] = ([], [])
                target[0].append(at)
                target[1].append(value)

    def _within_epoch(self, step: float, epoch: float | None) -> float:
        """The global step of a record whose step may start again at every (whole) epoch."""
        if epoch is None or epoch != int(epoch):
            self.within.restarts = False  # an epoch counted in fractions is read off a global step
            return step
        return self.within.one(step, epoch)

    # -- what the layout reader needs ------------------------------------------------

    def _parse_line(self, line: bytes) -> tuple[float, dict[str, float]] | None:
        """How :meth:`_add_record` reads ``line``, now that the step key is known."""
        try:
            record = _loads(line)
        except (_FastError, ValueError):
            return None
        if not isinstance(record, dict):
            return None
        flat = flatten_record(record)
        key = self.step_key if self.step_key in flat else _first_step_key(flat)
        step = as_number(flat.get(key)) if key is not None else None
        if step is None or not math.isfinite(step):
            return None
        if key in _INNER_KEYS and "epoch" in flat:
            return None  # a step made of two counters: read record by record
        if key in WITHIN_EPOCH and "epoch" in flat and self.within.restarts is not False:
            return None  # until the first epoch shows whether the step starts again in each
        prefix = _mode_prefix(record)
        values = {}
        for name, raw in flat.items():
            if name == key or name in _MODE_KEYS or name in _NOT_METRICS:
                continue
            value = as_number(raw)
            if value is not None:
                values[prefix + name] = value
            elif isinstance(raw, list) and _coco_stats(name, raw):
                return None  # a COCO evaluation's list: read record by record (its -1 values give no point)
        return step, values

    def _parse_odd(self, data: bytes, first_line: int, batch: Batch) -> None:
        self._read_records(data, first_line, batch)

    def _take_pending(self) -> Pending:
        pending, self._pending = self._pending, {}
        return pending

    def _fitted(self, steps) -> None:
        self.rows += len(steps)


def _load_all(data: bytes):
    """Parse every line in one call when the whole chunk is clean (the common case).

    A line holding two objects (``{...},{...}``) would pass as two records: the
    result counts only when there is one record per line, so a chunk reads the
    same whichever lines share it.
    """
    body = data.strip()
    if not body:
        return []
    try:
        records = _loads(b"[" + body.replace(b"\n", b",") + b"]")
    except (_FastError, ValueError, TypeError):
        return None
    return records if len(records) == body.count(b"\n") + 1 else None


def _load_each(data: bytes, first_line: int, batch: Batch):
    for line_no, line in enumerate(data.split(b"\n"), start=first_line):
        line = line.strip()
        if not line:
            continue
        try:
            yield line_no, _loads(line)
            continue
        except (_FastError, ValueError):
            pass
        try:
            yield line_no, json.loads(line.decode("utf-8", "replace"))
        except (ValueError, RecursionError):
            batch.skip("invalid JSON", line_no, line[:120].decode("utf-8", "replace"))


def flatten_record(record: dict, prefix: str = "", out: dict | None = None, depth: int = 0) -> dict:
    """``record`` with nested objects flattened to ``a/b`` keys (eight levels deep at most)."""
    out = {} if out is None else out
    for key, value in record.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict) and depth < 8:
            flatten_record(value, name + "/", out, depth + 1)
        else:
            out[name] = value
    return out


def _progress_of(flat: dict) -> tuple[str, float] | None:
    """A counter written with its total as a string (ms-swift's ``"global_step/max_steps": "5/60"``):
    the counter is put in ``flat`` (``global_step``: 5) in its place; it and its total are returned."""
    for name, value in list(flat.items()):
        if isinstance(value, str) and "/" in value:
            progress = counter_progress(name, value, lambda part: step_rank(part) is not None)
            if progress is not None:
                counter, n, total = progress
                del flat[name]
                flat.setdefault(counter, n)
                return counter, total
    return None


def _coco_stats(name: str, raw: list) -> list[tuple[str, float]]:
    """DETR's COCO evaluation list (``test_coco_eval_bbox``: pycocotools' twelve values) as
    ``test_bbox/AP``, ``test_bbox/AP50``, ... (see :data:`COCO_STATS`); a -1 (no object of that
    area) gives no point. Empty for any other list."""
    if len(raw) != len(COCO_STATS) or not name.endswith(_COCO_LISTS):
        return []
    head, _, kind = name.rpartition("coco_eval_")
    head = head or "eval_"
    values = [as_number(value) for value in raw]
    return [(f"{head}{kind}/{stat}", value) for stat, value in zip(COCO_STATS, values) if value is not None and value >= 0]


def _first_step_key(flat: dict) -> str | None:
    for key in STEP_KEYS:
        if key in flat:
            if key == "epoch":  # ``{"epoch": 2, "batch": 100, ...}``: the batch within the epoch is finer
                return next((inner for inner in INNER_COUNTERS if inner in flat), key)
            return key
    return None


def as_number(value) -> float | None:
    """A JSON value as a float: a number, or a number, ``"nan"`` or ``"inf"`` spelled as a string; else None (booleans too)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        text = value.strip()
        if text.lower() in ("nan", "inf", "-inf", "infinity", "-infinity") or _PLAIN_NUMBER.match(text):
            return float(text)
    return None


# fairseq and others print numbers as strings ("loss": "9.276"); dates, clocks and ids are not numbers
_PLAIN_NUMBER = re.compile(r"^[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?$")


def _mode_prefix(record: dict) -> str:
    for key in _MODE_KEYS:
        mode = record.get(key)
        if isinstance(mode, str) and mode.lower() in ("val", "valid", "validation", "eval", "test"):
            return "val/"
    return ""
