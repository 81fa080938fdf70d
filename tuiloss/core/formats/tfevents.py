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

#: The series the events' wall times become (seconds since the epoch, one per step), named as
#: W&B's: a clock for the viewer's wall-time and time-since-start axes, never a metric shown first.
WALL_SERIES = "_timestamp"
from tuiloss.core.formats.tfrecord import FOOTER, HEADER, MASK32, MASK_DELTA
from tuiloss.core.model import Batch

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
        event_class = self._event_class
        event = event_class()
        parse = event.ParseFromString
        # Parsing into one message again and again grows its upb arena without
        # bound, so a fresh message takes over every _REUSE records.
        reuse = _REUSE
        decode_error = self._decode_error
        plugins = self._plugins
        # Points go into array('d') columns: no Python float object is kept per point.
        columns: dict[str, tuple[array, array]] = {}
        # The events' wall times, once a step (the first event of each): the run's clock, an x axis.
        walls = columns[WALL_SERIES] = (array("d"), array("d"))
        wall_steps, wall_times = walls
        wall_step = self._wall_step
        skip = 0
        broken_at = None
        while pos + 12 <= size:
            length, stored = unpack_header(view, pos)
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
            body = view[start:end]
            if crc is not None:
                value = crc(body)
                if (((value >> 15) | (value << 17)) + MASK_DELTA) & MASK32 != unpack_footer(
                    view, end
                )[0]:
                    batch.skip("bad CRC", record)
                    record += 1
                    pos = end + 4
                    continue
            pos = end + 4
            reuse -= 1
            if not reuse:
                reuse = _REUSE
                event = event_class()
                parse = event.ParseFromString
            try:
                parse(body)
            except decode_error:
                batch.skip("undecodable event", record)
                record += 1
                continue
            values = event.summary.value
            if values and event.step != wall_step:
                wall_step = event.step
                wall_steps.append(wall_step)
                wall_times.append(event.wall_time)
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
                        column = columns[tag] = (array("d"), array("d"))
                    column[0].append(event.step)
                    column[1].append(point)
                    record += 1
                    continue
            if values:
                self._collect(event.step, values, columns, batch, record)
            record += 1
        if final and broken_at is None and skip == 0 and pos < size:
            batch.skip("incomplete record at end of file", record)
            record += 1
            pos = size
        self._wall_step = wall_step
        if not wall_steps or len(columns) == 1:
            del columns[WALL_SERIES]  # no scalar read: no clock either
        for tag, (steps, points) in columns.items():
            batch.add(tag, np.frombuffer(steps), np.frombuffer(points))
        note_repeats(batch)  # Ultralytics logs every batch's loss at step = epoch
        return RecordsRead(pos, record - first_record, skip, broken_at)

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
                column = columns[tag] = (array("d"), array("d"))
            column[0].append(step)
            column[1].append(point)


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


