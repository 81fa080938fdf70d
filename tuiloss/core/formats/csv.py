"""CSV and TSV logs with a header row: Lightning, YOLO, Keras CSVLogger, generic.

Chunks of whole lines go through pandas' C reader. Every numeric column becomes
a metric; a cell that is empty is a gap, while ``nan``/``inf`` are kept as values.

Most chunks hold only numbers and empty cells: they are parsed straight to
float64, with no type inference and no per-column text work, in pieces on
several threads (pandas' reader lets go of the GIL while it parses). Where
pandas' C reader can parse a buffer in place (pandas 3.1), each piece of a big
chunk is handed to a reader kept for that piece until the file is read to its
end; elsewhere each piece is a ``pandas.read_csv`` call (:data:`PIECE_READER`
chooses, and the ``csv-pieces`` benchmark row compares the two). A small chunk of
plain numbers is read without pandas, to the same bits (:mod:`~tuiloss.core.formats.plain`),
so a start-up on small logs does not wait for pandas to load. A chunk with any cell that is not a number (``nan``, ``None``, a repeated
header, text) takes the general path, which tells text, missing and NaN apart.
"""

from __future__ import annotations

import csv
import io
import os
import re
import sys
import threading
import warnings
import weakref
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from functools import lru_cache
from typing import Callable

import numpy as np

from tuiloss.core.cpus import available_cpus
from tuiloss.core.formats import plain
from tuiloss.core.formats.base import find_step_key, unwrap_scalar_text
from tuiloss.core.formats.counters import INNER_COUNTERS, WITHIN_EPOCH, WithinEpoch
from tuiloss.core.model import Batch
from tuiloss.core.pandas_import import load_pandas

_BLANK_LINE = re.compile(rb"(?m)^[ \t\r]*\n")
_MISSING = {"", "nan", "NaN", "NAN", "-nan", "null", "None", "none", "NULL"}
_NAN_LIKE = {"nan", "-nan", "+nan"}


