"""Evaluation series joined to their train series: overfitting.

An eval series is analysed like any other (spikes, NaN/Inf, a verdict); what only the
pair can say is whether the model overfits: the eval loss rising from its best while the
train loss keeps falling (or stays flat). :func:`join_eval` says so as an ``overfitting``
anomaly of the eval series, from the step of the best eval value.

The rule, in the analysis space of the eval series (the log of a loss):

* the best eval is the lowest of the eval values smoothed by a running median of 3 (so
  one lucky eval is not the best), and its value is that median;
* at least ``AFTER`` evals follow it, and each of the last ``AFTER`` of them stands at
  least ``OVERFIT_RISE`` (4%) and four noise sigmas above the best (so one bad eval is a
  spike, not overfitting); the noise is the robust spread of the evals around that
  running median; or the eval climbs: each of the last ``RISING`` (3) evals is higher than
  the one before, all of them half that rise and four noise sigmas above the best, the
  last the whole rise (a slow late rise, 2.9% -> 3.8% -> 5.1%);
* the train loss at the end (the median of its points since the eval before the last) is
  not above its level around the best eval's step (the median of the train points between
  the evals before and after it) by more than ``TRAIN_FLAT`` (3%) of that level, or than
  ``TRAIN_SIGMAS`` (2) of its own noise sigmas, whichever is more (a loss near its floor,
  printed with two decimals, moves 0.04 -> 0.06 within its noise; 3% of it is below the
  print).

It is reported from the last eval still within 1% (or two noise sigmas) of the best,
where the eval leaves its best for good; the sentence names the best value and its step.
Its severity is the eval's rise over its best, over ``severity.DRIFT_UNIT`` (20%). An eval
perplexity (e^loss) is judged as the loss it is: near a perplexity of 1 its own relative
rise understates the loss's (1.047 -> 1.100 is +5%; the loss, 0.046 -> 0.095, doubled).
The cost is bounded by the eval points and a few searches in the train steps.
"""

from __future__ import annotations

import math

import numpy as np

from tuiloss.core.analysis import describe, severity
from tuiloss.core.analysis.anomalies import Anomaly
from tuiloss.core.analysis.stats import mad_sigma, median, running_median

OVERFIT_RISE = math.log(1.04)
#: Evals within this (1%) or two noise sigmas of the best are on its bottom; overfitting
#: is reported from the last of them (where the eval leaves its best for good).
BOTTOM = math.log(1.01)
AFTER = 2
#: Or the last this many evals climb, one above the other.
RISING = 3
TRAIN_FLAT = 0.03
#: The train loss "stays" when it rose by no more than this many of its noise sigmas (the
#: robust spread of its steps from the eval before the best to the end).
TRAIN_SIGMAS = 2.0
#: At most this many eval points are read (the last ones).
MAX_EVALS = 100_000


