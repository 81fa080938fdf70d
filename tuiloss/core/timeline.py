"""A run's events and its other x axes, read from its stored series.

:func:`events_of` gathers what :mod:`~tuiloss.core.analysis.events` finds in a run: the
segments of its primary metric (resumes, a truncated or replaced log), a restart in its log,
learning-rate drops and warm restarts of its logged LR, drops of its loss scale, the overflow
and checkpoint lines of a text log, and its evaluations. The report lists them; the viewer
marks them on the chart and lists those near the step cursor.

:func:`axes_of` says which x axes a run has beside its step: wall-clock time (a logged
``_timestamp``, ``timestamp``, ``wall_time``, or the event times of a TensorBoard log), time
since its start (those, or a logged ``_runtime`` / ``elapsed``), and a progress counter
(tokens or samples seen, ``consumed_samples``, ``total_timesteps``, ``num_input_tokens_seen``);
:func:`axis_values` maps steps onto one.
"""

from __future__ import annotations

import numpy as np

from tuiloss.core.analysis import events as ev
from tuiloss.core.analysis import metrics as names
from tuiloss.core.store import Run, Series

#: The x axes, in the order ``X`` cycles through them.
AXES = ("step", "wall", "elapsed", "progress")
#: How each axis is named on the chart and in messages.
AXIS_NAMES = {"step": "step", "wall": "wall time", "elapsed": "time since start", "progress": "progress"}

#: Series that hold wall-clock times (seconds, or milliseconds, since the epoch), most trusted first.
WALL_SERIES = ("_timestamp", "timestamp", "wall_time", "walltime", "_wall_time", "time")
#: Series that hold seconds since the run started.
ELAPSED_SERIES = ("_runtime", "elapsed", "elapsed_time", "time_elapsed", "time/time_elapsed", "runtime")
#: Progress counters, by their normalised name, most telling first (what was consumed).
PROGRESS_SERIES = ("num_input_tokens_seen", "tokens_seen", "consumed_tokens", "tokens", "num_tokens",
                   "consumed_samples", "samples_seen", "num_samples", "samples", "total_timesteps",
                   "time_total_timesteps", "timesteps")
#: Plausible wall-clock seconds since the epoch: 2001 to 2100.
WALL_RANGE = (1e9, 4.2e9)


def events_of(run: Run, series: dict[str, Series] | None = None, primary: str | None = None) -> list[ev.Event]:
    """Every event of ``run`` (its ``series``, default its own; ``primary`` its primary metric), by step."""
    series = run.series if series is None else series
    primary = primary if primary is not None else run.primary_metric
    found: list[ev.Event] = []
    main = series.get(primary) if primary else None
    if main is not None and len(main):
        found += ev.segment_events([(seg.start_step, seg.reason) for seg in main.segments[1:]])
        if run.part_of is not None and "#" in run.id:
            number = run.id.rsplit("#", 1)[1]
            if number.isdigit():
                found.append(ev.restart_event(float(main.steps.view[0]), int(number)))
    for name, one in series.items():
        if not len(one):
            continue
        role = names.role(name)
        if name == ev.CHECKPOINT_SERIES:
            found += ev.checkpoint_events(one.visible()[0])
        elif name == ev.OVERFLOW_SERIES:
            found += ev.overflow_events(*one.visible())
        elif role == "lr" and not names.is_eval(name):
            found += ev.lr_events(*one.visible(), name=name)
        elif role == "scale":
            found += ev.scale_events(*one.visible(), name=name)
    counterpart = names.eval_counterpart(primary, list(series)) if primary else None
    if counterpart is not None and counterpart in series:
        found += ev.eval_events(*series[counterpart].visible(), name=counterpart)
    return ev.ordered(found)


def _normal(name: str) -> str:
    return "_".join(names.words(name))


def _rising(values: np.ndarray) -> bool:
    """Whether ``values`` (finite) grow: they never go back and end above where they start."""
    return len(values) >= 2 and bool(np.all(np.diff(values) >= 0)) and values[-1] > values[0]


def _axis_series(run: Run, axis: str) -> tuple[str, Series] | None:
    """The series of ``run`` that gives ``axis``, and its name; None when it has none."""
    if axis in ("wall", "elapsed"):
        for name in WALL_SERIES:
            one = run.series.get(name)
            if one is not None and len(one) >= 2:
                values = one.visible()[1]
                values = values[np.isfinite(values)]
                if len(values) >= 2 and _rising(values) and (_is_wall(values) or _is_wall(values / 1000.0)):
                    return name, one
        if axis == "wall":
            return None
        candidates = ELAPSED_SERIES
    else:
        candidates = PROGRESS_SERIES
    by_normal = {_normal(name): name for name in run.series}
    for wanted in candidates:
        name = wanted if wanted in run.series else by_normal.get(_normal(wanted))
        if name is None:
            continue
        values = run.series[name].visible()[1]
        values = values[np.isfinite(values)]
        if _rising(values):
            return name, run.series[name]
    if axis == "progress":  # train/num_input_tokens_seen, rollout/total_timesteps ...
        for name, one in run.series.items():
            if "/" in name and _normal(name.rsplit("/", 1)[-1]) in PROGRESS_SERIES:
                values = one.visible()[1]
                if _rising(values[np.isfinite(values)]):
                    return name, one
    return None


def _is_wall(values: np.ndarray) -> bool:
    return bool(WALL_RANGE[0] <= values[0] <= WALL_RANGE[1])


def axes_of(run: Run) -> list[str]:
    """The x axes ``run`` has, in the order of :data:`AXES` (``step`` always)."""
    return ["step"] + [axis for axis in AXES[1:] if _axis_series(run, axis) is not None]


def axis_source(run: Run, axis: str) -> str | None:
    """The name of the series ``axis`` comes from in ``run`` (None for the step, or when it has none)."""
    found = _axis_series(run, axis) if axis != "step" else None
    return found[0] if found is not None else None


def axis_values(run: Run, axis: str) -> tuple[np.ndarray, np.ndarray] | None:
    """``(steps, x)``: where ``run``'s steps fall on ``axis``, in step order; None when it has no such axis.

    Wall times are seconds since the epoch (milliseconds are converted), time since start is
    seconds from the run's first point on that clock, a counter is its own value.
    """
    if axis == "step":
        return None
    found = _axis_series(run, axis)
    if found is None:
        return None
    name, one = found
    steps, values = one.visible()
    keep = np.isfinite(values) & np.isfinite(steps)
    steps, values = steps[keep], values[keep].astype(np.float64)
    if name in WALL_SERIES:
        if not _is_wall(values):
            values = values / 1000.0
        if axis == "elapsed":
            values = values - values[0]
    return steps, values


def map_steps(steps: np.ndarray, at: tuple[np.ndarray, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """``steps`` on an axis given by ``at`` (from :func:`axis_values`): the x of each, and which were kept.

    A step between two of the axis' points is placed between their x by its position; a step
    before the axis' first point or after its last has no x and is left out.
    """
    a_steps, a_x = at
    steps = np.asarray(steps, dtype=np.float64)
    if not len(a_steps):
        return np.zeros(0), np.zeros(len(steps), dtype=bool)
    inside = (steps >= a_steps[0]) & (steps <= a_steps[-1])
    return np.interp(steps[inside], a_steps, a_x), inside
