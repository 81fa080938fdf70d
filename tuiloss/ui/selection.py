"""Which runs the viewer lists and shows, in which colour, and which metric of each.

Headless (no Textual): the app's keys call :class:`Selection`, and the chart,
the runs list, the insights and the export all read it, so they agree on the
numbering, the colours and the runs switched off.
"""

from __future__ import annotations

import re
import time
from typing import TYPE_CHECKING, Callable, Iterable

from tuiloss.core.analysis.metrics import eval_counterpart

if TYPE_CHECKING:  # the store (numpy) is not needed to compose the first frame
    from tuiloss.core.store import Run

#: One stable colour per run, in discovery order (Okabe-Ito based, readable on dark and light).
PALETTE: tuple[tuple[int, int, int], ...] = (
    (86, 180, 233),
    (230, 159, 0),
    (0, 190, 140),
    (240, 100, 160),
    (240, 228, 66),
    (213, 94, 0),
    (150, 130, 255),
    (160, 220, 110),
    (0, 114, 178),
    (190, 190, 190),
)
#: Per-run markers when colour or braille is unavailable (--ascii, NO_COLOR): none of them is a
#: finding's mark (^ ! / X R = in the chart, + ~ - in the panel) or the eval points' E.
ASCII_MARKERS = "*o#%@&$swz"


def rich_color(color: tuple[int, int, int]) -> str:
    """``color`` as a Rich colour string."""
    return f"rgb({color[0]},{color[1]},{color[2]})"


def filter_text(run: Run) -> str:
    """What the filter's regex searches: the label, the source and the config."""
    config = " ".join(f"{key}={value}" for key, value in run.config.items())
    return f"{run.label} {run.source} {config}"


def parse_filter(text: str) -> re.Pattern | None:
    """The filter typed as ``text`` (case-insensitive); ``None`` for a blank one.

    Raises:
        re.error: ``text`` is not a valid regex.
    """
    pattern = text.strip()
    return re.compile(pattern, re.IGNORECASE) if pattern else None


def common_metric(runs: list[Run]) -> str | None:
    """The primary metric of ``runs`` if they share one, else up to three of them joined."""
    return metrics_label({run.primary_metric for run in runs if run.primary_metric})


def metrics_label(names: set[str]) -> str | None:
    """The one metric of ``names``, or up to three of them joined (``None`` for none)."""
    names = {name for name in names if name}
    if len(names) == 1:
        return names.pop()
    return " / ".join(sorted(names)[:3]) if names else None


def metric_counts(runs: Iterable[Run]) -> list[tuple[str, int]]:
    """Every metric of ``runs`` with how many runs have it, the most common first (events are no metric)."""
    from tuiloss.core.analysis.events import EVENT_SERIES  # numpy: not before the first frame

    counts: dict[str, int] = {}
    for run in runs:
        for name in run.series:
            if name in EVENT_SERIES:
                continue
            counts[name] = counts.get(name, 0) + 1
    return sorted(counts.items(), key=lambda item: (-item[1], item[0]))


