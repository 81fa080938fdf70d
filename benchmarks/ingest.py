"""Ingest rows: loading CSV, JSONL and nanoGPT text logs against the fastest plain readers.

tuiloss is timed through :func:`tuiloss.core.engine.load` (discovery, tailer,
parser and store: what ``tuiloss report FILE`` does before it prints). Each
baseline reads the same file with nothing else:

- CSV: ``pandas.read_csv(path)``;
- JSONL: ``for line in f: orjson.loads(line)``;
- text: ``for line in f: rx.search(line)`` with a compiled nanoGPT pattern (it
  finds the numbers but does not convert them).

The physical limit is a raw read of the same bytes in 32 MiB blocks.
"""

from __future__ import annotations

import os
import re
import time

from benchmarks.datagen import cached_log
from benchmarks.measure import Row, median, paired, ratio_row, timed

TARGETS = {"csv": 1.25, "jsonl": 1.0, "text": 1.0}
WHAT = {
    "csv": "CSV ingest `step,loss,lr` / `pandas.read_csv`",
    "jsonl": "JSONL ingest `{step,loss,lr}` / bare `orjson.loads` loop",
    "text": "nanoGPT text ingest / bare compiled-regex loop",
}
METRICS = {"csv": 2, "jsonl": 2, "text": 3}
NANOGPT = re.compile(r"^iter (\d+): loss ([-\d.]+), time ([-\d.]+)ms, mfu ([-\d.]+)%")


def load_with_tuiloss(path: str) -> int:
    from tuiloss.core.engine import load

    store, _, _ = load([path])
    return store.points


def read_csv_with_pandas(path: str) -> int:
    import pandas as pd

    return int(pd.read_csv(path).shape[0])


def read_csv_one_thread(path: str) -> int | None:
    """``pandas.read_csv(path)`` held to one thread (pandas 3.1 reads a big path on several); None before 3.1."""
    import pandas as pd

    try:
        with pd.option_context("mode.max_threads", 1):
            return int(pd.read_csv(path).shape[0])
    except (KeyError, ValueError, pd.errors.OptionError):
        return None


def loop_orjson(path: str) -> int:
    import orjson

    count = 0
    loads = orjson.loads
    with open(path, "rb") as handle:
        for line in handle:
            loads(line)
            count += 1
    return count


def loop_regex(path: str) -> int:
    count = 0
    search = NANOGPT.search
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            if search(line):
                count += 1
    return count


def read_raw(path: str) -> int:
    size = 0
    with open(path, "rb", buffering=0) as handle:
        while True:
            block = handle.read(32 << 20)
            if not block:
                return size
            size += len(block)


BASELINES = {"csv": read_csv_with_pandas, "jsonl": loop_orjson, "text": loop_regex}


def chunks_of(path: str) -> list[tuple[bytes, int]]:
    """The file cut as LineSource cuts it: reads of DEFAULT_MAX_READ ending at a newline."""
    from tuiloss.core.tail import DEFAULT_MAX_READ

    out = []
    line = 1
    rest = b""
    with open(path, "rb") as handle:
        while True:
            block = handle.read(DEFAULT_MAX_READ)
            if not block:
                return out
            block = rest + block
            end = block.rfind(b"\n") + 1
            block, rest = block[:end], block[end:]
            out.append((block, line))
            line += block.count(b"\n")


def parse_only(fmt: str, chunks: list[tuple[bytes, int]]) -> int:
    """Feed the chunks to a fresh parser: the parser's own share of a load."""
    from tuiloss.core.formats.csv import CsvParser
    from tuiloss.core.formats.jsonl import JsonlParser
    from tuiloss.core.formats.stdout import TextParser

    parser = {"csv": CsvParser, "jsonl": JsonlParser, "text": TextParser}[fmt]()
    return sum(parser.feed(chunk, line).points for chunk, line in chunks)


def long_line_scan_seconds(chunks: list[tuple[bytes, int]]) -> float:
    """Time LineSource spends looking for over-long lines in ``chunks``."""
    from tuiloss.core.sources.line import _has_long_line

    total = 0.0
    for chunk, _ in chunks:
        started = time.perf_counter()
        _has_long_line(chunk)
        total += time.perf_counter() - started
    return total


def run(fmt: str, lines: int, repeat: int) -> tuple[Row, dict]:
    """Measure one format; return its row and the figures of the physical-limit table."""
    path = cached_log(fmt, lines)
    size = os.path.getsize(path)
    points = load_with_tuiloss(path)
    expected = lines * METRICS[fmt]
    if points != expected:
        raise AssertionError(f"{fmt}: tuiloss read {points} points, expected {expected}")
    timing = paired(lambda: load_with_tuiloss(path), lambda: BASELINES[fmt](path), repeat)
    raw = median([timed(lambda: read_raw(path)) for _ in range(3)])
    chunks = chunks_of(path)
    scan = long_line_scan_seconds(chunks)
    parse = paired(lambda: parse_only(fmt, chunks), lambda: BASELINES[fmt](path), repeat)
    del chunks
    ours = median(timing.ours)
    note = (
        f"{lines:,} lines, {size / 1e6:,.0f} MB; tuiloss {points / ours / 1e6:.1f}M points/s;"
        f" the parser alone (fed the same chunks) {median(parse.ratios):.2f}x the baseline"
    )
    if fmt == "csv" and read_csv_one_thread(path) is not None:
        one_thread = median([timed(lambda: read_csv_one_thread(path)) for _ in range(3)])
        note += (
            f"; `pandas.read_csv` reads the path on several threads here: held to one thread it takes"
            f" {one_thread:.2f} s, and tuiloss is {ours / one_thread:.2f}x that"
        )
    if scan > 0.05 * ours:
        note += (
            f"; {scan / ours:.0%} of tuiloss's time is LineSource's per-line long-line scan"
            f" (without it {median([(a - scan) / b for a, b in zip(timing.ours, timing.baseline)]):.2f}x)"
        )
    row = ratio_row(fmt, WHAT[fmt], timing, TARGETS[fmt], note)
    limit = {
        "format": fmt,
        "bytes": size,
        "raw": raw,
        "ours": ours,
        "baseline": median(timing.baseline),
        "scan": scan,
    }
    return row, limit
