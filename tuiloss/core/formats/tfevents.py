"""TensorBoard event files (``events.out.tfevents.*``): from TFRecord records to points.

An event file is a sequence of TFRecord records (see
:mod:`tuiloss.core.formats.tfrecord`) whose ``data`` is a serialized ``Event``
protocol buffer. :class:`EventDecoder` walks the framing with ``struct`` over the
bytes the tailer returns (inline, since it runs once per record), checks the CRCs
and decodes events with the protobuf classes that ``tensorboard`` (or
``tensorboardX``) ships, which run on protobuf's compiled parser. Both are
imported lazily, when a source first reads.

Scalars arrive in two shapes:

* ``summary.value[i].simple_value``: TF1 summaries and PyTorch's ``SummaryWriter``.
* a tensor with one element (``value.tensor``), tagged with the ``scalars``
  plugin: TF2 ``tf.summary.scalar`` and ``add_scalar(..., new_style=True)``.
  Writers may attach the plugin name only to the first value of a tag, so the
  name is remembered per tag; tags of other plugins (histograms, images, text,
  hparams) are not scalars and are passed over without being counted.

What happens to damaged input:

* A partial record at the end of a chunk waits for the rest of its bytes.
* A record whose data CRC fails is skipped and counted as ``bad CRC``: its length
  was verified, so reading goes on at the next record.
* A record whose *length* CRC fails leaves nothing to trust: where the next
  record starts is unknown, and scanning for something that looks like a header
  could invent records. The decoder says where it stopped; the source reads that
  file no further (a ``Notice`` says so) until it is truncated or replaced.
* A record over :data:`MAX_RECORD` bytes (a graph, an image) is skipped without
  being held in memory, and counted as ``oversized record``.
"""

from __future__ import annotations

import os
import struct
from array import array
from dataclasses import dataclass
from typing import Callable

import numpy as np

from tuiloss.core.formats.counters import note_repeats
from tuiloss.core.formats.tfrecord import (FOOTER, HEADER, MASK32, MASK_DELTA, byte_rows, crc32c_rows, masked_rows,
                                          numbers_at)
from tuiloss.core.model import Batch

#: The series the events' wall times become (seconds since the epoch, one per step), named as
#: W&B's: a clock for the viewer's wall-time and time-since-start axes, never a metric shown first.
WALL_SERIES = "_timestamp"

MISSING_EXTRA = (
    "TensorBoard event files need the optional extra: pip install 'tuiloss[tensorboard]'"
)
#: Records larger than this are skipped unread (graphs, images, embeddings).
MAX_RECORD = 16 * 1024 * 1024

_REUSE = 1024  # records parsed into one Event message before a fresh one is made

# TensorFlow DataType -> (numpy dtype of tensor_content, repeated field holding values)
_TENSOR_TYPES = {
    1: ("<f4", "float_val"),  # DT_FLOAT
    2: ("<f8", "double_val"),  # DT_DOUBLE
    3: ("<i4", "int_val"),  # DT_INT32
    4: ("u1", "int_val"),  # DT_UINT8
    5: ("<i2", "int_val"),  # DT_INT16
    6: ("i1", "int_val"),  # DT_INT8
    9: ("<i8", "int64_val"),  # DT_INT64
    10: ("?", "bool_val"),  # DT_BOOL
    14: ("<u2", "half_val"),  # DT_BFLOAT16 (bit patterns)
    17: ("<u2", "int_val"),  # DT_UINT16
    19: ("<f2", "half_val"),  # DT_HALF (bit patterns in half_val)
    22: ("<u4", "uint32_val"),  # DT_UINT32
    23: ("<u8", "uint64_val"),  # DT_UINT64
}
_DT_HALF = 19
_DT_BFLOAT16 = 14


def is_tfevents_file(path: str | os.PathLike) -> bool:
    """Whether ``path`` is named like a TensorBoard event file.

    This is TensorBoard's own rule ("tfevents" in the file name), so a file
    that was just created and is still empty is recognised too.
    """
    name = os.path.basename(os.fspath(path))
    return "tfevents" in name and not os.path.isdir(path)


