"""What every format parser shares: the parser protocol and naming helpers."""

from __future__ import annotations

import re
from typing import Callable, Protocol

from tuiloss.core.model import Batch

#: Column or key names that hold the step, most preferred first: global counters
#: (optimizer updates, environment steps, iterations) before local ones, and the
#: epoch only when nothing finer is written.
STEP_KEYS = (
    "global_step",
    "trainer/global_step",
    "train/global_step",
    "num_updates",
    "total_timesteps",
    "time/total_timesteps",
    "total_env_interacts",  # Spinning Up's progress.txt: the environment steps so far
    "iteration",
    "training_iteration",  # Ray Tune's progress.csv and result.json, counted from 1
    "step",
    "_step",
    "current_steps",
    "consumed_samples",
    "iter",
    "it",
    "micro_step",
    "epoch",
)
_STEP_RANK = {key: rank for rank, key in enumerate(STEP_KEYS)}

_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_SEPARATORS = re.compile(r"[\s\-]+")
#: A token of a log prefix, not a metric: ``[logging.py:96:log_dist]``, ``train.py:224]``.
_SOURCE_FILE = re.compile(r"\.(?:py|pyx|cc|cpp|c|h|cu|rs|go|java|js|ts|lua|sh)$", re.I)


def step_key_name(name: str) -> str:
    """``name`` spelled as in :data:`STEP_KEYS`: ``Global Step``, ``globalStep``, ``global-step`` -> ``global_step``."""
    text = _CAMEL.sub("_", str(name).strip())
    return _SEPARATORS.sub("_", text).lower()


def step_rank(name: str) -> int | None:
    """How much ``name`` is preferred as the step (0 best), None when it is not a step key."""
    return _STEP_RANK.get(step_key_name(name))


def is_metric_name(name: str) -> bool:
    """Whether a key read from a line can name a metric: not a source file of a log prefix."""
    name = name.strip()
    return bool(name) and not _SOURCE_FILE.search(name)


#: The names of pycocotools' twelve summary values (``COCOeval.stats``), in its order: the AP over
#: IoU 0.50:0.95, at 0.50 and 0.75, by object area, then the recall at 1, 10 and 100 detections
#: and by area.
COCO_STATS = ("AP", "AP50", "AP75", "AP_small", "AP_medium", "AP_large",
              "AR1", "AR10", "AR100", "AR_small", "AR_medium", "AR_large")


#: A counter's progress written as a string: ms-swift's ``'global_step/max_steps': '5/60'``.
_PROGRESS = re.compile(r"^\s*(\d+)\s*/\s*(\d+)\s*$")


def counter_progress(key: str, value: str, is_counter: Callable[[str], bool]) -> tuple[str, float, float] | None:
    """``(counter, n, total)`` of a value ``"n/total"`` under a key naming a counter
    (``global_step/max_steps``: ``global_step``; ``step``), the counter the part of the key
    ``is_counter`` accepts; None for any other value or key (``"shards": "3/8"``)."""
    match = _PROGRESS.match(value)
    if match is None:
        return None
    counter = next((part.strip() for part in key.split("/") if is_counter(part.strip())), None)
    if counter is None:
        return None
    return counter, float(match[1]), float(match[2])


class PatternTooSlow(Exception):
    """A user pattern took longer than its deadline over one block of lines."""


class LineParser(Protocol):
    """Parses complete lines of an append-only log, keeping state across calls.

    :meth:`feed_range` and :meth:`rest` are hooks with defaults: a parser class
    that subclasses this protocol inherits them and overrides them only when it
    has a use for them (CsvParser does both).
    """

    format: str

    def feed(self, data: bytes, first_line: int) -> Batch:
        """Parse ``data``: whole lines, each ending in a newline.

        ``first_line`` is the 1-based line number of the first line in ``data``.
        """
        ...

    def restart(self) -> None:
        """The file started over (truncated, replaced): forget per-file state."""
        ...

    def feed_range(self, data: bytes, start: int, end: int, first_line: int) -> Batch:
        """Parse the whole lines ``data[start:end]``, as :meth:`feed` would.

        The source hands over its read buffer instead of a copy of those lines,
        so a parser that can read in place saves copying a big read again. The
        default copies the lines out and feeds them.
        """
        return self.feed(data[start:end], first_line)

    def rest(self) -> None:
        """The source has read the file to its end.

        A parser that keeps buffers between big reads frees them here (CsvParser's
        pandas readers); the default keeps nothing.
        """
        return None


