"""Grouped mode (``g``): one curve per configuration, its min-max band, its rows and findings.

Headless (no Textual): :class:`Grouping` turns the shown runs' curves into one
:class:`~tuiloss.ui.chartdata.CurveInput` per configuration (:mod:`tuiloss.core.groups`
says which runs are seeds of one configuration) whose median and band are worked out per
chart column from the runs' own per-column summaries
(:func:`~tuiloss.core.groups.combine_columns`): a frame costs the columns on screen, whatever
the number of points. The runs list gets a row per configuration of several runs, its runs
under it (their numbers still toggle them, and the curve follows the runs shown), and the panel
a section with what the configurations' seeds say, the same sentences as the report's
"Configurations".
"""

from __future__ import annotations

import textwrap
from dataclasses import replace
from statistics import median
from typing import Sequence

import numpy as np
from rich.text import Text

from tuiloss.core.analysis.display import fmt_value
from tuiloss.core.groups import Group, Member, combine_columns, configurations, group_runs
from tuiloss.core.report import Report
from tuiloss.core.store import Run
from tuiloss.ui.chartdata import ColumnData, CurveInput
from tuiloss.ui.markup import safe_label
from tuiloss.ui.runstate import RunRow
from tuiloss.ui.selection import Selection, rich_color

#: The key of a configuration's row in the runs list (never a run id: those are paths).
HEADER = "\0configuration "


class Grouping:
    """Whether the viewer groups runs, by which keys, and the configurations of the runs found.

    Args:
        group_by: ``--group-by``: ``None`` groups by the whole config but seeds, run numbers
            and timestamps; a tuple of keys by those; ``()`` (``none``) not at all.
        on: whether grouped mode starts switched on.
    """

    def __init__(self, group_by: tuple[str, ...] | None = None, on: bool = False) -> None:
        self.group_by = group_by
        self.on = on and group_by != ()
        self._seen: tuple = ()
        self._groups: list[Group] = []

    @property
    def allowed(self) -> bool:
        """``--group-by none`` turns grouping off."""
        return self.group_by != ()

    def groups(self, runs: Sequence[Run]) -> list[Group]:
        """The configurations of ``runs`` (every run found, so they do not change with the filter)."""
        seen = tuple((run.id, run.label, len(run.config)) for run in runs)
        if seen != self._seen:
            members = [Member(run.id, run.label, run.source, dict(run.config)) for run in runs]
            self._seen, self._groups = seen, group_runs(members, self.group_by)
        return self._groups

    def members_of(self, key: str | None, runs: Sequence[Run]) -> list[str] | None:
        """The run ids under a configuration's row, ``None`` when ``key`` is a run's."""
        if key is None or not key.startswith(HEADER):
            return None
        index = int(key[len(HEADER):])
        groups = self.groups(runs)
        return list(groups[index].run_ids) if index < len(groups) else []

    # -- the chart ----------------------------------------------------------------------------

    def curves(self, curves: list[CurveInput], runs: Sequence[Run], selection: Selection) -> list[CurveInput]:
        """``curves`` (the shown runs', keyed by run id) with each configuration's folded into one."""
        by_id = {curve.key: curve for curve in curves}
        out = []
        for k, group in enumerate(self.groups(runs)):
            members = [by_id[run_id] for run_id in group.run_ids if run_id in by_id]
            if len(group.run_ids) == 1 or not members:
                out += members
            else:
                out.append(_combined(f"{HEADER}{k}", members, selection.color(group.run_ids[0]),
                                     selection.marker(group.run_ids[0])))
        return out

    def title(self, title: str, ascii: bool) -> str:
        return title + (" - " if ascii else " · ") + "configurations: median, min-max"

    # -- the runs list ------------------------------------------------------------------------

    def rows(self, rows: list[RunRow], runs: Sequence[Run], selection: Selection, plain: bool,
             ascii: bool = False) -> list[RunRow]:
        """The runs list's ``rows`` by configuration: a row per configuration of several runs
        (its name, how many runs, the median of their values), its runs indented under it in
        its colour; a configuration of one run is that run's row."""
        by_key = {row.key: row for row in rows}
        out = []
        for k, group in enumerate(self.groups(runs)):
            members = [by_key[run_id] for run_id in group.run_ids if run_id in by_key]
            if not members:
                continue
            if len(group.run_ids) == 1:
                out += members
                continue
            color, swatch = rich_color(selection.color(group.run_ids[0])), selection.swatch(group.run_ids[0], plain)
            states = {row.state for row in members}
            values = [_number(row.value) for row in members if row.visible]
            values = [v for v in values if v is not None]
            out.append(RunRow(
                key=f"{HEADER}{k}", number="", swatch=swatch, color=color,
                label=f"{group.label} ({len(group.run_ids)} runs)", value=fmt_value(median(values)) if values else "-",
                state=states.pop() if len(states) == 1 else "mixed", anomalies=sum(row.anomalies for row in members),
                visible=any(row.visible for row in members), new_anomaly=any(row.new_anomaly for row in members)))
            for row in members:
                out.append(replace(row, color=color, swatch=swatch,
                                   label=f"{'- ' if ascii else '└ '}{_own_part(row.label, group.label)}"))
        return out

    # -- the panel ----------------------------------------------------------------------------

    def panel(self, report: Report, runs: Sequence[Run], selection: Selection, *, plain: bool, ascii: bool,
              width: int) -> Text:
        """The panel's "Configurations" section: per configuration of the shown runs with two or more,
        its final mean and spread and the seed that deviates; then the comparisons between them."""
        shown = {entry.id for entry in report.runs}
        groups = [replace(g, run_ids=tuple(i for i in g.run_ids if i in shown)) for g in self.groups(runs)]
        groups = [g for g in groups if g.run_ids]
        _, findings = configurations(report.runs, self.group_by, groups=groups)
        out = Text()
        multi = [g for g in groups if len(g.run_ids) > 1]
        if not multi:
            out.append("Configurations: no two shown runs share one\n", style="dim")
            return out
        out.append("Configurations\n", style="bold underline")
        width = max(20, width)

        def item(mark: str, body: str, style: str = "", indent: int = 2) -> None:
            lines = textwrap.wrap(body, max(10, width - indent - len(mark) - 1)) or [""]
            out.append(" " * indent)
            out.append(mark, style="bold")
            out.append(" " + lines[0], style=style)
            for line in lines[1:]:
                out.append("\n" + " " * (indent + len(mark) + 1) + line, style=style)
            out.append("\n")

        for group in multi:
            out.append(selection.swatch(group.run_ids[0], plain), style=rich_color(selection.color(group.run_ids[0])))
            title = textwrap.wrap(f"{safe_label(group.label, 200)} ({len(group.run_ids)} runs)", width - 2) or [""]
            out.append(" " + "\n  ".join(title) + "\n", style="bold")
            prefix = f"{group.label}: "
            for finding in findings:
                if finding.kind in ("final", "deviation") and finding.groups == (group.label,):
                    body = finding.message[len(prefix):] if finding.message.startswith(prefix) else finding.message
                    mark = ("+-" if ascii else "±") if finding.kind == "final" else "!"
                    item(mark, _plain(safe_label(body, 400), ascii), "" if finding.kind == "final" else "yellow")
        for finding in findings:
            if finding.kind == "compare":
                item("-" if ascii else "•", _plain(safe_label(finding.message, 400), ascii), indent=0)
        return out


