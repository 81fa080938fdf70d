"""What the tests of log shapes from public training logs share: feeding a log a line at a
time, as a tailer of a live file does, and the points of a series."""

from __future__ import annotations

from tuiloss.core.formats.stdout import TextParser


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


def read_both(text: str, **kwargs):
    """``text`` read whole and read a line at a time, each by a parser of its own: ``(parser, batch)`` pairs."""
    whole, lines = TextParser(**kwargs), TextParser(**kwargs)
    return [(whole, whole.feed(text.encode(), 1)), (lines, feed_lines(lines, text))]


def batches(text: str, **kwargs):
    """The batches of ``text`` read whole and read a line at a time (see :func:`read_both`)."""
    return [batch for _, batch in read_both(text, **kwargs)]
