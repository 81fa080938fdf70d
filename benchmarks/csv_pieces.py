"""CSV pieces row: the two readers of the CSV numbers-only path, on the same pieces and threads.

tuiloss' CSV parser reads a chunk of numbers in pieces on several threads (see
``tuiloss/core/formats/csv.py``). Each piece goes either to a pandas C reader kept
for it, which parses the bytes in place through private pandas API (``buffer``), or
to a public ``pandas.read_csv`` call (``read_csv``). The row feeds the same chunks
to a fresh parser set to each, alternating, so both split them into the same pieces
and parse them on the same thread pool. The private reader is kept only while it wins
by the target's margin here; the note gives the same comparison for small chunks (a
tailed append, one of many small runs), which are read on the calling thread.
"""

from __future__ import annotations

import statistics

from benchmarks.datagen import cached_log, csv_lines
from benchmarks.ingest import chunks_of
from benchmarks.measure import Row, paired, ratio_row

#: The private reader must take at most this share of the public one's time (a 1.15x win).
TARGET = round(1 / 1.15, 2)
SMALL_FILES = 1000
SMALL_LINES = 100


def parse_with(reader: str, chunks: list[tuple[bytes, int]]) -> int:
    """Feed ``chunks`` to a fresh CSV parser whose pieces go to ``reader``."""
    from tuiloss.core.formats import csv

    saved, csv.PIECE_READER = csv.PIECE_READER, reader
    try:
        parser = csv.CsvParser()
        points = sum(parser.feed(chunk, line).points for chunk, line in chunks)
        parser.rest()
    finally:
        csv.PIECE_READER = saved
    return points


def parse_small_with(reader: str, files: list[bytes]) -> int:
    """Each of ``files`` (a header and a few rows) read by a parser of its own."""
    from tuiloss.core.formats import csv

    saved, csv.PIECE_READER = csv.PIECE_READER, reader
    try:
        return sum(csv.CsvParser().feed(data, 1).points for data in files)
    finally:
        csv.PIECE_READER = saved


def run(lines: int, repeat: int) -> Row:
    from tuiloss.core.formats import csv

    if csv.piece_reader_kind() != "buffer":
        raise RuntimeError("this pandas has no C reader that parses a buffer in place: nothing to compare")
    chunks = chunks_of(cached_log("csv", lines))
    expected = 2 * lines
    for reader in ("buffer", "read_csv"):
        if parse_with(reader, chunks) != expected:
            raise AssertionError(f"the {reader} reader did not read {expected} points")
    big = paired(lambda: parse_with("buffer", chunks), lambda: parse_with("read_csv", chunks), repeat)
    del chunks
    files = [("step,loss,lr\n" + csv_lines(k * SMALL_LINES, (k + 1) * SMALL_LINES)).encode() for k in range(SMALL_FILES)]
    small = paired(lambda: parse_small_with("buffer", files), lambda: parse_small_with("read_csv", files), repeat)
    small_ratio = statistics.median(small.ratios)
    note = (
        f"the CSV parser fed the 16 MiB reads of a {lines:,}-line `step,loss,lr` log, {csv._workers()} threads;"
        f" small chunks ({SMALL_FILES:,} files of {SMALL_LINES} rows, one parser each, on the calling thread):"
        f" buffer {statistics.median(small.ours):.2f} s, read_csv {statistics.median(small.baseline):.2f} s,"
        f" ratio {small_ratio:.2f} ({min(small.ratios):.2f}-{max(small.ratios):.2f})"
    )
    return ratio_row("csv-pieces", "CSV pieces: private pandas C reader / public `pandas.read_csv`", big, TARGET, note)
