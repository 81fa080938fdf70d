"""Events on a run's step axis: what happened to the training, beside its curve.

Learning-rate drops and warm restarts read off a logged LR, fp16/bf16 loss-scale drops,
evaluations, checkpoint saves the log announced, and the run's own segments (a resume, a
truncated or replaced log, a restart). Each is an :class:`Event`; the chart draws them as thin
marks, the step cursor lists the ones near it, and the report lists them per run.

Headless and vectorised: plain numpy over ``(steps, values)`` arrays; nothing here imports the
rest of tuiloss.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from tuiloss.core.analysis.display import fmt_step, fmt_value

#: The series a text log's checkpoint-save lines become (one point per save, value 1).
CHECKPOINT_SERIES = "_checkpoint"
#: The series DeepSpeed's ``OVERFLOW! ... Attempted loss scale: A, reducing to B`` lines become
#: (one point per skipped step, value B).
OVERFLOW_SERIES = "_overflow"
#: Series that hold events, not metrics: never charted as a curve of their own by choice.
EVENT_SERIES = (CHECKPOINT_SERIES, OVERFLOW_SERIES)

#: Kinds of event, in the order a list of events at one step shows them.
KINDS = ("restart", "segment", "lr_drop", "lr_restart", "scale_drop", "overflow", "checkpoint", "eval")
#: What each kind is called where events are counted or listed (``3 checkpoints``).
NOUNS = {
    "restart": "restart", "segment": "resume", "lr_drop": "LR drop", "lr_restart": "LR restart",
    "scale_drop": "loss-scale drop", "overflow": "overflow", "checkpoint": "checkpoint", "eval": "eval",
}

#: The least factor a logged LR must change by, from one logged point to the next, to be a step.
LR_FACTOR = 1.4
#: A step change stands out: the typical (median) change of the points around it is at most this
#: share of it. A smooth decay changes by similar factors at neighbouring points, also near its
#: end; a staircase (ReduceLROnPlateau every few epochs) is flat between its steps.
LR_ALONE = 0.25
#: Points on each side whose changes must be small for a change to stand alone.
LR_NEIGHBOURS = 3
#: A change between values printed with fewer significant digits than this says nothing of its
#: ratio (llm.c prints ``lr:0.000002``: a linear decay to zero reads as 3e-6, 2e-6, 1e-6, 0).
PRINTED_DIGITS = 10
#: An LR this small relative to the run's largest has decayed to nothing: reaching it is no drop.
LR_FLOOR = 1e-6


@dataclass(frozen=True, slots=True)
class Event:
    """Something that happened at ``step``: its kind (see :data:`KINDS`) and what it was."""

    kind: str
    step: float
    message: str
    before: float | None = None  # the value before it (an LR or loss scale), when it has one
    after: float | None = None


#: Points read at a time: every temporary of :func:`lr_events` is at most this long, so a series
#: of tens of millions of points costs no copy of itself (a row of neighbours per point would be
#: seven copies).
BLOCK = 1 << 16


def _logged(values: np.ndarray, floor: float) -> np.ndarray:
    """``log(v)`` of the positive finite ``values``, clipped at ``floor``."""
    return np.log(np.maximum(values, floor))


def _big_changes(values: np.ndarray, floor: float) -> np.ndarray:
    """Indices ``i`` where the LR changes by :data:`LR_FACTOR` or more from point ``i`` to ``i + 1``.

    The ratio of neighbouring values finds the few changes near that size or bigger (a
    logarithm costs ten times a division); the difference of logarithms, as
    :func:`_sizes_at` takes it, decides on those.
    """
    found = []
    least = math.log(LR_FACTOR)
    up, down = LR_FACTOR * (1 - _RATIO_SLACK), (1 + _RATIO_SLACK) / LR_FACTOR
    for lo in range(0, len(values) - 1, BLOCK):
        clipped = np.maximum(values[lo : lo + BLOCK + 1], floor)
        with np.errstate(divide="ignore", invalid="ignore"):  # a floor of 0 (a run of tiny LRs)
            ratio = clipped[1:] / clipped[:-1]
        near = np.flatnonzero(~((ratio < up) & (ratio > down)))  # NaN and infinity too
        if len(near):
            hits = near[_sizes_at(values, floor, near + lo) >= least]
            if len(hits):
                found.append(hits + lo)
    return np.concatenate(found) if found else np.zeros(0, dtype=np.intp)


#: How far from :data:`LR_FACTOR` a ratio may lie and still be checked on logarithms: far more
#: than the rounding of either (a few units in the last place).
_RATIO_SLACK = 1e-9


def _sizes_at(values: np.ndarray, floor: float, at: np.ndarray) -> np.ndarray:
    """``|log(v[i + 1] / v[i])|`` at the indices ``at`` (each a change, ``0 <= i < len(values) - 1``)."""
    return np.abs(_logged(values[at + 1], floor) - _logged(values[at], floor))


def _standing_out(values: np.ndarray, floor: float, at: np.ndarray) -> np.ndarray:
    """Whether each change ``at`` is far larger than the median change of the :data:`LR_NEIGHBOURS` points each side.

    Only points that exist count (none is made up past either end), so the last change of a
    decay is weighed against the ones before it alone. The change must also border a flat
    stretch: the change just before or just after it is as small.
    """
    n = len(values) - 1  # changes
    k = LR_NEIGHBOURS
    out = np.zeros(len(at), dtype=bool)
    offsets = np.arange(-k, k + 1)
    for lo in range(0, len(at), BLOCK):
        here = at[lo : lo + BLOCK]
        size = _sizes_at(values, floor, here)
        rows = here[:, None] + offsets  # row: changes i-k .. i+k
        real = (rows >= 0) & (rows < n)
        around = np.full(rows.shape, np.nan)
        around[real] = _sizes_at(values, floor, rows[real])
        around[:, k] = np.nan
        known = np.isfinite(around).any(axis=1)
        typical = np.zeros(len(here))
        if known.any():
            typical[known] = np.nanmedian(around[known], axis=1)
        # ... and it begins or ends a flat stretch: the change just before or after it is small. The
        # last point of a decay onto a floor is steep beside its neighbours, yet no stretch is flat there.
        flat = (real[:, k - 1] & (around[:, k - 1] <= LR_ALONE * size)) | (real[:, k + 1] & (around[:, k + 1] <= LR_ALONE * size))
        out[lo : lo + BLOCK] = (typical <= LR_ALONE * size) & (flat | (n == 1))
    return out


def printed_quantum(values: np.ndarray) -> float | None:
    """The step of the decimals ``values`` were printed with (``1e-06`` for ``lr:0.000003``); None
    when they are not all on such a grid (scientific notation, float32 noise: fine enough)."""
    values = values[np.isfinite(values)] if not _all_blocks(values, np.isfinite) else values
    if not len(values):
        return None
    for decimals in range(0, 13):
        scale = 10.0**decimals

        def on_grid(piece: np.ndarray) -> np.ndarray:
            scaled = piece * scale
            return np.abs(scaled - np.round(scaled)) <= 1e-6 * np.maximum(1.0, np.abs(scaled))

        if _all_blocks(values, on_grid):
            return 10.0**-decimals
    return None


def _all_blocks(values: np.ndarray, test) -> bool:
    """Whether ``test(piece)`` holds everywhere, read :data:`BLOCK` values at a time (the first miss ends it)."""
    return all(bool(test(values[lo : lo + BLOCK]).all()) for lo in range(0, len(values), BLOCK))


def _lr_points(steps: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The points an LR's events are read from: finite and not negative, the last one of each step.

    The stored arrays themselves when every point is one (no copy), else the points kept.
    """
    def usable(lo: int, hi: int) -> np.ndarray:
        s, v = steps[lo:hi], values[lo:hi]
        return np.isfinite(v) & (v >= 0) & (np.isfinite(s) if s.dtype.kind == "f" else True)

    n = len(values)
    if not _all_usable(steps, values) and not all(usable(lo, lo + BLOCK).all() for lo in range(0, n, BLOCK)):
        keep = np.concatenate([usable(lo, lo + BLOCK) for lo in range(0, n, BLOCK)])
        steps, values = steps[keep], values[keep]
        n = len(values)
    if n < 2:
        return steps, values

    def later(lo: int, hi: int) -> np.ndarray:  # point i is the last of its step: the next one's differs
        s = steps[lo : min(hi, n - 1) + 1].astype(np.float64, copy=False)
        out = np.ones(min(hi, n) - lo, dtype=bool)
        out[: len(s) - 1] = s[1:] != s[:-1]
        return out

    if not all(later(lo, lo + BLOCK).all() for lo in range(0, n, BLOCK)):
        last = np.concatenate([later(lo, lo + BLOCK) for lo in range(0, n, BLOCK)])
        steps, values = steps[last], values[last]
    return steps, values


