"""Runs of one configuration: seeds of a sweep, grouped, with what their spread says.

A sweep on a cluster runs each configuration several times, differing only in a seed, a run
index or a timestamp. Two runs are of one configuration when

- their configs are equal once the keys that only tell repetitions apart are left out
  (:data:`REPEAT_KEYS`: ``seed``, ``run``, ``trial``, ``version``, timestamps, run names), and
- their paths are equal once the parts that only number repetitions are (``version_3``,
  ``seed=3``, ``run_2``, ``trial-7``, ``rep1``, a date or a time stamp), and a numbered
  repetition tacked onto a name is left out (``base_seed2`` is of the configuration of ``base``).

The file name counts, so two logs of one training side by side (a text log and its CSV) stay
apart. ``--group-by KEY[,KEY]`` groups by those config keys alone; ``--group-by none`` not at all.

For each configuration of two runs or more: the final level as mean and spread across runs, a
run whose spike, drift, NaN or divergence the others do not show (the picture's "a fluctuation
absent in Run 1"), and, between configurations that differ in one key, which converges sooner
and which ends lower, said as a difference only when the runs' ranges do not overlap.
"""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterable, Sequence

import numpy as np

from tuiloss.core.analysis import ColumnData
from tuiloss.core.analysis.display import fmt_step, fmt_value
from tuiloss.core.analysis.observations import REPETITION_KEYS
from tuiloss.core.discover import RUN_NAME_KEYS

if TYPE_CHECKING:  # the report sits above this module; its entries are only read
    from tuiloss.core.report import RunReport

#: Config keys that tell repetitions of one configuration apart, not configurations.
REPEAT_KEYS = REPETITION_KEYS | frozenset({
    "run", "run_id", "run_index", "time", "id", "uuid", "wandb_id",
    "output_dir", "logging_dir", "log_dir", "logdir", "save_dir", "run_dir", "exp_dir", "hostname", "host",
    "slurm_job_id", "job_id", "pid", *RUN_NAME_KEYS,
})
#: Path parts (or pieces of them) that number repetitions: a date or time stamp, a numbered
#: version, seed, run or trial, a hex id. Replaced in this order.
_REPEAT_PARTS = (
    re.compile(r"\d{4}-?\d{2}-?\d{2}(?:[T_\-]?\d{2}[:\-]?\d{2}(?:[:\-]?\d{2})?)?"),
    re.compile(r"(?i)(?<![a-z])((?:version|seed|run|trial|rep|repeat|replica)[_\-=]?)(?:\d+|\*)"),
    re.compile(r"(?i)(?<![a-z0-9])[0-9a-f]{8,}(?![a-z0-9])"),
)
#: A numbered repetition tacked onto a name (``base_seed2``, ``lr=0.1-run3``, ``train_seed2.log``),
#: once numbered as ``*``: dropped with its separator, so the run made first, before the sweep
#: named its seeds (``base``), is of the same configuration.
_REPEAT_SUFFIX = re.compile(r"(?i)(?<=[^/_\-.])[_\-.](?:version|seed|run|trial|rep|repeat|replica)[_\-=]?\*(?=$|/|\.)")
#: Anomaly kinds a deviating run is looked for in.
DEVIATION_KINDS = ("spike", "drift", "nan", "divergence")


@dataclass(frozen=True, slots=True)
class Member:
    """What grouping needs of a run: who it is, where it came from, its config."""

    id: str
    label: str
    source: str
    config: dict


@dataclass(frozen=True, slots=True)
class Group:
    """One configuration: its runs (ids, in the order given) and a label naming it."""

    key: tuple
    label: str
    run_ids: tuple[str, ...]
    config: tuple[tuple[str, object], ...]  # the keys that tell it from the other configurations


@dataclass(frozen=True, slots=True)
class MemberFacts:
    """What a configuration's findings read of one of its runs (values, not arrays)."""

    id: str
    label: str
    final: float | None
    convergence_step: float | None
    anomalies: tuple[tuple[str, float, float | None, str], ...]  # kind, step, end step, message


@dataclass(frozen=True, slots=True)
class GroupFinding:
    kind: str  # "final", "deviation", "compare"
    message: str
    groups: tuple[str, ...]
    runs: tuple[str, ...] = ()


def parse_group_by(text: str | None) -> tuple[str, ...] | None:
    """``--group-by``: None groups by the whole config, ``()`` (for ``none``) not at all."""
    if text is None:
        return None
    keys = tuple(part.strip() for part in text.split(",") if part.strip())
    if not keys:
        raise ValueError("name the config keys to group by, or none")
    return () if keys == ("none",) else keys


