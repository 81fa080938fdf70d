"""Anomalies found in a loss series, and the simple detectors: non-finite values, resets, stalls.

Spikes live in :mod:`spikes`, divergence and drift in :mod:`trends`; all of them return
:class:`Anomaly` values with a sentence a person would write.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from tuiloss.core.analysis.text import format_duration, format_percent, format_ratio, format_step, format_value

KINDS = ("spike", "nan", "divergence", "drift", "reset", "stall")

#: How many usual intervals of silence make a run stalled, and the least silence that counts.
STALL_FACTOR = 10.0
STALL_MIN_SECONDS = 60.0


def json_number(value: float | None) -> float | None:
    """``value`` as JSON can hold it: NaN and infinities become None."""
    if value is None:
        return None
    value = float(value)
    return value if math.isfinite(value) else None


@dataclass(frozen=True, slots=True)
class Anomaly:
    """One thing a careful reader would point at in a curve.

    Attributes:
        kind: ``spike``, ``nan``, ``divergence``, ``drift``, ``reset`` or ``stall``.
        step: where it starts (the onset).
        end_step: where it ends (back to normal, end of a drift), None if it has not.
        value: the peak of a spike, the level reached by a drift or divergence; None for ``nan``.
        baseline: the level before it started.
        message: one sentence, e.g. "spiked to 1.40 at 25.0K (7x the 0.200 baseline), recovered by 30.0K".
    """

    kind: str
    step: float
    end_step: float | None
    value: float | None
    baseline: float | None
    message: str

    def to_dict(self) -> dict:
        """JSON-safe fields (NaN and Inf become None)."""
        return {
            "kind": self.kind,
            "step": json_number(self.step),
            "end_step": json_number(self.end_step),
            "value": json_number(self.value),
            "baseline": json_number(self.baseline),
            "message": self.message,
        }


# -- messages ---------------------------------------------------------------------


def spike_message(peak: float, step: float, baseline: float, end_step: float | None, relative: bool) -> str:
    text = f"spiked to {format_value(peak)} at {format_step(step)}"
    if relative and baseline > 0 and peak > 0:
        text += f" ({format_ratio(peak / baseline)} the {format_value(baseline)} baseline)"
    else:
        text += f" (baseline {format_value(baseline)})"
    if end_step is None:
        return text + ", not recovered yet"
    return text + f", recovered by {format_step(end_step)}"


def nan_message(step: float, end_step: float | None, what: str, before: float | None) -> str:
    text = f"became {what} at {format_step(step)}"
    if before is not None:
        text += f" (last finite value {format_value(before)})"
    if end_step is None:
        return text + " and stayed non-finite to the end of the log"
    return text + f", finite again from {format_step(end_step)}"


def divergence_message(step: float, baseline: float, value: float, nan_step: float | None, relative: bool) -> str:
    text = f"diverged from {format_step(step)}: rose from {format_value(baseline)} to {format_value(value)}"
    if relative and baseline > 0 and value > 0:
        text += f" ({format_ratio(value / baseline)})"
    if nan_step is not None:
        return text + f" and became non-finite at {format_step(nan_step)}"
    return text + " and never came back down"


def drift_message(step: float, end_step: float, start_level: float, end_level: float, relative: bool, ongoing: bool) -> str:
    text = f"drifted up from {format_value(start_level)} to {format_value(end_level)}"
    if relative and start_level > 0:
        text += f" ({format_percent(end_level / start_level - 1)})"
    if ongoing:
        return text + f" from {format_step(step)} to the end of the log ({format_step(end_step)})"
    return text + f" between {format_step(step)} and {format_step(end_step)}"


_RESET_TEXT = {
    "reset": "the step counter went back to {step} (a restart or resume)",
    "truncated": "the log file was truncated; the series starts again at step {step}",
    "replaced": "the log file was replaced; the series starts again at step {step}",
    "rotated": "the log file was rotated; the series continues from step {step} in a new file",
    "recreated": "the log file was deleted and recreated; the series starts again at step {step}",
}


# -- simple detectors -------------------------------------------------------------


def find_nans(steps: np.ndarray, values: np.ndarray) -> list[Anomaly]:
    """One ``nan`` anomaly per contiguous stretch of non-finite values.

    Args:
        steps: steps in order.
        values: values; NaN, +Inf and -Inf all count as non-finite.

    Returns:
        Anomalies with ``step`` at the first non-finite point, ``end_step`` at the next
        finite point (None if the stretch runs to the end), ``baseline`` the last finite
        value before it.
    """
    values = np.asarray(values, dtype=np.float64)
    bad = ~np.isfinite(values)
    if not bad.any():
        return []
    edges = np.diff(np.concatenate(([0], bad.view(np.int8), [0])))
    starts = np.flatnonzero(edges == 1)
    ends = np.flatnonzero(edges == -1)
    out = []
    for a, b in zip(starts, ends):
        stretch = values[a:b]
        if np.isnan(stretch).all():
            what = "NaN"
        elif np.isinf(stretch).all():
            what = "Inf" if (stretch > 0).all() else ("-Inf" if (stretch < 0).all() else "Inf")
        else:
            what = "NaN/Inf"
        before = float(values[a - 1]) if a > 0 else None
        end_step = float(steps[b]) if b < len(values) else None
        out.append(Anomaly("nan", float(steps[a]), end_step, None, before, nan_message(float(steps[a]), end_step, what, before)))
    return out


def find_resets(segments: Sequence) -> list[Anomaly]:
    """A ``reset`` anomaly for every segment that did not start the series.

    Args:
        segments: objects with ``start_step`` and ``reason`` (``store.Segment``).
    """
    out = []
    for seg in segments:
        reason = getattr(seg, "reason", "reset")
        if reason == "start":
            continue
        step = float(getattr(seg, "start_step", math.nan))
        template = _RESET_TEXT.get(reason, "the series started again at step {step} (" + str(reason) + ")")
        out.append(Anomaly("reset", step, None, None, None, template.format(step=format_step(step))))
    return out


def stall_anomaly(
    last_step: float,
    last_point_time: float | None,
    arrival_times_or_median_interval: float | Sequence[float] | np.ndarray,
    now: float,
) -> Anomaly | None:
    """A ``stall`` when no point arrived for many times the run's usual interval.

    Args:
        last_step: the step of the newest point.
        last_point_time: wall-clock time the newest point arrived (None: unknown).
        arrival_times_or_median_interval: either the usual seconds between points, or
            the arrival times of recent points (their median gap is used).
        now: the current wall-clock time.

    Returns:
        An anomaly when the silence exceeds ``STALL_FACTOR`` times the usual interval
        and at least ``STALL_MIN_SECONDS``; otherwise None.
    """
    if last_point_time is None or not math.isfinite(last_point_time) or not math.isfinite(now):
        return None
    interval = _usual_interval(arrival_times_or_median_interval)
    if interval is None:
        return None
    silence = now - last_point_time
    if silence < max(STALL_FACTOR * interval, STALL_MIN_SECONDS):
        return None
    message = (
        f"no new point for {format_duration(silence)} (usually one every {format_duration(interval)}); "
        f"last at step {format_step(last_step)}"
    )
    return Anomaly("stall", float(last_step), None, None, None, message)


def _usual_interval(source) -> float | None:
    if isinstance(source, (int, float, np.floating, np.integer)):
        value = float(source)
        return value if math.isfinite(value) and value > 0 else None
    times = np.asarray(source, dtype=np.float64)
    times = times[np.isfinite(times)]
    if len(times) < 2:
        return None
    gaps = np.diff(np.sort(times))
    gaps = gaps[gaps > 0]
    if not len(gaps):
        return None
    return float(np.median(gaps))
