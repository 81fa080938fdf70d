"""Small chunks of plain decimal numbers read without pandas, exactly as pandas reads them.

The CSV numbers-only path and the layout reads hand pandas' C reader rows of
delimited cells. A small chunk (a log of a few thousand lines, a tailed append)
whose every row has the expected number of fields, each number in a plain
decimal form (``-1.5``, ``.5``, ``3e-05``, ``+2E+3``), holds nothing the reader
could read another way, and pandas 3.1 parses such a number correctly rounded,
as ``float()`` does (``pyproject.toml`` requires 3.1; the layout reads ask
older ones for that rounding): :func:`plain_table` reads it with ``float()`` and
spares the start-up the import of pandas (a third of a second). Anything else
(``nan``, ``inf``, spaces, quotes, a short or long row, a big chunk) gives None,
and the caller asks pandas as before.
"""

from __future__ import annotations

import re
import sys
from functools import lru_cache

import numpy as np

#: Chunks up to this size may be read here; bigger ones are faster through pandas.
PLAIN_MAX_BYTES = 256 * 1024
#: Bytes read here before pandas is loaded after all: about 20 ms of ``float()``, while the
#: import costs ten times that; from then on its reader is the faster one.
PLAIN_BUDGET = 1 << 20
#: Whether small chunks are read here: None (the default) while that spares the import
#: (pandas not loaded, less than :data:`PLAIN_BUDGET` read here); True or False: always or
#: never, which the tests set to check that both give the same.
PLAIN: bool | None = None
_spent = 0
#: A number both readers read the same: digits with an optional point, sign and exponent,
#: matched one way only (no backtracking to try another split of its digits).
_NUMBER = rb"[-+]?(?:\d++(?:\.\d*+)?|\.\d++)(?:[eE][-+]?\d++)?"
#: Delimiters read here: none can be part of a number, a space or a line end.
_DELIMITERS = (",", "\t", ";", "|")
_NAN = float("nan")


@lru_cache(maxsize=32)
def _rows(fields: int, delimiter: bytes, used: tuple[int, ...], gaps: bool) -> re.Pattern[bytes]:
    """Whole lines of ``fields`` cells: a number in each ``used`` one (or nothing, with
    ``gaps``), anything but a delimiter in the others."""
    number = b"(?:%s)%s" % (_NUMBER, b"?" if gaps else b"")
    other = b"[^%s\\n]*" % re.escape(delimiter)
    cells = [number if k in used else other for k in range(fields)]
    return re.compile(b"(?>%s\\n)+" % re.escape(delimiter).join(cells))  # a line matched stays matched


def plain_table(body: bytes, fields: int, delimiter: str, used: tuple[int, ...] | None = None,
                gaps: bool = False) -> np.ndarray | None:
    """The ``used`` cells (default: all) of ``body``'s lines as float64, one row per used
    cell and one column per line; an empty cell, allowed with ``gaps``, is NaN.

    None unless this path is wanted (:data:`PLAIN`) and ``body`` is at most
    :data:`PLAIN_MAX_BYTES` of whole lines, each of exactly ``fields`` cells split by
    ``delimiter`` (one of :data:`_DELIMITERS`), each used cell a plain decimal number:
    then pandas' C reader (``dtype=float64``, ``na_values=[""]``) reads the same values,
    bit for bit.
    """
    global _spent
    if not wanted(len(body)) or delimiter not in _DELIMITERS or not body.endswith(b"\n"):
        return None
    sep = delimiter.encode()
    used = tuple(range(fields)) if used is None else used
    if _rows(fields, sep, used, gaps).fullmatch(body) is None:
        return None
    _spent += len(body)
    cells = body[:-1].replace(b"\n", sep).split(sep)
    return np.array([_floats(cells[k::fields]) for k in used], dtype=np.float64)


def wanted(size: int) -> bool:
    """Whether a chunk of ``size`` bytes may be read here (see :data:`PLAIN`)."""
    if size > PLAIN_MAX_BYTES or PLAIN is False:
        return False
    return PLAIN or (_spent + size <= PLAIN_BUDGET and not pandas_loaded())


def pandas_loaded() -> bool:
    return "pandas" in sys.modules


def _floats(cells: list[bytes]) -> list[float]:
    try:
        return list(map(float, cells))
    except ValueError:  # an empty cell: a gap
        return [float(cell) if cell else _NAN for cell in cells]