class CsvParser:
    """Incremental parser of a delimited log with a header line."""

    format = "csv"

    def __init__(self, delimiter: str | None = None, value_name: str | None = None, run: str | None = None) -> None:
        self.delimiter = delimiter
        #: what a TensorBoard export's ``Value`` column is named (the tag its file name holds)
        self.value_name = value_name
        #: the run of a W&B chart export this parser reads (its ``<run> - <metric>`` columns)
        self.run = run
        self.ignored: set[str] = set()  # columns that hold no metric (see :func:`_not_metrics`)
        self.header: bytes | None = None
        self.columns: list[str] = []
        self.step_column: str | None = None
        self.rows = 0  # data rows seen, for logs without a step column
        # A column is a metric from its first number on, for the rest of the file, so a
        # bad cell counts the same wherever reads split the file; a column that never
        # held a number is text (dates, split names).
        self.metric_columns: set[str] = set()
        self._last_header: tuple[bytes, list[str], str | None, str | None, int] | None = None
        self._index_step = False  # the step is pandas' unnamed index column, while it holds numbers
        self._within = WithinEpoch()  # a step column that may count within an epoch column

    @property
    def epoch_column(self) -> str | None:
        """The column that names the epoch, if there is one."""
        return next((name for name in self.columns if name.lower() == "epoch"), None)

    def restart(self) -> None:
        """The file starts again: its next header is read, or (a truncation that kept the
        writer going, like logrotate's copytruncate) the last one stays, if the first line is a row."""
        if self.header is not None:
            self._last_header = (self.header, self.columns, self.step_column, self.delimiter, self.rows)
        self.rest()
        self.header = None
        self.columns = []
        self.step_column = None
        self.rows = 0
        self.metric_columns = set()
        self._within = WithinEpoch()

    def rest(self) -> None:
        """The source has read the file to its end: free what big reads kept (see :class:`_Kept`)."""
        _kept.done(self)

    def feed(self, data: bytes, first_line: int) -> Batch:
        return self.feed_range(data, 0, len(data), first_line)

    def feed_range(self, data: bytes, start: int, end: int, first_line: int) -> Batch:
        """Parse the whole lines ``data[start:end]``, without copying them out.

        Under a header split by semicolons (a spreadsheet's export in a locale that
        writes ``0,25``) a comma is a decimal comma: the lines are read with each comma
        made a point (a copy), so ``1,5`` reads 1.5 on every path.
        """
        batch = Batch()
        if self.header is None:
            header_start = start
            start, first_line, before = self._take_header(data, start, end, first_line)
            if before:
                batch.skip("row before the header", first_line - 1, count=before)
            if self.header is None or start >= end:
                return batch
            header_lines = data.count(b"\n", header_start, start)
        else:
            header_lines = 0
        if self.delimiter == ";":
            data, start, end = data[start:end].translate(_DECIMAL_COMMA), 0, end - start
        numbers = self._read_numbers(data, start, end)
        if numbers is not None:
            columns, gappy = numbers
            # One row per line: a blank line or a cell-less row sent the chunk to the general path.
            batch.lines = header_lines + len(next(iter(columns.values())))
            self._collect(columns, batch, first_line, gappy)
            return batch
        lines = data.count(b"\n", start, end)
        options = dict(_GENERAL)
        try:
            frame = self._read(data, start, end, **options)
        except Exception:  # pandas raises many types on hostile bytes
            # an unbalanced quote swallows the rest of the chunk: read quotes as text (and again so below)
            options["quoting"] = csv.QUOTE_NONE
            try:
                frame = self._read(data, start, end, **options)
            except Exception as exc:
                count = lines - _count_blank(data, start, end)
                batch.skip("unreadable CSV chunk", first_line, repr(exc)[:200], count=count)
                return batch
        pd = load_pandas()  # loaded by the read

        if not frame.index.equals(pd.RangeIndex(len(frame))):
            # rows with more fields than the header names: pandas took the first ones for an index,
            # each value shifted onto another column's name. Rows that end in a delimiter only
            # hold an empty field more: read without the shift; other rows name no column (a
            # semicolon log read by commas) and are skipped.
            if not _ends_in_delimiter(data, start, end, self.delimiter or ","):
                count = lines - _count_blank(data, start, end)
                batch.skip("more fields than the header names", first_line, count=count)
                return batch
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # pandas warns of the dropped empty fields
                try:
                    frame = self._read(data, start, end, index_col=False, **options)
                except Exception as exc:  # pandas raises many types on hostile bytes
                    count = lines - _count_blank(data, start, end)
                    batch.skip("unreadable CSV chunk", first_line, repr(exc)[:200], count=count)
                    return batch
        if lines != len(frame):
            bad_shape = lines - _count_blank(data, start, end) - len(frame)
            if bad_shape > 0:
                batch.skip("wrong number of fields", first_line, count=bad_shape)
        names = self.columns[: len(frame.columns)] + list(frame.columns[len(self.columns) :])
        self._collect({name: frame.iloc[:, k] for k, name in enumerate(names)}, batch, first_line)
        return batch

    def _read(self, data: bytes, start: int, end: int, **options):
        pd = load_pandas()
        return pd.read_csv(
            _Joined(self.header or b"", data, start, end),
            sep=self.delimiter,
            engine="c",
            encoding_errors="replace",
            keep_default_na=False,
            na_values=[""],
            **options,
        )

    def _read_numbers(self, data: bytes, start: int, end: int) -> tuple[dict[str, np.ndarray], set[str]] | None:
        """The chunk as float64 columns, one row per line, and the columns with gaps; or None.

        None when some cell is not a number (``nan``, ``None``, a repeated header, a
        quoted number: pandas' float reader refuses them, and the general path tells
        them apart), a row has too many fields, a line holds no number at all (blank,
        or only separators), or a line could end at a carriage return.
        """
        width = len(self.columns)
        workers = _workers()
        parts = max(workers * _PIECES_PER_WORKER if workers > 1 else 1, (end - start) // PIECE_BYTES)
        pieces = _split_lines(data, start, end, parts)
        shelf = None
        if len(pieces) > 1:  # pandas: only for big chunks
            shelf = _kept.shelf(self, (piece_reader_kind(), width, self.delimiter), width, self.delimiter)
        jobs = [(*piece, width) for piece in pieces]

        def attempt(job) -> tuple[list[np.ndarray], list[bool]] | None:
            if data.find(b"\r", job[0], job[1]) >= 0:
                return None  # scanned here, while other pieces parse without the GIL
            try:
                arrays = self._read_piece(data, *job, shelf)
            except Exception:  # a cell that is not a number, a bad row, hostile bytes
                return None
            return arrays, [_has_nan(values) for values in arrays]  # while the piece is in cache

        parts = _each_piece(attempt, jobs, workers, shelf)
        if any(part is None for part in parts):
            return None
        arrays = parts[0][0] if len(parts) == 1 else _gather([part[0] for part in parts])
        gappy = {name for k, name in enumerate(self.columns) if any(part[1][k] for part in parts)}
        if len(gappy) == width:
            empty_row = np.isnan(arrays[0])
            for values in arrays[1:]:
                empty_row &= np.isnan(values)
            if empty_row.any():
                return None  # a blank line or a row of empty cells: told apart by the general path
        return dict(zip(self.columns, arrays)), gappy

    def _read_piece(self, data: bytes, start: int, end: int, width: int, shelf: _Shelf | None) -> list[np.ndarray]:
        """``data[start:end]`` as ``width`` float64 columns; raises on a cell that is not a number.

        A row with too many fields raises too, so every line is a row. A piece of a
        big chunk (``shelf`` given) goes to a reader from the shelf, one per thread at a
        time; a small chunk of plain numbers is read without pandas
        (:mod:`~tuiloss.core.formats.plain`), any other small chunk by this thread's
        reader of small chunks.
        """
        if shelf is not None:
            return shelf.read(data, start, end)
        if plain.wanted(end - start):  # else pandas is loaded and faster: no copy for nothing
            table = plain.plain_table(data[start:end], width, self.delimiter, gaps=True)
            if table is not None:
                return list(table)
        reader = _small_reader(width, self.delimiter)
        try:
            return reader.read(data, start, end)
        except BaseException:  # its state after a failed read is unknown: it is not used again
            _small.readers.pop((reader.kind, width, self.delimiter), None)
            raise

    def _take_header(self, data: bytes, start: int, end: int, first_line: int) -> tuple[int, int, int]:
        """Find the header line; return where the data after it starts, its line number,
        and how many rows came before it."""
        skipped = 0
        while start < end:
            newline = data.find(b"\n", start, end)
            if newline < 0:
                newline = end - 1
            line = data[start : newline + 1]
            start, first_line = newline + 1, first_line + 1
            if not line.strip() or line.lstrip().startswith(b"#"):
                continue  # a comment before the header (stable-baselines3 monitor.csv: #{"t_start": ...})
            text = line.decode("utf-8", "replace").strip().lstrip("\ufeff")
            delimiter = self.delimiter
            if delimiter is None:
                delimiter = _delimiter_of(text)
            names = _header_names(text, delimiter)
            if not _is_header(names):
                if self._last_header is not None:  # a row: the file went on under the same header
                    # (rows go on counting, so a log without steps does not go back to 0)
                    self.header, self.columns, self.step_column, self.delimiter, self.rows = self._last_header
                    return start - len(line), first_line - 1, skipped
                skipped += 1  # a row before any header names nothing: it is skipped, not taken for one
                continue
            self.delimiter = delimiter
            self.header = line.lstrip(b"\xef\xbb\xbf")
            self.columns = _unique(["index" if k == 0 and not name else name for k, name in enumerate(names)])
            self.columns, self.ignored = _exported(self.columns, self.value_name, self.run)
            self.step_column = find_step_key(self.columns)
            if self.step_column is not None and self.step_column == self.epoch_column:
                # ``epoch,batch_idx,loss``: the batch within the epoch is finer (made global with it)
                self.step_column = next((name for name in self.columns if name.lower() in INNER_COUNTERS), self.step_column)
            if self.step_column is None and not names[0]:
                # pandas' ``to_csv`` writes its index first, unnamed: the row's number (a Keras
                # history's epoch), the step when no counter is written
                self.step_column = self.columns[0]
                self._index_step = True
            break
        return start, first_line, skipped

    def _collect(self, columns: dict, batch: Batch, first_line: int, gappy: set[str] | None = None) -> None:
        """Points and skipped rows of a chunk read as ``columns`` (numpy arrays or pandas columns).

        ``gappy`` names the float columns that may hold NaN, when that is known.
        """
        if not columns:
            return
        if self._index_step and self.step_column in columns and columns[self.step_column].dtype.kind not in "fiub":
            self.step_column, self._index_step = None, False  # an index of dates or names: rows are numbered
        rows_read = len(next(iter(columns.values())))
        if not rows_read:
            return
        header_rows = None
        numeric: dict[str, np.ndarray] = {}
        present: dict[str, np.ndarray | None] = {}  # None: every cell holds a number
        malformed = None
        for name, column in columns.items():
            if name in self.ignored:
                continue
            if column.dtype.kind in "fiub":
                values = np.asarray(column, dtype=np.float64)
                numeric[name] = values
                maybe_gaps = _has_nan(values) if gappy is None else name in gappy
                present[name] = ~np.isnan(values) if maybe_gaps else None
                self.metric_columns.add(name)
                continue
            pd = load_pandas()  # text cells come from the general path, which loaded it

            # a quoted cell ("0.5") is its content; a stray quote leaves the cell malformed
            text = column.astype("string").str.strip().str.replace(r'^"(.*)"$', r"\1", regex=True)
            if text.str.contains("(", regex=False).any():  # ``tensor(0.69, device='cuda:0')``: its number
                text = text.map(unwrap_scalar_text, na_action="ignore").astype("string")
            grouped = text.str.fullmatch(_THOUSANDS).fillna(False)
            if grouped.any():  # a spreadsheet's ``"12,000"``: its digits grouped by thousands
                text = text.where(~grouped, text.str.replace(",", "", regex=False))
            rows = (text == name).fillna(False).to_numpy(dtype=bool)
            header_rows = rows if header_rows is None else header_rows | rows
            values = pd.to_numeric(text, errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)
            lowered = text.str.lower()
            nan_like = lowered.isin(_NAN_LIKE).fillna(False).to_numpy(dtype=bool)
            missing = (text.isna() | text.isin(_MISSING - _NAN_LIKE)).fillna(True).to_numpy(dtype=bool)
            ok = ~np.isnan(values) | nan_like
            if name not in self.metric_columns and name != self.step_column:
                if not ok.any():
                    continue  # text so far (dates, split names): not a metric
                self.metric_columns.add(name)
            numeric[name] = values
            present[name] = ok
            bad = ~ok & ~missing
            malformed = bad if malformed is None else malformed | bad
        if malformed is not None and header_rows is not None:
            malformed &= ~header_rows
        if header_rows is not None and header_rows.any():
            batch.skip("repeated header", first_line, count=int(header_rows.sum()))
        if malformed is not None and malformed.any():
            batch.skip("non-numeric value", first_line, count=int(malformed.sum()))
        usable = None if header_rows is None or not header_rows.any() else ~header_rows
        if self.step_column is not None and self.step_column in numeric:
            steps = numeric.pop(self.step_column)
            step_ok = present.pop(self.step_column)
            epochs = numeric.get(self.epoch_column) if self.epoch_column is not None else None
            if epochs is not None and self.step_column.lower() in WITHIN_EPOCH:
                steps = self._within.globalize(steps, epochs)
            if not _all_finite(steps):
                finite = np.isfinite(steps)
                step_ok = finite if step_ok is None else step_ok & finite
            if step_ok is not None:
                bad_step = ~step_ok
                if usable is not None:
                    bad_step &= usable
                if malformed is not None:
                    bad_step &= ~malformed
                if bad_step.any():
                    batch.skip("missing step", first_line, count=int(bad_step.sum()))
                usable = step_ok if usable is None else usable & step_ok
        else:
            numeric.pop(self.step_column, None)
            present.pop(self.step_column, None)
            count = rows_read if usable is None else int(usable.sum())
            rows = np.arange(self.rows, self.rows + count, dtype=np.float64)
            if usable is None:
                steps = rows
            else:
                steps = np.full(rows_read, np.nan)
                steps[usable] = rows
            self.rows += count
        valued = np.zeros(rows_read, dtype=bool)
        phases = _phases(columns)
        for name, values in numeric.items():
            keep = present[name]
            if usable is not None:
                keep = usable if keep is None else usable & keep
            if phases is not None:  # a column names each row's phase: its rows are that phase's
                for prefix, rows in phases:
                    part = rows if keep is None else rows & keep
                    if part.any():
                        batch.add(prefix + name, steps[part], values[part])
                        valued |= part
            elif keep is None:
                batch.add_rows(steps, {name: values})  # every cell held a number: the chunk's steps
                valued[:] = True
            elif keep.any():
                batch.add(name, steps[keep], values[keep])
                valued |= keep
        empty = ~valued if usable is None else usable & ~valued
        if malformed is not None:
            empty &= ~malformed
        if empty.any() and self.run is None:  # (an export's row of other runs' values is theirs, not skipped)
            batch.skip("no value", first_line, count=int(empty.sum()))


class _Joined:
    """The header line and ``data[start:end]``, read as one file without copying them together."""

    def __init__(self, header: bytes, data: bytes, start: int, end: int) -> None:
        self._parts = [(header, 0, len(header)), (data, start, end)]

    def read(self, size: int = -1) -> bytes:
        out = b""
        while self._parts and (size < 0 or len(out) < size):
            part, at, end = self._parts[0]
            stop = end if size < 0 else min(end, at + size - len(out))
            piece = part[at:stop]
            out = piece if not out else out + piece
            if stop >= end:
                self._parts.pop(0)
            else:
                self._parts[0] = (part, stop, end)
        return out

    def __iter__(self):
        return iter(lambda: self.read(1 << 16), b"")


#: Chunks smaller than this are parsed on the calling thread: splitting costs more than it saves.
PARALLEL_MIN_BYTES = 4 * 1024 * 1024
_MAX_WORKERS = 4
#: A big chunk is parsed in pieces of at most about this many bytes, also on one thread:
#: the tokenizer's buffers of a bigger piece spill out of the cache (an 8 MiB chunk parses
#: ~20% slower in one piece than in six).
PIECE_BYTES = 1_400_000
#: A big chunk is cut into more pieces than threads: pieces are handed out as threads
#: free up, so a thread slowed down (by page faults, another process) holds up less.
_PIECES_PER_WORKER = 3


#: Set within :func:`yielding_to_caller`.
_yielding = 0
#: Where threads can be given a priority of their own (Linux: a thread is a task with its own nice value).
_THREAD_PRIORITIES = sys.platform.startswith("linux") and hasattr(os, "setpriority")


def _workers() -> int:
    """Threads a big chunk is parsed on: the CPUs this process may use, at most four (one
    fewer within :func:`yielding_to_caller` where threads have no priorities of their own)."""
    fewer = 1 if _yielding and not _THREAD_PRIORITIES else 0
    return max(1, min(available_cpus() - fewer, _MAX_WORKERS))


@contextmanager
def yielding_to_caller():
    """Within, chunks are parsed on threads that give way to the caller's own work on each
    batch (``report`` analyses each as it comes): on Linux threads of the lowest priority,
    which take what CPU that work leaves, and all of it while it waits for the next batch;
    elsewhere one thread fewer. Parsing on every CPU at the caller's priority would make
    the two take turns, and cost the switches between them."""
    global _yielding
    _yielding += 1
    try:
        yield
    finally:
        _yielding -= 1


def _pool(workers: int) -> ThreadPoolExecutor:
    return _pool_of(workers, bool(_yielding and _THREAD_PRIORITIES))


@lru_cache(maxsize=None)
def _pool_of(workers: int, low: bool) -> ThreadPoolExecutor:
    return ThreadPoolExecutor(workers, thread_name_prefix="tuiloss-csv", initializer=_lowest_priority if low else None)


def _lowest_priority() -> None:
    """This thread at the lowest priority (nice 19): it runs when nothing else of this process wants the CPU."""
    try:
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 19)
    except OSError:
        pass


