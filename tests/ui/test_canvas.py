"""The numpy chart renderer: braille dots, markers, colours, labels, frame."""

from __future__ import annotations

import math

import numpy as np

from tuiloss.ui.canvas import layout, rasterise, render_chart, render_plain
from tuiloss.ui.chartdata import ChartSpec, ChartView, Label, Mark, Trace, build_chart

from ui_helpers import curve_from_arrays

RED, BLUE = (255, 0, 0), (0, 0, 255)


def spec_of(*traces, labels=(), vlines=(), x_lim=(0.0, 1.0), y_lim=(0.0, 1.0)) -> ChartSpec:
    return ChartSpec(traces=list(traces), labels=list(labels), vlines=list(vlines), x_lim=x_lim, y_lim=y_lim,
                     title="loss", x_ticks=([0.0, 1.0], ["0", "1"]), y_ticks=([0.0, 1.0], ["0", "1"]))


def braille_dots(codes: np.ndarray) -> np.ndarray:
    """Dots per cell of a braille code array (0 for non-braille cells)."""
    bits = codes.astype(np.int64) - 0x2800
    bits[(bits < 0) | (bits > 0xFF)] = 0
    return np.array([[int(b).bit_count() for b in row] for row in bits])


def test_horizontal_line_fills_one_braille_row():
    codes, owner = rasterise(spec_of(Trace([0.0, 1.0], [0.0, 0.0], RED, "braille")), 20, 5)
    # y = 0 is the bottom dot row: the bottom cells, each with both bottom dots (bits 0x40 | 0x80).
    assert (codes[-1] == 0x2800 + 0xC0).all()
    assert (codes[:-1] == ord(" ")).all()
    assert (owner[-1] == 0).all()


def test_diagonal_has_no_gaps():
    codes, _ = rasterise(spec_of(Trace([0.0, 1.0], [0.0, 1.0], RED, "braille")), 30, 7)
    dots = braille_dots(codes)
    assert (dots.sum(axis=0) > 0).all()  # every column
    assert (dots.sum(axis=1) > 0).all()  # every row
    # Every dot column holds at least one dot.
    bits = codes.astype(np.int64) - 0x2800
    left = ((bits & 0x47) > 0).any(axis=0)
    right = ((bits & 0xB8) > 0).any(axis=0)
    assert left.all() and right.all()


def test_one_point_spike_stays_visible():
    xs = np.linspace(0, 1, 200)
    ys = np.zeros(200)
    ys[117] = 1.0
    codes, _ = rasterise(spec_of(Trace(xs.tolist(), ys.tolist(), RED, "braille")), 40, 10)
    top = codes[0]
    assert (top != ord(" ")).sum() >= 1  # the spike reaches the top row
    assert (braille_dots(codes)[:, np.flatnonzero(top != ord(" "))[0]] > 0).all()  # and joins the base


def test_nan_breaks_the_line_and_its_marker_shows():
    trace = Trace([0.0, 0.4, 0.6, 1.0], [0.5, math.nan, 0.5, 0.5], RED, "braille")
    spec = spec_of(trace, labels=[Label("×", 0.5, 1.0, RED)])
    codes, _ = rasterise(spec, 20, 5)
    assert (codes[2, 4:10] == ord(" ")).all()  # no segment through the NaN
    text = render_plain(spec, 28, 9)
    plot_top = text.splitlines()[2]
    assert "×" in plot_top


def test_ascii_mode_draws_each_trace_marker():
    spec = spec_of(Trace([0.0, 1.0], [0.2, 0.2], RED, "*"), Trace([0.0, 1.0], [0.8, 0.8], BLUE, "o"))
    text = render_plain(spec, 30, 10)
    rows = text.splitlines()[2:-2]
    assert any(set(row[7:-1]) == {"*"} for row in rows)
    assert any(set(row[7:-1]) == {"o"} for row in rows)
    assert not any(0x2800 <= ord(ch) <= 0x28FF for ch in text)


def test_colours_follow_traces_and_the_last_one_wins():
    spec = spec_of(Trace([0.0, 1.0], [0.5, 0.5], RED, "braille"), Trace([0.5, 1.0], [0.5, 0.5], BLUE, "braille"))
    lines = render_chart(spec, 30, 10)
    row = next(line for line in lines if any(0x2800 < ord(ch) <= 0x28FF for ch in line.plain))
    colours = {}
    for span in row.spans:
        colours[span.start] = span.style.color.triplet
    assert (255, 0, 0) in {c for c in colours.values()} and (0, 0, 255) in {c for c in colours.values()}
    first_col = layout(spec, 30, 10).label_columns + 1
    assert colours[first_col] == (255, 0, 0)
    assert max(colours.items())[1] == (0, 0, 255)  # the right half belongs to the later trace
    plain = render_chart(spec, 30, 10, color=False)
    assert not any(line.spans for line in plain)


