"""A :class:`ChartSpec` rasterised into lines of rich text, with numpy.

No Textual import: :func:`render_chart` takes a spec and a size and returns one
:class:`rich.text.Text` per terminal row. The plot area is a grid of braille
cells (2 x 4 dots each); traces whose marker is ``"braille"`` are drawn as dots,
the others (``--ascii``, NO_COLOR, eval scatters) as their marker character per
cell. Every trace is rasterised in one batch, so a frame costs O(points + cells)
in numpy and one short Python loop per row to cut the row into styled runs.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass
from functools import lru_cache
from itertools import pairwise
from typing import Callable

import numpy as np
from rich.style import Style
from rich.text import Span, Text

from tuiloss.ui.chartdata import ChartSpec, Trace

#: Columns kept on the left for the y tick labels and the frame (labels are right-aligned in all but two).
Y_LABEL_COLUMNS = 8
#: Rows around the plot area: the title, the top and bottom frame, the x tick labels.
FRAME_ROWS = 4

_BRAILLE = 0x2800
#: Bit of each dot of a braille cell, indexed [row 0..3][column 0..1].
_DOT_BITS = np.array([[0x01, 0x08], [0x02, 0x10], [0x04, 0x20], [0x40, 0x80]], dtype=np.uint8)
_SPACE = ord(" ")
#: The dots a band's braille cell keeps of those it covers: every other one, a lighter shading.
_BAND_DOTS = 0x01 | 0x04 | 0x10 | 0x80
#: The frame, per mode: corners, edges, ticks and the vertical line (a cursor or a reset).
BOX = {False: dict(tl="┌", tr="┐", bl="└", br="┘", h="─", v="│", ytick="┤", xtick="┬", dotted="┊"),
       True: dict(tl="+", tr="+", bl="+", br="+", h="-", v="|", ytick="+", xtick="+", dotted=":")}


@dataclass(frozen=True, slots=True)
class Layout:
    """Where the plot area sits in a ``width`` x ``height`` chart."""

    width: int
    height: int
    label_columns: int  # y tick labels, right-aligned, before the left frame
    plot_columns: int
    plot_rows: int


def layout(spec: ChartSpec, width: int, height: int) -> Layout:
    """The plot area left inside the title, frame and tick labels."""
    widest = max((len(label) for label in spec.y_ticks[1]), default=0) if not spec.empty else 0
    label_columns = max(Y_LABEL_COLUMNS - 2, widest)
    return Layout(width, height, label_columns, max(0, width - label_columns - 2), max(0, height - FRAME_ROWS))


@lru_cache(maxsize=4096)
def _style(color: tuple[int, int, int] | str) -> Style:
    """The style of a trace's colour: made once per colour (a frame asks it of every curve)."""
    if isinstance(color, tuple):
        return Style(color=f"rgb({color[0]},{color[1]},{color[2]})")
    return Style(color=color)


def _scale(values: np.ndarray, lo: float, hi: float, cells: int, flip: bool) -> np.ndarray:
    """Positions ``lo..hi`` onto ``0..cells-1`` (top row first when ``flip``), as floats."""
    span = hi - lo if hi > lo else 1.0
    unit = (values - lo) / span
    if flip:
        unit = 1.0 - unit
    return unit * (cells - 1)


