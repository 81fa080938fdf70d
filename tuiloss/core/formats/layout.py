"""Many lines of one layout read at once: the fast path of the line parsers.

Most lines of a training log are written by one format string. A
:class:`LineLayout` is the literal text around the numbers of one such line,
learnt from the line and the parser's own reading of it; a line *fits* when it is
the learnt line with other numbers in the slots. Whether the lines of a chunk fit
is decided with a few whole-chunk bytes operations, and their numbers are parsed
by pandas' C reader, with no Python per line (about 20x the line-by-line
parsers):

- with its digits, points and signs deleted, each fitting line is the learnt
  line's *skeleton* (so its words, punctuation and ``e`` letters are in place);
- the chunk holds exactly as many runs of those bytes as its fitting lines
  should, and literal pieces that contain some occur once per line (so no digit
  hides inside a word);
- pandas' C reader parses every slot as a finite number.

A layout is kept only if the parser reads a line with every slot changed exactly
as the layout would, so a layout read gives the parser's own points, faster.
A number the parser reads nothing from, whatever it is (a clock, a rank, a
planned total), is no slot and may change from line to line; a number whose
change changes what is read (a digit of a key, ``loss_2``) is literal text and
must stay put.

The contract between a line parser and its :class:`LayoutReader`:

- The parser supplies four functions. ``parse_line(line)`` reads one line on its
  own, leaving the parser's state alone, as ``(step, {metric: value})`` or None
  when the line gives no clean record (to learn and check layouts).
  ``parse_odd(data, first_line, batch)`` reads whole lines that fit no layout, in
  file order, with the parser's state: it emits points into the parser's pending
  lists and counts skips into ``batch``. ``take_pending()`` hands over and clears
  what was emitted (a :data:`Pending`). ``fitted(steps)`` hears the steps of each
  run of fitting lines, so per-file state (a row counter, the last step) stays
  right.
- For a chunk of whole lines that :meth:`LayoutReader.wants`, the parser calls
  :meth:`LayoutReader.feed` with a batch that holds no points yet (points emitted
  before the call wait in the pending lists; they are taken first). None means
  nothing was read: no layout fits the start of the chunk, and the parser reads
  it its own way. Otherwise every line of the chunk was read, in file order,
  either by a layout or through ``parse_odd``; the batch holds the points and
  ``feed`` returns how many lines fitted (the parser counts unmatched lines).
- :meth:`LayoutReader.reset` forgets the layout when the file starts over; after
  a few chunks in a row where no layout fits (or that the parser chose to read its
  own way, :meth:`LayoutReader.miss`), :meth:`LayoutReader.wants` says no.
"""

from __future__ import annotations

import io
import math
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Callable

import numpy as np

from tuiloss.core.formats.plain import plain_table
from tuiloss.core.model import Batch
from tuiloss.core.pandas_import import load_pandas

#: What a parser emitted and not yet handed over: ``{metric: (steps, values)}``.
Pending = dict[str, tuple[list[float], list[float]]]
#: A parser's reading of one line on its own: ``(step, {metric: value})``, or None.
ParseLine = Callable[[bytes], tuple[float, dict[str, float]] | None]

#: Bytes a printed number is made of. Everything else in a line is literal text.
NUMBER_BYTES = b"0123456789.eE+-"
#: Number bytes a line's skeleton leaves out. ``e`` and ``E`` stay in it: they are
#: letters of words as often as exponent marks.
_DIGIT_BYTES = b"0123456789.+-"
_NOT_NUMBER = bytes(sorted(set(range(256)) - set(NUMBER_BYTES) - {10}))
_MARK_DIGITS = bytes(0 if byte in _DIGIT_BYTES else 1 for byte in range(256))  # runs start at 1 -> 0
_SEPARATORS = b",:|= ;\t\"'/"  # field separators to prefer, best first
_PROBE = b"7777"
_BLOCK = 64  # lines compared at once while checking a chunk
_STRETCH = 256  # odd lines in a row that end what one layout reads of a chunk
_FRAGMENTED = 0.25  # runs per fitting line above which a layout read is not worth it
_HALVINGS = 64  # reads spent finding lines that look right but hold no number
_SLOT = re.compile(rb"[.eE+\-]*\d[0-9.eE+\-]*")  # a number byte run holding a digit
_NUMBER_RUN = re.compile(rb"[0-9.eE+\-]+")
_DIGIT_RUN = re.compile(rb"[0-9.+\-]+")