#: What the numbers-only path reads its pieces with: "buffer", a pandas C reader kept
#: for each piece that parses the bytes in place (private pandas API, see
#: :class:`BufferReader`), or "read_csv", a public ``pandas.read_csv`` call per piece.
#: None: "buffer" where this pandas has that API. The tests and ``python -m benchmarks``
#: set it to test and measure each.
PIECE_READER: str | None = None
_has_buffer_api: bool | None = None


def piece_reader_kind() -> str:
    """The kind of reader pieces are read with now: "buffer" or "read_csv"."""
    global _has_buffer_api
    if PIECE_READER is not None:
        return PIECE_READER
    if _has_buffer_api is None:
        load_pandas()
        from pandas._libs.parsers import TextReader

        _has_buffer_api = hasattr(TextReader, "load_buffer") and hasattr(TextReader, "trim_after_read")
    return "buffer" if _has_buffer_api else "read_csv"


def new_piece_reader(width: int, delimiter: str | None, keep_buffers: bool = True,
                     used: tuple[int, ...] | None = None) -> BufferReader | CallReader:
    """A reader of pieces of ``width`` float64 columns, of :func:`piece_reader_kind`; of the ``used``
    columns only, a buffer reader (see :class:`NumberLines`)."""
    if used is not None or piece_reader_kind() == "buffer":
        return BufferReader(width, delimiter, keep_buffers, used)
    return CallReader(width, delimiter)


