"""The one growable array type: the store's series and the analysis' per-point state use it."""

from __future__ import annotations

import math

import numpy as np

_GROWTH = 1.5
_MIN_CAPACITY = 64
#: Values read at a time by the searches below. numpy's argmin and argmax copy a read-only
#: array whole (the stored series and their views are read-only), so they get pieces.
_PIECE = 1 << 16


class GrowableArray:
    """A 1-D numpy array with amortised O(1) append of single values or arrays."""

    __slots__ = ("_data", "_size")

    def __init__(self, capacity: int = _MIN_CAPACITY, dtype: type = np.float64) -> None:
        self._data = np.empty(max(capacity, 1), dtype=dtype)
        self._size = 0

    def __len__(self) -> int:
        return self._size

    def copy(self) -> GrowableArray:
        """A copy of the stored values, with the same room to grow."""
        twin = GrowableArray(len(self._data), self._data.dtype)
        twin.extend(self._data[: self._size])
        return twin

    def reserve(self, capacity: int) -> None:
        """Make room for ``capacity`` values in all (pages not yet written cost no memory)."""
        if capacity > len(self._data):
            grown = np.empty(capacity, dtype=self._data.dtype)
            grown[: self._size] = self._data[: self._size]
            self._data = grown

    def extend(self, values: np.ndarray) -> None:
        needed = self._size + len(values)
        if needed > len(self._data):
            # Grow from what is needed, not from the old size: a big batch then
            # leaves room for the next one instead of forcing a copy at once.
            self.reserve(int(max(needed, len(self._data)) * _GROWTH) + 1)
        self._data[self._size : needed] = values
        self._size = needed

    def truncate(self, size: int) -> None:
        """Forget the values from ``size`` on (they are written over by the next extend)."""
        self._size = min(self._size, max(0, size))

    @property
    def view(self) -> np.ndarray:
        """The filled part, as a read-only view (no copy)."""
        out = self._data[: self._size]
        out.flags.writeable = False
        return out

    @property
    def capacity(self) -> int:
        """Values it holds room for."""
        return len(self._data)

    @property
    def nbytes(self) -> int:
        return self._data.nbytes


def first_min(values: np.ndarray) -> int | None:
    """Index of the first smallest finite value (None if there is none), read in pieces."""
    best, at = math.inf, None
    for lo in range(0, len(values), _PIECE):
        piece = values[lo : lo + _PIECE]
        finite = np.isfinite(piece)
        if finite.all():
            j = int(np.argmin(piece))
        elif finite.any():
            j = int(np.argmin(np.where(finite, piece, np.inf)))
        else:
            continue
        if at is None or piece[j] < best:
            best, at = float(piece[j]), lo + j
    return at


def row_argmax(rows: np.ndarray) -> np.ndarray:
    """``rows.argmax(axis=1)``, a few rows at a time (see ``_PIECE``)."""
    step = max(1, _PIECE // max(1, rows.shape[1]))
    if len(rows) <= step:
        return rows.argmax(axis=1)
    return np.concatenate([rows[a : a + step].argmax(axis=1) for a in range(0, len(rows), step)])