def path_key(source: str) -> str:
    """``source`` with the parts that only number repetitions replaced by ``*``."""
    key = source.replace(os.sep, "/")
    for pattern in _REPEAT_PARTS:
        key = pattern.sub(lambda match: (match.group(1) if match.re.groups else "") + "*", key)
    return _REPEAT_SUFFIX.sub("", key)


def config_key(config: dict) -> tuple:
    return tuple(sorted((key, repr(value)) for key, value in config.items()
                        if key not in REPEAT_KEYS and key.split(".")[-1] not in REPEAT_KEYS))


def group_runs(members: Sequence[Member], group_by: tuple[str, ...] | None = None) -> list[Group]:
    """The configurations of ``members``, in the order their first run comes."""
    keys: dict[tuple, list[Member]] = {}
    for member in members:
        if group_by == ():
            key: tuple = ("run", member.id)
        elif group_by:
            key = ("by", tuple((k, repr(member.config.get(k))) for k in group_by))
        else:
            key = ("config", path_key(member.source), config_key(member.config))
        keys.setdefault(key, []).append(member)
    named = _telling_keys([runs[0].config for runs in keys.values()], group_by)
    groups = []
    for key, runs in keys.items():
        config = tuple((k, runs[0].config.get(k)) for k in named if k in runs[0].config)
        groups.append(Group(key, _label(runs, config, by_keys=bool(group_by)), tuple(m.id for m in runs), config))
    return groups


def _telling_keys(configs: list[dict], group_by: tuple[str, ...] | None) -> list[str]:
    """The keys whose values tell the configurations apart, in first-seen order."""
    if group_by:
        return list(group_by)
    keys: list[str] = []
    for config in configs:
        keys += [k for k in config if k not in keys and k not in REPEAT_KEYS]
    return [k for k in keys if len({repr(c.get(k)) for c in configs}) > 1]


def _label(runs: list[Member], config: tuple[tuple[str, object], ...], by_keys: bool = False) -> str:
    """The runs' own names where they share a part (``Pre-Norm | Gradient Clip=10``), else the
    config keys telling the configuration from the others (always those ``--group-by`` names),
    else the words the labels share."""
    if not by_keys and all(_run_name(m) for m in runs):
        shared = _common_parts([_run_name(m) for m in runs])
        if shared:
            return shared
    if config:
        return ", ".join(f"{k}={_short(v)}" for k, v in config)
    if len(runs) == 1:
        return runs[0].label
    return _common_label([m.label for m in runs]) or path_key(runs[0].source)


def _run_name(member: Member) -> str:
    return next((v.strip() for k in RUN_NAME_KEYS if isinstance(v := member.config.get(k), str) and v.strip()), "")


#: What joins the parts of a run name: ``Pre-Norm | Gradient Clip=1 | Run 2``, ``lr=0.1, seed=3``.
_NAME_PARTS = re.compile(r"\s*(?:\||,|;| - | / |·)\s*")


def _common_parts(names: list[str]) -> str:
    """The parts of ``names`` every one of them has, in the first one's order, joined as it joins
    them; a part naming a seed, a run or a trial that every name has but numbered differently is left out."""
    parts = [_NAME_PARTS.split(name) for name in names]
    joiner = m.group(0) if (m := _NAME_PARTS.search(names[0])) else " "
    shared = [p for p in parts[0] if p and all(p in other for other in parts[1:])]
    return joiner.join(shared)


def _short(value: object) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def _common_label(labels: list[str]) -> str:
    """The words every label shares, in order, run numbers and seeds as ``*``."""
    words = [path_key(label).split() for label in labels]
    first = [w for w in words[0] if all(w in other for other in words[1:])]
    return " ".join(first).strip(" |-_,")


# -- aggregation ------------------------------------------------------------------------------------

def band(curves: Sequence[tuple[np.ndarray, np.ndarray]], points: int = 2000) -> tuple[np.ndarray, ...]:
    """Median, min and max across ``curves`` (steps, values in step order) on shared steps.

    The shared steps are those of the longest curve inside the stretch every curve covers, at
    most ``points`` of them (evenly picked); each curve is interpolated there between its own
    finite points. Returns (steps, median, low, high); empty arrays when the curves share no step.
    """
    finite = [(s[np.isfinite(v)], v[np.isfinite(v)]) for s, v in curves]
    finite = [(s, v) for s, v in finite if len(s)]
    if not finite:
        return (np.zeros(0),) * 4
    lo = max(float(s[0]) for s, _ in finite)
    hi = min(float(s[-1]) for s, _ in finite)
    base = max(finite, key=lambda sv: len(sv[0]))[0]
    grid = base[(base >= lo) & (base <= hi)]
    if len(grid) > points:
        grid = grid[np.linspace(0, len(grid) - 1, points).round().astype(int)]
    if not len(grid):
        return (np.zeros(0),) * 4
    stack = np.vstack([np.interp(grid, s, v) for s, v in finite])
    return grid, np.median(stack, axis=0), stack.min(axis=0), stack.max(axis=0)


