"""Anomalies found in a loss series, and the simple detectors: non-finite values, resets, stalls.

Spikes live in :mod:`spikes`, divergence and drift in :mod:`trends`; all of them return
:class:`Anomaly` values with a sentence a person would write (worded by :mod:`describe`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from tuiloss.core.analysis import describe
from tuiloss.core.analysis.severity import HIGH
from tuiloss.core.analysis.severity import word as severity_word
from tuiloss.core.analysis.stats import median

#: How many usual intervals of silence make a run stalled, and the least silence that counts.
STALL_FACTOR = 10.0
STALL_MIN_SECONDS = 60.0


@dataclass(frozen=True, slots=True)
class Anomaly:
    """One thing a careful reader would point at in a curve.

    Attributes:
        kind: ``spike``, ``nan``, ``divergence``, ``drift``, ``reset``, ``stall``,
            ``overfitting`` (an eval series) or ``grad_norm`` (grad-norm spikes with no
            loss finding at them, one for them all; information).
        step: where it starts (the onset).
        end_step: where it ends (back to normal, end of a drift), None if it has not.
        value: the peak of a spike, the level reached by a drift or divergence; None for ``nan``.
        baseline: the level before it started.
        message: one sentence, e.g. "spiked to 1.40 at 25.0K (7x the 0.200 baseline), recovered by 30.0K".
        severity: how much it matters (see :mod:`severity`): ``high`` from 1, ``medium``
            from 0.5; 0 for information (a reset, a stall).
    """

    kind: str
    step: float
    end_step: float | None
    value: float | None
    baseline: float | None
    message: str
    severity: float = 0.0

    @property
    def severity_word(self) -> str:
        """``high``, ``medium``, ``low`` or ``info``."""
        return severity_word(self.severity)


def counts_as_anomaly(anomaly: Anomaly) -> bool:
    """Whether a finding counts as one of a run's anomalies (the runs list's ``!``, the panel,
    "Across runs"): a line of information (grad-norm spikes, spikes that recur) is not one."""
    return anomaly.kind not in INFORMATION_KINDS


#: Findings that inform about others rather than being anomalies of their own.
INFORMATION_KINDS = frozenset({"grad_norm", "periodic"})


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
        message = describe.nonfinite(float(steps[a]), end_step, what, before)
        out.append(Anomaly("nan", float(steps[a]), end_step, None, before, message, HIGH))
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
        out.append(Anomaly("reset", step, None, None, None, describe.reset(step, reason)))
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
    return Anomaly("stall", float(last_step), None, None, None, describe.stall(silence, interval, last_step))


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
    return median(gaps)