def _all_usable(steps: np.ndarray, values: np.ndarray) -> bool:
    """Whether every value is finite and not negative, and every step finite, told by the least
    and largest of each (NaN makes both NaN): no temporary, one pass each. False when unsure."""
    if not len(values) or len(steps) != len(values):
        return False
    least, most = float(values.min()), float(values.max())
    if not (least >= 0 and most < math.inf):
        return False
    return steps.dtype.kind != "f" or bool(math.isfinite(float(steps.min())) and math.isfinite(float(steps.max())))


def _peaks_before(values: np.ndarray, at: np.ndarray) -> np.ndarray:
    """The largest of ``values[: i + 1]`` for each index ``i`` of ``at`` (in order)."""
    out = np.empty(len(at))
    best = -math.inf
    for lo in range(0, len(values), BLOCK):
        hi = min(lo + BLOCK, len(values))
        a, b = np.searchsorted(at, [lo, hi])
        if b > a:
            running = np.maximum.accumulate(values[lo:hi])
            out[a:b] = np.maximum(best, running[at[a:b] - lo])
        best = max(best, float(values[lo:hi].max()))
    return out


def lr_events(steps: np.ndarray, values: np.ndarray, name: str = "learning rate") -> list[Event]:
    """Step changes of a logged learning rate: drops (step decay, ReduceLROnPlateau) and warm restarts.

    A change counts when the LR moves by :data:`LR_FACTOR` or more from one logged point to the
    next while the points around it typically hardly move (:data:`LR_ALONE`): so a cosine or
    linear decay, whose neighbouring points change alike, is no event at any of its points, also
    where it nears zero, and a staircase's steps are each one, however close together; reaching the floor (:data:`LR_FLOOR` of the largest LR, or zero) is the end of a
    decay, not a drop. A rise is a warm restart only when the LR had come down from higher
    before it (a warmup rises from its start and is none). Where the LR was printed with few
    decimals, a change between values of one significant digit is rounding, not a step.

    Read :data:`BLOCK` points at a time: what it holds beside the series is the changes big
    enough to be events and a block's temporaries.
    """
    # One value per step (an LR logged by several rows of one step is one point).
    steps, values = _lr_points(np.asarray(steps), np.asarray(values, dtype=np.float64))
    if len(values) < 2:
        return []
    top = float(values.max())
    if top <= 0:
        return []
    floor = top * LR_FLOOR * 0.1
    big = _big_changes(values, floor)
    if not len(big):
        return []
    quantum = printed_quantum(values)
    before, after = values[big], values[big + 1]
    if quantum is not None:  # a value printed with one or two digits cannot show a ratio: 2e-6 -> 1e-6 is rounding
        kept = np.maximum(before, after) >= PRINTED_DIGITS * quantum
        big, before, after = big[kept], before[kept], after[kept]
    alone = _standing_out(values, floor, big)
    change = _logged(after, floor) - _logged(before, floor)
    drops = alone & (change < 0) & (after > top * LR_FLOOR)
    peak_before = _peaks_before(values, big)
    rises = alone & (change > 0) & (peak_before > 0) & (before * LR_FACTOR <= peak_before)
    out = []
    for j in np.flatnonzero(drops | rises):
        i = int(big[j])
        b, a = float(before[j]), float(after[j])
        kind = "lr_drop" if drops[j] else "lr_restart"
        word = "dropped" if kind == "lr_drop" else "restarted"
        ratio = a / b if b > 0 else math.inf
        times = f"x{ratio:.2g}" if math.isfinite(ratio) else "from 0"
        out.append(Event(kind, float(steps[i + 1]), f"{name} {word} {fmt_value(b)} -> {fmt_value(a)} ({times})", b, a))
    return out