@dataclass(frozen=True, slots=True)
class LayoutRead:
    """The numbers :meth:`LineLayout.read` found at the start of a chunk, and where.

    ``columns`` has one row per slot, in line order (:attr:`LineLayout.step_row` and
    :attr:`LineLayout.metric_rows` say which is which), and one column per fitting
    line. ``runs`` cuts the first ``lines`` lines of the chunk, in file order, into
    ``(fits, line, start, end)``: ``line`` is the index of the run's first line;
    ``start:end`` are column indices for lines that fit and byte offsets into the
    chunk for the others. ``size`` is how many bytes those lines take; the rest of
    the chunk starts with a long stretch of lines of another kind.
    """

    columns: np.ndarray
    runs: list[tuple[bool, int, int, int]]
    lines: int
    size: int


class LineLayout:
    """The literal text around the numbers of one kind of log line.

    Learnt with :meth:`learn`; :meth:`read` reads the fitting lines at the start of
    a chunk by the three checks of the module docstring.
    """

    def __init__(
        self,
        line: bytes,
        slots: list[tuple[int, int]],
        names: list[str | None],
        whole: list[bool],
        ignored: list[tuple[int, int]] = (),
    ):
        order = sorted(range(len(slots)), key=lambda i: slots[i][0])
        self.line = line
        self.slots = [slots[i] for i in order]
        self.whole = [whole[i] for i in order]
        slot_names = [names[i] for i in order]
        self.names: list[str] = [name for name in slot_names if name is not None]
        self.step_row = slot_names.index(None)
        self.metric_rows = [i for i, name in enumerate(slot_names) if name is not None]
        bounds = [0] + [edge for slot in self.slots for edge in slot] + [len(line)]
        pieces = [line[bounds[2 * i] : bounds[2 * i + 1]] for i in range(len(self.slots) + 1)]
        self.skeleton = line.translate(None, _DIGIT_BYTES)
        self._block = self.skeleton * _BLOCK
        self._runs = len(_DIGIT_RUN.findall(line))
        # numbers the parser reads nothing from (a clock, a total) may change from line
        # to line: the literal pieces whose digits must stay put are cut around them too
        cuts = sorted([*self.slots, *ignored])
        fine = [0] + [edge for cut in cuts for edge in cut] + [len(line)]
        self._counts = self._piece_counts([line[fine[2 * i] : fine[2 * i + 1]] for i in range(len(cuts) + 1)])
        self._table, self._delete, self._fields, self._usecols = self._separate(pieces)
        self._lines = None  # the reader of big bodies of fields (see _read_fields), made when needed

    # -- learning ------------------------------------------------------------------

    @classmethod
    def learn(cls, line: bytes, parse: ParseLine) -> LineLayout | None:
        """A layout for lines like ``line``, or None when they cannot be read that way.

        ``parse(line)`` is the family's own reading of one line: ``(step, {metric:
        value})``, or None when the line gives no clean record. Each number of the
        line is replaced by a probe in turn to find what it feeds; the layout is kept
        only if the parser then reads a line with every slot changed exactly as the
        layout would.
        """
        if not line.endswith(b"\n") or b"\r" in line or len(line) > 4096 or not line.isascii():
            return None
        base = parse(line)
        if base is None or not base[1] or not all(map(math.isfinite, (base[0], *base[1].values()))):
            return None
        step, values = base
        slots: list[tuple[int, int]] = []
        names: list[str | None] = []
        ignored: list[tuple[int, int]] = []
        for match in _SLOT.finditer(line):
            start, end = match.span()
            probe = parse(line[:start] + _PROBE + line[end:])
            if probe is None or probe[1].keys() != values.keys():
                continue  # the number shapes what is read (a digit of a key): literal text
            if probe == base and _PROBE not in line[start:end]:
                ignored.append((start, end))  # read from nowhere (a clock): may vary
                continue
            changed = [name for name in values if probe[1][name] != values[name]]
            if probe[0] != step:
                if changed or probe[0] != float(_PROBE):
                    continue
                names.append(None)
            elif len(changed) == 1 and probe[1][changed[0]] == float(_PROBE):
                names.append(changed[0])
            else:
                continue
            slots.append((start, end))
        if names.count(None) != 1 or sorted(n for n in names if n is not None) != sorted(values):
            return None
        whole = []
        for (start, end), name in zip(slots, names):
            shaped = line[:start] + (b"1.5" if name is None else b"-1.5e-05") + line[end:]
            got = parse(shaped)
            fits = got is not None and (got[0] == 1.5 if name is None else got[1].get(name) == -1.5e-05)
            if name is not None and not fits:
                return None
            whole.append(not fits)
        try:
            layout = cls(line, slots, names, whole, ignored)
        except ValueError:
            return None
        return layout if layout._check_probe(parse) else None

    def _check_probe(self, parse: ParseLine) -> bool:
        """Change every slot at once and see the parser read exactly that."""
        text = bytearray()
        numbers = []
        last = 0
        for k, (start, end) in enumerate(self.slots):
            number = str(12 + k) if self.whole[k] else f"{k + 0.25!r}"
            text += self.line[last:start] + number.encode()
            numbers.append(float(number))
            last = end
        text += self.line[last:]
        got = parse(bytes(text))
        if got is None:
            return False
        metrics = {name: numbers[row] for name, row in zip(self.names, self.metric_rows)}
        return got[0] == numbers[self.step_row] and got[1] == metrics

    def _piece_counts(self, pieces: list[bytes]) -> list[tuple[bytes, int]]:
        """The literal pieces holding digits, and how often each occurs in a line.

        A line with the right skeleton holds a piece at most as often as the
        skeleton holds the piece's own skeleton; when the learnt line fills every
        such place, counting the piece over a chunk proves every line has it in
        place. The first piece is counted after a newline (it starts the line).
        """
        skeleton = self.skeleton
        counts = []
        for k, piece in enumerate(pieces):
            if not _DIGIT_RUN.search(piece):
                continue
            if k == 0:
                counts.append((b"\n" + piece, 1))
                continue
            bare = piece.translate(None, _DIGIT_BYTES)
            times = self.line.count(piece)
            if _overlapping(self.line, piece) != times or _overlapping(skeleton, bare) != times:
                raise ValueError("a literal piece is ambiguous")
            counts.append((piece, times))
        return counts

    @staticmethod
    def _separate(pieces: list[bytes]) -> tuple[bytes, bytes, int, list[int]]:
        """Choose the literal bytes that become commas, so each slot is a field alone.

        The other literal bytes are deleted, except number bytes, which stay: a
        separator must stand between every slot and any number byte of the literal
        text next to it (the ``e`` of ``time``).
        """
        gaps = []
        for k, piece in enumerate(pieces):
            runs = [m.span() for m in _NUMBER_RUN.finditer(piece)]
            if not runs:
                if 0 < k < len(pieces) - 1:
                    gaps.append(piece)
                continue
            if k:
                gaps.append(piece[: runs[0][0]])
            if k < len(pieces) - 1:
                gaps.append(piece[runs[-1][1] :])
        chosen: set[int] = set()
        while any(not chosen.intersection(gap) for gap in gaps):
            open_gaps = [gap for gap in gaps if not chosen.intersection(gap)]
            candidates = {byte for gap in open_gaps for byte in gap if byte != 10}
            if not candidates:
                raise ValueError("no separator between two slots")

            def score(byte: int) -> tuple[int, int, int]:
                covers = sum(byte in gap for gap in open_gaps)
                extra = sum(piece.count(byte) for piece in pieces)
                rank = _SEPARATORS.find(byte)
                return (-covers, extra, rank if rank >= 0 else len(_SEPARATORS))

            chosen.add(min(candidates, key=score))
        table = bytearray(range(256))
        for byte in chosen:
            table[byte] = ord(",")
        usecols = []
        field = 0
        for piece in pieces[:-1]:
            field += sum(piece.count(byte) for byte in chosen)
            usecols.append(field)
        fields = field + sum(pieces[-1].count(byte) for byte in chosen) + 1
        delete = bytes(byte for byte in _NOT_NUMBER if byte not in chosen)
        return bytes(table), delete, fields, usecols

    # -- reading -------------------------------------------------------------------

    def read(self, data: bytes) -> LayoutRead | None:
        """Read the fitting lines at the start of ``data`` (whole lines).

        Stops before the first stretch of :data:`_STRETCH` lines that do not fit (a
        new layout takes over there). A line with the right skeleton but something
        other than a number in a slot is found by halving and becomes an odd line.
        Returns None when odd lines are scattered so densely that reading line by
        line is cheaper: the caller then reads the lines with the family's parser.
        """
        if not data.endswith(b"\n"):
            return None
        odd, lines, whole = self._odd_lines(data)
        ends = None
        if odd or not whole:
            ends = _line_ends(data)
        size = len(data) if ends is None else (int(ends[lines - 1]) if lines else 0)
        columns = None
        for attempt in range(2):
            fit = lines - len(odd)
            breaks = sum(1 for k in range(1, len(odd)) if odd[k] != odd[k - 1] + 1) + bool(odd)
            if 2 * breaks > _FRAGMENTED * fit:
                return None  # odd lines so scattered that reading line by line is cheaper
            if not odd:
                body = data if whole else data[:size]
                runs = [(True, 0, 0, lines)] if lines else []
            else:
                assert ends is not None
                body, runs = self._split(data, odd, lines, ends)
            if not fit:
                return LayoutRead(np.empty((len(self.slots), 0)), runs, lines, size)
            columns = self._numbers(body, fit)
            if columns is not None or attempt:
                break
            if ends is None:
                ends = _line_ends(data)
            odd = self._isolate(data, ends, odd, lines)
            if odd is None:
                return None
        if columns is None:
            return None
        return LayoutRead(columns, runs, lines, size)

    def _isolate(self, data: bytes, ends: np.ndarray, odd: list[int], lines: int) -> list[int] | None:
        """``odd`` plus the lines whose numbers do not read, found by halving.

        Returns None when that takes more than :data:`_HALVINGS` reads.
        """
        fits = np.ones(lines, dtype=bool)
        fits[odd] = False
        budget = [_HALVINGS]

        def check(lo: int, hi: int) -> bool:
            """Whether lines ``lo:hi`` are clean; marks them odd when small and not."""
            index = np.flatnonzero(fits[lo:hi]) + lo
            if not len(index):
                return True
            budget[0] -= 1
            if budget[0] < 0:
                raise _GiveUp
            if self._numbers(_gather(data, ends, index), len(index)) is not None:
                return True
            if hi - lo <= 16:
                fits[index] = False
                return False
            middle = (lo + hi) // 2
            check(lo, middle)
            check(middle, hi)
            return False

        try:
            check(0, lines)
        except _GiveUp:
            return None
        return np.flatnonzero(~fits).tolist()

    def _odd_lines(self, data: bytes) -> tuple[list[int], int, bool]:
        """Indices of the lines whose skeleton differs from the learnt one.

        Also returns how many lines were looked at, and whether that is all of them
        (it is not when a stretch of odd lines stopped the look).
        """
        skeleton = data.translate(None, _DIGIT_BYTES)
        starts = skeleton.startswith
        one, block = self.skeleton, self._block
        one_size, block_size = len(one), len(block)
        size = len(skeleton)
        odd: list[int] = []
        pos = line = in_row = 0
        while pos < size:
            if starts(block, pos):
                pos += block_size
                line += _BLOCK
                in_row = 0
                continue
            for _ in range(_BLOCK):
                if pos >= size:
                    break
                if starts(one, pos):
                    pos += one_size
                    in_row = 0
                else:
                    odd.append(line)
                    in_row += 1
                    if in_row == _STRETCH:
                        del odd[-_STRETCH:]
                        return odd, line + 1 - _STRETCH, False
                    pos = skeleton.index(b"\n", pos) + 1
                line += 1
        return odd, line, True

    @staticmethod
    def _split(
        data: bytes, odd: list[int], lines: int, ends: np.ndarray
    ) -> tuple[bytes, list[tuple[bool, int, int, int]]]:
        """The fitting lines joined, and the runs of fitting and odd lines in order."""

        def offset(index: int) -> int:
            return int(ends[index - 1]) if index else 0

        runs: list[tuple[bool, int, int, int]] = []
        parts = []
        row = line = k = 0
        while k < len(odd):
            first = odd[k]
            while k + 1 < len(odd) and odd[k + 1] == odd[k] + 1:
                k += 1
            last = odd[k] + 1
            if first > line:
                runs.append((True, line, row, row + first - line))
                parts.append(data[offset(line) : offset(first)])
                row += first - line
            runs.append((False, first, offset(first), offset(last)))
            line = last
            k += 1
        if line < lines:
            runs.append((True, line, row, row + lines - line))
            parts.append(data[offset(line) : offset(lines)])
        return b"".join(parts), runs

    def _numbers(self, body: bytes, fit: int) -> np.ndarray | None:
        """The slot numbers of ``fit`` lines whose skeleton is the learnt one."""
        marks = np.frombuffer(body.translate(_MARK_DIGITS), dtype=np.uint8)
        runs = int(np.count_nonzero(marks[:-1] > marks[1:])) + (marks[0] == 0)
        if runs != self._runs * fit:
            return None
        for piece, times in self._counts:
            found = body.count(piece)
            if piece[0] == 10 and body.startswith(piece[1:]):
                found += 1
            if found != times * fit:
                return None
        fields = body.translate(self._table, self._delete)
        columns = plain_table(fields, self._fields, ",", tuple(self._usecols))
        if columns is None:
            columns = self._read_fields(fields)
        if columns is None or columns.shape != (len(self.slots), fit) or not np.isfinite(columns).all():
            return None
        for k, whole in enumerate(self.whole):
            if whole and not ((columns[k] == np.floor(columns[k])) & ~np.signbit(columns[k])).all():
                return None
        return columns

    def rest(self) -> None:
        """The file is read to its end: the buffers big reads kept are freed (see :class:`NumberLines`)."""
        if self._lines is not None:
            self._lines.rest()

    def _read_fields(self, fields: bytes) -> np.ndarray | None:
        """The slot fields of ``fields`` (a line of commas and numbers per line) by pandas' C reader:
        a big body as a CSV log's rows of numbers are read (in pieces at once, in place), else, or
        where that finds more than numbers in the fields the slots leave out, in one call."""
        if len(fields) >= _IN_PIECES_FROM:
            from tuiloss.core.formats.csv import NumberLines

            if self._lines is None and NumberLines.available():
                self._lines = NumberLines(self._fields, tuple(self._usecols))
            columns = self._lines.read(fields) if self._lines is not None else None
            if columns is not None:
                return np.array(columns)
        pd = load_pandas()
        try:
            frame = pd.read_csv(
                io.BytesIO(fields),
                sep=",",
                header=None,
                names=list(range(self._fields)),
                usecols=self._usecols,
                dtype=np.float64,
                engine="c",
                na_filter=True,
                keep_default_na=False,
                na_values=[""],
                quoting=3,
                **_float_options(),
            )
        except (ValueError, OverflowError, pd.errors.ParserError):
            return None
        return frame.to_numpy(dtype=np.float64).T


