"""How a text log ends: the lines trainers, launchers and schedulers print when a run
finishes, is killed or crashes.

A marker counts only when training did not go on after it: a traceback a data-loader
worker printed before training carried on is not how the run ended. Pure text in,
:class:`Ending` out; the parsers put what they found in ``Batch.meta["end"]``.

Several markers often end one log (a ``KeyboardInterrupt`` traceback, then the
launcher's ``SignalException``); the most telling one names the ending, by rank: the
cause of a crash (CUDA out of memory, an NCCL timeout) over a scheduler's kill (time
limit, memory limit, cancelled) over a signal or interrupt over a plain traceback over a
trainer's summary of a finished run. A launcher telling the other ranks to close after
one failed (``Sending process N closing signal SIGTERM``) is a consequence, not a kill.
"""

from __future__ import annotations

import calendar
import re
from dataclasses import dataclass
from typing import Callable

#: How a run ended, from its log: its trainer said it finished, it was stopped from
#: outside (a signal, an interrupt, the scheduler), or it died of an error.
KINDS = ("finished", "killed", "crashed")
#: Bytes at the end of a chunk that are searched for markers: they only count after the
#: last metric line, and a run's last words are short.
TAIL = 256 * 1024


@dataclass(frozen=True, slots=True)
class Ending:
    """How a log ended: ``kind`` (see :data:`KINDS`), ``reason`` (a few words, such as
    ``CUDA out of memory``), the ``line`` that says so (cut to 200 characters) and the
    ``rank`` that made it the most telling one."""

    kind: str
    reason: str
    line: str
    rank: int = 0


@dataclass(frozen=True, slots=True)
class _Rule:
    kind: str
    reason: str  # "" : the matched line itself is the reason
    rank: int
    pattern: re.Pattern


def _rule(kind: str, reason: str, rank: int, pattern: str) -> _Rule:
    return _Rule(kind, reason, rank, re.compile(pattern))


_RULES = (
    _rule("crashed", "CUDA out of memory", 7, r"^.*(?:CUDA out of memory|OutOfMemoryError|CUDA error: out of memory).*$"),
    _rule("crashed", "NCCL timeout", 7,
          r"^.*(?:Watchdog caught collective operation timeout|NCCL (?:communicator|operation).*[Tt]imeout|"
          r"ProcessGroupNCCL.*[Tt]imed? ?out).*$"),
    _rule("killed", "time limit", 6, r"^.*(?:DUE TO TIME LIMIT|TERM_RUNLIMIT|job killed after reaching .*run time limit).*$"),
    _rule("killed", "memory limit", 6,
          r"^.*(?:TERM_MEMLIMIT|oom[-_]kill event|Out of memory: Killed process|DUE TO MEMORY LIMIT).*$"),
    _rule("killed", "cancelled", 6, r"^.*(?:\*\*\* (?:JOB|STEP) \S+ ON \S+ CANCELLED AT|TERM_OWNER).*$"),
    _rule("killed", "SIGTERM", 5,
          r"^(?!.*closing signal).*(?:got signal: ?15\b|Signal 15 \(SIGTERM\)|received SIGTERM|SIGTERM received|"
          r"Received signal 15\b).*$"),
    _rule("killed", "SIGKILL", 5, r"^(?!.*closing signal).*(?:got signal: ?9\b|Signal 9 \(SIGKILL\)|received SIGKILL).*$"),
    _rule("killed", "", 5, r"^(?:\S*\.)?(?:KeyboardInterrupt|SignalException)\b.*$|^.*got signal: ?2\b.*$"),
    _rule("killed", "killed", 5, r"^Killed\s*$|^.*\b\d+ Killed\s+\S.*$|^srun: error: .*: Killed\s*$"),
    _rule("crashed", "segmentation fault", 4, r"^.*(?:Segmentation fault|SIGSEGV|Signal 11 \(SIGSEGV\)).*$"),
    _rule("crashed", "aborted", 4, r"^.*(?:Aborted \(core dumped\)|Fatal Python error: Aborted|Signal 6 \(SIGABRT\)).*$"),
    _rule("crashed", "", 3, r"^(?:[A-Za-z_][\w]*\.)*[A-Za-z_]\w*(?:Error|Exception|Failure)(?::.*)?$"),
    _rule("crashed", "traceback", 2, r"^Traceback \(most recent call last\):\s*$"),
    _rule("crashed", "", 3, r"^srun: error: .*(?:Exited with exit code [1-9]|task \d+: [A-Z][a-z]+).*$"),
    _rule("finished", "the trainer's final summary", 0,
          r"^.*(?:\*{5} train metrics \*{5}|['\"]train_runtime['\"]\s*:|[Tt]rain(?:ing)? (?:completed|finished)\b|"
          r"\bProcess \d+ exits successfully|"
          r"`?Trainer\.fit`? stopped: `?max_(?:steps|epochs)=\d+`? reached|done training in [\d.]+ sec|"
          r"\[after training is done\]|Overall training speed: \d+ iterations in |Total training time: \d|"
          r"\b\d+ epochs completed in [\d.]+ hours\.?\s*$|^Training time (?:\d+ days?, )?\d+:\d\d:\d\d\s*$|"
          r"\bTraining done\.\s*$|\bEnd of training reached at step \d+).*$"),  # (nnU-Net's, fairseq2's)
    _rule("finished", "early stopping", 1,
          r"^.*(?:\bearly stopping\s*$|Early Stop!?\s*$|"
          r"did not improve more than tol=\S+ for \d+ consecutive epochs\. Stopping\.).*$"),  # (scikit-learn's)
)
#: Literal text at least one marker holds: a chunk without any is read no further.
_HINTS = ("memory", "NCCL", "nccl", "Timeout", "timeout", "TIME LIMIT", "TERM_", "oom", "Killed", "CANCELLED",
          "signal", "Signal", "SIG", "Interrupt", "Traceback", "Error", "Exception", "Failure", "Aborted",
          "Segmentation", "srun", "train metrics", "train_runtime", "completed", "Trainer.fit", "done training",
          "after training", "early stopping", "Early Stop", "finished", "exits successfully", "training speed",
          "training time", "Training time", "epochs completed", "Training done", "End of training", "consecutive epochs")