def test_labels_are_moved_inside_the_plot_never_cut_at_its_edges():
    spec = spec_of(labels=[Label("▲1.39 far right", 1.0, 0.5, RED, "left"), Label("centred", 0.0, 0.0, RED)])
    text = render_plain(spec, 30, 10)
    lines = text.splitlines()
    assert all(len(line) <= 30 for line in lines)
    middle = next(line for line in lines if "▲" in line)
    assert middle.endswith("▲1.39 far right│")  # moved left, whole, against the right frame
    bottom_row = lines[-3]
    assert bottom_row.startswith("     0┤centred ")  # centred on the left edge: moved right, whole


def test_empty_spec_shows_its_message():
    text = render_plain(ChartSpec(title="loss", empty="no runs to show"), 40, 10)
    assert "no runs to show" in text
    assert text.splitlines()[0].strip() == "loss"
    assert "┤" not in text and "┬" not in text


def test_frame_and_ticks_and_size():
    spec = spec_of(Trace([0.0, 1.0], [0.0, 1.0], RED, "braille"))
    lines = render_chart(spec, 40, 12)
    assert len(lines) == 12 and all(line.cell_len == 40 for line in lines)
    plain = [line.plain for line in lines]
    assert plain[1].strip().startswith("┌") and plain[-2].strip().startswith("└┬")
    assert plain[2].rstrip().endswith("│") and plain[2].startswith("     1┤")
    assert plain[-1].strip().startswith("0") and plain[-1].rstrip().endswith("1")
    assert layout(spec, 40, 12).plot_columns == 40 - 8


def test_the_reference_story_reads_off_the_screen():
    steps = np.arange(100, 100_001, 100, dtype=float)
    values = 2.0 / np.log10(steps)
    values[249] = 1.39  # a spike at 25K
    marks = [Mark("spike", 25_000, 1.39), Mark("drift", 40_000, 0.45, end_step=60_000)]
    curve = curve_from_arrays("a", steps, values, marks=marks)
    spec = build_chart([curve], ChartView(cursor=50_000), 66, height=30)
    lines = render_plain(spec, 74, 34).splitlines()
    assert lines[-1].split() == ["100", "1K", "10K", "100K"]
    assert sum(line.count("┬") for line in lines) == 4
    spike_row = next(k for k, line in enumerate(lines) if "▲1.39" in line)
    assert spike_row <= 3  # at the top of the plot, where the spike peaks
    assert any("↗drift" in line for line in lines)
    assert "│" in lines[5][7:-1]  # the cursor line


def test_a_frame_rasterises_only_the_curves_not_kept_and_draws_what_a_fresh_one_draws():
    from tuiloss.ui.canvas import Layers

    rng = np.random.default_rng(3)
    for trial in range(12):
        traces = []
        for k in range(int(rng.integers(2, 8))):
            xs, ys = random_points(rng, 2, sorted_x=True)
            traces.append(Trace(xs, ys, (k, 0, 0), "braille" if k % 3 else "*", kind="scatter" if k == 4 else "line"))
        columns, rows = int(rng.integers(3, 30)), int(rng.integers(2, 12))
        layers = Layers()
        rasterise(spec_of(*traces), columns, rows, layers)
        assert layers.rasterised == len(traces)
        # one curve grows (new arrays), another is switched off, the order of the rest changes
        grown = Trace(np.append(traces[0].xs, 1.05), np.append(traces[0].ys, 0.3), (0, 0, 0), "braille")
        now = [grown, *traces[2:][::-1]]
        codes, owner = rasterise(spec_of(*now), columns, rows, layers)
        assert layers.rasterised == len(traces) + 1, trial  # only the grown curve
        fresh_codes, fresh_owner = rasterise(spec_of(*now), columns, rows)
        assert (codes == fresh_codes).all() and (owner == fresh_owner).all(), trial
        _, expected_owner = _draw_one_segment_at_a_time(spec_of(*now), columns, rows)
        assert (owner == expected_owner).all(), trial
        # other limits: every curve again
        rasterise(spec_of(*now, y_lim=(0.0, 2.0)), columns, rows, layers)
        assert layers.rasterised == 2 * len(traces), trial


