"""TensorBoard event files (``events.out.tfevents.*``), read incrementally.

A run is a folder holding one or more event files directly inside it (a resumed
run writes a new file next to the old one). Files are read in order of file name,
so the events of a later file continue those of an earlier one; tags from every
file merge into one set of series.

An event file is a sequence of records::

    uint64 length | uint32 masked_crc32c(length) | data[length] | uint32 masked_crc32c(data)

``data`` is a serialized ``Event`` protocol buffer. The framing is read here with
``struct`` over the bytes the tailer returns, CRCs are checked with the C
``crc32c`` package (or ``google_crc32c``), and events are decoded with the
protobuf classes that ``tensorboard`` (or ``tensorboardX``) ships, which run on
protobuf's compiled parser. Both are imported lazily, when a source first reads.

Scalars arrive in two shapes:

* ``summary.value[i].simple_value``: TF1 summaries and PyTorch's ``SummaryWriter``.
* a tensor with one element (``value.tensor``), tagged with the ``scalars``
  plugin: TF2 ``tf.summary.scalar`` and ``add_scalar(..., new_style=True)``.
  Writers may attach the plugin name only to the first value of a tag, so the
  name is remembered per tag; tags of other plugins (histograms, images, text,
  hparams) are not scalars and are passed over without being counted.

What happens to damaged input:

* A partial record at the end of a file waits for the rest of its bytes.
* A record whose data CRC fails is skipped and counted as ``bad CRC``: its length
  was verified, so reading goes on at the next record.
* A record whose *length* CRC fails leaves nothing to trust: where the next
  record starts is unknown, and scanning for something that looks like a header
  could invent records. That file is not read further (a ``Notice`` says so)
  until it is truncated or replaced.
* A record over :data:`MAX_RECORD` bytes (a graph, an image) is skipped without
  being held in memory, and counted as ``oversized record``.
"""

from __future__ import annotations

import os
import struct
import time
from array import array
from dataclasses import dataclass
from typing import Callable

import numpy as np

from tuiloss.core.model import Batch, Notice, SegmentEvent
from tuiloss.core.tail import DEFAULT_MAX_READ, TailError, Tailer

MISSING_EXTRA = (
    "TensorBoard event files need the optional extra: pip install 'tuiloss[tensorboard]'"
)
NO_CRC = (
    "CRC checks of TensorBoard records are off: install crc32c (pip install crc32c) "
    "to have damaged records detected"
)

#: Records larger than this are skipped unread (graphs, images, embeddings).
MAX_RECORD = 16 * 1024 * 1024

_HEADER = struct.Struct("<QI")
_FOOTER = struct.Struct("<I")
_MASK_DELTA = 0xA282EAD8
_MASK32 = 0xFFFFFFFF
_REUSE = 1024  # records parsed into one Event message before a fresh one is made

# A folder listing is trusted only once this many seconds have passed since the
# folder's mtime: a file created in the same mtime tick would not change it.
_MTIME_SLACK = 2.0

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


def masked_crc(crc: Callable[[bytes], int], data) -> int:
    """The masked CRC32C that TFRecord framing stores."""
    value = crc(data)
    return (((value >> 15) | (value << 17)) + _MASK_DELTA) & _MASK32


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