def combine_columns(columns: Sequence[ColumnData]) -> tuple[ColumnData, ColumnData]:
    """The median curve and the min-max band of runs drawn in the same chart columns.

    ``columns`` are the runs' answers to one column query (the same edges: a common step grid).
    Each run's value at a column is its last value there; a column a sparser log has no point
    in takes the value interpolated between the run's neighbouring columns, inside the steps it
    covers. The median is of the runs that reach the column; the band spans the smallest and
    largest value any of them has there (a spike of one run stays whole), only where two runs or
    more reach it. Returns (median, band): the median as min = max = last, the band's min and
    max the spread and its ``count`` how many runs reach each column.
    """
    first = columns[0]
    width = len(first.x)
    lasts = np.vstack([c.last for c in columns]) if columns else np.zeros((0, width))
    filled = lasts.copy()
    index = np.arange(width)
    for row in filled:  # one np.interp per run, over the columns it has points in
        known = np.flatnonzero(np.isfinite(row))
        if 1 < len(known) < width:
            inside = (index > known[0]) & (index < known[-1]) & ~np.isfinite(row)
            row[inside] = np.interp(index[inside], known, row[known])
    reached = np.isfinite(filled)
    count = reached.sum(axis=0)
    any_run = count > 0
    median = np.full(width, np.nan)
    low = np.full(width, np.nan)
    high = np.full(width, np.nan)
    if any_run.any():
        median[any_run] = np.nanmedian(filled[:, any_run], axis=0)
        lows = np.vstack([np.fmin(c.min, f) for c, f in zip(columns, filled)])
        highs = np.vstack([np.fmax(c.max, f) for c, f in zip(columns, filled)])
        spread = count >= 2
        low[spread] = np.nanmin(lows[:, spread], axis=0)
        high[spread] = np.nanmax(highs[:, spread], axis=0)
    nonfinite = np.logical_or.reduce([c.nonfinite for c in columns]) if columns else np.zeros(width, bool)
    runs = np.sum([c.count for c in columns], axis=0) if columns else np.zeros(width, np.int64)
    centre = ColumnData(first.x, first.edges, median, median, median, runs, nonfinite)
    band_cols = ColumnData(first.x, first.edges, low, high, median, count, np.zeros(width, bool))
    return centre, band_cols


# -- findings ---------------------------------------------------------------------------------------

def configurations(entries: Sequence[RunReport], group_by: tuple[str, ...] | None = None,
                   groups: list[Group] | None = None) -> tuple[list[Group], list[GroupFinding]]:
    """The configurations of a report's runs and what their seeds say (the report's section, the panel's).

    ``groups``, when given, are the configurations already found (the viewer's, of every run).
    """
    if groups is None:
        groups = group_runs([Member(entry.id, entry.label, entry.source, dict(entry.config)) for entry in entries],
                            group_by)
    facts = {}
    for entry in entries:
        metric = entry.primary
        if metric is None or metric.analysis is None:
            continue
        anomalies = tuple((a.kind, a.step, a.end_step, a.message) for a in metric.anomalies)
        facts[entry.id] = MemberFacts(entry.id, entry.label, metric.final, metric.analysis.convergence_step, anomalies)
    return groups, group_findings(groups, facts)


def group_findings(groups: Sequence[Group], facts: dict[str, MemberFacts]) -> list[GroupFinding]:
    """What a careful reader says of the configurations with two runs or more, and between them."""
    out: list[GroupFinding] = []
    for group in groups:
        members = [facts[i] for i in group.run_ids if i in facts]
        if len(members) < 2:
            continue
        finals = [m.final for m in members if m.final is not None and math.isfinite(m.final)]
        if len(finals) >= 2:
            mean, half = float(np.mean(finals)), (max(finals) - min(finals)) / 2
            out.append(GroupFinding("final", f"{group.label}: final {fmt_value(mean)} ± {fmt_value(half)} across "
                                    f"{len(finals)} runs ({fmt_value(min(finals))}-{fmt_value(max(finals))})",
                                    (group.label,), tuple(m.id for m in members)))
        out += _deviations(group, members)
    out += _comparisons(groups, facts)
    return out