def test_runs_switched_off_and_on_are_composited_from_the_last_frames_layers_as_a_fresh_frame_draws_them():
    from tuiloss.ui.canvas import Layers

    rng = np.random.default_rng(5)
    traces = []
    for k in range(60):
        xs, ys = random_points(rng, 2, sorted_x=True)
        traces.append(Trace(xs, ys, (k, 0, 0), "braille" if k % 5 else "o"))
    again = Trace(traces[7].xs, traces[7].ys, traces[7].color, traces[7].marker)  # a new trace of the same points
    frames = [traces, traces[:7] + traces[8:], traces, traces[1:], traces[:30] + traces[31:59], traces[::-1],
              traces[:7] + [again] + traces[8:], traces[:20] + traces[40:], traces]
    layers, before = Layers(), []
    for k, frame in enumerate(frames):
        made = layers.rasterised
        codes, owner = rasterise(spec_of(*frame), 40, 12, layers)
        fresh_codes, fresh_owner = rasterise(spec_of(*frame), 40, 12)
        assert (codes == fresh_codes).all() and (owner == fresh_owner).all(), k
        # only the traces the last frame did not draw (by their points) are rasterised
        drew = {(id(t.xs), id(t.ys)) for t in before}
        assert layers.rasterised - made == sum((id(t.xs), id(t.ys)) not in drew for t in frame), k
        before = frame


def test_a_followed_curve_is_composited_alone_over_the_others_kept_and_draws_what_a_fresh_frame_draws():
    from tuiloss.ui.canvas import Layers

    rng = np.random.default_rng(5)
    for trial in range(8):
        traces = []
        for k in range(int(rng.integers(3, 9))):
            xs, ys = random_points(rng, 2, sorted_x=True)
            traces.append(Trace(xs, ys, (k, 0, 0), "braille" if k % 3 else "*", kind="scatter" if k == 4 else "line"))
        columns, rows = int(rng.integers(3, 30)), int(rng.integers(2, 12))
        followed = int(rng.integers(0, len(traces)))  # under some curves, over others
        layers = Layers()
        rasterise(spec_of(*traces), columns, rows, layers)
        for frame in range(4):  # the followed curve grows a point a frame
            old = traces[followed]
            traces[followed] = Trace(np.append(old.xs, 1.0 + 0.01 * frame), np.append(old.ys, rng.random()),
                                     old.color, old.marker, old.kind)
            before = layers.composited
            codes, owner = rasterise(spec_of(*traces), columns, rows, layers)
            if frame:  # the others' composite is kept from the frame before: only the grown layer is composited
                assert layers.composited - before == 1, (trial, frame)
            fresh_codes, fresh_owner = rasterise(spec_of(*traces), columns, rows)
            assert (codes == fresh_codes).all() and (owner == fresh_owner).all(), (trial, frame)
        # a curve switched off: composited again from the layers kept, still the same picture
        rest = traces[:followed] + traces[followed + 1:]
        codes, owner = rasterise(spec_of(*rest), columns, rows, layers)
        fresh_codes, fresh_owner = rasterise(spec_of(*rest), columns, rows)
        assert (codes == fresh_codes).all() and (owner == fresh_owner).all(), trial


def test_a_thousand_runs_render_in_one_pass():
    # speed is measured by `python -m benchmarks` (many-runs); here, that it renders whole
    rng = np.random.default_rng(0)
    traces = [Trace(np.linspace(0, 1, 300).tolist(), rng.random(300).tolist(), (k % 255, 100, 100), "braille")
              for k in range(1000)]
    rows = render_chart(spec_of(*traces), 120, 40)
    assert len(rows) == 40 and all(len(row.plain) <= 120 for row in rows)


def random_points(rng, fewest: int, sorted_x: bool) -> tuple[np.ndarray, np.ndarray]:
    """``fewest`` to 39 points a little beyond the unit square: x sorted at random, or log-spaced."""
    n = int(rng.integers(fewest, 40))
    xs = np.sort(rng.uniform(-0.1, 1.1, n)) if sorted_x else np.geomspace(1e-3, 1, n)
    return xs, rng.uniform(-0.2, 1.2, n)


