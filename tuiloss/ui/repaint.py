"""The viewer's main screen, whose partial updates render only each widget's rows that changed.

Textual (8.2, pinned exactly) sends a partial update as the spans of the regions that changed,
but renders it by cropping to the box around all of them: every widget overlapping that box
renders every one of its visible lines (from its line cache) and the lines outside the spans
are then dropped. A followed run changes a row of the chart, a row of the runs list and the
status bar at the bottom, so that box is the whole screen and every widget of it was rendered
again, a few times a second. :class:`RowsCompositor` renders each widget only over the rows of
the changed regions that overlap it, and widgets no changed region touches, or that lie behind
the widgets rendered in front of them wherever they changed (the containers), not at all; what
is sent to the terminal is the same (a test compares both with Textual's own).

This leans on :class:`~textual._compositor.Compositor`'s private ``_get_renders`` and
``_render_chops`` (the latter restated here, as Textual 8.2 has it, with the cuts of the lines
not sent left out); a Textual whose compositor lacks them is left to its own renders
(:func:`rows_only_supported`).
"""

from __future__ import annotations

from typing import Callable, Iterable, Mapping, Sequence

from textual._compositor import Compositor
from textual.geometry import Region
from textual.screen import Screen
from textual.strip import Strip


def rows_only_supported() -> bool:
    """Whether this Textual's compositor renders through the methods :class:`RowsCompositor` refines."""
    return all(callable(getattr(Compositor, name, None))
               for name in ("_get_renders", "_render_chops", "render_partial_update")) and isinstance(
        getattr(Compositor, "cuts", None), property)


class RowsCompositor(Compositor):
    """A compositor whose partial updates render only the rows that changed of each widget."""

    def __init__(self) -> None:
        super().__init__()
        self._changed: list[Region] | None = None  # the regions of the partial update being rendered

    def render_partial_update(self):  # noqa: ANN201 - Textual's ChopsUpdate | None
        """Textual's partial update, with :meth:`_get_renders` restricted to the changed regions."""
        self._changed = [region for region in self._dirty_regions if region]
        try:
            return super().render_partial_update()
        finally:
            self._changed = None

    def _render_chops(self, crop: Region, is_rendered_line: Callable[[int], bool]) -> Sequence[Mapping[int, Strip]]:
        """Textual's chops, with a line's cuts set out only for the lines the update sends (the
        others, never read, share one empty mapping)."""
        if self._changed is None:
            return super()._render_chops(crop, is_rendered_line)
        cuts = self.cuts
        unsent: dict[int, Strip | None] = {}
        chops = [dict.fromkeys(cut_set[:-1]) if is_rendered_line(y) else unsent for y, cut_set in enumerate(cuts)]
        intersection = Region.intersection
        for region, clip, strips in self._get_renders(crop):
            render_region = intersection(region, clip)
            render_x = render_region.x
            first_cut, last_cut = render_region.column_span
            for y, strip in zip(render_region.line_range, strips):
                if not is_rendered_line(y):
                    continue
                chops_line = chops[y]
                final_cuts = [cut for cut in cuts[y] if (last_cut >= cut >= first_cut)]
                cut_strips = strip.divide([cut - render_x for cut in final_cuts[1:]])
                # front to back: the first strip for a cut wins
                get_chops_line = chops_line.get
                for cut, piece in zip(final_cuts, cut_strips):
                    if get_chops_line(cut) is None:
                        chops_line[cut] = piece
        return chops

    def _get_renders(self, crop: Region | None = None) -> Iterable[tuple[Region, Region, list[Strip]]]:
        changed = self._changed
        if changed is None or crop is None:
            yield from super()._get_renders(crop)
            return
        intersection = Region.intersection
        drawn: list[Region] = []  # what the widgets in front rendered, in full
        for widget, (region, clip) in self.visible_widgets.items():  # front to back
            visible = intersection(region, clip)
            if not visible:
                continue
            parts = [part for update in changed if (part := intersection(update, visible))]
            if not parts:
                continue  # no changed region touches it: nothing of it is sent
            if all(any(front.contains_region(part) for front in drawn) for part in parts):
                continue  # under widgets in front of it wherever it changed (a container): theirs win
            top = min(part.y for part in parts)
            bottom = max(part.bottom for part in parts)
            # Its full visible width (cut as Textual cuts it), over the changed rows alone: the
            # render region is ``region`` and this clip's intersection, which is this clip.
            rows = Region(visible.x, top, visible.width, bottom - top)
            drawn.append(rows)
            yield region, rows, widget.render_lines(
                Region(rows.x - region.x, rows.y - region.y, rows.width, rows.height))


class MainScreen(Screen):
    """The viewer's own screen: Textual's, with a :class:`RowsCompositor`."""

    def __init__(self, name: str | None = None, id: str | None = None,  # noqa: A002 - Textual's name
                 classes: str | None = None) -> None:
        super().__init__(name=name, id=id, classes=classes)
        if rows_only_supported():
            self._compositor = RowsCompositor()