def file_order(path: str) -> tuple:
    """Sort key of event files: by name, numbers compared as numbers.

    Names are ``events.out.tfevents.<seconds>.<host>.<pid>.<counter>[suffix]``;
    comparing the numbers as numbers keeps counter 10 after counter 9.
    """
    return tuple(
        (0, int(part), "") if part.isdigit() else (1, 0, part)
        for part in os.path.basename(path).split(".")
    )


def load_event_class() -> type | None:
    """TensorBoard's ``Event`` message class, or None when the extra is missing."""
    try:
        from tensorboard.compat.proto.event_pb2 import Event

        return Event
    except ImportError:
        pass
    try:
        from tensorboardX.proto.event_pb2 import Event

        return Event
    except ImportError:
        return None


@dataclass(frozen=True, slots=True)
class RecordsRead:
    """What :meth:`EventDecoder.feed` made of a chunk of an event file.

    ``consumed`` bytes were used (whole records; a partial record waits).
    ``records`` is how many records they held. ``skip`` more bytes past the
    chunk belong to an oversized record being skipped. ``broken_at`` is the
    offset in the chunk of a record header whose CRC failed: nothing after it
    can be read.
    """

    consumed: int
    records: int
    skip: int = 0
    broken_at: int | None = None


class EventDecoder:
    """Turns framed event records into points.

    Keeps what must survive across chunks and files of one run: the plugin
    name of each tag, which writers may send only once.
    """

    def __init__(self, event_class: type, crc: Callable[[bytes], int] | None) -> None:
        from google.protobuf.message import DecodeError

        self._event_class = event_class
        self._crc = crc
        self._decode_error = DecodeError
        self._plugins: dict[str, str] = {}
        self._wall_step: float | None = None  # the step whose wall time was kept last
        self._header_crcs: dict[int, int] = {}

    def feed(
        self, data: bytes, batch: Batch, first_record: int = 1, final: bool = False
    ) -> RecordsRead:
        """Decode the whole records at the start of ``data`` into ``batch``.

        ``first_record`` numbers the first record (1-based) for skip reports.
        With ``final``, bytes left after the last whole record are counted as an
        incomplete record instead of waiting.
        """
        view = memoryview(data)
        size = len(data)
        pos = 0
        record = first_record
        crc = self._crc
        header_crcs = self._header_crcs
        unpack_header = HEADER.unpack_from
        unpack_footer = FOOTER.unpack_from
        # Records whose framing and CRCs are good, decoded after the walk: (start, end, number).
        starts, ends, numbers = array("q"), array("q"), array("q")
        skip = 0
        broken_at = None
        recent: list[int] = []  # lengths of the last records walked one by one
        while pos + 12 <= size:
            if len(recent) >= 4:
                taken = self._walk_pattern(data, pos, recent, starts, ends, numbers, record, batch)
                if taken:
                    pos, record = taken
                    recent.clear()
                    continue
            length, stored = unpack_header(view, pos)
            recent.append(length)
            del recent[:-8]
            if crc is not None:
                # The header CRC depends only on the length: remember it per length.
                expected = header_crcs.get(length)
                if expected is None:
                    value = crc(view[pos : pos + 8])
                    expected = (((value >> 15) | (value << 17)) + MASK_DELTA) & MASK32
                    if len(header_crcs) < 4096:
                        header_crcs[length] = expected
                if expected != stored:
                    broken_at = pos
                    break
            start = pos + 12
            end = start + length
            if length > MAX_RECORD:
                batch.skip("oversized record", record)
                record += 1
                if end + 4 <= size:
                    pos = end + 4
                    continue
                skip = end + 4 - size
                pos = size
                break
            if end + 4 > size:
                break  # the rest of this record has not been written yet
            if crc is not None:
                value = crc(view[start:end])
                if (((value >> 15) | (value << 17)) + MASK_DELTA) & MASK32 != unpack_footer(
                    view, end
                )[0]:
                    batch.skip("bad CRC", record)
                    record += 1
                    pos = end + 4
                    continue
            pos = end + 4
            starts.append(start)
            ends.append(end)
            numbers.append(record)
            record += 1
        if final and broken_at is None and skip == 0 and pos < size:
            batch.skip("incomplete record at end of file", record)
            record += 1
            pos = size
        columns = self._decode(data, np.frombuffer(starts, np.int64), np.frombuffer(ends, np.int64),
                               np.frombuffer(numbers, np.int64), batch)
        for tag, (steps, points) in columns.items():
            batch.add(tag, steps, points)
        note_repeats(batch)  # Ultralytics logs every batch's loss at step = epoch
        return RecordsRead(pos, record - first_record, skip, broken_at)

    def _walk_pattern(self, data: bytes, pos: int, recent: list[int], starts: array, ends: array,
                      numbers: array, record: int, batch: Batch) -> tuple[int, int] | None:
        """Walk many records at once where their lengths repeat a short pattern.

        Writers log the same tags over and over, so record lengths cycle (loss, lr, loss,
        lr, ...), changing only when the step gains a digit. When the last records walked
        one by one repeat a cycle, the headers where that cycle would put the next
        records are read together, with their length CRCs, and the records are taken up
        to the first that breaks the cycle; their data CRCs are then checked together.
        Returns the position and record number after them, or None (walk one by one).
        """
        cycle = None
        for period in (1, 2, 3, 4):
            if len(recent) >= 2 * period and recent[-period:] == recent[-2 * period : -period]:
                cycle = recent[-period:]
                break
        if cycle is None or max(cycle) > MAX_RECORD:
            return None
        size = len(data)
        spans = np.array(cycle, np.int64) + 16
        whole = int(spans.sum())
        rounds = min((size - pos) // whole, _PATTERN_ROUNDS)
        if rounds < 1:
            return None
        offsets = np.concatenate(([0], np.cumsum(spans)[:-1]))
        heads = (pos + np.arange(rounds, dtype=np.int64)[:, None] * whole + offsets[None, :]).ravel()
        buf = np.frombuffer(data, np.uint8)
        lengths = _read_le(buf, heads, 8)
        good = lengths == np.tile(np.array(cycle, np.uint64), rounds)
        crc = self._crc
        if crc is not None:
            expected = np.array([self._header_crc(length) for length in cycle], np.uint64)
            good &= _read_le(buf, heads + 8, 4) == np.tile(expected, rounds)
        count = len(heads) if good.all() else int(np.argmin(good))
        if count < 2:
            return None
        heads = heads[:count]
        lengths = lengths[:count].astype(np.int64)
        first, last = heads + 12, heads + 12 + lengths
        number = record + np.arange(count, dtype=np.int64)
        if crc is not None:
            found = np.empty(count, np.uint32)
            for length in set(cycle):  # the records of one length, checked together
                rows = np.flatnonzero(lengths == length)
                found[rows] = crc32c_rows(byte_rows(buf, first[rows], length))
            right = masked_rows(found) == _read_le(buf, last, 4)
            for k in np.flatnonzero(~right):
                batch.skip("bad CRC", int(number[k]))
            first, last, number = first[right], last[right], number[right]
        for into, found in ((starts, first), (ends, last), (numbers, number)):  # their bytes, not a Python int each
            into.frombytes(found.astype(np.int64, copy=False).tobytes())
        return int(heads[-1] + 16 + lengths[-1]), record + count

    def _header_crc(self, length: int) -> int:
        """The masked CRC of a record header holding ``length`` (remembered per length)."""
        expected = self._header_crcs.get(length)
        if expected is None:
            value = self._crc(struct.pack("<Q", length))
            expected = (((value >> 15) | (value << 17)) + MASK_DELTA) & MASK32
            if len(self._header_crcs) < 4096:
                self._header_crcs[length] = expected
        return expected

    def _decode(self, data: bytes, starts: np.ndarray, ends: np.ndarray, numbers: np.ndarray,
                batch: Batch) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        """The points of the records ``data[starts[k]:ends[k]]``, by tag, in record order.

        The common event (one ``simple_value`` with its wall time and step, as PyTorch's
        ``SummaryWriter`` and TF1 write it) is read for all records at once with numpy
        (see :func:`simple_scalars`); every other record goes through protobuf.
        """
        fast = simple_scalars(data, starts, ends)
        found: dict[str, list[tuple[np.ndarray, np.ndarray, np.ndarray]]] = {}
        clocks = []  # (record numbers, steps, wall times) of the events holding values
        if fast is not None:
            ok, steps, values, tag_start, tag_end, walls = fast
            keep = np.flatnonzero(ok)
            if len(keep):
                for raw, rows in _by_tag(data, tag_start[keep], tag_end[keep]):
                    at = keep[rows]
                    try:
                        tag = raw.decode("utf-8")
                    except UnicodeDecodeError:  # protobuf refuses such a record: so does the slow path
                        ok[at] = False
                        continue
                    found.setdefault(tag, []).append((numbers[at], steps[at].astype(np.float64), values[at]))
            rest = np.flatnonzero(~ok)
            good = np.flatnonzero(ok)
            clocks.append((numbers[good], steps[good].astype(np.float64), walls[good]))
        else:
            rest = np.arange(len(starts))
        if len(rest):
            slow, clock = self._decode_slowly(data, starts[rest], ends[rest], numbers[rest], batch)
            for tag, (order, steps, points) in slow.items():
                found.setdefault(tag, []).append((order, steps, points))
            clocks.append(clock)
        columns = {}
        for tag, parts in found.items():
            if len(parts) == 1:
                columns[tag] = (parts[0][1], parts[0][2])
                continue
            order = np.concatenate([part[0] for part in parts])
            sort = np.argsort(order, kind="stable")
            columns[tag] = (np.concatenate([part[1] for part in parts])[sort],
                            np.concatenate([part[2] for part in parts])[sort])
        columns = dict(sorted(columns.items(), key=lambda item: _first_record(found[item[0]])))
        wall = self._clock(clocks)
        if wall is not None and columns:  # no scalar read: no clock either
            columns[WALL_SERIES] = wall
        return columns

    def _clock(self, clocks: list) -> tuple[np.ndarray, np.ndarray] | None:
        """The run's clock: the wall time of the first event of each step, in record order
        (a step's first event may have come in an earlier chunk)."""
        clocks = [part for part in clocks if len(part[0])]
        if not clocks:
            return None
        order = np.concatenate([part[0] for part in clocks])
        sort = np.argsort(order, kind="stable")
        steps = np.concatenate([part[1] for part in clocks])[sort]
        walls = np.concatenate([part[2] for part in clocks])[sort]
        before = np.empty_like(steps)
        before[0] = np.nan if self._wall_step is None else self._wall_step
        before[1:] = steps[:-1]
        first = steps != before
        self._wall_step = float(steps[-1])
        return steps[first], walls[first]

    def _decode_slowly(self, data: bytes, starts: np.ndarray, ends: np.ndarray, numbers: np.ndarray,
                       batch: Batch) -> tuple[dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]], tuple]:
        """Records decoded one by one by protobuf: ``{tag: (record numbers, steps, points)}``, and
        the (record numbers, steps, wall times) of the events that held values."""
        view = memoryview(data)
        event_class = self._event_class
        event = event_class()
        parse = event.ParseFromString
        # Parsing into one message again and again grows its upb arena without
        # bound, so a fresh message takes over every _REUSE records.
        reuse = _REUSE
        decode_error = self._decode_error
        plugins = self._plugins
        # Points go into array('d') columns: no Python float object is kept per point.
        columns: dict[str, tuple[array, array, array]] = {}
        clock = (array("q"), array("d"), array("d"))
        for start, end, record in zip(starts.tolist(), ends.tolist(), numbers.tolist()):
            reuse -= 1
            if not reuse:
                reuse = _REUSE
                event = event_class()
                parse = event.ParseFromString
            try:
                parse(view[start:end])
            except decode_error:
                batch.skip("undecodable event", record)
                continue
            values = event.summary.value
            if values:
                clock[0].append(record)
                clock[1].append(event.step)
                clock[2].append(event.wall_time)
            if len(values) == 1:
                # The common shape (one scalar per event), inlined for speed.
                value = values[0]
                kind = value.WhichOneof("value")
                if kind == "simple_value":
                    point = value.simple_value
                elif kind == "tensor" and plugins.get(value.tag or value.node_name) == "scalars":
                    point = tensor_scalar(value.tensor)
                else:
                    point = None
                if point is not None:
                    tag = value.tag or value.node_name
                    column = columns.get(tag)
                    if column is None:
                        column = columns[tag] = (array("q"), array("d"), array("d"))
                    column[0].append(record)
                    column[1].append(event.step)
                    column[2].append(point)
                    continue
            if values:
                self._collect(event.step, values, columns, batch, record)
        return ({tag: (np.frombuffer(order, np.int64), np.frombuffer(steps), np.frombuffer(points))
                 for tag, (order, steps, points) in columns.items()},
                (np.frombuffer(clock[0], np.int64), np.frombuffer(clock[1]), np.frombuffer(clock[2])))

    def _collect(self, step: int, values, columns: dict, batch: Batch, record: int) -> None:
        plugins = self._plugins
        for index in range(len(values)):
            value = values[index]
            kind = value.WhichOneof("value")
            if kind == "simple_value":
                tag = value.tag or value.node_name
                point = value.simple_value
            elif kind == "tensor":
                tag = value.tag or value.node_name
                plugin = plugins.get(tag)
                if plugin is None or (not plugin and value.HasField("metadata")):
                    plugin = plugins[tag] = value.metadata.plugin_data.plugin_name
                if plugin and plugin != "scalars":
                    continue
                point = tensor_scalar(value.tensor)
                if point is None:
                    if plugin:
                        batch.skip("unreadable scalar tensor", record, tag)
                    continue
            else:
                continue  # images, histograms, audio: not scalars
            column = columns.get(tag)
            if column is None:
                column = columns[tag] = (array("q"), array("d"), array("d"))
            column[0].append(record)
            column[1].append(step)
            column[2].append(point)