def _draw_one_segment_at_a_time(spec: ChartSpec, columns: int, rows: int) -> tuple[np.ndarray, np.ndarray]:
    """The plain reading of how a trace is drawn: every point, and every segment cut at each dot column."""
    width, height = 2 * columns, 4 * rows
    dots = np.zeros((height, width), dtype=bool)
    owner = np.full((rows, columns), -1)
    x_lo, x_hi = spec.x_lim
    y_lo, y_hi = spec.y_lim

    def put(k: int, x: float, y_a: float, y_b: float) -> None:
        c = int(np.rint(x))
        a, b = sorted((int(np.rint(y_a)), int(np.rint(y_b))))
        if not 0 <= c < width or b < 0 or a > height - 1:
            return
        a, b = max(a, 0), min(b, height - 1)
        dots[a:b + 1, c] = True
        owner[a // 4:b // 4 + 1, c // 2] = np.maximum(owner[a // 4:b // 4 + 1, c // 2], k)

    for k, trace in enumerate(spec.traces):
        gx = [(x - x_lo) / (x_hi - x_lo) * (width - 1) for x in trace.xs]
        gy = [(1 - (y - y_lo) / (y_hi - y_lo)) * (height - 1) for y in trace.ys]
        ok = [math.isfinite(x) and math.isfinite(y) for x, y in zip(gx, gy)]
        for i in range(len(gx)):
            if ok[i]:
                put(k, gx[i], gy[i], gy[i])
            if i + 1 < len(gx) and ok[i] and ok[i + 1] and trace.kind != "scatter":
                pieces = min(abs(round(gx[i + 1]) - round(gx[i])), 4 * width) + 1
                last = max(pieces - 1, 1)
                for n in range(pieces):
                    here, then = n / last, (min((n + 1) / last, 1.0) if pieces > 1 else 1.0)
                    dy = gy[i + 1] - gy[i]
                    put(k, gx[i] + here * (gx[i + 1] - gx[i]), gy[i] + here * dy, gy[i] + then * dy)
    bits = (dots.reshape(rows, 4, columns, 2) * np.array([[1, 8], [2, 16], [4, 32], [64, 128]])[None, :, None, :])
    return bits.sum(axis=(1, 3)), owner


def test_the_batched_rasteriser_draws_what_drawing_one_segment_at_a_time_draws():
    rng = np.random.default_rng(5)
    for trial in range(20):
        traces = []
        for k in range(int(rng.integers(1, 6))):
            xs, ys = random_points(rng, 1, sorted_x=bool(trial % 2))
            n = len(xs)
            ys[rng.random(n) < 0.1] = np.nan
            kind = "scatter" if rng.random() < 0.2 else "line"
            traces.append(Trace(xs.tolist(), ys.tolist(), (k, 0, 0), "braille", kind=kind))
        spec = spec_of(*traces)
        columns, rows = int(rng.integers(3, 30)), int(rng.integers(2, 12))
        codes, owner = rasterise(spec, columns, rows)
        mask, expected_owner = _draw_one_segment_at_a_time(spec, columns, rows)
        drawn = expected_owner >= 0
        assert (owner == expected_owner).all(), trial
        assert (codes[drawn] == 0x2800 + mask[drawn]).all(), trial
        assert (codes[~drawn] == ord(" ")).all(), trial


def test_a_label_moves_to_a_free_row_beside_the_curve_it_would_cover():
    flat = Trace([0.0, 1.0], [0.5, 0.5], BLUE, "braille")
    spec = spec_of(flat, labels=[Label("peak", 0.5, 0.5, RED)])
    lines = render_plain(spec, 30, 10).splitlines()
    curve_rows = [k for k, line in enumerate(lines) if "⠤" in line or "⠒" in line or "⣀" in line or "⠉" in line]
    label_rows = [k for k, line in enumerate(lines) if "peak" in line]
    assert len(label_rows) == 1 and label_rows[0] not in curve_rows  # beside the curve, not over it
    assert curve_rows and abs(label_rows[0] - curve_rows[0]) <= 2


def test_chart_rows_are_cut_into_the_segments_rich_would_render():
    from rich.console import Console
    from rich.segment import Segment
    from rich.style import Style
    from rich.text import Text

    from tuiloss.ui.widgets.segments import span_segments as _segments

    rng = np.random.default_rng(7)
    console, base = Console(), Style(bgcolor="#1e1e1e", color="white")
    for trial in range(10):
        traces = [Trace(np.sort(rng.uniform(0, 1, 40)), rng.uniform(0, 1, 40), (int(rng.integers(0, 255)), 90, 90),
                        "braille") for _ in range(int(rng.integers(1, 25)))]
        for line in render_chart(spec_of(*traces), 70, 16):
            ours = [(s.text, s.style) for s in _segments(line, base, console) if s.text]
            rich = [(s.text, s.style) for s in Segment.apply_style(line.render(console, end=""), base) if s.text]
            assert ours == rich, trial
    dim = Text("loading…", style="dim")  # a line with its own style goes through Rich
    assert _segments(dim, base, console) == list(Segment.apply_style(dim.render(console, end=""), base))


def test_a_frame_keeps_the_lines_of_its_unchanged_plot_rows_and_renders_what_a_fresh_frame_renders():
    from tuiloss.ui.canvas import Layers

    rng = np.random.default_rng(8)
    traces = []
    for k in range(6):
        xs, ys = random_points(rng, 20, sorted_x=True)
        traces.append(Trace(0.9 * xs, ys, (40 * k, 90, 200), "braille"))  # room for a new point at the end
    layers = Layers()
    frames = [spec_of(*traces)]
    grown = Trace(np.append(traces[2].xs, 1.0), np.append(traces[2].ys, 0.999), traces[2].color, "braille")
    frames.append(spec_of(*traces[:2], grown, *traces[3:]))  # one curve grew: its rows change
    frames.append(spec_of(*traces[:2], grown, *traces[3:]))  # nothing changed
    frames.append(spec_of(*traces[:2], grown, *traces[3:], y_lim=(0.0, 2.0)))  # a new range: every row
    frames.append(spec_of(*traces[:2], grown, *traces[3:], y_lim=(0.0, 2.0)))
    recolored = spec_of(*traces[:2], grown, *traces[3:], y_lim=(0.0, 2.0))
    recolored.traces[0] = Trace(traces[0].xs, traces[0].ys, (1, 2, 3), "braille")  # a new palette
    frames.append(recolored)
    ticked = spec_of(*traces[:2], grown, *traces[3:], y_lim=(0.0, 2.0))
    ticked.y_ticks = ([0.0, 0.5, 1.0], ["0", "0.5", "1"])  # a tick label moved onto a row
    frames.append(ticked)
    last = None
    for k, spec in enumerate(frames):
        joined = layers.joined.get("curves")
        lines = render_chart(spec, 60, 20, layers=layers)
        if k in (2, 4):  # the very traces of the last frame: its layers joined are taken as they were
            assert layers.joined["curves"] is joined
        fresh = render_chart(spec, 60, 20)
        assert [(line.plain, line.spans) for line in lines] == [(line.plain, line.spans) for line in fresh], k
        if last is not None:
            kept = {y for y, (a, b) in enumerate(zip(last, lines)) if a is b}
            if k in (2, 4):  # nothing changed: every plot row kept
                assert len(kept) == layout(spec, 60, 20).plot_rows, k
            if k == 1:  # the grown curve's rows made again, the others kept
                assert 0 < len(kept) < layout(spec, 60, 20).plot_rows
            if k == 5:  # another palette: every row made again
                assert not kept
        last = lines


def test_the_traces_style_table_is_kept_while_their_colours_are_and_labels_add_theirs_after_it():
    from tuiloss.ui.canvas import Layers

    rng = np.random.default_rng(3)
    traces = []
    for k in range(4):
        xs, ys = random_points(rng, 15, sorted_x=True)
        traces.append(Trace(xs, ys, (50 * k, 80, 160), "braille"))
    band = Trace(np.array([0.1, 0.9]), np.array([0.2, 0.8]), (9, 9, 9), "band")
    layers = Layers()
    frames = [spec_of(*traces),
              spec_of(*traces, labels=[Label("*", 0.5, 0.5, (7, 7, 7))]),  # a label's own colour after the traces'
              spec_of(*traces, labels=[Label("x", 0.2, 0.2, (50, 80, 160)), Label("y", 0.7, 0.7, "red")]),
              spec_of(band, *traces),  # a band under the curves: another table
              spec_of(band, *traces, labels=[Label("*", 0.5, 0.5, (7, 7, 7))], vlines=[(0.4, (8, 8, 8))]),
              spec_of(*traces[::-1])]  # the same colours in another order
    for k, spec in enumerate(frames):
        table = layers.trace_styles
        lines = render_chart(spec, 50, 16, layers=layers)
        if k in (1, 2, 4):
            assert layers.trace_styles is table, k  # kept
        fresh = render_chart(spec, 50, 16)
        assert [(line.plain, line.spans) for line in lines] == [(line.plain, line.spans) for line in fresh], k
    plain = render_chart(frames[-1], 50, 16, color=False, layers=layers)
    assert [(line.plain, line.spans) for line in plain] == [
        (line.plain, line.spans) for line in render_chart(frames[-1], 50, 16, color=False)]
