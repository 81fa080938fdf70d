"""Text from logs for widgets: control sequences stripped, Rich markup escaped.

The stripping lives in :mod:`tuiloss.core.sanitize` so ``tuiloss report`` shares it;
widgets that take :class:`rich.text.Text` need only :func:`safe_label`, markup
strings need :func:`safe_markup`.
"""

from __future__ import annotations

from rich.markup import escape

from tuiloss.core.sanitize import ELLIPSIS, safe_label, strip_controls, truncate_middle

__all__ = ["ELLIPSIS", "safe_label", "safe_markup", "strip_controls", "truncate_middle"]


def safe_markup(value: object, max_len: int | None = 80) -> str:
    """Like :func:`safe_label`, with Rich markup escaped for use inside markup strings."""
    return escape(safe_label(value, max_len))