def _spans(traces: list[tuple[int, Trace]], spec: ChartSpec, columns: int, rows: int) -> tuple[np.ndarray, ...]:
    """Every point and joining segment of ``traces`` as vertical runs of a ``columns`` x ``rows`` dot grid.

    A segment is cut at each dot column it crosses; each piece is one run
    ``lo..hi`` in its column, so lines have no gaps and a steep one costs no more
    than a flat one. Returns (column, lo, hi, trace number) arrays.
    """
    empty = np.zeros(0, dtype=np.int64)
    if not traces:
        return empty, empty, empty, empty
    xs = np.concatenate([np.asarray(t.xs, dtype=np.float64) for _, t in traces])
    ys = np.concatenate([np.asarray(t.ys, dtype=np.float64) for _, t in traces])
    sizes = np.array([len(t.xs) for _, t in traces])
    owner = np.repeat(np.array([k for k, _ in traces]), sizes)
    joined = np.repeat(np.array([t.kind != "scatter" for _, t in traces]), sizes)
    with np.errstate(invalid="ignore", over="ignore"):
        gx = _scale(xs, *spec.x_lim, columns, flip=False)
        gy = _scale(ys, *spec.y_lim, rows, flip=True)
    finite = np.isfinite(gx) & np.isfinite(gy)
    seg = finite[:-1] & finite[1:] & (owner[:-1] == owner[1:]) & joined[:-1]
    # Most segments stay in their column or reach into the next: one run in their first
    # column covers them (their end is the next segment's start, or a point drawn alone).
    x0, y0, y1 = gx[:-1], gy[:-1], gy[1:]
    with np.errstate(invalid="ignore"):
        c0 = np.rint(x0)
        reach = np.abs(np.rint(gx[1:]) - c0)
    near = seg & (reach <= 1)
    far = np.flatnonzero(seg & (reach > 1))
    alone = finite.copy()
    alone[:-1] &= ~seg  # a point that starts a segment is drawn with it
    cols = [gx[alone], c0[near]]
    los = [gy[alone], np.minimum(y0, y1)[near]]
    his = [gy[alone], np.maximum(y0, y1)[near]]
    whos = [owner[alone], owner[:-1][near]]
    if len(far):
        # A longer segment is cut at each column it crosses, one run per column.
        x0, y0 = gx[far], gy[far]
        dx, dy = gx[far + 1] - x0, gy[far + 1] - y0
        pieces = np.minimum(reach[far], 4 * columns).astype(np.int64) + 1
        which = np.repeat(np.arange(len(far)), pieces)
        first = np.cumsum(pieces) - pieces
        index = np.arange(int(pieces.sum())) - first[which]
        last = (pieces - 1)[which]
        t_here = index / last
        t_next = np.minimum((index + 1) / last, 1.0)
        ya = y0[which] + t_here * dy[which]
        yb = y0[which] + t_next * dy[which]
        cols.append(x0[which] + t_here * dx[which])
        los.append(np.minimum(ya, yb))
        his.append(np.maximum(ya, yb))
        whos.append(owner[far][which])
    col, lo, hi = np.rint(np.concatenate(cols)), np.rint(np.concatenate(los)), np.rint(np.concatenate(his))
    who = np.concatenate(whos)
    keep = (col >= 0) & (col <= columns - 1) & (hi >= 0) & (lo <= rows - 1)
    lo = np.clip(lo[keep], 0, rows - 1)
    hi = np.clip(hi[keep], 0, rows - 1)
    return col[keep].astype(np.int64), lo.astype(np.int64), hi.astype(np.int64), who[keep]


#: The dots of one braille cell's column (0 left, 1 right) from dot row ``a`` to ``b`` (0..3), as its bits.
_RANGE_BITS = np.zeros((2, 4, 4), dtype=np.uint8)
for _c in range(2):
    for _a in range(4):
        for _b in range(_a, 4):
            _RANGE_BITS[_c, _a, _b] = np.bitwise_or.reduce(_DOT_BITS[_a:_b + 1, _c])


@dataclass(frozen=True, slots=True)
class Layer:
    """One trace rasterised alone: the cells it draws in (flat, ascending) and its dots in each."""

    xs: object  # the trace's own points: a layer is kept while the trace holds these very objects
    ys: object
    joined: bool
    cells: np.ndarray
    bits: np.ndarray


