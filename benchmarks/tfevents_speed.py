"""How fast TensorBoard event files load: tuiloss's reader against EventAccumulator.

Writes an event file of scalars the way PyTorch's ``SummaryWriter.add_scalar``
does (one event per call: ``train/loss`` and ``train/lr`` at every step), reads
it with :class:`tuiloss.core.sources.tfevents.TfeventsRunSource` and with
TensorBoard's ``EventAccumulator`` keeping every point, and prints both speeds
and their ratio.

The file is framed here with the C crc32c: TensorBoard's own ``EventFileWriter``
computes CRCs in pure Python and takes minutes for a million events. The bytes
are the same (the tests write their fixtures with ``EventFileWriter``).

    python benchmarks/tfevents_speed.py [--points 1000000] [--style simple|tensor]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
import warnings

from tuiloss.core.formats.tfrecord import frame_record, load_crc
from tuiloss.core.model import Batch
from tuiloss.core.sources.tfevents import TfeventsRunSource


def write_events(path: str, points: int, style: str) -> None:
    """Write ``points`` scalars (two tags per step) to one event file."""
    from tensorboard.compat.proto import event_pb2, summary_pb2, tensor_pb2

    crc = load_crc()
    if crc is None:
        sys.exit("crc32c is needed to write the benchmark file: pip install crc32c")
    scalars = summary_pb2.SummaryMetadata(
        plugin_data=summary_pb2.SummaryMetadata.PluginData(plugin_name="scalars")
    )
    start = time.time()
    with open(path, "wb") as handle:
        version = event_pb2.Event(wall_time=start, file_version="brain.Event:2")
        handle.write(frame_record(version.SerializeToString(), crc))
        chunk = []
        for i in range(points):
            step = i // 2
            tag = "train/loss" if i % 2 == 0 else "train/lr"
            value = 2.0 / (1.0 + step * 1e-3) if i % 2 == 0 else 3e-4
            if style == "tensor":
                summary_value = summary_pb2.Summary.Value(
                    tag=tag,
                    tensor=tensor_pb2.TensorProto(dtype=1, float_val=[value]),
                    metadata=scalars,
                )
            else:
                summary_value = summary_pb2.Summary.Value(tag=tag, simple_value=value)
            event = event_pb2.Event(
                wall_time=start + step * 0.01,
                step=step,
                summary=summary_pb2.Summary(value=[summary_value]),
            )
            chunk.append(frame_record(event.SerializeToString(), crc))
            if len(chunk) >= 10000:
                handle.write(b"".join(chunk))
                chunk.clear()
        handle.write(b"".join(chunk))


def read_tuiloss(folder: str) -> int:
    source = TfeventsRunSource(folder)
    points = 0
    more = True
    while more:
        items, more = source.read()
        for item in items:
            if isinstance(item, Batch):  # the scalars, not the clock kept beside them (one a step)
                points += sum(len(steps) for name, (steps, _) in item.series.items() if name != "_timestamp")
            elif not hasattr(item, "reason"):
                print(f"  notice: {item.message}")
    return points


def read_accumulator(path: str, style: str) -> int:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

        accumulator = EventAccumulator(path, size_guidance={"scalars": 0, "tensors": 0})
        accumulator.Reload()
    tags = accumulator.Tags()
    if style == "tensor":
        return sum(len(accumulator.Tensors(tag)) for tag in tags["tensors"])
    return sum(len(accumulator.Scalars(tag)) for tag in tags["scalars"])


def timed(label: str, fn, *args) -> tuple[int, float]:
    started = time.perf_counter()
    points = fn(*args)
    seconds = time.perf_counter() - started
    print(f"{label:<18} {points:>9,} points in {seconds:6.2f} s = {points / seconds:>9,.0f} points/s")
    return points, seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--points", type=int, default=1_000_000)
    parser.add_argument("--style", choices=("simple", "tensor"), default="simple")
    parser.add_argument("--skip-accumulator", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "events.out.tfevents.1700000000.bench.1.0")
        started = time.perf_counter()
        write_events(path, args.points, args.style)
        size = os.path.getsize(path)
        print(
            f"wrote {args.points:,} {args.style} scalars, {size / 1e6:.1f} MB,"
            f" in {time.perf_counter() - started:.1f} s"
        )
        ours, ours_s = timed("tuiloss", read_tuiloss, folder)
        if args.skip_accumulator:
            return
        theirs, theirs_s = timed("EventAccumulator", read_accumulator, path, args.style)
        if ours != theirs:
            print(f"point counts differ: tuiloss {ours:,}, EventAccumulator {theirs:,}")
        print(f"ratio: tuiloss is {theirs_s / ours_s:.1f}x faster")


if __name__ == "__main__":
    main()
