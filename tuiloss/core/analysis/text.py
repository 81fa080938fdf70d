"""How numbers read in findings: steps as ``25.0K``, values with 3 significant digits."""

from __future__ import annotations

import math


def format_step(step: float | None) -> str:
    """A step count as a person writes it.

    Args:
        step: a step (or epoch) number.

    Returns:
        ``"850"`` below a thousand, ``"25.0K"`` in thousands, ``"1.2M"`` in millions,
        ``"3.1B"`` beyond; fractional steps below a thousand keep up to 3 significant
        digits (``"0.05"``, ``"2.5"``).

    Examples:
        >>> format_step(25000), format_step(1_200_000), format_step(850)
        ('25.0K', '1.2M', '850')
    """
    if step is None or not math.isfinite(step):
        return "?" if step is None or math.isnan(step) else ("-inf" if step < 0 else "inf")
    sign = "-" if step < 0 else ""
    size = abs(step)
    if size < 1000:
        if size == int(size):
            return f"{sign}{int(size)}"
        text = f"{float(f'{size:.3g}'):f}".rstrip("0").rstrip(".")
        if float(text) < 1000:
            return sign + text
    scales = ((1e3, "K"), (1e6, "M"), (1e9, "B"))
    for k, (scale, suffix) in enumerate(scales):
        text = f"{size / scale:.1f}"
        if float(text) < 1000 or k == len(scales) - 1:
            return f"{sign}{text}{suffix}"
    return sign + str(size)  # unreachable


def format_value(value: float | None) -> str:
    """A loss value with 3 significant digits (``0.200``, ``1.40``, ``231``, ``1.94e-05``)."""
    if value is None:
        return "?"
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Inf" if value > 0 else "-Inf"
    if value == 0:
        return "0"
    rounded = float(f"{value:.3g}")
    size = abs(rounded)
    if size >= 1e3 or size < 1e-4:
        return f"{value:.2e}"
    digits = max(0, 2 - int(math.floor(math.log10(size))))
    return f"{rounded:.{digits}f}"


def format_ratio(ratio: float) -> str:
    """A multiple of a baseline: ``1.5x`` below 3, ``7x`` above."""
    if not math.isfinite(ratio):
        return "many times"
    if ratio >= 3:
        return f"{ratio:.0f}x"
    return f"{ratio:.1f}x"


def format_percent(fraction: float) -> str:
    """A relative change as ``+9.5%`` / ``-3%``."""
    pct = fraction * 100
    if abs(pct) >= 10:
        return f"{pct:+.0f}%"
    return f"{pct:+.1f}%"


def format_duration(seconds: float) -> str:
    """A wall-clock duration: ``45 s``, ``12 min``, ``3.5 h``."""
    if not math.isfinite(seconds):
        return "?"
    if seconds < 90:
        return f"{seconds:.0f} s" if seconds >= 10 else f"{seconds:.1f} s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.0f} min"
    if seconds < 48 * 3600:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.1f} days"
