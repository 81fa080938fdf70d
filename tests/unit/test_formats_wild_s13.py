"""Yet more log shapes seen in public training logs, on small logs written here (see test_formats_wild)."""

from __future__ import annotations

from tuiloss.core.formats.layout import LAYOUT_MIN_BYTES
from tuiloss.core.formats.stdout import TextParser


def feed_lines(parser, text: str):
    """Feed ``text`` a line at a time, as a tailer of a live file would."""
    lines = text.splitlines(keepends=True)
    out = parser.feed(lines[0].encode(), 1)
    for k, line in enumerate(lines[1:], start=2):
        out.merge(parser.feed(line.encode(), k))
    return out


def feed_chunks(parser, text: str, size: int):
    """Feed ``text`` in pieces of whole lines of about ``size`` bytes, as a tailer of a busy file would."""
    out, pos, line = None, 0, 1
    while pos < len(text):
        end = text.find("\n", pos + size) + 1 or len(text)
        batch = parser.feed(text[pos:end].encode(), line)
        line += text.count("\n", pos, end)
        out = batch if out is None else out.merge(batch) or out
        pos = end
    return out


def pts(batch, name):
    steps, values = batch.series[name]
    return [(float(s), float(v)) for s, v in zip(steps, values)]


def every_way(text: str, **kwargs):
    """The batches of ``text`` read whole and read a line at a time (each by a parser of its own)."""
    return [TextParser(**kwargs).feed(text.encode(), 1), feed_lines(TextParser(**kwargs), text)]


# -- batches under epoch lines of their own, in a read long enough for a layout ------------------


def _epochs_of_batches(line: str, epochs: int, batches: int, head: str = "") -> str:
    out = [head]
    for epoch in range(1, epochs + 1):
        out.append(f"=== Epoch {epoch} ===\n")
        out += [line.format(b=b, loss=4 + epoch + b / 1000) for b in range(1, batches + 1)]
    return "".join(out)


def test_batches_under_epoch_lines_step_globally_however_much_is_read_at_once():
    # ``Batch 7: loss=...`` under ``=== Epoch 2 ===`` is the 7th batch of epoch 2: a read of the whole
    # file (fast enough for a layout) used to give step 7, a line at a time gave 700 + 7
    for line in ("Batch {b}: loss={loss:.3f}\n", "  batch {b}, loss: {loss:.3f}\n", "Iter {b} | loss {loss:.3f}\n"):
        text = _epochs_of_batches(line, epochs=3, batches=700)
        assert len(text) > 2 * LAYOUT_MIN_BYTES
        expected = [(float((e - 1) * 700 + b), round(4 + e + b / 1000, 3)) for e in (1, 2, 3) for b in range(1, 701)]
        for batch in every_way(text) + [feed_chunks(TextParser(), text, LAYOUT_MIN_BYTES + 100)]:
            assert pts(batch, "loss") == expected, line


def test_a_layout_learnt_before_the_first_epoch_line_is_dropped_at_it():
    # batches before any epoch line are steps of their own; from the first epoch line on they count within it
    head = "".join(f"Batch {b}: loss={3 + b / 1000:.3f}\n" for b in range(1, 1201))
    text = _epochs_of_batches("Batch {b}: loss={loss:.3f}\n", epochs=2, batches=1200, head=head)
    expected = pts(feed_lines(TextParser(), text), "loss")
    assert expected[1199] == (1200.0, 4.2) and expected[1200] == (1.0, 5.001) and expected[-1] == (2400.0, 7.2)
    for size in (LAYOUT_MIN_BYTES, 3 * LAYOUT_MIN_BYTES, len(text)):
        assert pts(feed_chunks(TextParser(), text, size), "loss") == expected


def test_a_global_step_under_epoch_lines_is_still_read_by_a_layout():
    # ``step`` counts on across epochs here, so the fast read of its lines is kept
    text = "".join(
        f"Epoch {e}\n" + "".join(f"step: {s}, loss: {5 - s / 1e4:.4f}, lr: 0.001\n" for s in range(e * 800, e * 800 + 800))
        for e in range(3)
    )
    parser = TextParser()
    batch = parser.feed(text.encode(), 1)
    assert parser.layouts.layout is not None
    assert pts(batch, "loss") == pts(feed_lines(TextParser(), text), "loss")
    assert [s for s, _ in pts(batch, "loss")] == list(range(2400))

