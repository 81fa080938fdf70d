"""What every format parser shares: the parser protocol and naming helpers."""

from __future__ import annotations

import math
import re
from typing import Protocol

from tuiloss.core.model import Batch

#: Column or key names that hold the step, in order of preference.
STEP_KEYS = (
    "step",
    "global_step",
    "trainer/global_step",
    "current_steps",
    "_step",
    "iter",
    "iteration",
    "it",
    "epoch",
)


class LineParser(Protocol):
    """Parses complete lines of an append-only log, keeping state across calls."""

    format: str

    def feed(self, data: bytes, first_line: int) -> Batch:
        """Parse ``data``: whole lines, each ending in a newline.

        ``first_line`` is the 1-based line number of the first line in ``data``.
        """

    def restart(self) -> None:
        """The file started over (truncated, replaced): forget per-file state."""

    # A parser may also offer ``feed_range(data, start, end, first_line)``, parsing the whole
    # lines ``data[start:end]`` in place: the source then hands over its read buffer instead
    # of a copy of those lines (CsvParser does; a big read is then not copied again).
    # And ``rest()``, called when the source has read the file to its end: a parser that
    # keeps buffers between big reads frees them there (CsvParser's pandas readers).


class DocumentParser(Protocol):
    """Parses a file that is rewritten whole (HF trainer_state.json)."""

    format: str

    def parse(self, data: bytes) -> tuple[Batch, bool]:
        """Return the new points, and whether history was rewritten (a reset)."""


def find_step_key(names) -> str | None:
    """The first name in ``names`` that is a step key, by preference order."""
    lowered = {str(name).strip().lower(): name for name in names}
    for key in STEP_KEYS:
        if key in lowered:
            return lowered[key]
    return None


def to_float(value) -> float | None:
    """A JSON/text value as a float, or None when it is not a number."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        text = value.strip()
        try:
            return float(text)
        except ValueError:
            return None
    return None


_NUMBER = re.compile(r"[-+]?(?:\d[\d,]*\.?\d*(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?|nan|inf(?:inity)?)", re.I)


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


def finite_step(step: float | None) -> bool:
    return step is not None and math.isfinite(step)