class Layers:
    """Each trace's :class:`Layer`, kept between frames while its points and the grid stay the same.

    A followed run changes one curve: the frame rasterises that one and composites the others from
    here; a run toggled on or off is a composite of the layers kept. The grid (the limits and the
    size) changing starts over. Only what the last frame drew is kept.
    """

    def __init__(self) -> None:
        self._grid: tuple | None = None
        self._kept: dict[tuple, Layer] = {}
        self._used: dict[tuple, Layer] = {}
        #: per group of traces (curves, bands), the last frame's layers end to end (see :func:`_joined`)
        self.joined: dict[str, _Joined] = {}
        self.rasterised = 0  # traces rasterised (not found here), for tests
        self.composited = 0  # layers composited (not found in a kept background), for tests
        #: the last frame's plot: (palette, cells, styles, row prefixes, row lines); a row whose cells,
        #: styles and prefix are as they were keeps its line
        self.plot: tuple | None = None
        #: the last frame's traces' style table: ((colours and kinds, colour on), style of each trace,
        #: which are bands, the styles in use and their numbers after the traces')
        self.trace_styles: tuple | None = None
        #: composites of the layers kept from frame to frame (see :meth:`background`), newest last
        self._backgrounds: list[tuple[list[tuple[int, Layer, bool]], np.ndarray, np.ndarray]] = []

    def begin(self, grid: tuple) -> None:
        if grid != self._grid:
            self._grid, self._kept, self.joined, self._backgrounds = grid, {}, {}, []
        self._used = {}
        self._also: dict[tuple, Layer] | None = None  # the layers of the last frame's joined ones, by points

    def background(self, kept: list[tuple[int, Layer, bool]], cells: int,
                   composite: Callable[[np.ndarray, np.ndarray], None]) -> tuple[np.ndarray, np.ndarray]:
        """The owner and braille dots of each cell with ``kept`` (trace number, layer, braille)
        composited (by ``composite(owner, mask)``): worked out once while the same layers stay under
        the same numbers (a followed run changes one curve a frame; the others are composited from
        here). Read-only arrays."""
        for seen, owner, mask in reversed(self._backgrounds):
            if len(seen) == len(kept) and all(a[0] == b[0] and a[1] is b[1] and a[2] == b[2]
                                              for a, b in zip(seen, kept)):
                return owner, mask
        owner = np.full(cells, -1, dtype=np.int64)
        mask = np.zeros(cells, dtype=np.uint8)
        composite(owner, mask)
        self.composited += len(kept)
        owner.flags.writeable = mask.flags.writeable = False
        self._backgrounds = [*self._backgrounds[-1:], (kept, owner, mask)]  # this one and the one before
        return owner, mask

    def end(self) -> None:
        self._kept, self._used = self._used, {}

    def get(self, trace: Trace) -> Layer | None:
        key = (id(trace.xs), id(trace.ys), trace.kind != "scatter")
        layer = self._kept.get(key)
        if layer is None:  # a layer the last frame took from a joined composite, never looked up by points
            if self._also is None:
                self._also = {(id(one.xs), id(one.ys), one.joined): one
                              for joined in self.joined.values() for one in joined.layers}
            layer = self._also.get(key)
        if layer is not None and layer.xs is trace.xs and layer.ys is trace.ys:
            self._used[key] = layer
            return layer
        return None

    def put(self, trace: Trace, layer: Layer) -> None:
        self.rasterised += 1
        self._used[(id(trace.xs), id(trace.ys), layer.joined)] = layer


