"""A JSON document of metric columns (Keras' ``json.dump(history.history)``), or of records
(Chainer's ``LogReport`` file ``log``).

The document is one object whose values are lists, one entry per epoch::

    {"loss": [2.50, 2.36, ...], "val_loss": [2.61, 2.45, ...], "accuracy": [...]}

Entry ``k`` of every list is epoch ``k`` counted from 0, as Keras' ``CSVLogger``
writes its ``epoch`` column (read by :mod:`~tuiloss.core.formats.csv`), so a
history and a CSVLogger log of the same fit give the same steps. A list that is
shorter than the others (a metric added later) still starts at epoch 0. An entry
that is no number is skipped with its reason; a value that is no list (a note,
a setting) is no metric and is left out.

A callback may dump the history again after every epoch: each re-read takes only
the entries past those read before; if an entry read before changed, the history
was rewritten (a new fit), and it is read again from the first entry that differs.

A document that is a list of objects holds one record per report, as a line of a JSON-lines
log does (Chainer's ``LogReport``, and ESPnet1's ``results/log``, rewritten whole at each
report)::

    [{"main/loss": 114.4, "validation/main/loss": 84.1, "epoch": 1, "iteration": 200, ...}, ...]

Its records are read as :mod:`~tuiloss.core.formats.jsonl` reads lines (the step is the
most global counter, ``iteration`` here), those past the ones read before at each re-read.
"""

from __future__ import annotations

import json
import re

from tuiloss.core.formats.base import DocumentParser, find_step_key
from tuiloss.core.formats.jsonl import JsonlParser, as_number, flatten_record
from tuiloss.core.model import Batch

try:
    import orjson

    _loads = orjson.loads
except ImportError:  # pragma: no cover
    _loads = json.loads

#: What :func:`_document` gives for bytes that are no whole JSON document (yet).
_UNFINISHED = object()


def _document(data: bytes) -> object:
    """The JSON document ``data`` holds (bad UTF-8 replaced), or ``_UNFINISHED``."""
    try:
        return _loads(data)
    except ValueError:
        try:
            return json.loads(data.decode("utf-8", "replace"))
        except ValueError:
            return _UNFINISHED


_VALUE = rb"(?:[-+]?(?:\d+(?:\.\d*)?(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?)|NaN|-?Infinity|null)"
_ENTRY = rb'"[^"\n]{1,200}"\s*:\s*\[\s*(?:' + _VALUE + rb"\s*(?:,\s*" + _VALUE + rb"\s*)*)?\]"
#: The start of such a document cut short by the sniffer: whole entries, then one list of numbers cut off.
_CUT_HISTORY = re.compile(
    rb'(?:\xef\xbb\xbf)?\s*\{\s*(?:' + _ENTRY + rb'\s*,\s*)*"[^"\n]{1,200}"\s*:\s*\[[-+\d.eE,\s]*'
)
_KEY = re.compile(rb'"([^"\n]{1,200})"\s*:')


#: The start of a list of records: ``[`` and the first object's opening brace.
_RECORDS_START = re.compile(rb"(?:\xef\xbb\xbf)?\s*\[\s*\{")


def looks_like_records(head: bytes) -> bool:
    """Whether a file's first bytes (all of it, or its start) are a list of records of a training
    log: its first object whole, with numbers, a step counter or a loss among its keys."""
    start = _RECORDS_START.match(head)
    if start is None:
        return False
    try:
        first, _ = json.JSONDecoder().raw_decode(head[start.end() - 1 :].decode("utf-8", "replace"))
    except ValueError:
        return False
    if not isinstance(first, dict):
        return False
    flat = flatten_record(first)
    if sum(as_number(value) is not None for value in flat.values()) < 2:
        return False
    return find_step_key(flat) is not None or any("loss" in str(key).lower() for key in flat)


def looks_like_history(head: bytes) -> bool:
    """Whether a ``.json`` file's first bytes (all of it, or its start) are a document of metric
    lists: an object whose every value is a list (of numbers, a bad entry aside), a ``loss`` among
    its keys (Keras always reports one), so that a file of settings or statistics is no history."""
    try:
        document = json.loads(head.decode("utf-8", "replace"))
    except ValueError:
        if _CUT_HISTORY.fullmatch(head) is None:
            return False
        return any(b"loss" in key.lower() for key in _KEY.findall(head))
    if not isinstance(document, dict) or not document or not any("loss" in str(k).lower() for k in document):
        return False
    if not all(isinstance(values, list) for values in document.values()):
        return False
    return any(as_number(value) is not None for values in document.values() for value in values)


