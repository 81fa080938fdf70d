"""What every format parser shares: the parser protocol and naming helpers."""

from __future__ import annotations

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


def find_step_key(names) -> str | None:
    """The first name in ``names`` that is a step key, by preference order."""
    lowered = {str(name).strip().lower(): name for name in names}
    for key in STEP_KEYS:
        if key in lowered:
            return lowered[key]
    return None


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

