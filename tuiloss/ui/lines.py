"""Text made of blocks of whole lines, read line by line: the insights panel's content.

No numpy and no Textual: the panel widget imports it before the first frame.
"""

from __future__ import annotations

from bisect import bisect_right

from rich.text import Span, Text


class PanelLines:
    """Blocks of whole lines (each run's, kept between panels) read as one text, line by line.

    Joining the blocks of ten thousand runs into one :class:`~rich.text.Text` shifts every span
    of every block, a tenth of a second per thousand runs; the panel shows a screenful. Here a
    line is found by its block (a bisection over the blocks' first lines) and cut out of that
    block alone. A block ends with a newline or its last line ends with it; an empty block has
    no line. :meth:`joined` is the whole text (exports and tests).
    """

    def __init__(self, blocks: list[Text], counts: list[int] | None = None) -> None:
        """``counts``: each block's :func:`line_count`, when the caller kept them (ten thousand
        blocks counted again at each panel took 15 ms)."""
        self.blocks = blocks
        self.counts = counts = [line_count(block) for block in blocks] if counts is None else counts
        starts, at = [], 0  # the first line of each block
        for count in counts:
            starts.append(at)
            at += count
        self.starts, self.count = starts, at
        self._cuts: dict[int, list[int]] = {}  # per block shown, where each of its lines starts
        self._joined: Text | None = None

    def __len__(self) -> int:
        return self.count

    def __radd__(self, other: Text) -> PanelLines:
        """``text + lines``: ``text`` (whole lines) first."""
        return PanelLines([other, *self.blocks], [line_count(other), *self.counts])

    def same(self, other: PanelLines) -> bool:
        """Whether ``other`` holds the same lines (the same blocks, or blocks of the same text)."""
        return len(other.blocks) == len(self.blocks) and all(
            a is b or (a.plain == b.plain and a.spans == b.spans) for a, b in zip(self.blocks, other.blocks))

    def line(self, index: int) -> Text:
        """Line ``index`` with its styles, without its newline."""
        k = bisect_right(self.starts, index) - 1  # the last block starting there: an empty one is passed
        block = self.blocks[k]
        cuts = self._cuts.get(k)
        if cuts is None:
            plain, cuts, at = block.plain, [0], block.plain.find("\n")
            while at != -1:
                cuts.append(at + 1)
                at = plain.find("\n", at + 1)
            if cuts[-1] < len(plain):
                cuts.append(len(plain) + 1)
            cuts = self._cuts[k] = cuts
        row = index - self.starts[k]
        start, end = cuts[row], cuts[row + 1] - 1
        spans = [Span(max(s.start, start) - start, min(s.end, end) - start, s.style)
                 for s in block.spans if min(s.end, end) > max(s.start, start)]
        return Text(block.plain[start:end], style=block.style, spans=spans)

    @property
    def plain(self) -> str:
        return self.joined().plain

    def joined(self) -> Text:
        """The blocks one after the other, trailing whitespace stripped, as one text."""
        if self._joined is None:
            plains: list[str] = []
            spans: list[Span] = []
            at = 0
            for block in self.blocks:
                plain = block.plain
                plains.append(plain)
                spans.extend([Span(span.start + at, span.end + at, span.style) for span in block.spans])
                at += len(plain)
            out = Text("".join(plains))
            out.spans = spans
            out.rstrip()
            self._joined = out
        return self._joined


def line_count(block: Text) -> int:
    """The lines of ``block`` as :class:`PanelLines` reads them (its last one with or without a newline)."""
    plain = block.plain
    return plain.count("\n") + (0 if not plain or plain.endswith("\n") else 1)