#: Bodies of fields from this size on are read in pieces on the parse threads (see CSV's ``PARALLEL_MIN_BYTES``).
_IN_PIECES_FROM = 4 * 1024 * 1024


class _GiveUp(Exception):
    pass


def _line_ends(data: bytes) -> np.ndarray:
    """The offset just past each newline of ``data``."""
    return np.flatnonzero(np.frombuffer(data, dtype=np.uint8) == 10) + 1


def _gather(data: bytes, ends: np.ndarray, index: np.ndarray) -> bytes:
    """Lines ``index`` (sorted line numbers) of ``data``, joined."""
    cuts = np.flatnonzero(np.diff(index) != 1) + 1
    parts = []
    for first, last in zip(np.r_[0, cuts], np.r_[cuts, len(index)]):
        start = int(ends[index[first] - 1]) if index[first] else 0
        parts.append(data[start : int(ends[index[last - 1]])])
    return b"".join(parts)


def _overlapping(text: bytes, piece: bytes) -> int:
    count = 0
    at = text.find(piece)
    while at >= 0:
        count += 1
        at = text.find(piece, at + 1)
    return count


@lru_cache(maxsize=1)
def _float_options() -> dict:
    """pandas before 3.1 parses floats correctly rounded only when asked."""
    pd = load_pandas()
    try:
        major, minor = (int(part) for part in pd.__version__.split(".")[:2])
    except ValueError:
        return {}
    return {} if (major, minor) >= (3, 1) else {"float_precision": "round_trip"}