def frame_record(data: bytes, crc: Callable[[bytes], int]) -> bytes:
    """``data`` framed as one TFRecord (for tests and benchmarks)."""
    header = struct.pack("<Q", len(data))
    return (
        header
        + _FOOTER.pack(masked_crc(crc, header))
        + data
        + _FOOTER.pack(masked_crc(crc, data))
    )


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
        unpack_header = _HEADER.unpack_from
        unpack_footer = _FOOTER.unpack_from
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
        skip = 0
        broken_at = None
        while pos + 12 <= size:
            length, stored = unpack_header(view, pos)
            if crc is not None:
                # The header CRC depends only on the length: remember it per length.
                expected = header_crcs.get(length)
                if expected is None:
                    value = crc(view[pos : pos + 8])
                    expected = (((value >> 15) | (value << 17)) + _MASK_DELTA) & _MASK32
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
                if (((value >> 15) | (value << 17)) + _MASK_DELTA) & _MASK32 != unpack_footer(
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
        for tag, (steps, points) in columns.items():
            batch.add(tag, np.frombuffer(steps), np.frombuffer(points))
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


class _EventFile:
    """One event file of a run: its tailer and where reading stands."""

    __slots__ = (
        "path", "name", "tailer", "record", "skip", "stopped", "error", "missing", "waiting"
    )

    def __init__(self, path: str, max_read: int) -> None:
        self.path = path
        self.name = os.path.basename(path)
        self.tailer = Tailer(path, max_read=max_read)
        self.record = 1  # number of the next record
        self.skip = 0  # bytes of an oversized record still to pass over
        self.stopped: int | None = None  # inode, once a damaged header stopped reading
        self.error: str | None = None
        self.missing = False
        # (inode, size) when the last read ended in a partial record: until the
        # file changes from that, reading again would find the same partial record.
        self.waiting: tuple[int, int] | None = None

    def restart(self) -> None:
        self.record = 1
        self.skip = 0
        self.stopped = None

    def stop(self) -> None:
        try:
            self.stopped = os.stat(self.path).st_ino
        except OSError:
            self.stopped = -1

    def wait(self, size: int) -> None:
        try:
            ino = os.stat(self.path).st_ino
        except OSError:
            return
        self.waiting = (ino, size)

    def changed(self) -> bool:
        if self.stopped is None and self.waiting is None:
            return self.tailer.changed()
        try:
            st = os.stat(self.path)
        except OSError:
            return not self.missing
        if self.stopped is not None:
            # Stopped at a damaged header: only a new file or a truncation matters.
            return st.st_ino != self.stopped or st.st_size < self.tailer.offset
        return (st.st_ino, st.st_size) != self.waiting


class TfeventsRunSource:
    """A folder of TensorBoard event files, read as one run.

    ``folder`` may also be a single event file, which is then the whole run.
    Set ``check_crc=False`` to skip CRC checks (they cost about a third of the
    reading time).
    """

    format = "tfevents"

    def __init__(
        self,
        folder: str | os.PathLike,
        *,
        check_crc: bool = True,
        max_read: int = DEFAULT_MAX_READ,
    ) -> None:
        self.folder = os.fspath(folder)
        self.check_crc = check_crc
        self.max_read = max(max_read, MAX_RECORD + 64)
        self.single_file = os.path.isfile(self.folder)
        self._files: dict[str, _EventFile] = {}
        self._decoder: EventDecoder | None = None
        self._disabled = False
        self._listed: tuple[int, float] | None = None  # (folder mtime_ns, when listed)
        self._gone = False
        self._refresh()

    def paths(self) -> list[str]:
        return sorted(self._files, key=file_order)

    def changed(self) -> bool:
        if self._disabled:
            return False
        if self._decoder is None or self._listing_stale():
            return True
        if self._gone:
            return False
        return any(f.changed() for f in self._files.values())

    def read(self) -> tuple[list, bool]:
        items: list = []
        if self._disabled:
            return items, False
        if self._decoder is None and not self._start(items):
            return items, False
        if not self._refresh(items):
            return items, False
        more = False
        for path in sorted(self._files, key=file_order):
            file = self._files[path]
            if not file.changed():
                continue
            more = self._read_file(file, items)
            if more:
                break  # later files continue this one: finish it first
        return items, more

    # -- internals -------------------------------------------------------------

    def _start(self, items: list) -> bool:
        event_class = load_event_class()
        if event_class is None:
            self._disabled = True
            items.append(Notice("error", MISSING_EXTRA))
            return False
        crc = load_crc() if self.check_crc else None
        if crc is None and self.check_crc:
            items.append(Notice("warning", NO_CRC))
        self._decoder = EventDecoder(event_class, crc)
        return True

    def _listing_stale(self) -> bool:
        if self.single_file:
            return False
        try:
            st = os.stat(self.folder)
        except OSError:
            return not self._gone
        if self._listed is None:
            return True
        mtime, listed_at = self._listed
        return st.st_mtime_ns != mtime or listed_at - mtime / 1e9 < _MTIME_SLACK

    def _refresh(self, items: list | None = None) -> bool:
        """Pick up new event files; False when the folder is gone."""
        if self.single_file:
            if self.folder not in self._files:
                self._files[self.folder] = _EventFile(self.folder, self.max_read)
            return True
        if not self._listing_stale():
            return not self._gone
        try:
            st = os.stat(self.folder)
            listed_at = time.time()
            with os.scandir(self.folder) as entries:
                found = [
                    entry.path
                    for entry in entries
                    if "tfevents" in entry.name and entry.is_file()
                ]
        except FileNotFoundError:
            if not self._gone and items is not None:
                self._gone = True
                self._listed = None
                items.append(SegmentEvent("deleted", "the run folder is gone"))
                items.append(Notice("warning", f"{self.folder} was deleted; its points are kept"))
            return False
        except OSError as exc:
            if items is not None:
                items.append(Notice("error", f"cannot list {self.folder}: {exc.strerror or exc}"))
            return False
        self._gone = False
        self._listed = (st.st_mtime_ns, listed_at)
        for path in found:
            if path not in self._files:
                self._files[path] = _EventFile(path, self.max_read)
        return True

    def _read_file(self, file: _EventFile, items: list) -> bool:
        """Read what is new in one file into ``items``; True when more is pending."""
        decoder = self._decoder
        assert decoder is not None
        file.waiting = None
        try:
            chunk = file.tailer.read()
        except TailError as exc:
            message = str(exc)
            if message != file.error:
                file.error = message
                items.append(Notice("error", f"cannot read {file.path}: {message}"))
            return False
        if file.error is not None:
            file.error = None
            items.append(Notice("info", f"{file.path} is readable again"))
        if chunk.event is not None:
            if chunk.event.reason == "deleted":
                file.missing = True
                self._report_deleted(file, items)
                return False
            file.missing = False
            file.restart()
            items.append(SegmentEvent(chunk.event.reason, f"{file.name}: {chunk.event.detail}"))
        elif file.stopped is not None:
            return False
        data = chunk.data
        if not data:
            return chunk.more
        if file.skip:
            passed = min(file.skip, len(data))
            file.skip -= passed
            file.tailer.consume(passed)
            if file.skip or passed == len(data):
                return chunk.more
            data = data[passed:]
        batch = Batch()
        result = decoder.feed(data, batch, file.record, final=chunk.final)
        file.record += result.records
        file.skip = result.skip
        file.tailer.consume(result.consumed)
        if result.consumed < len(data) and not chunk.more and not chunk.final:
            file.wait(chunk.offset + len(chunk.data))
        if batch.series or batch.skipped:
            _append_batch(items, batch)
        if result.broken_at is not None:
            file.stop()
            offset = chunk.offset + (len(chunk.data) - len(data)) + result.broken_at
            items.append(
                Notice(
                    "error",
                    f"{file.path}: the record header at byte {offset} is damaged; "
                    "the rest of this file cannot be read",
                )
            )
            return False
        return chunk.more

    def _report_deleted(self, file: _EventFile, items: list) -> None:
        if all(f.missing for f in self._files.values()):
            items.append(SegmentEvent("deleted", "every event file of the run is gone"))
            items.append(Notice("warning", f"{self.folder}: the event files were deleted; their points are kept"))
        else:
            items.append(Notice("warning", f"{file.path} was deleted; its points are kept"))


def _append_batch(items: list, batch: Batch) -> None:
    if items and isinstance(items[-1], Batch):
        items[-1].merge(batch)
    else:
        items.append(batch)


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


class SplitRunSource:
    """Several event folders read as one run, each with its metric prefix."""

    format = "tfevents"

    def __init__(self, folders: dict[str, str]) -> None:
        self.parts = [(TfeventsRunSource(path), prefix) for path, prefix in sorted(folders.items())]

    def paths(self) -> list[str]:
        return [p for source, _ in self.parts for p in source.paths()]

    def changed(self) -> bool:
        return any(source.changed() for source, _ in self.parts)

    def read(self) -> tuple[list, bool]:
        items: list = []
        more = False
        for source, prefix in self.parts:
            got, pending = source.read()
            more = more or pending
            for item in got:
                if prefix and isinstance(item, Batch):
                    renamed = Batch(skipped=item.skipped, unmatched=item.unmatched, examples=item.examples)
                    renamed.series = {prefix + name: pair for name, pair in item.series.items()}
                    item = renamed
                items.append(item)
        return items, more
