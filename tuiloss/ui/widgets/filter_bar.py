"""The ``/`` filter: a regex over run labels, sources and config, typed at the bottom."""

from __future__ import annotations

import re
from dataclasses import dataclass

from textual import on
from textual.message import Message
from textual.widgets import Input

from tuiloss.ui.selection import parse_filter


class FilterBar(Input):
    """Hidden until opened; Enter applies a valid regex, and an empty one or Escape clears the filter."""

    @dataclass
    class Chosen(Message):
        """The user applied a filter: a compiled pattern, or ``None`` for no filter."""

        pattern: re.Pattern | None

    def __init__(self, *, id: str | None = None) -> None:  # noqa: A002
        super().__init__(placeholder="regex over run labels and config; enter applies, empty or escape clears",
                         id=id, classes="hidden")

    @property
    def is_open(self) -> bool:
        return not self.has_class("hidden")

    def open(self, current: re.Pattern | None) -> None:
        self.remove_class("hidden")
        self.value = current.pattern if current else ""
        self.focus()

    def close(self) -> None:
        self.add_class("hidden")

    def clear(self) -> None:
        """Close and drop the filter (Escape)."""
        self.close()
        self.post_message(self.Chosen(None))

    @on(Input.Submitted)
    def _apply(self, event: Input.Submitted) -> None:
        event.stop()
        try:
            pattern = parse_filter(event.value)
        except re.error as exc:  # kept open: the old filter stays
            self.notify(f"not a valid regex: {exc}", severity="error", markup=False)
            return
        self.close()
        self.post_message(self.Chosen(pattern))