def scale_events(steps: np.ndarray, values: np.ndarray, name: str = "loss scale") -> list[Event]:
    """Drops of an fp16/bf16 dynamic loss scale: each point below the one before (an overflow halved it)."""
    steps = np.asarray(steps, dtype=np.float64)
    values = np.asarray(values, dtype=np.float64)
    keep = np.isfinite(values) & np.isfinite(steps)
    steps, values = steps[keep], values[keep]
    if len(values) < 2:
        return []
    down = np.flatnonzero(values[1:] < values[:-1])
    return [Event("scale_drop", float(steps[i + 1]), f"{name} {fmt_value(float(values[i]))} -> {fmt_value(float(values[i + 1]))}",
                  float(values[i]), float(values[i + 1])) for i in down.tolist()]


def overflow_events(steps: np.ndarray, values: np.ndarray) -> list[Event]:
    """Overflow-skipped steps the log announced, each with the loss scale it was reduced to."""
    out = []
    for step, value in zip(np.asarray(steps, dtype=np.float64).tolist(), np.asarray(values, dtype=np.float64).tolist()):
        said = f", loss scale now {fmt_value(value)}" if math.isfinite(value) and value > 0 else ""
        out.append(Event("overflow", step, f"gradient overflow, step skipped{said}", None, value if said else None))
    return _one_per_step(out)