#: Cycles of records checked at once by EventDecoder._walk_pattern.
_PATTERN_ROUNDS = 1 << 15


def _read_le(buf: np.ndarray, at: np.ndarray, width: int) -> np.ndarray:
    """The little-endian unsigned integers of ``width`` bytes at offsets ``at`` of ``buf``."""
    return numbers_at(buf, at, f"<u{width}").astype(np.uint64)


def _first_record(parts: list) -> int:
    return min(int(part[0][0]) for part in parts)


#: Bytes of the common event around its tag: the wall time (field 1, fixed64), the step
#: (field 2, varint), the summary (field 5) holding one value (field 1) whose tag (field 1)
#: is followed by its simple_value (field 2, fixed32).
_WALL, _STEP, _SUMMARY, _VALUE, _TAG, _SIMPLE = 0x09, 0x10, 0x2A, 0x0A, 0x0A, 0x15
#: Steps up to this many varint bytes (7 bits each) are read by the vectorised path.
_STEP_BYTES = 8


def simple_scalars(data: bytes, starts: np.ndarray, ends: np.ndarray):
    """The records holding exactly the common event, read together with numpy.

    A record is that event when its bytes are, in this order and nothing else:
    ``09`` + 8 bytes of wall time, ``10`` + the step as a varint, ``2A`` + the summary's
    length, ``0A`` + the value's length, ``0A`` + the tag's length + the tag,
    ``15`` + the float32 value; with every length agreeing with the record's. Anything
    else (a step of 0 or a wall time of 0, which protobuf leaves out; a tensor; a second
    value; metadata) is left to protobuf.

    Returns:
        None when there is no record; else ``(ok, steps, values, tag_start, tag_end, walls)``,
        arrays over the records (only the ``ok`` entries mean anything).
    """
    n = len(starts)
    if not n:
        return None
    buf = np.frombuffer(data, np.uint8)
    pad = np.zeros(len(buf) + 32, np.uint8)  # reads past a short record land in zeros
    pad[: len(buf)] = buf
    length = ends - starts
    ok = (length >= 24) & (pad[starts] == _WALL) & (pad[starts + 9] == _STEP)
    # the step: a varint of 1 to _STEP_BYTES bytes from starts + 10
    at = starts + 10
    raw = byte_rows(pad, at, _STEP_BYTES)
    more = raw >= 0x80
    width = np.argmin(more, axis=1) + 1  # the first byte without a continuation bit ends it
    ok &= ~more.all(axis=1)
    weights = np.left_shift(np.uint64(1), (7 * np.arange(_STEP_BYTES)).astype(np.uint64))
    used = np.arange(_STEP_BYTES)[None, :] < width[:, None]
    steps = ((raw & 0x7F).astype(np.uint64) * weights * used).sum(axis=1, dtype=np.uint64).astype(np.int64)
    s = at + width  # the summary's field byte
    tag_len = pad[s + 5].astype(np.int64)
    ok &= (pad[s] == _SUMMARY) & (pad[s + 1] == tag_len + 9) & (pad[s + 2] == _VALUE)
    ok &= (pad[s + 3] == tag_len + 7) & (pad[s + 4] == _TAG) & (tag_len > 0) & (tag_len < 119)
    tag_start = s + 6
    tag_end = tag_start + tag_len
    ok &= pad[np.minimum(tag_end, len(pad) - 1)] == _SIMPLE
    ok &= tag_end + 5 == ends
    value_at = np.where(ok, tag_end + 1, 0)
    values = numbers_at(pad, value_at, "<f4").astype(np.float64)
    walls = numbers_at(pad, starts + 1, "<f8")
    return ok, steps, values, tag_start, tag_end, walls