#: What both readers are told: no header, every cell a float64, a quote is a character
#: (no number holds one), a row with too many fields is an error, a blank line a row.
_PIECE_OPTIONS = {
    "header": None,
    "index_col": False,
    "engine": "c",
    "encoding_errors": "replace",
    "keep_default_na": False,
    "na_values": [""],
    "dtype": np.float64,
    "on_bad_lines": "error",
    "skip_blank_lines": False,
    "quoting": csv.QUOTE_NONE,
}


class CallReader:
    """Pieces read by a public ``pandas.read_csv`` call each."""

    kind = "read_csv"

    def __init__(self, width: int, delimiter: str | None) -> None:
        self.width = width
        self.delimiter = delimiter

    def read(self, data: bytes, start: int, end: int) -> list[np.ndarray]:
        """``data[start:end]`` (whole lines) as ``width`` float64 columns."""
        pd = load_pandas()
        frame = pd.read_csv(
            _Joined(b"", data, start, end), names=list(range(self.width)), sep=self.delimiter, **_PIECE_OPTIONS
        )
        return [frame.iloc[:, k].to_numpy(dtype=np.float64) for k in range(self.width)]


class BufferReader:
    """Pieces read by one pandas C reader, in place, with its buffers kept between pieces.

    pandas 3.1 gave its C reader ``load_buffer`` for its own parallel ``read_csv``:
    it parses a slice of memory where it lies, without the file-object reads and
    the set-up that each ``read_csv`` call pays. That is not public API: it is used
    only where :func:`piece_reader_kind` finds it, on the pandas versions that
    ``pyproject.toml`` allows. With ``keep_buffers`` the reader keeps its parse
    buffers at their largest for the next piece instead of trimming them after each.
    """

    kind = "buffer"

    def __init__(self, width: int, delimiter: str | None, keep_buffers: bool = True,
                 used: tuple[int, ...] | None = None) -> None:
        pd = load_pandas()
        self.width = width
        self.used = tuple(range(width)) if used is None else used  # the columns read (the others only split off)
        self._engine = pd.read_csv(
            io.BytesIO(b""), names=list(range(width)), sep=delimiter, low_memory=False, iterator=True,
            usecols=list(self.used) if used is not None else None, **_PIECE_OPTIONS
        )._engine
        if keep_buffers:
            self._engine._reader.trim_after_read = False  # else each big piece pays for fresh buffers

    def read(self, data: bytes, start: int, end: int) -> list[np.ndarray]:
        """``data[start:end]`` (whole lines) as ``width`` float64 columns."""
        self._engine._reader.load_buffer(memoryview(data)[start:end])
        try:
            self._engine._first_chunk = True  # else a reused reader takes an empty read for the end
            _, _, arrays = self._engine.read()
        finally:
            # The reader keeps what it was loaded with until the next load: a kept reader would
            # hold the whole chunk (a whole read) alive while the next one is read.
            self._engine._reader.load_buffer(_NOTHING)
        return [np.asarray(arrays[k], dtype=np.float64) for k in self.used]