_HINT_BYTES = tuple(hint.encode() for hint in _HINTS)
#: The same hints as one pattern: on a short chunk (a line a live log just wrote) one search
#: costs a fifth of a test per hint; on a long one the hints' own searches are faster.
_HINT_PATTERN = re.compile(b"|".join(re.escape(hint) for hint in _HINT_BYTES))
_SHORT = 2048


def may_hold(data: bytes) -> bool:
    """Whether ``data`` (the end of a chunk) can hold a marker: a cheap test before reading it."""
    if len(data) <= _SHORT:
        return _HINT_PATTERN.search(data) is not None
    return any(hint in data for hint in _HINT_BYTES)


def markers(text: str) -> list[tuple[int, int, Ending]]:
    """Every marker line of ``text`` (of its last :data:`MAX_CANDIDATES` lines holding a
    hint), in order, as (start, end, ending)."""
    found = []
    for start, end in _candidate_lines(text):
        line = text[start:end]
        best = None
        for rule in _RULES:
            if (best is None or rule.rank > best.rank) and rule.pattern.search(line):
                best = rule
        if best is not None:
            line = line.strip()
            found.append((start, end, Ending(best.kind, best.reason or _short(line), line[:200], best.rank)))
    return found


#: At most this many lines holding a hint are read, the last ones: a run's last words are few.
MAX_CANDIDATES = 256


def _candidate_lines(text: str) -> list[tuple[int, int]]:
    """The (start, end) of the last lines of ``text`` that hold a hint, found with plain
    searches from the end (a hint on every line costs no more than on the last few)."""
    spans = set()
    for hint in _HINTS:
        end = len(text)
        for _ in range(MAX_CANDIDATES):
            pos = text.rfind(hint, 0, end)
            if pos < 0:
                break
            start = text.rfind("\n", 0, pos) + 1
            stop = text.find("\n", pos)
            spans.add((start, len(text) if stop < 0 else stop))
            end = start
    return sorted(spans)[-MAX_CANDIDATES:]


def ending_of(text: str, went_on: Callable[[str], bool], held: Ending | None = None) -> Ending | None:
    """How the log ends once ``text`` (the next lines of it) is read.

    Args:
        text: the lines just read (the end of a chunk will do: see :data:`TAIL`).
        went_on: whether a stretch of text holds a metric line (training went on).
        held: how the log ended before these lines.

    Returns:
        The most telling marker after the last metric line, kept with ``held`` when no metric
        line came between them; None when training went on after every marker.
    """
    found = markers(text)
    end = len(text)
    block = []
    for start, stop, ending in reversed(found):
        if went_on(text[stop:end]):
            break
        block.append(ending)
        end = start
    else:
        if held is not None and not went_on(text[:end]):
            block.append(held)
    if not block:
        return None
    return max(block, key=lambda e: e.rank)


def _short(line: str) -> str:
    """An exception line as a reason: ``RuntimeError: shape mismatch ...`` cut to 80 characters."""
    line = re.sub(r"^(?:[A-Za-z_]\w*\.)+(?=[A-Za-z_]\w*(?:Error|Exception|Failure|Interrupt))", "", line).rstrip(":")
    return line if len(line) <= 80 else line[:79] + "\u2026"


#: A wall-clock time as loggers print it: ``2024-05-08 04:08:04``, ``2024-05-08T04:08:04``,
#: ``2024/05/08 04:08:04`` (Python logging, HF, fairseq, OpenNMT, DeepSpeed, slurm).
_STAMP = re.compile(rb"(?<!\d)(20\d\d)[-/](\d\d)[-/](\d\d)[ T_](\d\d):(\d\d):(\d\d)(?!\d)")
#: Bytes at the end of a chunk searched for the last time a line was stamped with.
STAMP_TAIL = 4096


def last_stamp(data: bytes) -> float | None:
    """The last wall-clock time printed in the last :data:`STAMP_TAIL` bytes of ``data``, as
    seconds since the epoch read as UTC (the log names no zone; callers allow for that)."""
    found = None
    for found in _STAMP.finditer(data[-STAMP_TAIL:]):
        pass
    if found is None:
        return None
    year, month, day, hour, minute, second = (int(g) for g in found.groups())
    if not (1 <= month <= 12 and 1 <= day <= 31 and hour < 24 and minute < 60 and second < 61):
        return None
    return float(calendar.timegm((year, month, day, hour, minute, second, 0, 0, 0)))
