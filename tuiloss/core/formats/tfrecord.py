"""TFRecord framing, the container of TensorBoard event files.

A TFRecord file is a sequence of records, little-endian::

    uint64 length | uint32 masked_crc32c(length) | data[length] | uint32 masked_crc32c(data)

The CRC is CRC32C, masked (rotated and offset) so that a CRC of data holding
CRCs is not degenerate. It is computed by a C package, ``crc32c`` or
``google_crc32c``, imported when first asked for.
"""

from __future__ import annotations

import struct
from typing import Callable

import numpy as np

NO_CRC = (
    "CRC checks of TensorBoard records are off: install crc32c (pip install crc32c) "
    "to have damaged records detected"
)

#: ``length`` and its masked CRC, the 12 bytes before a record's data.
HEADER = struct.Struct("<QI")
#: The masked CRC of the data, the 4 bytes after it.
FOOTER = struct.Struct("<I")
MASK_DELTA = 0xA282EAD8
MASK32 = 0xFFFFFFFF


def masked_crc(crc: Callable[[bytes], int], data) -> int:
    """The masked CRC32C that TFRecord framing stores."""
    value = crc(data)
    return (((value >> 15) | (value << 17)) + MASK_DELTA) & MASK32


def load_crc() -> Callable[[bytes], int] | None:
    """A C implementation of CRC32C, or None when none is installed."""
    try:
        from crc32c import crc32c

        return crc32c
    except ImportError:
        pass
    try:
        import google_crc32c
    except ImportError:
        return None

    def checksum(data) -> int:
        return google_crc32c.value(bytes(data))

    return checksum


def frame_record(data: bytes, crc: Callable[[bytes], int]) -> bytes:
    """``data`` framed as one TFRecord (for tests and benchmarks)."""
    header = struct.pack("<Q", len(data))
    return (
        header
        + FOOTER.pack(masked_crc(crc, header))
        + data
        + FOOTER.pack(masked_crc(crc, data))
    )


#: CRC32C's reflected polynomial, and the byte table of its table-driven form.
_POLY = 0x82F63B78


def _table() -> np.ndarray:
    table = np.arange(256, dtype=np.uint32)
    for _ in range(8):
        table = np.where(table & 1, (table >> 1) ^ np.uint32(_POLY), table >> 1).astype(np.uint32)
    return table


_TABLE = _table()


def byte_rows(buf: np.ndarray, at: np.ndarray, width: int) -> np.ndarray:
    """``buf[at[k] : at[k] + width]`` for each ``k``, as the rows of a new 2-D ``uint8`` array.

    Taken from numpy's view of every ``width`` bytes of ``buf`` (one window per offset), so only the
    rows are copied: a grid of ``len(at) * width`` indices cost several times the copy (a million
    40-byte records: 0.85 s against 0.02 s).
    """
    return np.lib.stride_tricks.sliding_window_view(buf, width)[at]


def numbers_at(buf: np.ndarray, at: np.ndarray, dtype: str) -> np.ndarray:
    """The numbers of ``dtype`` (little-endian, such as ``"<u8"`` or ``"<f4"``) whose bytes start at
    offsets ``at`` of the contiguous ``uint8`` array ``buf``, read through an unaligned view."""
    kind = np.dtype(dtype)
    view = np.ndarray((len(buf) - kind.itemsize + 1,), kind, buf, 0, (1,))
    return view[at]


def crc32c_rows(rows: np.ndarray) -> np.ndarray:
    """CRC32C of each row of a 2-D ``uint8`` array, all rows at once (one numpy step per column).

    Records of one length are checked together this way: per record, a call into a C
    CRC costs more in Python than the CRC itself.
    """
    crc = np.full(len(rows), 0xFFFFFFFF, dtype=np.uint32)
    for column in rows.T:
        crc = _TABLE[(crc ^ column) & 0xFF] ^ (crc >> 8)
    return crc ^ np.uint32(0xFFFFFFFF)


def masked_rows(crc: np.ndarray) -> np.ndarray:
    """The masked form of CRCs (see :func:`masked_crc`), as ``uint32``."""
    crc = crc.astype(np.uint64)
    return ((((crc >> np.uint64(15)) | (crc << np.uint64(17))) + np.uint64(MASK_DELTA)) & np.uint64(MASK32)).astype(np.uint32)