def join_eval(
    train_steps: np.ndarray,
    train_values: np.ndarray,
    eval_steps: np.ndarray,
    eval_values: np.ndarray,
    eval_analysis=None,
    *,
    perplexity: bool = False,
) -> list[Anomaly]:
    """Findings of an eval series that need its train series: ``overfitting``, or nothing.

    Args:
        train_steps, train_values: the train series (visible points, NaN allowed).
        eval_steps, eval_values: the eval series.
        eval_analysis: unused today; the eval's own analysis, for callers that have it.
        perplexity: the eval series is a perplexity, e^loss: it is judged as the loss it is
            (a perplexity of 1.05 -> 1.10 is +5% of itself but the loss doubled), and said
            in its own units.
    """
    es = np.asarray(eval_steps, dtype=np.float64)[-MAX_EVALS:]
    ev = np.asarray(eval_values, dtype=np.float64)[-MAX_EVALS:]
    if perplexity:
        with np.errstate(all="ignore"):
            ev = np.log(ev)
    ok = np.isfinite(ev) & np.isfinite(es)
    es, ev = es[ok], ev[ok]
    if len(ev) < AFTER + 2:
        return []
    log = bool((ev > 0).all())
    with np.errstate(all="ignore"):
        z = np.log(ev) if log else ev
        smooth = running_median(z, 1)
        best = int(np.argmin(smooth))
        if len(z) - 1 - best < AFTER:
            return []
        resid = z - smooth
        noise = float(mad_sigma(resid))
        scale = 1.0 if log else max(abs(float(smooth[best])), 1e-12)
        need = max(OVERFIT_RISE * scale, 4 * noise)
        above = z - smooth[best]
        # two last evals clear of the best, or a climb: each of the last three higher than the
        # one before, all clear of the noise and half the rise, the last the whole of it
        climb = (len(z) - 1 - best >= RISING and (np.diff(z[-RISING:]) > 0).all() and above[-1] >= need
                 and (above[-RISING:] >= max(0.5 * OVERFIT_RISE * scale, 4 * noise)).all())
        if not (above[-AFTER:] >= need).all() and not climb:
            return []
        train = _train_levels(train_steps, train_values, es, best)
        if train is None:
            return []
        at_best, at_end, train_noise = train
        # "falls or stays": risen by no more than 3%, or than its own noise says two medians differ by
        allowed = max(TRAIN_FLAT * max(abs(at_best), 1e-12), TRAIN_SIGMAS * train_noise)
        if at_end - at_best > allowed:
            return []
    best_step = float(es[best])
    best_value = float(np.exp(smooth[best])) if log else float(smooth[best])  # one of the evals around it
    # overfitting starts where the eval leaves its best for good: the last eval on the bottom
    bottom = np.flatnonzero(smooth[: len(z) - AFTER] <= smooth[best] + max(BOTTOM * scale, 2 * noise))
    onset = int(bottom[-1]) if len(bottom) else best
    onset_step = float(es[max(best, onset)])
    last = median(ev[-AFTER:])
    rise = severity.rise_of(math.log(last) if log else last, math.log(best_value) if log else best_value, log)
    sev = min(severity.HIGH, rise / severity.DRIFT_UNIT) if rise is not None and rise > 0 else 0.5
    if perplexity:  # said in the series' own units
        best_value, last = math.exp(best_value), math.exp(last)
    message = describe.overfitting(onset_step, best_step, best_value, last, float(es[-1]), at_best, at_end, log,
                                   what="eval perplexity" if perplexity else "eval loss")
    return [Anomaly("overfitting", onset_step, None, last, best_value, message, sev)]


def _train_levels(steps, values, eval_steps: np.ndarray, best: int) -> tuple[float, float, float] | None:
    """The train loss around the best eval's step, at the end (medians of finite points), and its noise."""
    steps = np.asarray(steps, dtype=np.float64)
    values = np.asarray(values, dtype=np.float64)
    if not len(steps):
        return None
    lo_step = eval_steps[best - 1] if best > 0 else eval_steps[best]
    hi_step = eval_steps[best + 1] if best + 1 < len(eval_steps) else eval_steps[best]
    if not (np.diff(steps) >= 0).all():  # a reset: read the newest stretch only
        cut = int(np.flatnonzero(np.diff(steps) < 0)[-1]) + 1
        steps, values = steps[cut:], values[cut:]
    a, b = np.searchsorted(steps, [lo_step, hi_step], side="left")
    b = max(b + 1, a + 1)
    around = values[a : min(b, len(values))]
    around = around[np.isfinite(around)]
    if not len(around):
        k = min(len(values) - 1, int(np.searchsorted(steps, eval_steps[best])))
        around = values[max(0, k - 2) : k + 3]
        around = around[np.isfinite(around)]
    # the end: the train points since the eval before the last (as many as around the best)
    start = int(np.searchsorted(steps, eval_steps[-2] if len(eval_steps) > 1 else eval_steps[-1]))
    tail = values[min(start, max(0, len(values) - 5)) :]
    tail = tail[np.isfinite(tail)]
    if not len(around) or not len(tail):
        return None
    since = values[min(a, max(0, len(values) - 5)) :]
    since = np.diff(since[np.isfinite(since)])
    noise = float(mad_sigma(since) / math.sqrt(2)) if len(since) >= 4 else 0.0
    return median(around), median(tail), noise