def _layers_of(traces: list[tuple[int, Trace]], spec: ChartSpec, columns: int, rows: int) -> list[Layer]:
    """The :class:`Layer` of each of ``traces`` (numbered), rasterised in one batch."""
    col, lo, hi, who = _spans(traces, spec, 2 * columns, 4 * rows)
    top, bottom = lo >> 2, hi >> 2
    count = bottom - top + 1  # the cell rows a run of dots crosses: most often one
    row = top
    if len(count) and count.max() > 1:
        run = np.repeat(np.arange(len(lo)), count)
        row = top[run] + (np.arange(int(count.sum())) - (np.cumsum(count) - count)[run])
        col, lo, hi, who = col[run], np.maximum(lo[run], 4 * row), np.minimum(hi[run], 4 * row + 3), who[run]
    bits = _RANGE_BITS[col & 1, lo & 3, hi & 3]
    cells = rows * columns
    key = who * cells + row * columns + (col >> 1)
    order = np.argsort(key)  # by trace, then cell
    key, bits = key[order], bits[order]
    found: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    if len(key):
        starts = np.flatnonzero(np.concatenate(([True], key[1:] != key[:-1])))
        merged = np.bitwise_or.reduceat(bits, starts)  # a cell's dots from every run of the trace in it
        key = key[starts]
        owners = key // cells
        cut = np.flatnonzero(np.diff(owners)) + 1
        for part, part_cells, part_bits in zip(np.split(owners, cut), np.split(key % cells, cut), np.split(merged, cut)):
            found[int(part[0])] = (part_cells.astype(np.int32), part_bits)
    empty = (np.zeros(0, dtype=np.int32), np.zeros(0, dtype=np.uint8))
    return [Layer(t.xs, t.ys, t.kind != "scatter", *found.get(k, empty)) for k, t in traces]


@dataclass(frozen=True, slots=True)
class _Joined:
    """The layers of a frame's traces, end to end in drawing order (see :func:`_joined`)."""

    traces: list[Trace]  # held, so that no other trace takes one of their ids while kept
    index: dict[int, int]  # id of each trace -> its place
    layers: list[Layer]
    cells: np.ndarray
    bits: np.ndarray
    lengths: np.ndarray
    starts: np.ndarray