class HistoryParser(DocumentParser):
    """Parser of a JSON document of equal-length metric lists (a Keras history)."""

    format = "history"

    def __init__(self) -> None:
        self._taken: dict[str, list] = {}  # each column's entries already read
        self._records: list = []  # ...or the records read, of a list of them
        self._reader: JsonlParser | None = None

    def parse(self, data: bytes) -> tuple[Batch | None, bool]:
        """The entries not read before, and whether the history was rewritten.

        None when ``data`` is no whole JSON document yet (half-written).
        """
        document = _document(data)
        if document is _UNFINISHED:
            return None, False
        if isinstance(document, list) and any(isinstance(record, dict) for record in document):
            return self._parse_records(document)
        batch = Batch()
        if not isinstance(document, dict):
            batch.skip("not a JSON object of metric lists")
            return batch, False
        columns = {str(name): values for name, values in document.items() if isinstance(values, list)}
        if not columns:
            batch.skip("no list of values in the JSON document")
            return batch, False
        shared = {name: _common(taken, columns.get(name, [])) for name, taken in self._taken.items()}
        rewritten = any(count < len(self._taken[name]) for name, count in shared.items())
        restart = min(shared.values(), default=0)  # where a rewritten history is read again from
        for name, values in columns.items():
            start = restart if rewritten else len(self._taken.get(name, []))
            steps: list[float] = []
            points: list[float] = []
            for epoch in range(start, len(values)):
                value = as_number(values[epoch])
                if value is None:
                    if values[epoch] is not None:
                        batch.skip("non-numeric value", epoch + 1, f"{name}: {values[epoch]!r}"[:200])
                    continue
                steps.append(float(epoch))
                points.append(value)
            if steps:
                batch.add(name, steps, points)
        batch.meta["step_key"] = "epoch"
        self._taken = {name: list(values) for name, values in columns.items()}
        return batch, rewritten


    def _parse_records(self, records: list) -> tuple[Batch, bool]:
        """The records past those read before (all of them again, from the first that changed,
        when the document was rewritten: a new run), numbered from 1 as lines are."""
        same = _common(self._records, records)
        rewritten = same < len(self._records)
        if rewritten or self._reader is None:
            self._reader = JsonlParser()
        start = 0 if rewritten else len(self._records)
        batch = Batch()
        self._reader.read_loaded(enumerate(records[start:], start=start + 1), batch)
        self._records = list(records)
        return batch, rewritten


def _common(old: list, new: list) -> int:
    """How many first entries ``old`` and ``new`` share."""
    count = 0
    for a, b in zip(old, new):
        if a != b and not (a != a and b != b):  # NaN equals NaN here
            break
        count += 1
    return count


#: AllenNLP's file of one epoch's metrics: ``metrics_epoch_3.json``.
EPOCH_DOCUMENT = re.compile(r"^metrics_epoch_(\d+)\.json$")
#: Keys of an epoch's document that count epochs rather than measure: no metrics.
_EPOCH_COUNTERS = frozenset({"epoch", "best_epoch", "training_epochs", "training_start_epoch"})


def read_epoch_document(data: bytes, epoch: int) -> Batch | None:
    """The points of one epoch's JSON document (AllenNLP's ``metrics_epoch_N.json``)::

        {"epoch": 3, "training_loss": 2.09, "validation_loss": 2.18, "best_epoch": 3, ...}

    every number at step ``epoch`` (the N of the file's name, counted from 0 as AllenNLP
    counts them); the counters (``epoch``, ``best_epoch``, ...) and text (durations) are
    no metrics. None when ``data`` is no whole JSON document yet (half-written).
    """
    document = _document(data)
    if document is _UNFINISHED:
        return None
    batch = Batch()
    if not isinstance(document, dict):
        batch.skip("not a JSON object of metrics", epoch + 1)
        return batch
    for name, raw in document.items():
        value = as_number(raw) if not isinstance(raw, str) else None
        if value is None or str(name) in _EPOCH_COUNTERS:
            continue
        batch.add(str(name), [float(epoch)], [value])
    if not batch.series:
        batch.skip("no numeric field", epoch + 1)
    batch.meta["step_key"] = "epoch"
    return batch