def checkpoint_events(steps: np.ndarray) -> list[Event]:
    """Checkpoint saves the log announced (one per step, however many lines one save printed)."""
    return _one_per_step([Event("checkpoint", float(s), "checkpoint saved") for s in np.asarray(steps, dtype=np.float64).tolist()
                          if math.isfinite(s)])


def eval_events(steps: np.ndarray, values: np.ndarray, name: str) -> list[Event]:
    """One event per evaluation: the step it ran at and what it measured."""
    steps = np.asarray(steps, dtype=np.float64)
    values = np.asarray(values, dtype=np.float64)
    return _one_per_step([Event("eval", s, f"eval: {name} {fmt_value(v)}", None, v)
                          for s, v in zip(steps.tolist(), values.tolist()) if math.isfinite(s)])


#: How each segment reason reads as an event.
SEGMENT_WORDS = {
    "reset": "resumed from a checkpoint (the step went back to {step})",
    "backwards": "the step counter runs backwards from {step}",
    "truncated": "log truncated; read again from its start",
    "replaced": "log replaced by a new file",
    "rotated": "log rotated; the new file goes on",
    "recreated": "log deleted and written again",
}


def segment_events(segments: list[tuple[float, str]]) -> list[Event]:
    """The run's segments after its first (``(start_step, reason)``): resumes and changes of its file."""
    out = []
    for step, reason in segments:
        words = SEGMENT_WORDS.get(reason)
        if words is not None and math.isfinite(step):
            out.append(Event("segment", float(step), words.format(step=fmt_step(step))))
    return out


def restart_event(step: float, number: int) -> Event:
    """Training started again from scratch in the same log: this is its ``number``-th run."""
    return Event("restart", float(step), f"training restarted from scratch in the same log (run #{number})")


def _one_per_step(events: list[Event]) -> list[Event]:
    """``events`` with one per step: the first said at each."""
    seen: set[float] = set()
    out = []
    for event in events:
        if event.step not in seen:
            seen.add(event.step)
            out.append(event)
    return out


def ordered(events: list[Event]) -> list[Event]:
    """``events`` by step, then in the order of :data:`KINDS`."""
    rank = {kind: k for k, kind in enumerate(KINDS)}
    return sorted(events, key=lambda e: (e.step, rank.get(e.kind, len(KINDS))))


def near(events: list[Event], step: float, lo: float, hi: float) -> list[Event]:
    """The events within ``[lo, hi]`` (a cursor's column, in steps), nearest to ``step`` first."""
    inside = [e for e in events if lo <= e.step <= hi]
    return sorted(inside, key=lambda e: abs(e.step - step))


def counted(events: list[Event]) -> str:
    """``2 LR drops, 5 checkpoints, 10 evals``: how many of each kind, in the order of :data:`KINDS`."""
    parts = []
    for kind in KINDS:
        n = sum(1 for e in events if e.kind == kind)
        if n:
            noun = NOUNS[kind]
            parts.append(f"{n} {noun}{'' if n == 1 else 'es' if noun.endswith('h') else 's'}")
    return ", ".join(parts)
