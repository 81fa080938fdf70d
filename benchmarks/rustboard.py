"""TensorBoard row against RustBoard: tuiloss' event-file reader / ``tensorboard --load_fast``.

``tensorboard --load_fast=true`` hands the reading to RustBoard, the Rust data server that
``tensorboard`` ships (package ``tensorboard_data_server``). The baseline runs that server
alone on the same folder, once (``--reload once``), keeping every scalar
(``--samples-per-plugin scalars=all``) and checking every record's CRC (``--checksum``,
as tuiloss does), and times it from its start to its own "Finished load cycle" line.
tuiloss is timed reading the folder with its source (framing, CRCs, decoding, points),
in this process. Both alternate; the ratio is the median of the pairs.
"""

from __future__ import annotations

import os
import re
import subprocess
import time

from benchmarks.events import cached_events
from benchmarks.measure import Skip, Timing, ratio_row

TARGET = 1.0
_FINISHED = re.compile(rb"Finished load cycle")


def server_binary() -> str:
    try:
        from tensorboard_data_server import server_binary as find
    except ImportError as exc:
        raise Skip("tensorboard_data_server (RustBoard) is not installed: pip install 'tuiloss[bench]'") from exc
    path = find()
    if not path or not os.path.exists(path):
        raise Skip("tensorboard_data_server has no server binary for this platform")
    return path


def read_rustboard(binary: str, folder: str, timeout: float = 120.0) -> float:
    """Seconds from starting RustBoard on ``folder`` to the end of its first load cycle."""
    began = time.perf_counter()
    proc = subprocess.Popen(
        [binary, "--logdir", folder, "--reload", "once", "--samples-per-plugin", "scalars=all",
         "--checksum", "--port", "0", "--verbose"],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )
    try:
        seen = b""
        while time.perf_counter() - began < timeout:
            line = proc.stderr.readline()
            if not line:
                raise RuntimeError(f"RustBoard exited before loading: {seen[-500:]!r}")
            seen += line
            if _FINISHED.search(line):
                return time.perf_counter() - began
        raise TimeoutError(f"RustBoard did not finish loading {folder} in {timeout:g} s")
    finally:
        proc.kill()
        proc.wait()


def run(points: int, repeat: int):
    from benchmarks.tfevents_speed import read_tuiloss

    binary = server_binary()
    path = cached_events(points)
    folder = os.path.dirname(path)
    if read_tuiloss(folder) != points:
        raise AssertionError(f"tfevents: tuiloss did not read the {points} points written")
    read_rustboard(binary, folder)  # the page cache warm for both
    timing = Timing()
    for k in range(repeat):
        if k % 2:
            started = time.perf_counter()
            read_tuiloss(folder)
            timing.ours.append(time.perf_counter() - started)
            timing.baseline.append(read_rustboard(binary, folder))
        else:
            timing.baseline.append(read_rustboard(binary, folder))
            started = time.perf_counter()
            read_tuiloss(folder)
            timing.ours.append(time.perf_counter() - started)
    note = (
        f"{points:,} scalars, {os.path.getsize(path) / 1e6:,.0f} MB, CRCs checked by both;"
        f" tuiloss {points / min(timing.ours) / 1e3:,.0f}K points/s, RustBoard {points / min(timing.baseline) / 1e3:,.0f}K points/s"
        " (its whole load cycle, from its start, every scalar kept)"
    )
    return ratio_row("tfevents-rustboard", "TensorBoard event file / RustBoard (`tensorboard --load_fast`)",
                     timing, TARGET, note)
