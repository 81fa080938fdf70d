"""The runs list's job rows: the per-rank logs of one job folded into the row of its lowest rank.

Headless. The jobs are :func:`tuiloss.core.ranks.find_jobs`' (the report's Ranks section), over
the viewer's runs. A job is listed as one row, its lead rank's, labelled with the job, its rank
count and any rank that stopped (``job/rank*.log (8 ranks, rank 3 stopped)``); the other ranks (and each rank's other
stream, its stderr beside its stdout) are not listed and take no number (the runs after the job keep the number keys), and their
curves are switched off once, when they join a job, so the chart shows the job as one curve.
Each rank stays a run: a filter lists the ranks it matches (``/rank3``), and space or enter
shows or hides the highlighted rank's curve.

A rank the viewer saw grow within its last ten usual intervals (a minute at least) is behind,
not stopped: output redirected to a file arrives in bursts.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterable, Mapping

from tuiloss.core.ranks import Job, facts_of, find_jobs, rank_name

if TYPE_CHECKING:
    from tuiloss.core.store import Run
    from tuiloss.ui.runstate import Activity
    from tuiloss.ui.selection import Selection

#: Seconds a rank counts as growing after the viewer last saw it grow, at least.
GROWING_SECONDS = 60.0
#: Seconds the jobs are worked out again after, with nothing read meanwhile (a rank's growth ages).
RECHECK_SECONDS = 10.0


class JobFold:
    """Which runs are folded into which job's row, kept up to date as runs are read."""

    def __init__(self) -> None:
        self.jobs: list[Job] = []
        self.lead_of: dict[str, Job] = {}  # a job's lead run id -> the job
        self.folded: set[str] = set()  # the jobs' other ranks: not listed without a filter
        self._switched_off: set[str] = set()  # ranks whose curve this hid (given back if they leave a job)
        self._names: dict[tuple[str, str], bool] = {}  # (run id, source) -> whether the name marks a rank
        self._key: tuple | None = None

    def update(self, runs: Iterable[Run], activity: Mapping[str, Activity], now: float,
               state_of=None) -> bool:
        """Work the jobs out again if runs were read since (or a while passed); whether they changed.

        ``state_of(run)`` gives a rank's state word (for a crashed or killed rank's sentence).
        """
        runs = list(runs)
        key = (len(runs), sum(run.points for run in runs), int(now // RECHECK_SECONDS))
        if key == self._key:
            return False
        self._key = key
        ranked = [run for run in runs if self._is_rank(run)]
        growing = {run.id for run in ranked if _growing(activity.get(run.id), now)}
        facts = []
        for run in ranked:
            state = state_of(run) if state_of is not None else None
            facts.append(facts_of(run, state.state if state else "", state.reason if state else ""))
        jobs = find_jobs(facts, growing)
        before = (self.lead_of.keys(), self.folded)
        self.jobs = jobs
        self.lead_of = {job.lead.id: job for job in jobs}
        self.folded = {run_id for job in jobs for run_id in job.others}
        return before != (self.lead_of.keys(), self.folded)

    def _is_rank(self, run: Run) -> bool:
        key = (run.id, run.source)
        known = self._names.get(key)
        if known is None:
            known = self._names[key] = rank_name(run.source) is not None
        return known

    def hide_folded(self, selection: Selection) -> None:
        """Switch off the curves of ranks that just joined a job, and back on those of ranks
        hidden so that are no longer a job's other ranks (now kept apart, or the lead); number
        the runs past the jobs' other ranks."""
        fresh = self.folded - self._switched_off
        selection.toggle(fresh, False)
        back = {run_id for run_id in self._switched_off - self.folded if not selection.is_on(run_id)}
        selection.toggle(back, True)
        self._switched_off = (self._switched_off | fresh) & self.folded
        selection.unnumbered = frozenset(self.folded)  # the number keys go on to the next run

    def listed(self, run: Run, selection: Selection) -> bool:
        """Whether ``run`` has a row of its own: not a job's other rank, unless a filter lists it."""
        return run.id not in self.folded or selection.filter is not None

    def label(self, run: Run) -> str:
        """The row's label: a job's for its lead rank, the run's own for any other run."""
        job = self.lead_of.get(run.id)
        if job is None:
            return run.label
        stopped = [finding.rank for finding in job.findings]
        if len(stopped) == 1:
            said = f", rank {stopped[0]} stopped"
        elif stopped:
            said = f", {len(stopped)} ranks stopped"
        else:
            said = ""
        return f"{job.label} ({len(job.ranks)} ranks{said})"


def _growing(activity: Activity | None, now: float) -> bool:
    """Whether the viewer saw the run grow (not merely found it) within its last usual intervals."""
    if activity is None or not activity.arrivals:
        return False
    interval = activity.interval
    window = max(GROWING_SECONDS, 10 * interval) if interval else GROWING_SECONDS
    return now - activity.arrivals[-1] <= window
