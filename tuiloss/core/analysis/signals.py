"""Secondary signals that explain the loss: grad-norm spikes, fp16 loss-scale drops and
overflow skips, sharp LR drops.

They are not findings of their own (a log of them would be a flood of alarms); each is
reported as supporting evidence next to the loss finding it coincides with: "spiked to
3.78 at 7.4K (...); with a grad-norm spike to 1.83 (5.5x) at 7.4K". A grad-norm spike
also lets a loss rise too small to report on its own (under 1.3x) be reported, since it
now has a cause a reader can act on.

Which series are which is read off their names (see ``KINDS``); a series is found once
per kind, the first that matches.

* grad norm: the spikes of the series (as :func:`summary.analyze_series` finds them) at
  least ``GRAD_RATIO`` (3x) above their baseline;
* loss scale: every step where it falls below ``1 / SCALE_DROP`` (2/3) of the value before;
* skipped iterations (a cumulative count): every step where it grows;
* learning rate: every step where it falls below ``1 / LR_DROP`` (1/1.5) of the value before
  (a step decay or ReduceLROnPlateau, not a smooth schedule).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np

from tuiloss.core.analysis import describe
from tuiloss.core.analysis.stats import median

KINDS = {
    "grad_norm": re.compile(r"(^|[/_. ])(grad(ient)?[_ ]?norm|norm)$", re.IGNORECASE),
    "loss_scale": re.compile(r"loss[_ ]?scale$", re.IGNORECASE),
    "skipped": re.compile(r"(^|[/_ ])skipped([_ ]iter(ation)?s)?$|number of skipped iterations", re.IGNORECASE),
    "lr": re.compile(r"(^|[/_])(lr|learning[_ ]?rate)$", re.IGNORECASE),
}
GRAD_RATIO = 3.0
SCALE_DROP = 1.5
LR_DROP = 1.5
#: At most this many signals of one kind are kept (the first ones).
MAX_SIGNALS = 1000


@dataclass(frozen=True, slots=True)
class Signal:
    """One event in a secondary series.

    Attributes:
        kind: ``grad_norm``, ``loss_scale``, ``skipped`` or ``lr``.
        step: where it happened.
        value: the value it reached (the grad-norm peak, the new loss scale or LR).
        before: the value before it (baseline, previous scale or LR).
        text: how it reads as evidence, e.g. ``a grad-norm spike to 1.83 (5.5x)``.
    """

    kind: str
    step: float
    value: float | None
    before: float | None
    text: str


def signal_series(names: Sequence[str]) -> dict[str, str]:
    """The series name used for each kind of signal (the first that matches)."""
    out: dict[str, str] = {}
    for name in names:
        for kind, pattern in KINDS.items():
            if kind not in out and pattern.search(str(name)):
                out[kind] = name
                break
    return out


def find_signals(series: Mapping[str, tuple[np.ndarray, np.ndarray]], analyze=None) -> list[Signal]:
    """Events of the secondary series among ``series`` (name -> (steps, values)), by step.

    ``analyze(name, steps, values)``, when given, analyses a grad-norm series (a kept live
    analyser, so the viewer reads only what is new); by default ``analyze_series``.
    """
    from tuiloss.core.analysis.summary import analyze_series  # the one spike detector

    if analyze is None:
        analyze = lambda name, steps, values: analyze_series(steps, values)  # noqa: E731
    out: list[Signal] = []
    for kind, name in signal_series(list(series)).items():
        steps, values = (np.asarray(a, dtype=np.float64) for a in series[name])
        if not len(values):
            continue
        if kind == "grad_norm":
            for a in analyze(name, steps, values).of_kind("spike"):
                if a.baseline and a.baseline > 0 and a.value / a.baseline >= GRAD_RATIO:
                    out.append(Signal(kind, a.step, a.value, a.baseline, describe.grad_norm_evidence(a.value, a.value / a.baseline)))
        else:
            out.extend(_drops(kind, steps, values))
    out.sort(key=lambda s: s.step)
    return out


#: Points compared at a time when looking for drops (no temporary grows with the series).
_PIECE = 1 << 16


def _drops(kind: str, steps: np.ndarray, values: np.ndarray) -> list[Signal]:
    if not math.isfinite(float(np.add.reduce(values))):  # a gap (or an overflow): each value is
        ok = np.isfinite(values)  # compared with the finite one before it
        steps, values = steps[ok], values[ok]
    if len(values) < 2:
        return []
    factor = SCALE_DROP if kind == "loss_scale" else LR_DROP
    hits: list[np.ndarray] = []
    count = 0
    for lo in range(1, len(values), _PIECE):  # stops once MAX_SIGNALS drops are found
        hi = min(len(values), lo + _PIECE)
        prev, cur = values[lo - 1 : hi - 1], values[lo:hi]
        if kind == "skipped":
            hit = np.flatnonzero(cur > prev)
        else:
            with np.errstate(all="ignore"):
                hit = np.flatnonzero((prev > 0) & (cur * factor < prev))
        if len(hit):
            hits.append(hit + lo - 1)
            count += len(hit)
            if count >= MAX_SIGNALS:
                break
    out = []
    for i in np.concatenate(hits)[:MAX_SIGNALS] if hits else ():
        before, after = float(values[i]), float(values[i + 1])
        out.append(Signal(kind, float(steps[i + 1]), after, before, describe.drop_evidence(kind, before, after)))
    return out


def support_steps(signals: Sequence[Signal]) -> tuple[float, ...]:
    """The steps that lend support to a small loss rise (grad-norm spikes)."""
    return tuple(s.step for s in signals if s.kind == "grad_norm")


def evidence_for(step: float, end_step: float | None, signals: Sequence[Signal], tolerance: float) -> list[Signal]:
    """The signals within ``tolerance`` steps of ``[step, end_step]``."""
    hi = (end_step if end_step is not None and math.isfinite(end_step) else step) + tolerance
    lo = step - tolerance
    return [s for s in signals if lo <= s.step <= hi]


def tolerance_of(steps: np.ndarray) -> float:
    """Two usual logging intervals of the loss series."""
    steps = np.asarray(steps, dtype=np.float64)
    if len(steps) < 2:
        return 0.0
    gaps = np.diff(steps[-min(len(steps), 4097):])
    gaps = gaps[gaps > 0]
    return 2.0 * median(gaps) if len(gaps) else 0.0