def _joined(layers: Layers, group: str, traces: list[Trace], spec: ChartSpec, columns: int,
            rows: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The cells and dots of ``traces``' layers end to end, in order, and how many cells each has.

    Made from the last frame's: a trace given again as the very same object keeps its place in
    them, so a run switched on or off costs a copy of the runs of traces kept on either side of
    it (a few slices), not a look-up and a copy per trace; only the traces not seen before are
    looked up in ``layers`` or rasterised.
    """
    last = layers.joined.get(group)
    count = len(traces)
    if last is not None and len(last.traces) == count and all(a is b for a, b in zip(traces, last.traces)):
        # the very traces of the last frame, in its order (a followed run that drew the same)
        return last.cells, last.bits, last.lengths, last.layers, np.zeros(count, dtype=bool)
    at = np.array([last.index.get(id(t), -1) for t in traces] if last is not None else [-1] * count,
                  dtype=np.int64)
    new = np.flatnonzero(at < 0)
    fresh = [traces[i] for i in new]
    found = [layers.get(t) for t in fresh]
    missing = [(i, t) for i, (t, layer) in enumerate(zip(fresh, found)) if layer is None]
    if missing:
        for (i, t), layer in zip(missing, _layers_of(missing, spec, columns, rows)):
            found[i] = layer
            layers.put(t, layer)
    lengths = np.zeros(count, dtype=np.int64)
    kept = at >= 0
    if last is not None:
        lengths[kept] = last.lengths[at[kept]]
    lengths[new] = [len(layer.cells) for layer in found]
    starts = np.cumsum(lengths) - lengths
    # runs of traces that follow each other as they did in the last frame: one slice each
    follows = np.zeros(count, dtype=bool)
    if count > 1:
        follows[1:] = kept[1:] & kept[:-1] & (at[1:] == at[:-1] + 1)
    firsts = np.flatnonzero(~follows)
    placed = dict(zip(new.tolist(), found))
    if last is None or len(firsts) > 64 + count // 8:  # most of them moved: every layer joined again
        every = [placed[i] if j < 0 else last.layers[j] for i, j in enumerate(at.tolist())]
        cells = np.concatenate([layer.cells for layer in every]) if every else np.zeros(0, dtype=np.int32)
        bits = np.concatenate([layer.bits for layer in every]) if every else np.zeros(0, dtype=np.uint8)
    else:
        ends = np.append(firsts[1:], count)
        cell_parts, bit_parts = [], []
        for first, end in zip(firsts.tolist(), ends.tolist()):
            if at[first] < 0:
                layer = placed[first]
                cell_parts.append(layer.cells)
                bit_parts.append(layer.bits)
            else:
                a = int(last.starts[at[first]])
                b = int(last.starts[at[end - 1]] + last.lengths[at[end - 1]])
                cell_parts.append(last.cells[a:b])
                bit_parts.append(last.bits[a:b])
        cells = np.concatenate(cell_parts) if cell_parts else np.zeros(0, dtype=np.int32)
        bits = np.concatenate(bit_parts) if bit_parts else np.zeros(0, dtype=np.uint8)
        every = [placed[i] if j < 0 else last.layers[j] for i, j in enumerate(at.tolist())] if len(new) else [
            last.layers[j] for j in at.tolist()]
    layers.joined[group] = _Joined(list(traces), {id(t): i for i, t in enumerate(traces)}, every, cells, bits,
                                   lengths, starts)
    return cells, bits, lengths, every, ~kept


def rasterise(spec: ChartSpec, columns: int, rows: int, layers: Layers | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The plot area of ``spec``: code points and owner (trace number, -1 for none) per cell.

    Braille traces set dots on a 2x4-per-cell grid, OR-ed into one mask per cell;
    other traces put their marker character in each cell they cross. A cell shows
    the kind and colour of the last trace drawn through it. ``layers``, kept between frames,
    holds each trace rasterised alone: only the traces not found there are rasterised.
    """
    codes = np.full((rows, columns), _SPACE, dtype=np.uint32)
    if rows == 0 or columns == 0 or not spec.traces:
        return codes, np.full((rows, columns), -1, dtype=np.int64)
    layers = layers if layers is not None else Layers()
    layers.begin((spec.x_lim, spec.y_lim, columns, rows))
    try:
        codes, owner = _rasterise(spec, [k for k, t in enumerate(spec.traces) if t.kind != "band"], columns, rows,
                                  layers)
        bands = [k for k, t in enumerate(spec.traces) if t.kind == "band"]
        if bands:  # under the curves: a band shades only the cells no curve draws in
            band_codes, band_owner = _rasterise(spec, bands, columns, rows, layers)
            under = (owner < 0) & (band_owner >= 0)
            shaded = band_codes[under]
            braille = (shaded >= _BRAILLE) & (shaded < _BRAILLE + 256)
            light = np.where(braille, _BRAILLE + ((shaded - _BRAILLE) & _BAND_DOTS), shaded)
            codes[under] = np.where(braille & (light == _BRAILLE), shaded, light)  # a thin band keeps its dots
            owner[under] = band_owner[under]
    finally:
        layers.end()
    return codes, owner


def _rasterise(spec: ChartSpec, which: list[int], columns: int, rows: int,
               layers: Layers) -> tuple[np.ndarray, np.ndarray]:
    """:func:`rasterise` of the traces numbered ``which``: their layers, composited in order."""
    codes = np.full(rows * columns, _SPACE, dtype=np.uint32)
    owner = np.full(rows * columns, -1, dtype=np.int64)
    drawn = [(k, spec.traces[k]) for k in which if len(spec.traces[k].xs)]
    if not drawn:
        return codes.reshape(rows, columns), owner.reshape(rows, columns)
    cells, bits, lengths, every, fresh = _joined(
        layers, "bands" if spec.traces[drawn[0][0]].kind == "band" else "curves", [t for _, t in drawn], spec,
        columns, rows)
    braille = [t.marker == "braille" for t in spec.traces]
    is_braille = np.array(braille)
    number_list = [k for k, _ in drawn]
    numbers = np.array(number_list, dtype=np.int64)

    def composite(which: np.ndarray):
        return lambda into_owner, into_mask: _composite(into_owner, into_mask, cells, bits, lengths, numbers,
                                                        is_braille, which)

    # The layers kept from the last frame are composited as a background, itself kept while they
    # stay the same (a followed run: every curve but its own); the others go over a copy of it.
    kept = [(k, layer, braille[k]) for k, layer, new in zip(number_list, every, fresh.tolist()) if not new]
    owner, mask = layers.background(kept, rows * columns, composite(~fresh))
    owner, mask = owner.copy(), mask.copy()
    if fresh.any():
        composite(fresh)(owner, mask)
        layers.composited += int(fresh.sum())
    by_braille = (owner >= 0) & is_braille[np.maximum(owner, 0)]
    codes[by_braille] = _BRAILLE + mask[by_braille].astype(np.uint32)
    by_marker = (owner >= 0) & ~by_braille
    if by_marker.any():
        marker_of = np.array([ord(t.marker[:1] or "*") if t.marker != "braille" else 0 for t in spec.traces],
                             dtype=np.uint32)
        codes[by_marker] = marker_of[owner[by_marker]]
    return codes.reshape(rows, columns), owner.reshape(rows, columns)


def _composite(owner: np.ndarray, mask: np.ndarray, cells: np.ndarray, bits: np.ndarray, lengths: np.ndarray,
               numbers: np.ndarray, is_braille: np.ndarray, which: np.ndarray) -> None:
    """Composite into ``owner`` and ``mask`` the layers at the places ``which`` of the layers joined
    end to end (``cells``, ``bits``, ``lengths`` cells each, trace ``numbers``).

    Every layer at once (a loop over thousands of layers was a tenth of a second): later traces
    over earlier ones, so a cell's owner is the highest trace number in it; a cell's dots are
    those of every braille trace in it. Both are independent of the order layers come in, so
    layers composited over a composite of others give what all of them at once would.
    """
    if not which.any():
        return
    whose = np.repeat(numbers, lengths)
    if not which.all():
        take = np.repeat(which, lengths)
        cells, bits, whose = cells[take], bits[take], whose[take]
    np.maximum.at(owner, cells, whose)
    dotted = is_braille[whose]
    np.bitwise_or.at(mask, cells[dotted], bits[dotted])


def _cell(value: float, lo: float, hi: float, cells: int, flip: bool) -> int:
    """The cell holding ``value``, through the braille dot grid (as the traces are drawn)."""
    dot = np.rint(_scale(np.float64(value), lo, hi, cells * (4 if flip else 2), flip))
    return int(dot // (4 if flip else 2)) if np.isfinite(dot) else -1


def _free_row(owner: np.ndarray, codes: np.ndarray, row: int, col: int, length: int, reach: int = 2) -> int:
    """``row``, or the nearest row within ``reach`` where ``length`` cells from ``col`` draw nothing yet.

    A label then sits beside the curve it names instead of over it; with no free row near, it
    stays on ``row``.
    """
    rows = owner.shape[0]
    for offset in (0, -1, 1, -2, 2)[: 2 * reach + 1]:
        r = row + offset
        if 0 <= r < rows and (owner[r, col:col + length] < 0).all() and (codes[r, col:col + length] == _SPACE).all():
            return r
    return row


def _put(codes: np.ndarray, styles: np.ndarray, row: int, col: int, text: str, style: int) -> None:
    """Write ``text`` from ``col`` on ``row``, clipped at the plot edges."""
    columns = codes.shape[1]
    if not 0 <= row < codes.shape[0]:
        return
    begin, end = max(col, 0), min(col + len(text), columns)
    if begin >= end:
        return
    codes[row, begin:end] = [ord(ch) for ch in text[begin - col:end - col]]
    styles[row, begin:end] = style


def _centred(text: str, width: int) -> str:
    text = text[:width]
    left = (width - len(text)) // 2
    return " " * left + text + " " * (width - len(text) - left)


def drawn_look(spec: ChartSpec) -> tuple[tuple, tuple]:
    """What :func:`render_chart` draws of ``spec``: two specs whose looks are :func:`same_look`
    render the same lines at the same size (a followed run whose new points draw as before gives
    the frame before's look again: its curves' very traces, the same limits, ticks and labels)."""
    return (tuple(spec.traces),
            (spec.title, spec.empty, spec.ascii, spec.x_log, spec.y_log, tuple(spec.x_lim), tuple(spec.y_lim),
             tuple(spec.labels), tuple(spec.vlines), tuple(spec.event_marks),
             tuple(spec.x_ticks[0]), tuple(spec.x_ticks[1]), tuple(spec.y_ticks[0]), tuple(spec.y_ticks[1])))


def same_look(a: tuple[tuple, tuple], b: tuple[tuple, tuple]) -> bool:
    """Whether two :func:`drawn_look` are the same: the very trace objects (a trace is never
    changed once drawn), and the rest equal."""
    return (len(a[0]) == len(b[0]) and all(map(operator.is_, a[0], b[0])) and a[1] == b[1])


def render_chart(spec: ChartSpec, width: int, height: int, *, color: bool = True,
                 layers: Layers | None = None) -> list[Text]:
    """``spec`` as ``height`` lines of ``width`` cells: title, framed plot, tick labels.

    ``layers`` (kept by the caller between frames) holds each trace rasterised alone (see :func:`rasterise`).
    """
    if width <= 0 or height <= 0:
        return []
    box = layout(spec, width, height)
    lw, pw, ph = box.label_columns, box.plot_columns, box.plot_rows
    frame = BOX[spec.ascii]
    if pw < 2 or ph < 1:
        return [Text(_centred(spec.empty or spec.title, width))] + [Text(" " * width) for _ in range(height - 1)]
    styles_in_use: list[Style] = [Style.null()]  # style 0: plain
    style_ids: dict[object, int] = {}

    def style_id(value) -> int:
        if not color or value is None or value == "default":
            return 0
        if value not in style_ids:
            style_ids[value] = len(styles_in_use)
            styles_in_use.append(_style(value))
        return style_ids[value]

    x_lo, x_hi = spec.x_lim
    y_lo, y_hi = spec.y_lim
    if spec.empty:
        codes = np.full((ph, pw), _SPACE, dtype=np.uint32)
        styles = np.zeros((ph, pw), dtype=np.int64)
        message = spec.empty[:pw]
        _put(codes, styles, (ph - 1) // 2, (pw - len(message)) // 2, message, 0)
        x_ticks: list[tuple[int, str]] = []
        y_ticks: dict[int, str] = {}
    else:
        codes, owner = rasterise(spec, pw, ph, layers)
        # the traces' styles: the last frame's table while their colours and kinds are as they were
        # (a followed run changes one trace, never its colour)
        looks = [(t.color, t.kind) for t in spec.traces]
        table = layers.trace_styles if layers is not None else None
        if table is not None and table[0] == (looks, color):
            trace_styles, is_band = table[1], table[2]
            styles_in_use[:] = table[3]
            style_ids.update(table[4])
        else:
            trace_styles = np.array([style_id(c) for c, _ in looks] + [0], dtype=np.int64)
            is_band = np.array([kind == "band" for _, kind in looks] + [False])
            if layers is not None:
                layers.trace_styles = ((looks, color), trace_styles, is_band, list(styles_in_use), dict(style_ids))
        styles = trace_styles[owner]  # owner -1 picks the trailing plain style
        for x, mark_color, glyph, place in spec.event_marks:  # under the cursor, resets and labels
            col = _cell(x, x_lo, x_hi, pw, flip=False)
            if 0 <= col < pw:
                free = (owner[:, col] < 0) | is_band[owner[:, col]]  # a band is shading: marks go over it
                if place == "line":
                    codes[free, col] = ord(frame["dotted"])
                    styles[free, col] = style_id(mark_color)
                row = ph - 1 if place == "bottom" else 0
                if place == "line" or free[row]:  # a glyph alone never hides a curve's dot
                    codes[row, col], styles[row, col] = ord(glyph[0]), style_id(mark_color)
        for x, line_color in spec.vlines:
            col = _cell(x, x_lo, x_hi, pw, flip=False)
            if 0 <= col < pw:
                free = (owner[:, col] < 0) | is_band[owner[:, col]]
                codes[free, col] = ord(frame["v"])
                styles[free, col] = style_id(line_color)
        for label in spec.labels:
            col = _cell(label.x, x_lo, x_hi, pw, flip=False)
            row = _cell(label.y, y_lo, y_hi, ph, flip=True)
            if not 0 <= row < ph:
                continue
            if label.alignment == "center":
                col -= len(label.text) // 2
            elif label.alignment == "right":
                col -= len(label.text) - 1
            col = min(max(col, 0), max(pw - len(label.text), 0))  # never cut at an edge
            row = _free_row(owner, codes, row, col, len(label.text))
            _put(codes, styles, row, col, label.text, style_id(label.color))
        x_ticks = []
        for x, text in zip(*spec.x_ticks):
            col = _cell(x, x_lo, x_hi, pw, flip=False)
            if 0 <= col < pw:
                x_ticks.append((col, text))
        y_ticks = {}
        for y, text in zip(*spec.y_ticks):
            row = _cell(y, y_lo, y_hi, ph, flip=True)
            if 0 <= row < ph:
                y_ticks.setdefault(row, text)

    title = " " * lw + _centred(spec.title, pw + 2) if len(spec.title) <= pw + 2 else _centred(spec.title, width)
    lines = [Text(title)]
    lines.append(Text(" " * lw + frame["tl"] + frame["h"] * pw + frame["tr"]))
    strings = codes.view(f"<U{pw}").reshape(ph)
    palette = (tuple(style_ids), frame["v"])
    # The rows of the last frame's plot whose cells and styles are as they were: found for all
    # rows at once, and their lines kept (a followed run changes a few rows, often none).
    before = layers.plot if layers is not None else None
    same = [False] * ph
    if before is not None and before[0] == palette and before[1].shape == codes.shape:
        same = (~((codes != before[1]).any(axis=1) | (styles != before[2]).any(axis=1))).tolist()
    prefixes: list[str] = []
    made: list[Text] = []
    for row in range(ph):
        tick = y_ticks.get(row)
        prefix = (tick.rjust(lw)[-lw:] + frame["ytick"]) if tick is not None else " " * lw + frame["v"]
        prefixes.append(prefix)
        if same[row] and before[3][row] == prefix:  # the row of the last frame, unchanged
            line = before[4][row]
        else:
            style_row = styles[row]
            line = Text(prefix + str(strings[row]) + frame["v"], no_wrap=True, overflow="crop")
            edges = np.flatnonzero(np.diff(style_row)) + 1
            bounds = np.concatenate(([0], edges, [pw]))
            offset = lw + 1
            line.spans = [Span(offset + int(a), offset + int(b), styles_in_use[int(style_row[a])])
                          for a, b in pairwise(bounds) if style_row[a]]
        made.append(line)
        lines.append(line)
    if layers is not None:
        layers.plot = (palette, codes, styles, prefixes, made)
    bottom = np.array(list(frame["h"] * pw))
    labels = [" "] * (width + 8)
    for col, text in x_ticks:
        bottom[col] = frame["xtick"]
        start = max(0, min(lw + 1 + col - len(text) // 2, width - len(text)))
        labels[start:start + len(text)] = list(text)
    lines.append(Text(" " * lw + frame["bl"] + "".join(bottom) + frame["br"]))
    lines.append(Text("".join(labels[:width]).rstrip().ljust(width)))
    for line in lines:
        line.no_wrap = True
        line.overflow = "crop"
    return lines[:height]


def render_plain(spec: ChartSpec, width: int, height: int) -> str:
    """The chart as plain text, trailing spaces trimmed (exports and tests)."""
    return "\n".join(line.plain.rstrip() for line in render_chart(spec, width, height, color=False))
