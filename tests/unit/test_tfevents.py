"""TensorBoard event files: framing, CRCs, both scalar shapes, tailing a folder of files."""

import os
import struct
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip("tensorboard")

from tensorboard.compat.proto import event_pb2, summary_pb2, tensor_pb2, tensor_shape_pb2  # noqa: E402
from tensorboard.plugins.scalar import metadata as scalar_metadata  # noqa: E402
from tensorboard.summary.writer.event_file_writer import EventFileWriter  # noqa: E402
from tensorboard.util import tensor_util  # noqa: E402

from tuiloss.core.formats import tfevents  # noqa: E402
from tuiloss.core.formats.tfevents import (  # noqa: E402
    MISSING_EXTRA,
    EventDecoder,
    file_order,
    is_tfevents_file,
    load_event_class,
    tensor_scalar,
)
from tuiloss.core.formats.tfrecord import NO_CRC, frame_record, load_crc  # noqa: E402
from tuiloss.core.model import Batch, Notice, SegmentEvent  # noqa: E402
from tuiloss.core.sources import tfevents as tfevents_source  # noqa: E402
from tuiloss.core.sources.tfevents import TfeventsRunSource  # noqa: E402
from source_helpers import drain, points, skipped

# -- events shaped the way real writers shape them ---------------------------------


def simple_event(step, tag, value, wall_time=1700000000.0):
    """PyTorch ``SummaryWriter.add_scalar`` (default) and TF1 ``tf.summary.scalar``."""
    value = summary_pb2.Summary.Value(tag=tag, simple_value=value)
    return event_pb2.Event(wall_time=wall_time, step=step, summary=summary_pb2.Summary(value=[value]))


def new_style_event(step, tag, value, double=False):
    """PyTorch ``add_scalar(..., new_style=True)``: a tensor with no shape, plugin "scalars"."""
    if double:
        tensor = tensor_pb2.TensorProto(dtype="DT_DOUBLE", double_val=[value])
    else:
        tensor = tensor_pb2.TensorProto(dtype="DT_FLOAT", float_val=[value])
    meta = summary_pb2.SummaryMetadata(
        plugin_data=summary_pb2.SummaryMetadata.PluginData(plugin_name="scalars")
    )
    value = summary_pb2.Summary.Value(tag=tag, tensor=tensor, metadata=meta)
    return event_pb2.Event(wall_time=1700000000.0, step=step, summary=summary_pb2.Summary(value=[value]))


def tf2_event(step, tag, value, first):
    """TF2 ``tf.summary.scalar``: float32 in tensor_content, shape {}, metadata on the first."""
    tensor = tensor_pb2.TensorProto(
        dtype="DT_FLOAT",
        tensor_shape=tensor_shape_pb2.TensorShapeProto(),
        tensor_content=struct.pack("<f", value),
    )
    value = summary_pb2.Summary.Value(tag=tag, tensor=tensor)
    if first:
        value.metadata.CopyFrom(scalar_metadata.create_summary_metadata(display_name=tag, description=""))
    return event_pb2.Event(wall_time=1700000000.0, step=step, summary=summary_pb2.Summary(value=[value]))


def histogram_event(step, tag):
    histo = summary_pb2.HistogramProto(min=0.0, max=1.0, num=2, sum=1.0, sum_squares=1.0)
    value = summary_pb2.Summary.Value(tag=tag, histo=histo)
    return event_pb2.Event(wall_time=1700000000.0, step=step, summary=summary_pb2.Summary(value=[value]))


def text_event(step, tag):
    tensor = tensor_util.make_tensor_proto(np.array("hello", dtype=object))
    meta = summary_pb2.SummaryMetadata(
        plugin_data=summary_pb2.SummaryMetadata.PluginData(plugin_name="text")
    )
    value = summary_pb2.Summary.Value(tag=tag, tensor=tensor, metadata=meta)
    return event_pb2.Event(wall_time=1700000000.0, step=step, summary=summary_pb2.Summary(value=[value]))


def write_with_tensorboard(folder, events, suffix=""):
    """Write ``events`` with TensorBoard's EventFileWriter (file_version event first)."""
    writer = EventFileWriter(str(folder), filename_suffix=suffix)
    for event in events:
        writer.add_event(event)
    writer.flush()
    writer.close()
    (path,) = [p for p in folder.iterdir() if p.name.endswith(suffix) and "tfevents" in p.name]
    return path


