"""The vectorised reading of event files gives what protobuf, record by record, gives.

The common event (one ``simple_value`` with wall time and step) is framed, CRC-checked and
decoded with numpy over many records at once; everything else goes through protobuf. Each
test feeds the same bytes to the decoder with and without the vectorised path.
"""

import random
import struct

import numpy as np
import pytest

pytest.importorskip("tensorboard")

from tensorboard.compat.proto import event_pb2, summary_pb2, tensor_pb2  # noqa: E402

from tuiloss.core.formats import tfevents  # noqa: E402
from tuiloss.core.formats.tfevents import EventDecoder, load_event_class  # noqa: E402
from tuiloss.core.formats.tfrecord import crc32c_rows, frame_record, load_crc  # noqa: E402
from tuiloss.core.model import Batch  # noqa: E402

CRC = load_crc()
pytestmark = pytest.mark.skipif(CRC is None, reason="crc32c is not installed")


def simple(step, tag, value, wall_time=1700000000.5):
    v = summary_pb2.Summary.Value(tag=tag, simple_value=value)
    return event_pb2.Event(wall_time=wall_time, step=step, summary=summary_pb2.Summary(value=[v]))


def tensor(step, tag, value):
    t = tensor_pb2.TensorProto(dtype=1, float_val=[value])
    meta = summary_pb2.SummaryMetadata(plugin_data=summary_pb2.SummaryMetadata.PluginData(plugin_name="scalars"))
    v = summary_pb2.Summary.Value(tag=tag, tensor=t, metadata=meta)
    return event_pb2.Event(wall_time=1700000000.0, step=step, summary=summary_pb2.Summary(value=[v]))


def two_values(step):
    values = [summary_pb2.Summary.Value(tag="a", simple_value=1.0), summary_pb2.Summary.Value(tag="b", simple_value=2.0)]
    return event_pb2.Event(wall_time=1.0, step=step, summary=summary_pb2.Summary(value=values))


def framed(events) -> bytes:
    return b"".join(frame_record(e if isinstance(e, bytes) else e.SerializeToString(), CRC) for e in events)


def read(data: bytes, monkeypatch, fast: bool, final: bool = True):
    with monkeypatch.context() as patch:
        if not fast:
            patch.setattr(tfevents, "simple_scalars", lambda data, starts, ends: None)
            patch.setattr(EventDecoder, "_walk_pattern", lambda self, *args: None)
        batch = Batch()
        decoder = EventDecoder(load_event_class(), CRC)
        out = decoder.feed(data, batch, final=final)
    series = {tag: (list(steps), [repr(v) for v in values]) for tag, (steps, values) in batch.series.items()}
    return series, list(batch.series), dict(batch.skipped), [(e.line, e.reason) for e in batch.examples], out


def assert_same(data: bytes, monkeypatch, final: bool = True):
    fast = read(data, monkeypatch, True, final)
    slow = read(data, monkeypatch, False, final)
    assert fast[0] == slow[0]  # every point, in order
    assert fast[1] == slow[1]  # tags in the order they first appear
    assert fast[2] == slow[2] and sorted(fast[3]) == sorted(slow[3])  # the same skips
    assert fast[4] == slow[4]  # the same bytes used, records counted, and where it broke
    return fast


def mixed_events(rng: random.Random, count: int):
    tags = ["train/loss", "train/lr", "grad_norm", "ü/é", "x" * 100]
    events = [event_pb2.Event(wall_time=1.0, file_version="brain.Event:2")]
    step = 0
    for k in range(count):
        step += rng.choice((0, 1, 1, 1, 97, 20_000))
        kind = rng.random()
        tag = rng.choice(tags[:2]) if rng.random() < 0.8 else rng.choice(tags)
        value = rng.choice((rng.random(), float("nan"), float("inf"), -0.0, 1e30))
        if kind < 0.85:
            events.append(simple(step, tag, value))
        elif kind < 0.9:
            events.append(simple(step, tag, value, wall_time=0.0))  # protobuf leaves the wall time out
        elif kind < 0.95:
            events.append(tensor(step, tag, value))
        else:
            events.append(two_values(step))
    events.append(simple(0, "train/loss", 0.5))  # a step of 0 is left out too
    events.append(simple(-5, "train/loss", 0.25))  # a negative step: ten varint bytes
    events.append(simple(2**60, "train/loss", 0.125))
    return events


