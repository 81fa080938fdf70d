"""TensorBoard row: tuiloss's event-file reader against EventAccumulator keeping every point.

Reuses :mod:`benchmarks.tfevents_speed` (its writer frames records with the C
crc32c, so a million scalars are written in seconds; the bytes are what
``SummaryWriter.add_scalar`` writes).
"""

from __future__ import annotations

import os

from benchmarks.datagen import DATA_DIR
from benchmarks.measure import Row, paired, ratio_row

TARGET = 0.2


def cached_events(points: int, style: str = "simple") -> str:
    """A folder holding one event file of ``points`` scalars."""
    from benchmarks.tfevents_speed import write_events

    folder = os.path.join(DATA_DIR, f"v1-tfevents-{style}-{points}")
    path = os.path.join(folder, "events.out.tfevents.1700000000.bench.1.0")
    if not os.path.exists(path):
        os.makedirs(folder, exist_ok=True)
        write_events(path + ".part", points, style)
        os.replace(path + ".part", path)
    return path


def run(points: int, repeat: int) -> Row:
    from benchmarks.tfevents_speed import read_accumulator, read_tuiloss

    path = cached_events(points)
    folder = os.path.dirname(path)
    ours = read_tuiloss(folder)
    theirs = read_accumulator(path, "simple")
    if ours != theirs or ours != points:
        raise AssertionError(f"tfevents: tuiloss read {ours} points, EventAccumulator {theirs}, wrote {points}")
    timing = paired(lambda: read_tuiloss(folder), lambda: read_accumulator(path, "simple"), repeat)
    size = os.path.getsize(path)
    ours_s = min(timing.ours)
    note = (
        f"{points:,} scalars, {size / 1e6:,.0f} MB; tuiloss {points / ours_s / 1e3:,.0f}K points/s,"
        f" EventAccumulator {points / min(timing.baseline) / 1e3:,.0f}K points/s"
    )
    return ratio_row("tfevents", "TensorBoard event file / `EventAccumulator` keeping every point", timing, TARGET, note)