#: What a buffer reader is left loaded with between reads (it refuses an empty buffer).
_NOTHING = b"\n"


class _Shelf:
    """The readers one big chunk's pieces are read with: a piece takes one, and gives it back
    when read (unless it failed, when its state is unknown). As many pieces are read at once as
    there are threads, so that is how many readers there are, each with buffers the size of a
    piece: a reader per piece would keep about three times the chunk in parse buffers (the
    tokenizer keeps each field's bytes, a pointer and an offset per field, two per line)."""

    def __init__(self, key: tuple, free: list, width: int, delimiter: str | None,
                 used: tuple[int, ...] | None = None) -> None:
        self.key = key
        self.free = free
        self._width = width
        self._delimiter = delimiter
        self._used = used  # buffer readers of these columns only (see NumberLines)
        self._lock = threading.Lock()

    def read(self, data: bytes, start: int, end: int) -> list[np.ndarray]:
        with self._lock:
            reader = self.free.pop() if self.free else None
        if reader is None:
            reader = new_piece_reader(self._width, self._delimiter, used=self._used)
        arrays = reader.read(data, start, end)  # a reader that raised is not given back
        with self._lock:
            self.free.append(reader)
        return arrays


class _Kept:
    """The readers of big chunks' pieces, kept while some CSV file is read to its end.

    A buffer reader's buffers (a few MB per piece of a big chunk) are then reused, not
    faulted in anew for each chunk. Every file being read shares them: the reads of many big
    logs take turns, so the buffers kept are those of one chunk's threads, not one set per file.
    When no file is left mid-read, they are freed.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._free: dict[tuple, list] = {}
        self._reading: weakref.WeakSet = weakref.WeakSet()  # a parser dropped mid-file leaves it

    def begin(self, parser: object) -> None:
        with self._lock:
            self._reading.add(parser)

    def done(self, parser: object) -> None:
        with self._lock:
            self._reading.discard(parser)
            if self._reading or not self._free:
                return
            self._free.clear()
        release_freed_memory()

    def shelf(self, parser: object, key: tuple, width: int, delimiter: str | None,
              used: tuple[int, ...] | None = None) -> _Shelf:
        """The readers kept for ``key``, for one chunk of ``parser``'s file (reading it from now on
        till :meth:`done`); :func:`_each_piece` gives them back."""
        self.begin(parser)
        return _Shelf(key, self.take(key), width, delimiter, used)

    def take(self, key: tuple) -> list:
        """The readers kept for ``key`` (as many as threads read a chunk at once)."""
        with self._lock:
            taken, self._free[key] = self._free.get(key, []), []
        return taken

    def give(self, key: tuple, readers: list) -> None:
        """Readers back after a chunk (those that failed are not among them)."""
        with self._lock:
            if self._reading:
                free = self._free.setdefault(key, [])
                free.extend(readers)
                del free[_KEPT_READERS:]
                while len(self._free) > _KEPT_KEYS:  # the oldest layout goes
                    self._free.pop(next(iter(self._free)))

    def kept(self) -> list:
        """Every reader kept now (for tests)."""
        with self._lock:
            return [reader for free in self._free.values() for reader in free]


_kept = _Kept()
#: Readers kept per layout (one per thread a chunk is read on), and layouts kept.
_KEPT_READERS = 16
_KEPT_KEYS = 4


def release_freed_memory() -> None:
    """Give the C heap's free pages back to the system (glibc; elsewhere nothing to do).

    Big reads are kept under the allocator's largest mmap threshold so their buffers are
    reused (see ``tail.DEFAULT_MAX_READ``); the price is that what they freed stays in the
    heap, resident, once a load is over: a few hundred MB after ten big logs.
    """
    global _malloc_trim
    if _malloc_trim is None:
        try:
            import ctypes

            _malloc_trim = ctypes.CDLL("libc.so.6").malloc_trim
        except (OSError, AttributeError):
            _malloc_trim = False
    if _malloc_trim:
        _malloc_trim(0)


_malloc_trim = None


_small = threading.local()  # each thread's readers of small chunks, by (kind, width, delimiter)
_SMALL_READERS = 4


def _small_reader(width: int, delimiter: str | None) -> BufferReader | CallReader:
    """This thread's reader of chunks too small to split, shared by every CSV the thread reads.

    A buffer reader saves each small read (a tailed append, one of a thousand
    small runs) the set-up of a ``read_csv`` call. Its buffers are trimmed after
    each read, so it holds little between reads.
    """
    readers = _small.__dict__.setdefault("readers", {})
    key = (piece_reader_kind(), width, delimiter)
    reader = readers.get(key)
    if reader is None:
        reader = new_piece_reader(width, delimiter, keep_buffers=False)
        if len(readers) >= _SMALL_READERS:
            readers.pop(next(iter(readers)))
        readers[key] = reader
    return reader


class NumberLines:
    """Bodies of lines of ``width`` comma-separated fields, the ``used`` ones numbers, read as a CSV
    log's rows of numbers are: a big body cut into pieces parsed at once on the parse threads, in
    place, by pandas' C reader (its buffer API: see :class:`BufferReader`), the readers kept between
    reads until the file is read to its end. What a line layout's slots hold (see :mod:`layout`)."""

    def __init__(self, width: int, used: tuple[int, ...]) -> None:
        self._width = width
        self._used = tuple(used)

    @staticmethod
    def available() -> bool:
        """Whether this pandas has the buffer API (before 3.1, floats read another way than a call does)."""
        return piece_reader_kind() == "buffer"

    def read(self, data: bytes) -> list[np.ndarray] | None:
        """The used columns of ``data`` (whole lines); None where a used cell is no number, a field
        is missing or a line has too many."""
        workers = _workers()
        pieces = _split_lines(data, 0, len(data), workers * _PIECES_PER_WORKER if workers > 1 else 1)
        shelf = _kept.shelf(self, ("buffer", self._width, ",", self._used), self._width, ",", self._used)

        def attempt(piece: tuple[int, int]) -> list[np.ndarray] | None:
            try:
                return shelf.read(data, *piece)
            except Exception:  # a cell that is not a number, a bad row
                return None

        parts = _each_piece(attempt, pieces, workers, shelf)
        if any(part is None for part in parts):
            return None
        return parts[0] if len(parts) == 1 else _gather(parts)

    def rest(self) -> None:
        """The file is read to its end: the readers kept for it may go (see :class:`_Kept`)."""
        _kept.done(self)


