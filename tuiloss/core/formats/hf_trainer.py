"""Hugging Face Trainer ``trainer_state.json``: rewritten whole at every checkpoint.

Each re-read takes only the ``log_history`` entries not seen before. If the new
history does not start with the entries already taken (training restarted from an
earlier checkpoint), the differing tail is read again as a new segment.
"""

from __future__ import annotations

import json
import math
import os
import re
from typing import TYPE_CHECKING

from tuiloss.core.formats.base import DocumentParser
from tuiloss.core.formats.jsonl import flatten_record, as_number
from tuiloss.core.model import Batch

if TYPE_CHECKING:  # the endings' rules are compiled by text logs' readers, which need them
    from tuiloss.core.formats.endings import Ending

try:
    import orjson

    _loads = orjson.loads
except ImportError:  # pragma: no cover
    _loads = json.loads

_SKIP_KEYS = {"step", "epoch_end"}


class TrainerStateParser(DocumentParser):
    format = "hf_trainer"

    def __init__(self) -> None:
        self._taken: list[tuple] = []  # fingerprints of log_history entries already read

    def parse(self, data: bytes) -> tuple[Batch | None, bool]:
        try:
            state = _loads(data)
        except ValueError:
            try:
                state = json.loads(data.decode("utf-8", "replace"))
            except ValueError:
                return None, False  # half-written; the next change completes it
        batch = Batch()
        history = state.get("log_history") if isinstance(state, dict) else None
        if not isinstance(history, list):
            batch.skip("no log_history in trainer_state.json")
            return batch, False
        prints = [_fingerprint(entry) for entry in history]
        common = 0
        for old, new in zip(self._taken, prints):
            if old != new:
                break
            common += 1
        rewritten = common < len(self._taken)
        columns: dict[str, tuple[list[float], list[float]]] = {}
        for index in range(common, len(history)):
            entry = history[index]
            if not isinstance(entry, dict):
                batch.skip("log_history entry is not an object", index + 1)
                continue
            step = as_number(entry.get("step"))
            if step is None or not math.isfinite(step):
                batch.skip("missing step", index + 1)
                continue
            found = False
            for name, raw in flatten_record(entry).items():
                if name in _SKIP_KEYS:
                    continue
                value = as_number(raw)
                if value is None:
                    continue
                target = columns.setdefault(name, ([], []))
                target[0].append(step)
                target[1].append(value)
                found = True
            if not found:
                batch.skip("no numeric field", index + 1)
        for name, (steps, values) in columns.items():
            batch.add(name, steps, values)
        planned = as_number(state.get("max_steps"))
        if planned is not None and planned > 0:
            batch.meta["planned_steps"] = planned  # the Trainer's planned total, for finished vs stopped
        batch.meta["step_key"] = "step"
        batch.meta["end"] = _ending(history)  # the whole history says it, each time it is written
        self._taken = prints
        return batch, rewritten


#: A key of the summary the Trainer logs when ``train()`` returns: runtime, throughput, mean loss.
_SUMMARY_KEY = "train_runtime"


def _ending(history: list) -> Ending | None:
    """Finished, when the history holds the Trainer's final summary and no training log after it
    (evaluations may follow it: ``trainer.evaluate()`` once the training is done); else None."""
    for entry in reversed(history):
        if not isinstance(entry, dict):
            continue
        if _SUMMARY_KEY in entry:
            from tuiloss.core.formats.endings import Ending

            line = json.dumps({k: v for k, v in entry.items() if isinstance(v, (int, float, str))})
            return Ending("finished", "the trainer's final summary", line[:200])
        if "loss" in entry:
            return None  # training logs after the last summary: a resumed run, still going
    return None


def _fingerprint(entry) -> tuple:
    if isinstance(entry, dict):
        return tuple(sorted((str(k), _canonical(v)) for k, v in entry.items()))
    return (_canonical(entry),)


def _canonical(value) -> str:
    """The same text whichever JSON decoder read the value: orjson gives integers past
    64 bits as floats, the standard library (used when NaN or Infinity appear) as ints."""
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 2**63:
        return repr(float(value))
    return repr(value)


_CHECKPOINT = re.compile(r"^checkpoint-(\d+)$")


def checkpoint_states(folder: str) -> list[tuple[int, str]]:
    """``(step, path)`` of each ``checkpoint-N/trainer_state.json`` under an output folder."""
    found = []
    try:
        with os.scandir(folder) as entries:
            for entry in entries:
                match = _CHECKPOINT.match(entry.name)
                if match and entry.is_dir():
                    path = os.path.join(entry.path, "trainer_state.json")
                    if os.path.isfile(path):
                        found.append((int(match[1]), path))
    except OSError:
        return []
    return sorted(found)


def is_trainer_output_dir(folder: str) -> bool:
    """A Trainer ``output_dir``: checkpoint folders holding ``trainer_state.json``."""
    return bool(checkpoint_states(folder))