#: Below this size a chunk is read line by line: a layout read costs a pandas call.
LAYOUT_MIN_BYTES = 16 * 1024
_LAYOUT_MISSES = 3  # chunks in a row without a usable layout before a parser stops learning
_LEARN_LINES = 256  # lines looked at to learn a layout
_LAYOUT_ROUNDS = 8  # layouts tried on one chunk

class LayoutReader:
    """Reads chunks of a log through learnt :class:`LineLayout` objects.

    One per parser, which supplies the four functions of the module docstring.
    """

    def __init__(
        self,
        parse_line: ParseLine,
        parse_odd: Callable[[bytes, int, Batch], None],
        take_pending: Callable[[], Pending],
        fitted: Callable[[np.ndarray], None],
    ) -> None:
        self.parse_line = parse_line
        self.parse_odd = parse_odd
        self.take_pending = take_pending
        self.fitted = fitted
        self._layout: LineLayout | None = None
        self.misses = 0

    @property
    def layout(self) -> LineLayout | None:
        return self._layout

    @layout.setter
    def layout(self, layout: LineLayout | None) -> None:
        if self._layout is not None and layout is not self._layout:
            self._layout.rest()  # the readers it kept for big reads are not kept for it any more
        self._layout = layout

    def reset(self) -> None:
        self.layout = None
        self.misses = 0

    def rest(self) -> None:
        """The file is read to its end (see :meth:`LineLayout.rest`)."""
        if self.layout is not None:
            self.layout.rest()

    def wants(self, data: bytes) -> bool:
        """Whether ``data`` is worth a layout read."""
        return len(data) >= LAYOUT_MIN_BYTES and self.misses < _LAYOUT_MISSES and b"\r" not in data

    def miss(self) -> None:
        """Count a chunk the parser read its own way, as if no layout had fitted it."""
        self.misses += 1

    def feed(self, data: bytes, first_line: int, batch: Batch) -> int | None:
        """Read ``data`` into ``batch``; return how many lines fitted a layout.

        Returns None, having read nothing, when no layout fits the start of the
        chunk. A layout reads up to the first long stretch of lines it does not fit;
        a new one is learnt from there (a step counter that grew a digit changes the
        padding of every line after it).
        """
        parts: dict[str, list[tuple[np.ndarray, np.ndarray]]] = {}
        pos = line = fitted = 0
        for _ in range(_LAYOUT_ROUNDS):
            rest = data[pos:] if pos else data
            if not rest or len(rest) < LAYOUT_MIN_BYTES:
                break
            read = self.layout.read(rest) if self.layout is not None else None
            if read is None or not read.lines:
                self.layout = _learn_layout(rest, self.parse_line)
                read = self.layout.read(rest) if self.layout is not None else None
            if read is None or not read.lines:
                self.layout = None
                break
            layout = self.layout
            assert layout is not None
            step_row = read.columns[layout.step_row]
            for fits, at, start, end in read.runs:
                if fits:
                    self._flush(parts)
                    steps = step_row[start:end]
                    for name, row in zip(layout.names, layout.metric_rows):
                        parts.setdefault(name, []).append((steps, read.columns[row, start:end]))
                    fitted += end - start
                    self.fitted(steps)
                else:
                    self.parse_odd(rest[start:end], first_line + line + at, batch)
            pos += read.size
            line += read.lines
            if 2 * read.columns.shape[1] < read.lines:
                self.layout = None  # mostly odd lines: learn again from the next chunk
        if not pos:
            self.misses += 1
            return None
        self.misses = 0
        if pos < len(data):
            self.parse_odd(data[pos:], first_line + line, batch)
        self._flush(parts)
        for name, pieces in parts.items():
            if len(pieces) == 1:
                batch.add_rows(pieces[0][0], {name: pieces[0][1]})  # one layout's names share its steps
            else:
                batch.series[name] = (
                    np.concatenate([steps for steps, _ in pieces]),
                    np.concatenate([values for _, values in pieces]),
                )
        return fitted

    def _flush(self, parts: dict[str, list[tuple[np.ndarray, np.ndarray]]]) -> None:
        """Move what the parser emitted into ``parts``, keeping file order."""
        for name, (steps, values) in self.take_pending().items():
            if steps:
                parts.setdefault(name, []).append(
                    (np.asarray(steps, dtype=np.float64), np.asarray(values, dtype=np.float64))
                )


def _learn_layout(data: bytes, parse: ParseLine) -> LineLayout | None:
    """A layout for the most common kind of line among the first lines of ``data``.

    Lines are grouped by skeleton, so a rare first line (an evaluation line before
    the training lines) does not set it.
    """
    lines = data[: 1 << 16].split(b"\n")[:_LEARN_LINES]
    if len(lines) > 1:
        lines.pop()  # a cut-off line, or the empty text after the last newline
    by_skeleton: dict[bytes, list[bytes]] = {}
    for line in lines:
        by_skeleton.setdefault(line.translate(None, _DIGIT_BYTES), []).append(line + b"\n")
    for group in sorted(by_skeleton.values(), key=len, reverse=True)[:4]:
        layout = LineLayout.learn(group[0], parse)
        if layout is not None:
            return layout
    return None
