"""Per-rank logs of one distributed job, grouped as one job with the ranks as its members.

A job launched on N processes often writes one log per process: ``rank0.log`` ... ``rank7.log``,
``train.rank3.out``, ``log_rank_3.txt``, ``worker-2.log``, NeMo's
``nemo_log_globalrank-3_localrank-3.txt``, a ``rank_3/`` folder, or torchrun's
``LOG_DIR/RUN_ID/attempt_0/3/stdout.log`` (its ``--log-dir`` with ``--redirects``/``--tee``: one
folder per local rank, under one folder per restart attempt).

A rank's two streams, written to two files (torchrun's ``attempt_0/3/stdout.log`` and
``attempt_0/3/stderr.log``, Slurm's ``srun --output=train.rank%t.out --error=train.rank%t.err``),
are one rank, not two jobs: its metrics are read from whichever stream holds them (Python's
``logging`` writes to stderr, ``print`` to stdout), the other stream is folded with it.

Two logs are ranks of one job when

- **their names say so**: the same path under one root but for a rank number that a word marks as one
  (``rank``, ``worker``, ``globalrank``; torchrun's number folder under ``attempt_K``), and the
  numbers are dense (spanning at most twice as many numbers as there are logs). A bare number
  says nothing: ``run0`` ... ``run7``, ``seed_3`` and Slurm's array tasks (``slurm-123_4.out``)
  number repetitions or configurations, never the processes of one job; nor does a LoRA rank
  (``lora_rank8``), a hyperparameter;
- **and what they hold agrees**: the same format, the same config once the keys that tell ranks
  apart are left out (:data:`RANK_KEYS`), and, where both logs say it, the same primary metric,
  the same planned total, the same logging interval and the same first step (the ranks of one
  job start together and log on the same steps). A log named as a rank that disagrees is
  another job written beside it: it is kept apart, and said so.

Each rank stays a run of its own (its own curve and findings); the job is what they make
together. Within a job, a rank whose log stopped while the others went on is a finding: its last
step is behind the furthest rank's by more than three logging intervals and 2% of the job's
steps ("rank 3 stopped at step 12.0K while 7 ranks went on to 15.0K"), unless it is still
growing (a rank whose output arrives in buffered bursts lags without having stopped).
"""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Collection, Iterable, Sequence

import numpy as np

from tuiloss.core.analysis.display import fmt_step
from tuiloss.core.analysis.state import planned_steps
from tuiloss.core.store import Run

#: Config keys that tell the ranks of one job apart (seeds are often offset by the rank).
RANK_KEYS = frozenset({
    "rank", "local_rank", "global_rank", "node_rank", "group_rank", "rank_id", "worker_id", "worker_index",
    "process_index", "local_process_index", "seed", "random_seed", "data_seed", "hostname", "host", "node",
    "pid", "device", "gpu", "gpu_id", "cuda_visible_devices", "master_port", "log_file", "output_file",
})
#: A rank number marked by its word, inside a file or folder name: ``rank3``, ``rank_3``,
#: ``rank-3``, ``.rank3.``, ``globalrank-3``, ``worker-2``. Not after a letter ("crank3"),
#: nor "localrank" (the rank on its node: NeMo writes both, the global one tells ranks apart).
_RANK_WORD = re.compile(r"(?i)(?<![a-z])(?:global[_-]?)?(?:rank|worker)[_\-.]?(\d{1,6})(?![a-z\d])")
_LOCAL_RANK = re.compile(r"(?i)(?<![a-z])local[_-]?rank[_\-.]?(\d{1,6})(?![a-z\d])")
_QUALIFIERS = re.compile(r"(?i)(?<![a-z])(?:local|lora|low|num|n)[_-]?$")
#: torchrun's per-rank folders: ``attempt_K/LOCAL_RANK/stdout.log`` (or ``stderr.log``).
_TORCHRUN = re.compile(r"(^|.*/)(attempt_\d+)/(\d{1,6})/(std(?:out|err)\.log)$")
#: A stream's word in a log's name: ``stdout``/``stderr``, ``.out``/``.err`` (the rank's two files).
_STREAM = re.compile(r"(?i)(?<![a-z])(std)?(?:out|err)(?![a-z])")
#: The most ranks whose pairwise agreement is worked out to find the job's majority.
PAIRWISE_MOST = 64


@dataclass(frozen=True, slots=True)
class RankName:
    """What a log's path says: the job's path (the rank number as ``*``) and its rank."""

    job: str
    rank: int