class Selection:
    """The runs' colours and on/off switches, the filter and the chosen metric.

    A run is *listed* when it matches the filter (numbered from 1 in discovery order, whatever the filter hides)
    and *shown* (on the chart, in the insights) when it is listed and switched on.
    Runs not seen by :meth:`add` count as switched on.
    """

    def __init__(self, metric: str | None = None) -> None:
        self.metric = metric
        self._filter: re.Pattern | None = None
        #: Goes up whenever which runs are listed or shown may have changed (a memo's key).
        self.version = 0
        self.colors: dict[str, tuple[int, int, int]] = {}
        self.switched_on: dict[str, bool] = {}
        self._order: dict[str, int] = {}  # discovery order of ``colors``, which only ever grows
        #: runs listed without a number (a job's other ranks, see :mod:`tuiloss.ui.jobs`)
        self.unnumbered: frozenset[str] = frozenset()
        self._matched: tuple[tuple, list[int]] | None = None  # (runs and filter, the numbers it lists)

    @property
    def filter(self) -> re.Pattern | None:
        """The regex the listed runs match, ``None`` for all of them."""
        return self._filter

    @filter.setter
    def filter(self, pattern: re.Pattern | None) -> None:
        self._filter = pattern
        self.version += 1

    def add(self, run_id: str) -> bool:
        """Give a newly found run the next colour and switch it on; ``False`` if it was known."""
        if run_id in self.colors:
            return False
        self.colors[run_id] = PALETTE[len(self.colors) % len(PALETTE)]
        self.switched_on[run_id] = True
        self.version += 1
        return True

    def color(self, run_id: str) -> tuple[int, int, int]:
        return self.colors.get(run_id, PALETTE[0])

    def marker(self, run_id: str) -> str:
        """The run's marker without colour: by discovery order, the first one for an unknown run."""
        if len(self._order) != len(self.colors):
            self._order = {key: k for k, key in enumerate(self.colors)}
        index = self._order.get(run_id, 0)
        return ASCII_MARKERS[index % len(ASCII_MARKERS)]

    def swatch(self, run_id: str, plain: bool) -> str:
        """What stands for the run in the list and legend: a coloured square, or its marker if ``plain``."""
        return self.marker(run_id) if plain else "■"

    def is_on(self, run_id: str) -> bool:
        return self.switched_on.get(run_id, True)

    def toggle(self, run_ids: Iterable[str], value: bool | None = None) -> None:
        """Switch ``run_ids`` to ``value``, or each to the opposite when ``value`` is ``None``."""
        for run_id in run_ids:
            self.switched_on[run_id] = (not self.is_on(run_id)) if value is None else value
        self.version += 1

    def show_only(self, runs: Iterable[Run], run_id: str) -> None:
        """Switch ``run_id`` on and the other ``runs`` off."""
        for run in runs:
            self.switched_on[run.id] = run.id == run_id
        self.switched_on[run_id] = True
        self.version += 1

    def listed(self, runs: Iterable[Run]) -> list[Run]:
        """``runs`` that match the filter (all of them without one)."""
        return [run for run in runs if self.matches(run)]

    def shown(self, runs: Iterable[Run]) -> list[Run]:
        """``runs`` that are listed and switched on."""
        return [run for run in self.listed(runs) if self.is_on(run.id)]

    def numbered(self, runs: Iterable[Run]) -> list[tuple[int, Run]]:
        """The listed runs with their numbers, from 1 in discovery order.

        A run keeps its number whatever the filter hides: key ``1`` always means run 1. A run in
        :attr:`unnumbered` takes none (it is listed with 0) and moves no other run's number.
        """
        if self.unnumbered:
            out, number = [], 0
            for run in runs:
                numbered = run.id not in self.unnumbered
                number += numbered
                if self.matches(run):
                    out.append((number if numbered else 0, run))
            return out
        if self.filter is None:
            return list(enumerate(runs, 1))
        runs = list(runs)
        # Searching thousands of runs' texts at every redraw would cost more than drawing them:
        # the matches are kept while the runs, their labels (a moved run is relabelled) and the
        # filter stay the same.
        key = (self.filter, tuple(run.id for run in runs), tuple(run.label for run in runs))
        if self._matched is None or self._matched[0] != key:
            self._matched = (key, [number for number, run in enumerate(runs, 1) if self.matches(run)])
        return [(number, runs[number - 1]) for number in self._matched[1]]

    def numbered_run(self, runs: Iterable[Run], number: int) -> Run | None:
        """Run ``number`` (from 1) of ``runs`` if the filter lists it, else ``None``."""
        return next((run for n, run in self.numbered(runs) if n == number), None)

    def matches(self, run: Run) -> bool:
        return self.filter is None or bool(self.filter.search(filter_text(run)))

    def metric_of(self, run: Run) -> str | None:
        """The chosen metric if ``run`` has it (``None`` if not), else the run's primary metric."""
        if self.metric:
            return self.metric if self.metric in run.series else None
        return run.primary_metric

    def eval_of(self, run: Run) -> str | None:
        """The evaluation series beside the metric :meth:`metric_of` picks (``val_loss`` for ``loss``)."""
        return eval_counterpart(self.metric_of(run) or "", list(run.series))


class ChartPacing:
    """Which of the shown runs the next frame draws: runs join the chart a slice at a time.

    A run's first curve costs its column index and settled range (a few ms for 10K points),
    on the UI thread: thousands of runs read in one batch made frames of seconds, and a key
    pressed meanwhile waited them out. A frame draws every run already on the chart (a grown one
    costs its new points) and at most :attr:`most` runs new to it, or one for every :attr:`per`
    curves it has, when that is more (a curve already on the chart costs a frame a few
    microseconds, a new one a few milliseconds: the slice keeps a frame of a load to a few tens
    of milliseconds, so a key pressed meanwhile is served soon; with thousands of curves a frame
    costs tens of milliseconds whatever it adds, and the bigger slice spreads that over more new
    runs, so the chart is filled sooner after a long load). A frame a key asked for
    (``fresh=False``) takes no run new to the chart. A run that had a curve before (switched off
    and on again) is no new run: what its curve is made from is kept. The others join in the next
    frames: the chart draws what is loaded as it loads. A run switched off or filtered out leaves
    the chart.

    Keys go first: for :attr:`rest` seconds after a key (:meth:`keyed`) no run joins the chart, so
    a key pressed soon after another never waits behind a frame adding runs (a user toggling runs
    presses several in a row); the runs waiting join once the keys rest.
    """

    def __init__(self, most: int = 8, per: int = 100, rest: float = 3.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.most, self.per, self.rest = most, per, rest
        self._clock = clock
        self._quiet_until = float("-inf")  # no run joins before then (see keyed)
        self._on: set[str] = set()  # the runs with a curve in the last frame
        self._drawn: set[str] = set()  # the runs that ever had one
        self.waiting = 0  # shown runs the last frame left for the next ones

    def keyed(self) -> None:
        """A key was pressed: no run joins the chart for :attr:`rest` seconds."""
        self._quiet_until = self._clock() + self.rest

    def resting(self) -> float:
        """Seconds until runs may join the chart again after the last key (0 if they may now)."""
        return max(0.0, self._quiet_until - self._clock())

    def admit(self, shown: list[Run], fresh: bool = True) -> list[Run]:
        """The runs of ``shown`` (in order) the frame draws; :attr:`waiting` says how many wait.
        Without ``fresh`` (or while the keys rest), only the runs that had a curve before are drawn."""
        on, drawn, out = self._on, self._drawn, []
        room = max(self.most, len(on) // self.per) if fresh and not self.resting() else 0
        waiting = 0
        for run in shown:
            if run.id in on or not run.points or run.id in drawn:
                out.append(run)  # on the chart already (or before), or no curve to draw yet
            elif room:
                out.append(run)
                room -= 1
            else:
                waiting += 1
        self._on = {run.id for run in out if run.points}
        drawn.update(self._on)
        self.waiting = waiting
        return out