def _deviations(group: Group, members: list[MemberFacts]) -> list[GroupFinding]:
    found = []
    for member in members:
        others = [m for m in members if m is not member]
        for kind, step, end, _ in member.anomalies:
            if kind not in DEVIATION_KINDS:
                continue
            if any(_overlaps(kind, step, end, other) for other in others):
                continue
            where = fmt_step(step) if end is None else f"{fmt_step(step)}-{fmt_step(end)}"
            rest = "the other run" if len(others) == 1 else f"the other {len(others)} runs"
            found.append(GroupFinding(
                "deviation",
                f"{group.label}: {member.label} shows a {kind} at {where} that {rest} of this configuration "
                f"{'does' if len(others) == 1 else 'do'} not",
                (group.label,), (member.id,)))
    return found


def _overlaps(kind: str, step: float, end: float | None, other: MemberFacts) -> bool:
    """Whether ``other`` has a finding of ``kind`` over (or near) the same steps."""
    stop = end if end is not None else step
    slack = max(0.1 * max(abs(step), abs(stop)), 1.0)
    for o_kind, o_step, o_end, _ in other.anomalies:
        o_stop = o_end if o_end is not None else o_step
        if o_kind == kind and o_step <= stop + slack and o_stop >= step - slack:
            return True
    return False


def _comparisons(groups: Sequence[Group], facts: dict[str, MemberFacts]) -> list[GroupFinding]:
    """Between configurations differing in one config key, with two runs or more each."""
    multi = [g for g in groups if sum(i in facts for i in g.run_ids) >= 2 and g.config]
    out = []
    for k, a in enumerate(multi):
        for b in multi[k + 1:]:
            differ = [key for (key, value) in a.config if dict(b.config).get(key, object()) != value]
            if len(differ) != 1:
                continue
            out += _compare(a, b, facts, differ[0])
    return out


def _compare(a: Group, b: Group, facts: dict[str, MemberFacts], key: str) -> list[GroupFinding]:
    runs_a = [facts[i] for i in a.run_ids if i in facts]
    runs_b = [facts[i] for i in b.run_ids if i in facts]
    counts = f"across {len(runs_a)} and {len(runs_b)} runs" if len(runs_a) != len(runs_b) else f"across {len(runs_a)} runs each"
    sides, labels = (_side(a, key), _side(b, key)), (a.label, b.label)
    out = []
    steps = _values(m.convergence_step for m in runs_a), _values(m.convergence_step for m in runs_b)
    if len(steps[0]) == len(runs_a) and len(steps[1]) == len(runs_b):
        out.append(_contrast(sides, steps, np.median, fmt_step, "converge", counts, labels,
                             lambda low, high, ratio: f"{low} converges {ratio:.1f}x sooner than {high}"))
    finals = _values(m.final for m in runs_a), _values(m.final for m in runs_b)
    if len(finals[0]) >= 2 and len(finals[1]) >= 2:
        out.append(_contrast(sides, finals, np.mean, fmt_value, "end", counts, labels,
                             lambda low, high, ratio: f"{low} ends lower than {high}"))
    return out


def _contrast(sides, values, centre, fmt, verb: str, counts: str, labels, lower_first) -> GroupFinding:
    """Which side is lower (sooner), said only when the two sides' ranges do not overlap."""
    (name_a, name_b), (va, vb) = sides, values
    if max(va) < min(vb) or max(vb) < min(va):
        (low, low_v), (high, high_v) = sorted(((name_a, va), (name_b, vb)), key=lambda side: centre(side[1]))
        ratio = float(centre(high_v)) / max(float(centre(low_v)), 1e-12)
        return GroupFinding("compare", f"{lower_first(low, high, ratio)} {counts} ({_span(low_v, fmt)} vs "
                            f"{_span(high_v, fmt)})", labels)
    return GroupFinding("compare", f"{name_a} and {name_b} {verb} within each other's run-to-run spread {counts} "
                        f"({_span(va, fmt)} vs {_span(vb, fmt)})", labels)


def _side(group: Group, key: str) -> str:
    return f"{key}={_short(dict(group.config)[key])}"


def _values(values: Iterable[float | None]) -> list[float]:
    return [float(v) for v in values if v is not None and math.isfinite(v)]


def _span(values: list[float], fmt) -> str:
    return fmt(min(values)) if min(values) == max(values) else f"{fmt(min(values))}-{fmt(max(values))}"