class DocumentParser(Protocol):
    """Parses a file that is rewritten whole (HF trainer_state.json)."""

    format: str

    def parse(self, data: bytes) -> tuple[Batch | None, bool]:
        """Return the new points, and whether history was rewritten (a reset).

        The batch is None when ``data`` is not a whole document yet (half-written).
        """
        ...


def find_step_key(names, prefer: str | None = None) -> str | None:
    """The name in ``names`` that is the most preferred step key (see :data:`STEP_KEYS`).

    ``prefer`` (the user's ``--step``) wins when it is one of ``names``.
    """
    best, best_rank = None, len(STEP_KEYS)
    for name in names:
        if prefer is not None and str(name).strip() == prefer:
            return name
        rank = step_rank(name)
        if rank is not None and rank < best_rank:
            best, best_rank = name, rank
    return best


#: A scalar printed as its object rather than its number: ``tensor(0.6931, device='cuda:0',
#: grad_fn=<NllLossBackward0>)`` (PyTorch), ``np.float64(0.25)`` (numpy 2's repr, in a printed
#: dict). Only one number inside, a few keyword arguments after it; a tensor of several
#: values is no scalar and stays as it is.
_WRAPPED = (
    rb"(?<![\w.])(?:tensor|np\.float(?:16|32|64)|numpy\.float(?:16|32|64))\(\s*"
    rb"([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|[-+]?nan|[-+]?inf)"
    rb"\s*(?:,\s*\w+\s*=\s*(?:'[^'\n]*'|\"[^\"\n]*\"|<[^<>\n]*>|[\w.:]+)\s*)*\)"
)
_WRAPPED_BYTES = re.compile(_WRAPPED)
_WRAPPED_TEXT = re.compile(_WRAPPED.decode())


#: A terminal's control sequences (colours, cursor moves, window titles), which a log written
#: by a program that thought it wrote to a terminal holds (colourised logging, progress bars).
_CONTROL = re.compile(rb"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b\n]*(?:\x07|\x1b\\)|[@-Z\\-_])")


def strip_controls(data: bytes) -> bytes:
    """``data`` without terminal control sequences (``\x1b[32m`` ...); lines are kept."""
    return _CONTROL.sub(b"", data) if b"\x1b" in data else data


def may_wrap_scalars(data: bytes) -> bool:
    """Whether ``data`` may hold a scalar printed as its object (see :func:`unwrap_scalars`)."""
    return b"tensor(" in data or b"np.float" in data or b"numpy.float" in data


def unwrap_scalars(data: bytes) -> bytes:
    """``data`` with each scalar printed as its object (``tensor(0.69, device='cuda:0')``) written
    as its number (``0.69``); lines are neither added nor removed."""
    return _WRAPPED_BYTES.sub(rb"\1", data)


def unwrap_scalar_text(text: str) -> str:
    """:func:`unwrap_scalars` of a decoded text, such as one CSV cell."""
    return _WRAPPED_TEXT.sub(r"\1", text)


def parse_number(text: str) -> float | None:
    """Parse a number as loggers print it: ``2.3E+00``, ``4,194,304``, ``nan``, ``inf``."""
    text = text.strip().rstrip("%")
    if not text:
        return None
    try:
        return float(text)
    except ValueError:
        pass
    if "," in text:
        try:
            return float(text.replace(",", ""))
        except ValueError:
            return None
    return None