def _each_piece(attempt: Callable, jobs: list, workers: int, shelf: _Shelf | None) -> list:
    """``attempt`` of each job, on the parse threads when there are several; then the shelf's
    readers go back. Every piece is waited for, failed or not: a piece still parsing must not
    share its reader with the next chunk."""
    parts = [attempt(jobs[0])] if len(jobs) == 1 else list(_pool(workers).map(attempt, jobs))
    if shelf is not None:
        _kept.give(shelf.key, shelf.free)
    return parts


def _split_lines(data: bytes, start: int, end: int, parts: int) -> list[tuple[int, int]]:
    """``data[start:end]`` (whole lines) cut at newlines into about ``parts`` equal pieces."""
    if parts < 2 or end - start < PARALLEL_MIN_BYTES:
        return [(start, end)]
    cuts = [start]
    for k in range(1, parts):
        newline = data.find(b"\n", start + (end - start) * k // parts, end - 1)
        if newline >= cuts[-1]:
            cuts.append(newline + 1)
    cuts.append(end)
    return [(a, b) for a, b in zip(cuts, cuts[1:]) if b > a]


def _gather(parts: list[list[np.ndarray]]) -> list[np.ndarray]:
    """The pieces' columns joined end to end, each piece copied by a worker thread."""
    sizes = [len(arrays[0]) for arrays in parts]
    offsets = np.concatenate(([0], np.cumsum(sizes)))
    joined = [np.empty(int(offsets[-1]), dtype=np.float64) for _ in parts[0]]

    def copy(k: int) -> None:
        for out, values in zip(joined, parts[k]):
            out[offsets[k] : offsets[k + 1]] = values  # numpy lets go of the GIL to copy

    list(_pool(_workers()).map(copy, range(len(parts))))
    return joined


def _has_nan(values: np.ndarray) -> bool:
    """Whether ``values`` holds a NaN: one pass and no temporary when it does not.

    A NaN makes the sum NaN; so can infinities of both signs, checked cell by cell.
    """
    return bool(np.isnan(_quiet_sum(values))) and bool(np.isnan(values).any())


def _all_finite(values: np.ndarray) -> bool:
    """Whether every value is finite, with the same shortcut (a huge sum may overflow)."""
    return bool(np.isfinite(_quiet_sum(values))) or bool(np.isfinite(values).all())


def _quiet_sum(values: np.ndarray) -> float:
    with np.errstate(invalid="ignore", over="ignore"):  # inf - inf, or a sum past the float range
        return np.add.reduce(values)


_GENERAL = {
    "skipinitialspace": True,
    "dtype": None,
    "low_memory": False,
    "on_bad_lines": "skip",
    "skip_blank_lines": True,
}


#: A semicolon-delimited log's bytes with its decimal commas made points.
_DECIMAL_COMMA = bytes.maketrans(b",", b".")


def _ends_in_delimiter(data: bytes, start: int, end: int, delimiter: str) -> bool:
    """Whether every line of ``data[start:end]`` that is not blank ends in ``delimiter``."""
    sep = delimiter.encode()
    return all(line.rstrip(b" \t\r").endswith(sep) for line in data[start:end].split(b"\n") if line.strip())


#: A number grouped by thousands, as a spreadsheet writes it (``12,000``, ``-1,234.5``). Never
#: from ``0,``: ``0,250`` is a decimal comma, not two hundred and fifty.
_THOUSANDS = r"[-+]?[1-9]\d{0,2}(?:,\d{3})+(?:\.\d+)?"
_EXPORTED_TAG = re.compile(r"(?:^|[-_])tag-(?P<tag>.+)\.csv$", re.I)


def exported_tag(path: str) -> str | None:
    """The tag a TensorBoard CSV export's file name holds (``run-train-tag-epoch_loss.csv``:
    ``epoch_loss``), or None."""
    match = _EXPORTED_TAG.search(os.path.basename(path))
    return match["tag"] if match else None


#: Columns that say which phase a row reports, and what its metrics are named for each phase.
_PHASE_COLUMNS = frozenset({"split", "phase", "mode", "stage", "subset"})
_PHASE_PREFIX = {"train": "", "training": "", "val": "val_", "valid": "val_", "validation": "val_", "dev": "val_",
                 "eval": "eval_", "evaluation": "eval_", "test": "test_", "testing": "test_"}


def _phases(columns: dict) -> list[tuple[str, np.ndarray]] | None:
    """The rows of each phase a ``split``/``phase``/``mode`` column names (``train``, ``val``, ...)
    and the prefix of their metrics' names (``val_``); None without such a column. Rows of
    another value are that value's (``ema_``)."""
    name = next((n for n in columns if n.lower() in _PHASE_COLUMNS and columns[n].dtype.kind not in "fiub"), None)
    if name is None:
        return None
    pd = load_pandas()
    text = pd.Series(columns[name]).astype("string").str.strip().str.lower().fillna("")
    if not text.isin(_PHASE_PREFIX.keys()).any():
        return None  # not phases (a mode of some other kind)
    out = []
    for value in text.unique():
        prefix = _PHASE_PREFIX.get(value, f"{value}_" if value else "")
        out.append((prefix, (text == value).to_numpy(dtype=bool)))
    return out


#: A W&B chart export's column: ``<run> - <metric>``, and the bounds beside it (``__MIN``, ``__MAX``).
_WANDB_COLUMN = re.compile(r"^(?P<run>.+?) - (?P<metric>.+?)(?P<bound>__MIN|__MAX)?$")


def wandb_export_runs(header: str) -> list[str]:
    """The runs a W&B chart export's header holds (``"Step","a - train/loss","a - train/loss__MIN",...``),
    in order; none when it is no such export (``Step`` first, every other column a run's)."""
    names = _header_names(header.strip().lstrip("\ufeff"), ",")
    if len(names) < 2 or names[0] != "Step":  # as W&B writes it
        return []
    matches = [_WANDB_COLUMN.match(name) for name in names[1:]]
    if not all(matches):
        return []
    return list(dict.fromkeys(match["run"] for match in matches))


def _exported(columns: list[str], value_name: str | None, run: str | None = None) -> tuple[list[str], set[str]]:
    """The columns of a CSV a tracker's web page exported, named for what they hold, and those
    that hold no metric.

    TensorBoard's ``Wall time,Step,Value`` holds one tag, named by its file
    (``run-train-tag-epoch_loss.csv``): ``Value`` is that tag, and the wall time is a clock.
    Weights & Biases' export writes beside each ``<run> - <metric>`` column the lowest and
    highest value of the points its chart merged there (``..__MIN``, ``..__MAX``): bounds of
    a chart's bucket, not metrics.
    """
    if [name.lower() for name in columns] == ["wall time", "step", "value"]:
        return [columns[0], columns[1], value_name or "value"], {columns[0]}
    if run is not None:  # one run of a W&B chart export: its columns, named for their metric
        named, ignored = [], set()
        for k, name in enumerate(columns):
            match = _WANDB_COLUMN.match(name) if k else None
            if match is not None and match["run"] == run and not match["bound"]:
                named.append(match["metric"])
            else:
                named.append(name)
                if k:
                    ignored.add(name)
        return named, ignored
    present = set(columns)
    bounds = {name for name in columns if name[-5:] in ("__MIN", "__MAX") and name[:-5] in present}
    return columns, bounds


def _delimiter_of(header: str) -> str:
    """The delimiter a header line is split by: the most frequent of comma, tab and
    semicolon (a tie goes to the comma, then the tab)."""
    counts = {delimiter: header.count(delimiter) for delimiter in (",", "\t", ";")}
    return max(counts, key=lambda d: counts[d])  # max keeps the first of equal counts


def _header_names(text: str, delimiter: str) -> list[str]:
    """The column names of a header line; a quoted name may hold the delimiter."""
    if text.count('"') % 2 == 0:
        try:
            return [name.strip() for name in next(csv.reader([text], delimiter=delimiter))]
        except (csv.Error, StopIteration):  # a stray carriage return, say
            pass
    return [name.strip().strip('"') for name in text.split(delimiter)]


def _is_header(names: list[str]) -> bool:
    """Whether fields can be a header: a row of data holds a number, a header none."""
    for name in names:
        try:
            float(name.strip('"'))
        except ValueError:
            continue
        return False
    return any(names)


def _unique(names: list[str]) -> list[str]:
    seen: dict[str, int] = {}
    out = []
    for name in names:
        name = name or "column"
        if name in seen:
            seen[name] += 1
            name = f"{name}.{seen[name]}"
        else:
            seen[name] = 0
        out.append(name)
    return out


def _count_blank(data: bytes, start: int, end: int) -> int:
    """Lines of ``data[start:end]`` (whole lines) holding nothing but spaces, tabs or a
    carriage return: pandas skips them."""
    return len(_BLANK_LINE.findall(data, start, end))
