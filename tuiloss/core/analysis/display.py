"""How every number and step reads, in the report, the panel and the chart.

Steps as ``25.0K``, values with 3 significant digits, ratios, percentages, durations and
chart tick labels. It lives in :mod:`tuiloss.core.analysis` because the analysis words its
findings with it, and the analysis imports nothing of the rest of tuiloss.
"""

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


def fmt_step(step: float | None) -> str:
    """``25000`` -> ``25.0K``, ``1_200_000`` -> ``1.2M``, ``850`` -> ``850``; None -> ``-``."""
    return "-" if step is None else format_step(step)


def fmt_value(value: float | None) -> str:
    """Three significant digits (``0.200``, ``1.40``), NaN and Inf readable; None -> ``-``."""
    return "-" if value is None else format_value(value)


def finite(value: float | None) -> float | None:
    """``value`` if it is a finite number, else None (how a missing number is shown: ``-``)."""
    if value is None:
        return None
    value = float(value)
    return value if math.isfinite(value) else None


def step_label(step: float) -> str:
    """Short tick label: ``1``, ``10``, ``100``, ``1K``, ``2.5K``, ``100K``, ``1M``."""
    if not math.isfinite(step):
        return "-"
    magnitude = abs(step)
    for bound, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "K")):
        if magnitude >= bound:
            scaled = step / bound
            text = f"{scaled:.0f}" if abs(scaled - round(scaled)) < 1e-6 else f"{scaled:.3g}"
            return text + suffix
    if abs(step - round(step)) < 1e-9:
        return str(int(round(step)))
    return f"{step:.3g}"


def format_level(value: float) -> str:
    """A comparison level, as rounded (2 significant digits): ``0.25``, ``1.2e-05``."""
    return f"{value:.2g}" if 1e-3 <= abs(value) < 1e4 else f"{value:.1e}"


def format_setting(value: object) -> str:
    """A config value as a person writes it: ``unset``, ``true``, ``0.0003``, ``adam``."""
    if value is None:
        return "unset"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)
