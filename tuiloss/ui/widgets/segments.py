"""Rich text cut straight into segments, for the Line API widgets' rows."""

from __future__ import annotations

from rich.cells import cell_len
from rich.segment import Segment
from rich.style import Style
from rich.text import Text

_STYLES: dict[str, Style] = {}


def span_segments(text: Text, base: Style, console, width: int | None = None) -> list[Segment]:
    """``text`` over ``base`` as segments (cut to ``width`` cells, if given): what Rich renders of it.

    A row of a chart, or a status line that fits, is a plain string and the ordered, disjoint spans
    its parts were appended with: its segments are cut straight from them, each named style parsed
    once, without Rich's general renderer (which resolves overlapping spans and costs a few
    milliseconds on a row of a hundred curves). Other lines go through it.
    """
    spans = text.spans
    plain = text.plain
    if (text.style or any(b.start < a.end for a, b in zip(spans, spans[1:])) or "\t" in plain or "\n" in plain
            or (width is not None and cell_len(plain) > width)):
        line = text
        if width is not None:
            line = text.copy()
            line.truncate(width, overflow=line.overflow)
        return list(Segment.apply_style(line.render(console, end=""), base))
    at, out = 0, []
    for span in spans:
        if span.start >= span.end:
            continue
        if span.start > at:
            out.append(Segment(plain[at:span.start], base))
        style = span.style
        if isinstance(style, str):
            parsed = _STYLES.get(style)
            if parsed is None:
                parsed = _STYLES[style] = console.get_style(style, default=Style.null())
            style = parsed
        out.append(Segment(plain[span.start:span.end], base + style))
        at = span.end
    if at < len(plain):
        out.append(Segment(plain[at:], base))
    return out
