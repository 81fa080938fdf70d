"""A run's state, from what its log says first and from its age second.

One vocabulary for the report (text and JSON), the runs list and the panel:

* ``finished``: the trainer said so (a final summary, early stopping, a launcher's clean
  exit), or the run reached the total it planned (``max_steps``, ``iteration N/M``, the
  configuration's ``max_steps``);
* ``killed``: stopped from outside (an interrupt, SIGTERM, the scheduler's time or memory
  limit, a cancelled job);
* ``crashed``: died of an error (a traceback, CUDA out of memory, an NCCL timeout, a
  segmentation fault);
* ``running``: written recently, no end in sight;
* ``stalled``: was running, and has been silent for many times its usual interval;
* ``stopped``: silent for long, with no end marker and short of its planned total;
* ``waiting`` (no points yet), ``unread`` (a reader is missing), ``deleted``.

What the log says wins over its age: a freshly copied log of a finished run is finished,
and one that ended in a traceback is crashed however recent it is.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping

from tuiloss.core.analysis.display import fmt_step, format_duration

STATES = ("running", "stalled", "finished", "killed", "crashed", "stopped", "waiting", "unread", "deleted")
#: States a log's content decides: no silence makes them stalled.
ENDED = frozenset(("finished", "killed", "crashed"))
#: Silence after which a running run counts as stalled, at least, and in usual intervals.
RUNNING_WINDOW = 60.0
STALL_INTERVALS = 10.0
#: Silence after which a run with no end marker counts as stopped, at least, and in usual intervals.
STOPPED_AFTER = 30 * 60.0
STOPPED_INTERVALS = 100.0
#: How far a log's own clock (a time it printed, in no named zone) may be from UTC.
CLOCK_SLACK = 14 * 3600.0
#: Configuration keys that plan a run's total of steps.
PLANNED_KEYS = ("max_steps", "max_iters", "max_iterations", "max_update", "max_updates", "total_steps",
                "num_train_steps", "train_steps", "num_steps", "total_iters")


@dataclass(frozen=True, slots=True)
class RunState:
    """A run's state (one of :data:`STATES`) and why, in a few words (``KeyboardInterrupt``,
    ``reached its planned 100.0K steps``, ``no new point for 2.4 h``)."""

    state: str
    reason: str = ""

    @property
    def ended(self) -> bool:
        """Whether the log itself says the run is over."""
        return self.state in ENDED


def planned_steps(meta_planned: float | None, config: Mapping | None) -> float | None:
    """The total of steps a run planned: what its log announced, else its configuration's
    ``max_steps`` (or ``max_iters``, ``total_steps``, ...; top level or one level down)."""
    if meta_planned is not None and _positive(meta_planned):
        return float(meta_planned)
    for scope in _scopes(config or {}):
        for key in PLANNED_KEYS:
            value = scope.get(key)
            if _positive(value):
                return float(value)
    return None


def reached_plan(planned: float | None, last_step: float | None, spacing: float | None = None) -> bool:
    """Whether ``last_step`` is the planned total: at it, or within half a logging interval
    short of it (Lightning counts steps from 0). A log that went past its "total" was
    counting something else by it (an evaluation loop's bar)."""
    if planned is None or last_step is None or not math.isfinite(last_step):
        return False
    short = max(1.0, 0.5 * spacing) if spacing and math.isfinite(spacing) else 1.0
    return planned - short <= last_step <= planned


def run_state(*, ending: tuple[str, str] | None = None, planned: float | None = None,
              last_step: float | None = None, spacing: float | None = None, silence: float | None = None,
              interval: float | None = None, deleted: bool = False, has_points: bool = True,
              unread: bool = False, stalled: bool = False, logged_silence: float | None = None) -> RunState:
    """A run's :class:`RunState`.

    Args:
        ending: how the log ends, ``(kind, reason)``, kind one of ``finished``, ``killed``,
            ``crashed`` (None: no end marker after its last metric line).
        planned: the total of steps the run planned (see :func:`planned_steps`).
        last_step: the step of its newest point; spacing: the steps between its last points.
        silence: seconds since it last grew (None: unknown).
        interval: its usual seconds between writes (None: unknown).
        deleted, has_points, unread: the file is gone; it gave points; a reader is missing.
        stalled: the viewer saw it grow and then fall silent for many usual intervals.
        logged_silence: seconds since the last time the log printed, by its own clock (a
            copied log keeps it; a file's age does not): a log that printed nothing for a day
            and more than the zones a clock may be off by is not running, whatever its age.
    """
    if deleted:
        return RunState("deleted")
    if not has_points:
        return RunState("unread" if unread else "waiting")
    if ending is not None and ending[0] in ENDED:
        return RunState(ending[0], ending[1])
    if reached_plan(planned, last_step, spacing):
        return RunState("finished", f"reached its planned {fmt_step(planned)} steps")
    if logged_silence is not None and logged_silence - CLOCK_SLACK > STOPPED_AFTER and not stalled:
        if silence is None or silence < logged_silence - CLOCK_SLACK:
            silence = logged_silence - CLOCK_SLACK
            return RunState("stopped", f"no end marker, its last line printed {format_duration(logged_silence)} ago")
    if silence is None:
        return RunState("stalled") if stalled else RunState("stopped", "no end marker")
    if interval is None and not stalled:
        # how often it writes is not known: only a long silence says anything
        if silence <= STOPPED_AFTER:
            return RunState("running")
        return RunState("stopped", f"no end marker, silent for {format_duration(silence)}")
    usual = interval or 0.0
    if stalled or silence > max(RUNNING_WINDOW, STALL_INTERVALS * usual):
        if silence <= max(STOPPED_AFTER, STOPPED_INTERVALS * usual):
            return RunState("stalled", f"silent for {format_duration(silence)}")
        return RunState("stopped", f"no end marker, silent for {format_duration(silence)}")
    return RunState("running")


def state_holds_for(*, silence: float | None = None, interval: float | None = None, stalled: bool = False,
                    logged_silence: float | None = None) -> float:
    """Seconds for which :func:`run_state` keeps its state while only the clock moves (both
    silences grow, nothing else changes): until the first of its age thresholds ahead is
    crossed, ``math.inf`` if none is. A threshold counted may not be the one that decides (a log
    that says it ended has no age): the answer is never later than the change.

    A list of many runs works a row's state out again only then, not at every frame.
    """
    ahead = []
    if logged_silence is not None:
        ahead.append(CLOCK_SLACK + STOPPED_AFTER - logged_silence)
    if silence is not None:
        usual = interval or 0.0
        if interval is not None and not stalled:
            ahead.append(max(RUNNING_WINDOW, STALL_INTERVALS * usual) - silence)
        ahead.append(max(STOPPED_AFTER, STOPPED_INTERVALS * usual) - silence)
    return min((left for left in ahead if left >= 0), default=math.inf)


def _positive(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value > 0


def _scopes(config: Mapping):
    yield config
    for value in config.values():
        if isinstance(value, Mapping):
            yield value
