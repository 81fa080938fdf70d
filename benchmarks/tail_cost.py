"""Tail row: what one appended line costs in a 10M-line log against a 1K-line log.

Both logs are nanoGPT stdout watched by one :class:`tuiloss.core.engine.Engine`.
Each round appends one line to each file and times the engine's read of that
dirty run plus storing the point, as the viewer's ingest worker does.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time

from benchmarks.datagen import DATA_DIR, appended_line, cached_log, write_log
from benchmarks.measure import Row, Timing, ratio_row

TARGET = 2.0


def _loaded(folder: str):
    from tuiloss.core.engine import Engine, apply_result
    from tuiloss.core.store import Store

    engine = Engine([folder])
    store = Store()
    apply_result(store, engine.scan())
    while True:
        result = engine.read(check_all=True)
        apply_result(store, result)
        if not result.more:
            break
    (run_id,) = list(engine.specs)
    return engine, store, run_id


def _append_and_read(engine, store, run_id: str, path: str, line: bytes) -> float:
    from tuiloss.core.engine import apply_result

    with open(path, "ab") as handle:
        handle.write(line)
    started = time.perf_counter()
    result = engine.read([run_id])
    added = apply_result(store, result)
    elapsed = time.perf_counter() - started
    if added != 3:
        raise AssertionError(f"an appended nanoGPT line gave {added} points, expected 3")
    return elapsed


def run(big_lines: int, appends: int) -> Row:
    work = tempfile.mkdtemp(prefix="tail-", dir=DATA_DIR)
    try:
        big = os.path.join(work, "big", "train.log")
        small = os.path.join(work, "small", "train.log")
        os.makedirs(os.path.dirname(big))
        os.makedirs(os.path.dirname(small))
        shutil.copyfile(cached_log("text", big_lines), big)
        write_log(small, "text", 1_000)
        engines = {
            "big": (*_loaded(os.path.dirname(big)), big, big_lines),
            "small": (*_loaded(os.path.dirname(small)), small, 1_000),
        }
        timing = Timing()
        for k in range(appends):
            for name in (("big", "small") if k % 2 else ("small", "big")):
                engine, store, run_id, path, start = engines[name]
                elapsed = _append_and_read(engine, store, run_id, path, appended_line("text", start + k))
                (timing.ours if name == "big" else timing.baseline).append(elapsed)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    row = ratio_row(
        "tail",
        f"one appended line: {big_lines:,}-line log / 1,000-line log (Engine read + store)",
        timing,
        TARGET,
        f"median of {appends} appends each",
    )
    return row