def _by_tag(data: bytes, tag_start: np.ndarray, tag_end: np.ndarray):
    """``(tag bytes, rows)`` for each tag of the records, rows in record order, tags by first record.

    Records of one tag usually follow a pattern (loss, lr, loss, lr, ...): the tags are
    compared as fixed-width byte rows, so one sort finds them all.
    """
    width = int((tag_end - tag_start).max())
    buf = np.frombuffer(data, np.uint8)
    pad = np.zeros(len(buf) + width, np.uint8)
    pad[: len(buf)] = buf
    rows = byte_rows(pad, tag_start, width)
    rows[np.arange(width)[None, :] >= (tag_end - tag_start)[:, None]] = 0
    keys = np.ascontiguousarray(rows).view(np.dtype((np.void, width)))[:, 0]
    unique, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
    for k in np.argsort(first, kind="stable"):
        i = int(first[k])
        yield bytes(data[int(tag_start[i]) : int(tag_end[i])]), np.flatnonzero(inverse == k)


def tensor_scalar(tensor) -> float | None:
    """The value of a one-element numeric ``TensorProto``, or None."""
    dtype = tensor.dtype
    if tensor.HasField("tensor_shape"):
        for dim in tensor.tensor_shape.dim:
            if dim.size != 1:
                return None
    if dtype == 1 and not tensor.tensor_content:  # DT_FLOAT, the usual case
        values = tensor.float_val
        return values[0] if len(values) == 1 else None
    kind = _TENSOR_TYPES.get(dtype)
    if kind is None:
        return None
    layout, field = kind
    content = tensor.tensor_content
    if content:
        if len(content) != np.dtype(layout).itemsize:
            return None
        if dtype == _DT_BFLOAT16:
            return struct.unpack("<f", b"\0\0" + content)[0]
        return float(np.frombuffer(content, dtype=layout)[0])
    values = getattr(tensor, field)
    if len(values) != 1:
        return None
    raw = values[0]
    if dtype == _DT_HALF:
        return struct.unpack("<e", struct.pack("<H", raw & 0xFFFF))[0]
    if dtype == _DT_BFLOAT16:
        return struct.unpack("<f", struct.pack("<I", (raw & 0xFFFF) << 16))[0]
    return float(raw)


#: Keras writes ``log_dir/train`` and ``log_dir/validation``: one run, the
#: validation tags prefixed so ``epoch_loss`` pairs with ``val/epoch_loss``.
SPLIT_PREFIXES = {"train": "", "training": "", "validation": "val/", "val": "val/", "eval": "val/"}


def split_event_folders(folder: str | os.PathLike) -> dict[str, str]:
    """``{subfolder: metric prefix}`` when ``folder`` is a Keras-style split log dir."""
    found: dict[str, str] = {}
    for name, prefix in SPLIT_PREFIXES.items():
        sub = os.path.join(os.fspath(folder), name)
        try:
            if os.path.isdir(sub) and any(is_tfevents_file(entry.path) for entry in os.scandir(sub)):
                found[sub] = prefix
        except OSError:
            continue
    has_train = any(prefix == "" for prefix in found.values())
    return found if has_train and len(found) >= 2 else {}