@pytest.mark.parametrize("seed", range(3))
def test_mixed_events_read_the_same(seed, monkeypatch):
    data = framed(mixed_events(random.Random(seed), 3000))
    series, *_ = assert_same(data, monkeypatch)
    assert sum(len(steps) for steps, _ in series.values()) > 2000


def test_a_long_regular_log_reads_the_same_and_is_all_walked_at_once(monkeypatch):
    events = [simple(s, tag, 1.0 / (1 + s)) for s in range(1, 20_000) for tag in ("train/loss", "train/lr")]
    data = framed(events)
    walked = []
    original = EventDecoder._walk_pattern

    def spy(self, *args):
        got = original(self, *args)
        walked.append(got)
        return got

    monkeypatch.setattr(EventDecoder, "_walk_pattern", spy)
    series, *_ = read(data, monkeypatch, True)
    monkeypatch.undo()
    assert series["train/loss"][0] == [float(s) for s in range(1, 20_000)]
    assert sum(1 for got in walked if got) <= 8  # a few runs, broken only where the step gains a digit
    assert_same(data, monkeypatch)


def test_damage_inside_a_regular_stretch(monkeypatch):
    events = [simple(s, tag, 0.5) for s in range(1, 3000) for tag in ("loss", "lr")]
    records = [frame_record(e.SerializeToString(), CRC) for e in events]
    bad_data = bytearray(records[1500])
    bad_data[-6] ^= 0xFF  # a data byte: that record's CRC fails
    records[1500] = bytes(bad_data)
    bad_utf8 = simple(1500, "x", 1.0).SerializeToString().replace(b"x", b"\xff")
    records[2000] = frame_record(bad_utf8, CRC)  # protobuf refuses a tag that is not UTF-8
    data = b"".join(records)
    _, _, skips, _, _ = assert_same(data, monkeypatch)
    assert skips == {"bad CRC": 1, "undecodable event": 1}
    broken = bytearray(data)
    at = sum(len(r) for r in records[:4000])
    broken[at + 9] ^= 0x01  # a header's CRC: nothing after it is read
    _, _, _, _, out = assert_same(bytes(broken), monkeypatch)
    assert out.broken_at == at


def test_a_chunk_cut_inside_a_record_waits_for_the_rest(monkeypatch):
    data = framed([simple(s, "loss", 0.5) for s in range(1, 500)])
    for cut in (len(data) - 1, len(data) - 20, len(data) // 2 + 3):
        assert_same(data[:cut], monkeypatch, final=False)
        assert_same(data[:cut], monkeypatch, final=True)


def test_crc32c_of_rows_matches_the_c_library():
    rng = np.random.default_rng(0)
    for length in (0, 1, 7, 45, 200):
        rows = rng.integers(0, 256, (64, length), dtype=np.uint8)
        assert crc32c_rows(rows).tolist() == [CRC(bytes(row)) for row in rows]


def test_a_header_of_a_cycle_length_with_a_wrong_length_field_is_not_taken(monkeypatch):
    """The walk reads lengths where the cycle puts headers; a record whose length differs ends it."""
    events = [simple(s, "loss", 0.5) for s in range(1, 200)] + [simple(200, "a much longer tag name", 0.5)]
    events += [simple(s, "loss", 0.5) for s in range(201, 400)]
    data = framed(events)
    series, *_ = assert_same(data, monkeypatch)
    assert len(series["loss"][0]) == 398 and series["a much longer tag name"][0] == [200.0]
    assert struct.unpack_from("<Q", data, 0)[0] > 0