def _combined(key: str, members: list[CurveInput], color: tuple[int, int, int], marker: str) -> CurveInput:
    """One curve for ``members``: their median per column, and their min-max band."""
    raw = _Combined([m.raw for m in members])
    smoothed = _Combined([m.smoothed for m in members]) if all(m.smoothed for m in members) else None
    evals = [(m.eval_steps, m.eval_values) for m in members if m.eval_steps is not None and len(m.eval_steps)]
    eval_steps = eval_values = None
    if evals:
        steps, values = np.concatenate([s for s, _ in evals]), np.concatenate([v for _, v in evals])
        order = np.argsort(steps, kind="stable")
        eval_steps, eval_values = steps[order], values[order]
    positives = [m.min_positive for m in members if m.min_positive]
    return CurveInput(
        key=key, color=color, marker=marker,
        first_step=min(m.first_step for m in members), last_step=max(m.last_step for m in members),
        min_positive=min(positives) if positives else None,
        raw=raw.median, smoothed=smoothed.median if smoothed else None, band=raw.band,
        eval_steps=eval_steps, eval_values=eval_values,
        marks=_merged_marks([mark for m in members for mark in m.marks]),
        segment_starts=[start for m in members for start in m.segment_starts],
        has_nonpositive_steps=any(m.has_nonpositive_steps for m in members),
    )


def _merged_marks(marks: list) -> list:
    """The members' marks, one of each kind where several runs have it over the same steps (both
    seeds' drift is one drift of the configuration); the highest spike peak is kept."""
    kept: list = []
    for mark in sorted(marks, key=lambda m: -(m.value or 0.0) if m.kind == "spike" else m.step):
        end = mark.end_step if mark.end_step is not None else mark.step
        if not any(k.kind == mark.kind and k.step <= end * 1.1 and (k.end_step or k.step) * 1.1 >= mark.step
                   for k in kept):
            kept.append(mark)
    return kept


class _Combined:
    """The median and band of some runs' column queries, worked out once per question and answers."""

    def __init__(self, queries: list) -> None:
        self.queries = queries
        self._last: tuple | None = None

    def _answer(self, x_lo: float, x_hi: float, width: int, log_x: bool) -> tuple[ColumnData, ColumnData]:
        columns = [query(x_lo, x_hi, width, log_x) for query in self.queries]
        if self._last is not None and len(self._last[0]) == len(columns) and all(
                a is b for a, b in zip(self._last[0], columns)):
            return self._last[1]  # the same answers as last time (kept, so their ids are not reused)
        combined = combine_columns(columns)
        self._last = (columns, combined)
        return combined

    def median(self, x_lo: float, x_hi: float, width: int, log_x: bool) -> ColumnData:
        return self._answer(x_lo, x_hi, width, log_x)[0]

    def band(self, x_lo: float, x_hi: float, width: int, log_x: bool) -> ColumnData:
        return self._answer(x_lo, x_hi, width, log_x)[1]


def _plain(text: str, ascii: bool) -> str:
    return text.replace("±", "+-") if ascii else text


def _number(text: str) -> float | None:
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return None


def _own_part(label: str, group_label: str) -> str:
    """What tells a run from the other runs of its configuration: its label less the configuration's name."""
    if label.startswith(group_label) and label[len(group_label):].strip(" |,;-·"):
        return label[len(group_label):].strip(" |,;-·")
    return label
