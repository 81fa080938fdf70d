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