@lru_cache(maxsize=65536)
def rank_name(path: str) -> RankName | None:
    """The job and rank ``path`` names, or None when its name marks no rank.

    The last part of the path that marks one counts (a ``rank_3/`` folder or a file name).
    """
    path = path.replace(os.sep, "/")
    torchrun = _TORCHRUN.match(path)
    if torchrun:
        head, attempt, rank, stream = torchrun.groups()
        return RankName(f"{head}{attempt}/*/{stream}", int(rank))
    parts = path.split("/")
    for index in range(len(parts) - 1, -1, -1):
        part = parts[index]
        found = [m for m in _RANK_WORD.finditer(part) if not _qualified(part, m.start())]
        if not found:
            continue
        match = found[-1]
        named = part[:match.start(1)] + "*" + part[match.end(1):]
        named = _LOCAL_RANK.sub(lambda m: m.group(0)[: m.start(1) - m.start(0)] + "*", named)
        return RankName("/".join([*parts[:index], named, *parts[index + 1:]]), int(match.group(1)))
    return None


def _qualified(text: str, start: int) -> bool:
    """Whether the rank word at ``start`` is qualified into something else: the rank on a node
    (``localrank``, when a global one is named too), a LoRA or low-rank factor (``lora_rank8``),
    a count of data-loader workers (``num_workers4``): hyperparameters of a sweep, not processes."""
    return bool(_QUALIFIERS.search(text[:start]))


@dataclass(frozen=True, slots=True)
class RankFacts:
    """What grouping reads of one log: who it is, and the plain facts of its primary metric."""

    id: str
    label: str
    path: str  # where it is now (the root it was found under is the part before ``source``)
    source: str  # relative to its root, as shown
    format: str
    config: dict = field(default_factory=dict, hash=False, compare=False)
    primary: str | None = None
    points: int = 0
    first_step: float | None = None
    last_step: float | None = None
    spacing: float | None = None  # its usual steps between two logged points
    planned: float | None = None
    state: str = ""
    state_reason: str = ""


@dataclass(frozen=True, slots=True)
class Rank:
    rank: int
    id: str
    label: str
    last_step: float | None
    state: str
    streams: tuple[str, ...] = ()  # the rank's other stream's log (its stderr beside its stdout), folded with it


@dataclass(frozen=True, slots=True)
class RankFinding:
    """A rank whose log stopped while other ranks of its job went on."""

    kind: str  # "rank_stopped"
    rank: int
    run_id: str
    step: float
    others: int  # ranks that went on past it
    to_step: float  # how far the furthest of them got
    message: str


@dataclass(frozen=True, slots=True)
class KeptApart:
    """A log named as a rank of a job whose content is another job's."""

    rank: int
    run_id: str
    label: str
    reason: str
    message: str


@dataclass(frozen=True, slots=True)
class Job:
    """One distributed job: its ranks (in rank order), what they say, what was kept apart."""

    label: str
    ranks: tuple[Rank, ...]
    findings: tuple[RankFinding, ...] = ()
    apart: tuple[KeptApart, ...] = ()

    @property
    def lead(self) -> Rank:
        """The rank that stands for the job (the lowest: rank 0 usually writes the metrics)."""
        return self.ranks[0]

    @property
    def run_ids(self) -> tuple[str, ...]:
        return tuple(rank.id for rank in self.ranks)

    @property
    def others(self) -> frozenset[str]:
        """The runs folded into the lead rank's: the other ranks, and every rank's other stream."""
        return frozenset(rank.id for rank in self.ranks[1:]) | {run_id for rank in self.ranks for run_id in rank.streams}

    @property
    def last_step(self) -> float | None:
        steps = [r.last_step for r in self.ranks if r.last_step is not None]
        return max(steps) if steps else None

    @property
    def summary(self) -> str:
        """``8 ranks (0-7), steps to 15.0K``."""
        numbers = [r.rank for r in self.ranks]
        span = _span(numbers)
        last = self.last_step
        steps = f", steps to {fmt_step(last)}" if last is not None else ""
        return f"{len(numbers)} ranks ({span}){steps}"


def _span(numbers: Sequence[int]) -> str:
    """``0-7``, or the numbers themselves when some are missing (``0-3, 5, 7``)."""
    ordered = sorted(numbers)
    runs: list[list[int]] = []
    for n in ordered:
        if runs and n == runs[-1][-1] + 1:
            runs[-1].append(n)
        else:
            runs.append([n])
    return ", ".join(f"{r[0]}-{r[-1]}" if len(r) > 1 else str(r[0]) for r in runs)


