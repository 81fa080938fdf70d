"""The Rich styles a Line API widget paints with, kept until its styles change.

Textual works out a widget's ``rich_style`` from every ancestor's styles on each call, and a
``refresh`` drops its component styles: a widget repainting a line or two every frame (the runs
list, the status bar, the chart) paid for both every frame. Textual tells a widget its styles
changed (a theme, a class, focus or hover, the CSS reloaded) with ``notify_style_update``, on the
widget and on every widget under the one that changed; the styles are worked out again then.
"""

from __future__ import annotations

from rich.style import Style


class KeptStyles:
    """A mixin for a :class:`~textual.widget.Widget`: :attr:`base_style` and :meth:`component_style`
    are ``rich_style`` and ``get_component_rich_style``, worked out once per style change."""

    _kept_styles: dict[str | None, Style] | None = None

    @property
    def base_style(self) -> Style:
        """The widget's ``rich_style``."""
        kept = self._kept_styles
        if kept is None:
            kept = self._kept_styles = {}
        style = kept.get(None)
        if style is None:
            style = kept[None] = self.rich_style  # type: ignore[attr-defined]
        return style

    def component_style(self, name: str) -> Style:
        """The widget's ``get_component_rich_style(name)``."""
        kept = self._kept_styles
        if kept is None:
            kept = self._kept_styles = {}
        style = kept.get(name)
        if style is None:
            style = kept[name] = self.get_component_rich_style(name)  # type: ignore[attr-defined]
        return style

    def notify_style_update(self) -> None:
        self._kept_styles = None
        super().notify_style_update()  # type: ignore[misc]
