"""What the insights panel shows: the report of the shown runs, with live stalls and news.

A distributed job (:mod:`tuiloss.core.ranks`, its runs folded into its lead rank's row) is
shown under its lead rank, named as the job, with what was found of its ranks ("rank 3
stopped at step 12.0K while 7 ranks went on to 15.0K"); a stopped rank shown on its own
(a filter lists it) says it too.

Headless: :class:`PanelText` decides whether the text must be rendered again and renders it
with :func:`~tuiloss.ui.insights.render_lines`; the widget only shows it.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Mapping, Sequence


from tuiloss.core.analysis import Anomaly
from tuiloss.core.model import Notice
from tuiloss.core.ranks import Job
from tuiloss.core.report import Report, RunReport
from tuiloss.core.store import Run
from tuiloss.ui.findings import with_stall
from tuiloss.ui.insights import RunTexts, render_lines, render_rest
from tuiloss.ui.lines import PanelLines
from tuiloss.ui.selection import Selection, rich_color


class PanelText:
    """Renders the panel only when something it shows changed (with 1,000 runs, rendering is a
    large share of a redraw)."""

    def __init__(self) -> None:
        self.inputs: tuple | None = None
        #: what the inputs were worked out from, compared before them: with thousands of runs,
        #: numbering the runs and listing the shown ones to find nothing changed cost more than
        #: the frame that asked for the panel
        self._quick: tuple | None = None
        self._rest: tuple | None = None  # the inputs of a panel that left blocks (see render_rest)
        self.blocks = RunTexts()  # each run's block, made again only when it changed
        self._stalled: dict[str, tuple] = {}  # each stalled run's entry with its stall, kept while both are the same

    def forget(self) -> None:
        """Render again next time, whatever changed."""
        self.inputs = None
        self._quick = self._rest = None

    def render(self, report: Report, runs: list[Run], selection: Selection, *, stalls: Mapping[str, Anomaly],
               new: set[tuple], plain: bool, ascii: bool, width: int, jobs: Sequence[Job] = ()) -> PanelLines | None:
        """The panel's text, or ``None`` when it would be the one shown already (``jobs``: the
        distributed jobs among ``runs``, as the runs list folds them).

        ``runs`` that is the same list object as the last call's (the app keeps one while no
        read is applied) holds the same runs: with the selection's version, the report and the
        other inputs the same too, nothing is worked out again."""
        quick = (report, runs, len(runs), selection.version, len(selection.colors), selection.metric,
                 selection.filter, selection.unnumbered, tuple(stalls.items()), frozenset(new), plain, ascii, width,
                 tuple(jobs))
        last = self._quick
        if last is not None and last[0] is report and last[1] is runs and last[2:] == quick[2:]:
            if self.inputs is not None:
                return None
            if self._rest is not None and self.blocks.rest is not None:  # the last panel left blocks
                lines = render_rest(self.blocks)
                if not self.blocks.behind:
                    self.inputs, self._rest = self._rest, None
                return lines
        self._quick, self._rest = quick, None
        numbers = {run.id: n for n, run in selection.numbered(runs)}
        shown = {run_id for run_id in numbers if selection.is_on(run_id)}  # numbered: the runs listed
        inputs = (report, tuple(numbers.items()), frozenset(shown), dict(stalls), frozenset(new),
                  len(selection.colors), selection.metric, plain, ascii, width, tuple(jobs))
        if inputs == self.inputs:
            return None
        self.inputs = inputs
        shown_report = replace(report, runs=tuple(with_jobs(self._with_stall(r, stalls.get(r.id)), jobs)
                                                  for r in report.runs if r.id in shown))
        lines = render_lines(
            shown_report,
            colors={rid: rich_color(c) for rid, c in selection.colors.items()},
            numbers={rid: str(n) if n else "-" for rid, n in numbers.items()},  # 0: a job's other rank
            swatches={rid: selection.swatch(rid, plain) for rid in selection.colors},
            new=new,
            ascii=ascii,
            width=width,
            metric=selection.metric,
            kept=self.blocks,
        )
        if self.blocks.behind:  # blocks left for the next panel (see RunTexts): it is rendered again
            self.inputs, self._rest = None, inputs
        return lines

    @property
    def behind(self) -> int:
        """Runs whose block the last panel left to the next one (shown by their title until then)."""
        return self.blocks.behind

    def _with_stall(self, run: RunReport, stall: Anomaly | None) -> RunReport:
        """:func:`with_stall`, the same object again while the run's entry and its stall are."""
        if stall is None:
            self._stalled.pop(run.id, None)
            return run
        seen = self._stalled.get(run.id)
        if seen is None or seen[0] is not run.metrics or seen[1] != stall:
            seen = self._stalled[run.id] = (run.metrics, stall, with_stall(run, stall))
        return seen[2] if seen[2].state == run.state else replace(seen[2], state=run.state)


def with_jobs(run: RunReport, jobs: Sequence[Job]) -> RunReport:
    """``run`` as the panel shows it: a job's lead rank named as the job, with what was found of
    its ranks; a stopped rank with its own finding."""
    for job in jobs:
        findings = [finding for finding in job.findings if run.id in (job.lead.id, finding.run_id)]
        if run.id != job.lead.id and not findings:
            continue
        said = tuple(Notice("warning", finding.message) for finding in findings)
        label = f"{job.label} ({len(job.ranks)} ranks)" if run.id == job.lead.id else run.label
        return replace(run, label=label, notices=said + tuple(run.notices))
    return run