def facts_of(run: Run, state: str = "", state_reason: str = "") -> RankFacts:
    """A run's :class:`RankFacts`: its primary metric's first and last step and usual spacing."""
    primary = run.primary_metric
    series = run.series.get(primary) if primary else None
    first = last = spacing = None
    if series is not None and len(series):
        steps = series.visible()[0]
        if len(steps):
            first, last = float(steps[0]), float(steps[-1])
            gaps = np.diff(steps[-64:])
            gaps = np.sort(gaps[np.isfinite(gaps) & (gaps > 0)])
            spacing = float(gaps[len(gaps) // 2]) if len(gaps) else None  # the usual gap (a median)
    return RankFacts(
        id=run.id, label=run.label, path=run.path or run.id, source=run.source, format=run.format,
        config=dict(run.config), primary=primary if series is not None and len(series) else None,
        points=run.points, first_step=first, last_step=last, spacing=spacing,
        planned=planned_steps(run.meta.get("planned_steps"), run.config), state=state, state_reason=state_reason,
    )


def _config_key(config: dict) -> tuple:
    return tuple(sorted((k, repr(v)) for k, v in config.items()
                        if k.lower() not in RANK_KEYS and k.split(".")[-1].lower() not in RANK_KEYS))


def disagreement(a: RankFacts, b: RankFacts) -> str | None:
    """Why ``a`` and ``b`` are not ranks of one job (what one says and the other contradicts), or None."""
    if a.format != b.format:
        return f"it is read as {b.format}, the job as {a.format}"
    if _config_key(a.config) != _config_key(b.config):
        return "its config differs"
    if a.primary and b.primary and a.primary != b.primary:
        return f"its metric is {b.primary}, the job's {a.primary}"
    if a.planned and b.planned and not math.isclose(a.planned, b.planned, rel_tol=1e-9):
        return f"it plans {fmt_step(b.planned)} steps, the job {fmt_step(a.planned)}"
    if a.spacing and b.spacing and not math.isclose(a.spacing, b.spacing, rel_tol=0.01):
        return f"it logs every {fmt_step(b.spacing)} steps, the job every {fmt_step(a.spacing)}"
    if a.first_step is not None and b.first_step is not None:
        tolerance = max(a.spacing or 0.0, b.spacing or 0.0, 1.0)
        if abs(a.first_step - b.first_step) > tolerance:
            return f"its steps start at {fmt_step(b.first_step)}, the job's at {fmt_step(a.first_step)}"
    return None


def find_jobs(members: Iterable[RankFacts], growing: Collection[str] = frozenset()) -> list[Job]:
    """The jobs among ``members`` (every log read), in the order their first rank comes.

    ``growing`` holds the ids of logs seen growing just now (the viewer knows): such a rank is
    behind, not stopped.
    """
    named: dict[tuple[str, str], dict[int, dict[str, RankFacts]]] = {}
    for member in members:
        name = rank_name(member.source)  # the name below the root: the root is the user's choice
        if name is not None:  # a log restarted in itself: its newest run is the rank
            key = (_root_of(member), streamless(name.job))
            named.setdefault(key, {}).setdefault(name.rank, {})[name.job] = member
    jobs = []
    for (_, key), streams in named.items():
        by_rank = {number: _holding(logs) for number, logs in streams.items()}
        chosen = {name for number, logs in streams.items() for name, m in logs.items() if m is by_rank[number]}
        label = chosen.pop() if len(chosen) == 1 else key
        others = {number: tuple(m.id for m in logs.values() if m is not by_rank[number])
                  for number, logs in streams.items()}
        if len(by_rank) < 2:
            continue
        reference = _reference(by_rank)
        ranks, apart = [], []
        for number in sorted(by_rank):
            member = by_rank[number]
            why = None if member is reference else disagreement(reference, member)
            if why is None:
                ranks.append(member)
            else:
                apart.append(KeptApart(number, member.id, member.label, why,
                                       f"{member.source} is named as rank {number} of {label} but reads as another "
                                       f"job ({why}); kept apart"))
        if len(ranks) < 2 or all(m.last_step is None for m in ranks):
            continue  # (logs with nothing read, torchrun's empty stderr.log files: nothing to say)
        joined = {m.id for m in ranks}
        if not _dense([number for number, m in by_rank.items() if m.id in joined]):
            continue
        numbers = {member.id: number for number, member in by_rank.items()}
        job_ranks = tuple(Rank(numbers[m.id], m.id, m.label, m.last_step, m.state, others[numbers[m.id]])
                          for m in ranks)
        jobs.append(Job(label, job_ranks, tuple(_stopped(ranks, numbers, growing)), tuple(apart)))
    return jobs


def streamless(job: str) -> str:
    """A job's name with the stream its file holds left out (``attempt_0/*/std{out,err}.log``,
    ``train.rank*.{out,err}``): the name both streams of its ranks share."""
    head, _, last = job.rpartition("/")
    last = _STREAM.sub(lambda m: f"{m.group(1) or ''}{{out,err}}", last)
    return f"{head}/{last}" if head else last


def _holding(logs: dict[str, RankFacts]) -> RankFacts:
    """Of one rank's streams, the one its metrics are read from: the one with its primary metric,
    then the most points (the other stream holds warnings, or nothing)."""
    return max(sorted(logs.items(), reverse=True), key=lambda item: (item[1].primary is not None, item[1].points))[1]


def _dense(numbers: list[int]) -> bool:
    """Whether ``numbers`` read as the ranks of one job: they span at most twice as many numbers
    as there are (ranks 16-23 of a node, every other rank), not a sweep's values (4, 8, 16, 32)."""
    return max(numbers) - min(numbers) + 1 <= 2 * len(numbers)


def _reference(by_rank: dict[int, RankFacts]) -> RankFacts:
    """The member the others are checked against: the one most others agree with (the lowest
    rank among equals; for very many ranks, the lowest rank that has points)."""
    ordered = [by_rank[n] for n in sorted(by_rank)]
    with_points = [m for m in ordered if m.last_step is not None] or ordered
    if len(with_points) > PAIRWISE_MOST:
        return with_points[0]
    return max(with_points, key=lambda m: sum(disagreement(m, other) is None for other in ordered))


def _root_of(member: RankFacts) -> str:
    """Where ``member``'s source is found from: the ranks of one job are under one root (the
    same names under two roots, ``node01:/run/rank0.log`` and ``node02:/run/rank0.log``, are two)."""
    path, source = member.path.replace(os.sep, "/"), member.source.replace(os.sep, "/")
    return path[: len(path) - len(source)] if path.endswith(source) else os.path.dirname(path)


def _stopped(ranks: list[RankFacts], numbers: dict[str, int], growing: Collection[str]) -> list[RankFinding]:
    """Ranks whose last step is well behind the furthest rank's (see the module's docstring)."""
    placed = [m for m in ranks if m.last_step is not None and math.isfinite(m.last_step)]
    if len(placed) < 2:
        return []
    lead = max(m.last_step for m in placed)
    first = min(m.first_step for m in placed if m.first_step is not None)
    spacing = float(np.median([m.spacing for m in placed if m.spacing])) if any(m.spacing for m in placed) else 0.0
    margin = max(3 * spacing, 0.02 * (lead - first))
    out = []
    for member in sorted(placed, key=lambda m: numbers[m.id]):
        if member.last_step >= lead - margin or member.id in growing:
            continue
        ahead = [m for m in placed if m.last_step - member.last_step > margin]
        to_step = max(m.last_step for m in ahead)
        ended = f" ({member.state}: {member.state_reason})" if member.state in ("crashed", "killed") else ""
        count = len(ahead)
        message = (f"rank {numbers[member.id]} stopped at step {fmt_step(member.last_step)}{ended} while "
                   f"{count} rank{'s' if count != 1 else ''} went on to {fmt_step(to_step)}")
        out.append(RankFinding("rank_stopped", numbers[member.id], member.id, member.last_step, count, to_step,
                               message))
    return out


def job_json(job: Job) -> dict:
    """A job as ``report --json`` writes it (under ``jobs``)."""
    return {
        "label": job.label,
        "ranks": [{"rank": r.rank, "id": r.id, "label": r.label, "last_step": _number(r.last_step),
                   "state": r.state, "streams": list(r.streams)} for r in job.ranks],
        "findings": [{"kind": f.kind, "rank": f.rank, "id": f.run_id, "step": _number(f.step), "others": f.others,
                      "to_step": _number(f.to_step), "message": f.message} for f in job.findings],
        "kept_apart": [{"rank": a.rank, "id": a.run_id, "label": a.label, "reason": a.reason, "message": a.message}
                       for a in job.apart],
    }


def _number(value: float | None):
    if value is None or not math.isfinite(value):
        return None
    return int(value) if value == int(value) and abs(value) < 2**53 else value
