"""The one growable array type: the store's series and the analysis' per-point state use it."""

from __future__ import annotations

import concurrent.futures
import functools
import math
import sys

import numpy as np

_GROWTH = 1.5
_MIN_CAPACITY = 64
#: Size from which an array that grows makes room :data:`AHEAD` times ahead, in address space
#: reserved for it (see :meth:`GrowableArray.reserve_ahead`): a copy made to grow holds the old
#: array and the new one at once (and whoever still reads the old one, a snapshot being
#: analysed, keeps it), so an array of tens of millions of values is better not copied again.
AHEAD_BYTES = 8 * 1024 * 1024
AHEAD = 8
_NORESERVE = 0x4000 if sys.platform.startswith("linux") else 0  # MAP_NORESERVE (not in Python's mmap)
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
        """Make room for ``capacity`` values in all (pages not yet written cost no memory).

        Room of :data:`AHEAD_BYTES` or more is an anonymous mapping (see :meth:`reserve_ahead`)
        rather than numpy's own memory: numpy advises transparent huge pages for arrays of 4 MiB
        and more, and where the kernel honours that only when advised (THP ``madvise``), the first
        writes to the arrays of a long log cost twice the kernel time (a 10M-line CSV report:
        0.7-1.3 s of system time against 0.4-0.6 s).
        """
        if capacity > len(self._data):
            if capacity * self._data.itemsize >= AHEAD_BYTES and self.reserve_ahead(capacity):
                return
            grown = np.empty(capacity, dtype=self._data.dtype)
            grown[: self._size] = self._data[: self._size]
            self._data = grown

    def reserve_ahead(self, capacity: int) -> bool:
        """Move into an anonymous mapping of ``capacity`` values; False where none can be made.

        Pages of a mapping take memory only once written, so the room ahead costs address
        space only (the kernel is told not to count it as committed, where it can be). The
        mapping is freed with the last array that views it.
        """
        import mmap

        dtype = self._data.dtype
        try:
            room = mmap.mmap(-1, capacity * dtype.itemsize, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | _NORESERVE)
        except (OSError, ValueError, TypeError, AttributeError, OverflowError):
            return False  # no such mapping here (another platform, a strict overcommit policy)
        grown = np.frombuffer(room, dtype=dtype, count=capacity)
        grown[: self._size] = self._data[: self._size]
        self._data = grown
        return True

    def page_in(self, count: int) -> None:
        """Have the pages of the next ``count`` values written in on another thread, where the
        array lives in a mapping (see :meth:`reserve_ahead`) and the system can (Linux 5.14+).

        A long log's load writes each batch into pages never touched before: the kernel
        zeroes each on its first write, a fault per 4 KiB (a fifth of a second of a 10M-line
        report). Asked ahead for the next batch, that work is done beside the thread storing this one.
        """
        start = self._size * self._data.itemsize
        end = min(self._size + count, len(self._data)) * self._data.itemsize
        if count > 0 and end - start >= _PAGE_IN_MIN and isinstance(getattr(self._data.base, "obj", None), _mmap_type()):
            _page_in(self._data, start, end)

    def extend(self, values: np.ndarray) -> None:
        needed = self._size + len(values)
        if needed > len(self._data):
            # Grow from what is needed, not from the old size: a big batch then
            # leaves room for the next one instead of forcing a copy at once.
            capacity = int(max(needed, len(self._data)) * _GROWTH) + 1
            if capacity * self._data.itemsize < AHEAD_BYTES or not self.reserve_ahead(needed * AHEAD):
                self.reserve(capacity)
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


#: Fewest bytes worth asking to have written in ahead (see :meth:`GrowableArray.page_in`).
_PAGE_IN_MIN = 1 << 20
_MADV_POPULATE_WRITE = 23  # Linux 5.14+; Python's mmap module does not name it
_pager: concurrent.futures.ThreadPoolExecutor | None = None
_madvise = None  # libc's madvise (called through ctypes, which lets go of the GIL), or False


@functools.lru_cache(maxsize=1)
def _mmap_type() -> type:
    import mmap

    return mmap.mmap


def _page_in(array: np.ndarray, start: int, end: int) -> None:
    """``array``'s bytes ``[start, end)`` written in by the kernel, on the pager thread."""
    global _pager, _madvise
    if _madvise is None:
        _madvise = _libc_madvise() if sys.platform.startswith("linux") else False
    if not _madvise:
        return
    if _pager is None:
        _pager = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="tuiloss-pager")
    page = _page_size()
    base = array.ctypes.data
    first = (base + start + page - 1) // page * page  # whole pages only: the one shared with the values stored stays as it is
    last = (base + end) // page * page
    if last > first:
        _pager.submit(_advise, array, first, last - first)  # the array (and its mapping) kept until done


def _advise(array: np.ndarray, address: int, length: int) -> None:
    global _madvise
    if _madvise and _madvise(address, length, _MADV_POPULATE_WRITE) != 0:
        _madvise = False  # not on this kernel (EINVAL): not asked again


def _libc_madvise():
    try:
        import ctypes

        madvise = ctypes.CDLL(None).madvise
    except (OSError, AttributeError):
        return False
    madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    madvise.restype = ctypes.c_int
    return madvise


@functools.lru_cache(maxsize=1)
def _page_size() -> int:
    import mmap

    return mmap.PAGESIZE


def first_min(values: np.ndarray) -> int | None:
    """Index of the first smallest finite value (None if there is none), read in pieces."""
    best, at = math.inf, None
    for lo in range(0, len(values), _PIECE):
        piece = values[lo : lo + _PIECE]
        j = int(np.argmin(piece))  # NaN and -inf come out first: a finite least value says there is neither
        if not math.isfinite(piece[j]):
            finite = np.isfinite(piece)
            if not finite.any():
                continue
            j = int(np.argmin(np.where(finite, piece, np.inf)))
        if at is None or piece[j] < best:
            best, at = float(piece[j]), lo + j
    return at


def row_argmax(rows: np.ndarray) -> np.ndarray:
    """``rows.argmax(axis=1)``, a few rows at a time (see ``_PIECE``)."""
    step = max(1, _PIECE // max(1, rows.shape[1]))
    if len(rows) <= step:
        return rows.argmax(axis=1)
    return np.concatenate([rows[a : a + step].argmax(axis=1) for a in range(0, len(rows), step)])