def encoded(tmp_path_factory_or_path, events):
    """The exact bytes EventFileWriter writes for ``events`` (file_version first)."""
    scratch = tmp_path_factory_or_path / "scratch"
    scratch.mkdir()
    path = write_with_tensorboard(scratch, events)
    data = path.read_bytes()
    path.unlink()
    scratch.rmdir()
    return data


def record_bounds(data):
    """Start offsets of every record in ``data``, plus its length."""
    bounds, pos = [], 0
    while pos < len(data):
        bounds.append(pos)
        (length,) = struct.unpack_from("<Q", data, pos)
        pos += 12 + length + 4
    return bounds + [len(data)]





def f32(x):
    return float(np.float32(x))


@pytest.fixture
def settled(monkeypatch):
    """Trust folder listings at once (tests write folders faster than any mtime tick)."""
    monkeypatch.setattr(tfevents_source, "_MTIME_SLACK", -1e9)


# -- reading --------------------------------------------------------------------------


def test_reads_simple_values_and_every_scalar_tensor_shape(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    events = []
    for step in range(5):
        events.append(simple_event(step * 10, "train/loss", 1.0 / (step + 1)))
        events.append(new_style_event(step * 10, "train/acc", 0.5 + step / 10))
        events.append(new_style_event(step * 10, "train/lr", 3e-4, double=True))
        events.append(tf2_event(step * 10, "epoch_loss", 2.0 - step / 4, first=step == 0))
        events.append(histogram_event(step * 10, "weights"))
        events.append(text_event(step * 10, "notes"))
    write_with_tensorboard(run, events)

    items = drain(TfeventsRunSource(run))

    assert not [item for item in items if isinstance(item, (Notice, SegmentEvent))]
    steps = [0.0, 10.0, 20.0, 30.0, 40.0]
    assert points(items, "train/loss") == (steps, [f32(1.0 / (s + 1)) for s in range(5)])
    assert points(items, "train/acc") == (steps, [f32(0.5 + s / 10) for s in range(5)])
    assert points(items, "train/lr") == (steps, [3e-4] * 5)
    assert points(items, "epoch_loss") == (steps, [f32(2.0 - s / 4) for s in range(5)])
    series = {name for item in items if isinstance(item, Batch) for name in item.series}
    assert series == {"train/loss", "train/acc", "train/lr", "epoch_loss", "_timestamp"}
    assert points(items, "_timestamp")[0] == steps  # the events' wall times, once a step: the run's clock
    assert skipped(items) == {}


def test_wall_times_once_a_step_across_reads(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    events = [simple_event(step, tag, 1.0, wall_time=1.7e9 + step) for step in range(3) for tag in ("a", "b")]
    write_with_tensorboard(run, events)
    items = drain(TfeventsRunSource(run))
    assert points(items, "_timestamp") == ([0.0, 1.0, 2.0], [1.7e9, 1.7e9 + 1, 1.7e9 + 2])


def test_several_values_in_one_event_and_nan_kept(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    summary = summary_pb2.Summary(
        value=[
            summary_pb2.Summary.Value(tag="loss", simple_value=float("nan")),
            summary_pb2.Summary.Value(tag="acc", simple_value=0.25),
            summary_pb2.Summary.Value(tag="grad", simple_value=float("inf")),
        ]
    )
    write_with_tensorboard(run, [event_pb2.Event(step=7, summary=summary)])

    items = drain(TfeventsRunSource(run))

    steps, values = points(items, "loss")
    assert steps == [7.0] and np.isnan(values[0])
    assert points(items, "acc") == ([7.0], [0.25])
    assert points(items, "grad") == ([7.0], [float("inf")])


@pytest.mark.parametrize(
    "tensor, expected",
    [
        (tensor_util.make_tensor_proto(np.float32(1.5)), 1.5),
        (tensor_util.make_tensor_proto(np.float64(2.25)), 2.25),
        (tensor_util.make_tensor_proto(np.float16(0.5)), 0.5),
        (tensor_util.make_tensor_proto(np.int64(12)), 12.0),
        (tensor_util.make_tensor_proto(np.int32(-3)), -3.0),
        (tensor_util.make_tensor_proto(np.array([4.0], dtype=np.float32)), 4.0),
        (tensor_pb2.TensorProto(dtype="DT_FLOAT", tensor_content=struct.pack("<f", 0.75)), 0.75),
        (tensor_pb2.TensorProto(dtype="DT_DOUBLE", tensor_content=struct.pack("<d", 0.1)), 0.1),
        (tensor_pb2.TensorProto(dtype="DT_HALF", tensor_content=np.float16(1.25).tobytes()), 1.25),
        (tensor_pb2.TensorProto(dtype="DT_BFLOAT16", tensor_content=b"\x80\x3f"), 1.0),
        (tensor_pb2.TensorProto(dtype="DT_BFLOAT16", half_val=[0x4000]), 2.0),
        (tensor_util.make_tensor_proto(np.array([1.0, 2.0], dtype=np.float32)), None),
        (tensor_util.make_tensor_proto(np.array("text", dtype=object)), None),
        (tensor_pb2.TensorProto(dtype="DT_FLOAT"), None),
    ],
)
def test_tensor_scalar(tensor, expected):
    assert tensor_scalar(tensor) == expected


def test_unreadable_scalar_tensor_is_counted(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    bad = new_style_event(1, "loss", 1.0)
    bad.summary.value[0].tensor.CopyFrom(tensor_util.make_tensor_proto(np.zeros(3, dtype=np.float32)))
    write_with_tensorboard(run, [new_style_event(0, "loss", 2.0), bad, new_style_event(2, "loss", 0.5)])

    items = drain(TfeventsRunSource(run))

    assert points(items, "loss") == ([0.0, 2.0], [2.0, 0.5])
    assert skipped(items) == {"unreadable scalar tensor": 1}


def test_framing_matches_tensorboard_writer(tmp_path):
    event = simple_event(3, "loss", 0.5)
    written = encoded(tmp_path, [event])
    version_end = record_bounds(written)[1]
    assert written[version_end:] == frame_record(event.SerializeToString(), load_crc())


# -- tailing ---------------------------------------------------------------------------


def test_half_a_record_waits_for_the_rest(tmp_path, settled):
    data = encoded(tmp_path, [simple_event(s, "loss", float(s)) for s in range(4)])
    bounds = record_bounds(data)
    cut = (bounds[3] + bounds[4]) // 2  # inside the record of step 2
    run = tmp_path / "run"
    run.mkdir()
    path = run / "events.out.tfevents.1700000000.host.1.0"
    path.write_bytes(data[:cut])
    source = TfeventsRunSource(run)

    first = drain(source)
    assert points(first, "loss") == ([0.0, 1.0], [0.0, 1.0])
    assert not source.changed()

    with open(path, "ab") as handle:
        handle.write(data[cut:])
    assert source.changed()
    second = drain(source)
    assert points(second, "loss") == ([2.0, 3.0], [2.0, 3.0])
    assert skipped(first) == skipped(second) == {}


def test_a_header_split_across_reads_waits_too(tmp_path):
    data = encoded(tmp_path, [simple_event(s, "loss", float(s)) for s in range(3)])
    bounds = record_bounds(data)
    run = tmp_path / "run"
    run.mkdir()
    path = run / "events.out.tfevents.1700000000.host.1.0"
    path.write_bytes(data[: bounds[2] + 5])  # five bytes of the third record's header
    source = TfeventsRunSource(run)
    assert points(drain(source), "loss") == ([0.0], [0.0])
    with open(path, "ab") as handle:
        handle.write(data[bounds[2] + 5 :])
    assert points(drain(source), "loss") == ([1.0, 2.0], [1.0, 2.0])


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    values=st.lists(st.floats(width=32, allow_nan=False), min_size=1, max_size=30),
    cuts=st.lists(st.integers(min_value=0, max_value=5000), max_size=10),
)
def test_any_split_of_appends_reads_exactly_what_was_written(tmp_path_factory, values, cuts):
    folder = tmp_path_factory.mktemp("split")
    crc = load_crc()
    data = b"".join(frame_record(simple_event(i, "loss", v).SerializeToString(), crc) for i, v in enumerate(values))
    path = folder / "events.out.tfevents.1700000000.host.1.0"
    path.write_bytes(b"")
    source = TfeventsRunSource(folder)
    items = []
    bounds = sorted({min(c, len(data)) for c in cuts} | {0, len(data)})
    for start, end in zip(bounds, bounds[1:]):
        with open(path, "ab") as handle:
            handle.write(data[start:end])
        items += drain(source)
    assert points(items, "loss") == ([float(i) for i in range(len(values))], [float(v) for v in values])
    assert skipped(items) == {}


def test_a_new_file_in_the_folder_continues_the_run(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    first = write_with_tensorboard(run, [simple_event(s, "loss", 1.0) for s in range(3)], suffix=".a")
    source = TfeventsRunSource(run)
    assert points(drain(source), "loss")[0] == [0.0, 1.0, 2.0]
    assert source.paths() == [str(first)]

    # A resumed run writes a new file; its name sorts after the first one.
    second = write_with_tensorboard(run, [simple_event(s, "loss", 0.5) for s in range(2, 5)], suffix=".b")
    assert source.changed()
    items = drain(source)
    assert points(items, "loss") == ([2.0, 3.0, 4.0], [0.5, 0.5, 0.5])
    # in the order they were written (the writer's counter may go from 9 to 10 between the two)
    assert source.paths() == [str(first), str(second)]


def test_a_file_created_in_the_same_mtime_tick_is_not_missed(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    crc = load_crc()
    frozen = os.stat(run).st_mtime_ns
    source = TfeventsRunSource(run)
    assert drain(source) == []
    # A coarse clock gives the folder the same mtime after the file appears.
    (run / "events.out.tfevents.1700000000.h.1.0").write_bytes(
        frame_record(simple_event(1, "loss", 1.0).SerializeToString(), crc)
    )
    os.utime(run, ns=(frozen, frozen))
    assert source.changed()
    assert points(drain(source), "loss") == ([1.0], [1.0])


def test_files_are_read_in_name_order(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    crc = load_crc()
    for name, steps in (("events.out.tfevents.1700000002.h.1.0", [10, 11]), ("events.out.tfevents.1700000001.h.1.0", [0, 1])):
        (run / name).write_bytes(b"".join(frame_record(simple_event(s, "loss", 1.0).SerializeToString(), crc) for s in steps))
    assert points(drain(TfeventsRunSource(run)), "loss")[0] == [0.0, 1.0, 10.0, 11.0]


def test_a_single_event_file_is_a_run_too(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    path = write_with_tensorboard(run, [simple_event(1, "loss", 1.0)])
    source = TfeventsRunSource(path)
    assert points(drain(source), "loss") == ([1.0], [1.0])
    assert source.paths() == [str(path)]


def test_truncation_starts_a_new_segment(tmp_path):
    data = encoded(tmp_path, [simple_event(s, "loss", float(s)) for s in range(4)])
    restarted = encoded(tmp_path, [simple_event(s, "loss", 9.0) for s in range(2)])
    run = tmp_path / "run"
    run.mkdir()
    path = run / "events.out.tfevents.1700000000.host.1.0"
    path.write_bytes(data)
    source = TfeventsRunSource(run)
    drain(source)

    with open(path, "r+b") as handle:  # same inode, shorter content
        handle.truncate(0)
        handle.write(restarted)
    items = drain(source)

    events = [item for item in items if isinstance(item, SegmentEvent)]
    assert [event.reason for event in events] == ["truncated"]
    assert path.name in events[0].detail
    assert items.index(events[0]) < next(i for i, item in enumerate(items) if isinstance(item, Batch))
    assert points(items, "loss") == ([0.0, 1.0], [9.0, 9.0])


def test_deleted_folder_is_reported_once(tmp_path, settled):
    import shutil

    run = tmp_path / "run"
    run.mkdir()
    write_with_tensorboard(run, [simple_event(1, "loss", 1.0)])
    source = TfeventsRunSource(run)
    drain(source)
    shutil.rmtree(run)

    items = drain(source)
    assert [item.reason for item in items if isinstance(item, SegmentEvent)] == ["deleted"]
    assert [item.level for item in items if isinstance(item, Notice)] == ["warning"]
    assert not source.changed()
    assert drain(source) == []


# -- damage ----------------------------------------------------------------------------


def test_bad_data_crc_skips_only_that_record(tmp_path):
    data = bytearray(encoded(tmp_path, [simple_event(s, "loss", float(s)) for s in range(4)]))
    bounds = record_bounds(data)
    data[bounds[2] + 14] ^= 0xFF  # a byte inside the data of the step-1 record
    run = tmp_path / "run"
    run.mkdir()
    (run / "events.out.tfevents.1700000000.host.1.0").write_bytes(bytes(data))

    items = drain(TfeventsRunSource(run))

    assert points(items, "loss") == ([0.0, 2.0, 3.0], [0.0, 2.0, 3.0])
    assert skipped(items) == {"bad CRC": 1}
    (batch,) = [item for item in items if isinstance(item, Batch)]
    assert batch.examples[0].line == 3  # the file_version event is record 1


def test_bad_header_crc_stops_the_file_until_it_is_rewritten(tmp_path, settled):
    data = bytearray(encoded(tmp_path, [simple_event(s, "loss", float(s)) for s in range(4)]))
    bounds = record_bounds(data)
    data[bounds[3]] ^= 0x01  # the length of the step-2 record
    run = tmp_path / "run"
    run.mkdir()
    path = run / "events.out.tfevents.1700000000.host.1.0"
    path.write_bytes(bytes(data))
    source = TfeventsRunSource(run)

    items = drain(source)
    assert points(items, "loss") == ([0.0, 1.0], [0.0, 1.0])
    (notice,) = [item for item in items if isinstance(item, Notice)]
    assert notice.level == "error" and f"byte {bounds[3]}" in notice.message

    with open(path, "ab") as handle:
        handle.write(encoded(tmp_path, [simple_event(9, "loss", 9.0)]))
    assert not source.changed()
    assert drain(source) == []

    path.write_bytes(encoded(tmp_path, [simple_event(0, "loss", 5.0)]))  # rewritten shorter
    items = drain(source)
    assert points(items, "loss") == ([0.0], [5.0])


def test_garbage_event_and_incomplete_tail_are_counted(tmp_path):
    crc = load_crc()
    good = frame_record(simple_event(1, "loss", 1.0).SerializeToString(), crc)
    garbage = frame_record(b"\xff\xff\xff\xff", crc)
    decoder = EventDecoder(load_event_class(), crc)
    batch = Batch()

    result = decoder.feed(good + garbage + good[:10], batch, final=True)

    assert result.consumed == len(good) + len(garbage) + 10
    assert result.records == 3
    assert dict(batch.skipped) == {"undecodable event": 1, "incomplete record at end of file": 1}


def test_oversized_records_are_skipped_across_reads(tmp_path, monkeypatch):
    monkeypatch.setattr(tfevents, "MAX_RECORD", 64)
    crc = load_crc()
    big = simple_event(1, "x" * 200, 1.0)
    data = b"".join(
        frame_record(event.SerializeToString(), crc)
        for event in (simple_event(0, "loss", 0.0), big, simple_event(2, "loss", 2.0))
    )
    bounds = record_bounds(data)
    run = tmp_path / "run"
    run.mkdir()
    path = run / "events.out.tfevents.1700000000.host.1.0"
    path.write_bytes(data[: bounds[1] + 40])  # the big record's header and a little of it
    source = TfeventsRunSource(run)
    first = drain(source)
    with open(path, "ab") as handle:
        handle.write(data[bounds[1] + 40 :])
    second = drain(source)

    assert points(first + second, "loss") == ([0.0, 2.0], [0.0, 2.0])
    assert skipped(first + second) == {"oversized record": 1}


# -- missing pieces --------------------------------------------------------------------


def test_missing_extra_gives_one_clear_notice(tmp_path, monkeypatch):
    run = tmp_path / "run"
    run.mkdir()
    write_with_tensorboard(run, [simple_event(1, "loss", 1.0)])
    monkeypatch.setitem(sys.modules, "tensorboard.compat.proto.event_pb2", None)
    monkeypatch.setitem(sys.modules, "tensorboardX", None)
    monkeypatch.setitem(sys.modules, "tensorboardX.proto.event_pb2", None)
    source = TfeventsRunSource(run)

    assert source.changed()
    items, more = source.read()
    assert items == [Notice("error", MISSING_EXTRA)] and not more
    assert "pip install 'tuiloss[tensorboard]'" in MISSING_EXTRA
    assert not source.changed()
    assert source.read() == ([], False)


def test_without_a_crc_library_records_are_read_unchecked(tmp_path, monkeypatch):
    run = tmp_path / "run"
    run.mkdir()
    write_with_tensorboard(run, [simple_event(1, "loss", 1.0)])
    monkeypatch.setitem(sys.modules, "crc32c", None)
    monkeypatch.setitem(sys.modules, "google_crc32c", None)
    assert load_crc() is None

    items = drain(TfeventsRunSource(run))

    assert [item for item in items if isinstance(item, Notice)] == [Notice("warning", NO_CRC)]
    assert points(items, "loss") == ([1.0], [1.0])


def test_importing_the_core_loads_no_tensorboard():
    code = (
        "import sys, tuiloss.core.sources.tfevents, tuiloss.core.sources.mlflow;"
        "print([m for m in ('tensorboard', 'tensorboardX', 'google.protobuf') if m in sys.modules])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_is_tfevents_file(tmp_path):
    (tmp_path / "events.out.tfevents.1700000000.host.1.0").write_bytes(b"")
    (tmp_path / "events.out.tfevents.1700000000.host.1.v2").write_bytes(b"")
    (tmp_path / "metrics.csv").write_text("step,loss\n")
    (tmp_path / "tfevents_dir").mkdir()
    assert is_tfevents_file(tmp_path / "events.out.tfevents.1700000000.host.1.0")
    assert is_tfevents_file(str(tmp_path / "events.out.tfevents.1700000000.host.1.v2"))
    assert not is_tfevents_file(tmp_path / "metrics.csv")
    assert not is_tfevents_file(tmp_path / "tfevents_dir")


def test_event_file_writer_output_has_a_version_event_first(tmp_path):
    data = encoded(tmp_path, [])
    event = event_pb2.Event.FromString(data[12 : record_bounds(data)[1] - 4])
    assert event.file_version.startswith("brain.Event:")


def test_file_order_compares_numbers_as_numbers():
    names = [
        "events.out.tfevents.1700000001.host.7.10",
        "events.out.tfevents.1700000001.host.7.9",
        "events.out.tfevents.1699999999.host.7.11",
    ]
    assert sorted(names, key=file_order) == [names[2], names[1], names[0]]


def test_keras_train_and_validation_folders_are_one_run(tmp_path):
    from tuiloss.core.engine import load

    logdir = tmp_path / "logs" / "fit" / "20240101-120000"
    for split, offset in (("train", 0.0), ("validation", 0.1)):
        folder = logdir / split
        folder.mkdir(parents=True)
        write_with_tensorboard(folder, [tf2_event(epoch, "epoch_loss", 1.0 / (epoch + 1) + offset, epoch == 0) for epoch in range(3)])
    store, _, _ = load([str(tmp_path)])
    (run,) = list(store)
    assert run.format == "tfevents" and run.source.endswith("20240101-120000")
    assert run.primary_metric == "epoch_loss" and run.eval_metric == "val/epoch_loss"
    steps, values = run.series["val/epoch_loss"].visible()
    assert steps.tolist() == [0, 1, 2] and values[0] == pytest.approx(1.1)


def test_a_prefixed_folder_keeps_what_its_batches_say_of_the_axis(tmp_path):
    # Ultralytics-like: every batch loss of an epoch at step = epoch, in the validation folder
    from tuiloss.core.sources.tfevents import SplitRunSource

    logdir = tmp_path / "logs"
    (logdir / "train").mkdir(parents=True)
    (logdir / "validation").mkdir()
    write_with_tensorboard(logdir / "train", [simple_event(e, "epoch_loss", 1.0 / (e + 1)) for e in range(3)])
    write_with_tensorboard(logdir / "validation", [simple_event(e // 4, "epoch_loss", 1.0 + e % 4) for e in range(12)])
    source = SplitRunSource({str(logdir / "train"): "", str(logdir / "validation"): "val/"})
    batches = [item for item in drain(source) if isinstance(item, Batch)]
    val = [b for b in batches if "val/epoch_loss" in b.series]
    assert val and all(b.meta.get("repeated_steps") for b in val)
    assert all(name.startswith("val/") for b in val for name in b.series)
    assert all(name in b.series for b in val for group in b.groups for name in group.metrics)
    train = [b for b in batches if "epoch_loss" in b.series]
    assert train and not any(b.meta.get("repeated_steps") for b in train)


def test_ultralytics_batch_losses_at_step_epoch_are_read_as_one_median_per_epoch(tmp_path):
    # Ultralytics 8.0's on_batch_end wrote the epoch's running mean loss at step = epoch + 1
    from tuiloss.core.engine import load
    from tuiloss.core.report import build_report, render_text

    rng = np.random.default_rng(3)
    events = []
    for epoch in range(20):
        level, total = 3.0 * 0.93**epoch, 0.0
        for batch in range(30):
            total += level * rng.lognormal(0.0, 0.3) * (3.0 if batch == 0 else 1.0)
            events.append(simple_event(epoch + 1, "train/box_loss", total / (batch + 1)))
    folder = tmp_path / "runs" / "detect" / "train"
    folder.mkdir(parents=True)
    write_with_tensorboard(folder, events)
    store, _, _ = load([str(tmp_path)])
    (log,) = store.runs.values()
    assert log.meta.get("repeated_steps") is True
    (run,) = build_report(store).runs
    m = run.primary
    assert m.points == 600 and m.distinct_steps == 20 and m.values_per_step == 30
    assert not any(a.kind == "spike" for a in m.anomalies)
    assert "30 values per step (600 points on 20 steps), analysed as their median" in render_text(build_report(store))
