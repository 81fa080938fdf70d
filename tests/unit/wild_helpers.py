"""What the tests of log shapes from public training logs share: feeding a log a line at a
time, as a tailer of a live file does, and the points of a series."""

from __future__ import annotations


def feed_lines(parser, text: str):
    """Feed ``text`` a line at a time, as a tailer of a live file would."""
    lines = text.splitlines(keepends=True)
    out = parser.feed(lines[0].encode(), 1)
    for k, line in enumerate(lines[1:], start=2):
        out.merge(parser.feed(line.encode(), k))
    return out


def pts(batch, name):
    """The points of ``name`` in ``batch``, as ``(step, value)`` floats."""
    steps, values = batch.series[name]
    return [(float(s), float(v)) for s, v in zip(steps, values)]
