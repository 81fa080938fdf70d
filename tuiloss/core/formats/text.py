"""Plain-text training stdout: built-in line patterns and user regexes.

Stdout is mostly other text (banners, argument dumps, warnings, generated
samples), so lines that match no pattern are counted as *unmatched*, not as
errors. A line that starts like a log record but carries no number is
*malformed* and counted with a reason.

The parser locks onto the first family whose pattern appears; a specific family
(nanoGPT, llm.c, Megatron, ...) found later replaces the generic ``key=value``
one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable

from tuiloss.core.formats.base import STEP_KEYS, parse_number
from tuiloss.core.model import Batch

NUM = r"[-+]?(?:\d[\d,]*\.?\d*(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?|nan|NaN|inf|Inf|INF|NAN|infinity|Infinity)"

# "loss 2.3456", "loss: 2.34", "lr 6.0e-04", "dt: 12.3ms", "tok/sec: 1234.5", "mfu 5.00%"
_PAIR = re.compile(
    r"(?P<key>[A-Za-z_][\w/.()\- ]*?)\s*[:=]?\s+(?P<value>" + NUM + r")(?:\s*[A-Za-z%/]+)?\s*$"
)
_PAIR_TIGHT = re.compile(r"(?P<key>[A-Za-z_][\w/.\-]*)\s*[:=]\s*(?P<value>" + NUM + r")(?![\w.])")


@dataclass
class _State:
    step: float | None = None
    epoch: float | None = None
    columns: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Family:
    """One built-in log layout."""

    name: str
    detect: re.Pattern
    parse: Callable[["TextParser", str, int, Batch], None]
    generic: bool = False


def _num(text: str) -> float | None:
    return parse_number(text)


def _emit(state: _State, step: float, name: str, value: float | None) -> bool:
    if value is None:
        return False
    name = name.strip()
    if not name:
        return False
    target = state.columns.get(name)
    if target is None:
        target = state.columns[name] = ([], [])
    target[0].append(step)
    target[1].append(value)
    return True


def _pairs_split(rest: str, sep: str, state: _State, step: float) -> int:
    found = 0
    for part in rest.split(sep):
        part = part.strip().strip("()")
        if not part:
            continue
        match = _PAIR.search(part)
        if match is None:
            continue
        found += _emit(state, step, match["key"], _num(match["value"]))
    return found


def _line_no(text: str, pos: int, first_line: int) -> int:
    return first_line + text.count("\n", 0, pos)


# -- families -------------------------------------------------------------------

_NANOGPT = re.compile(r"^iter (\d+): (.*)$", re.M)
_NANOGPT_EVAL = re.compile(r"^step (\d+): (train loss .*)$", re.M)


def _parse_nanogpt(parser: "TextParser", text: str, first_line: int, batch: Batch) -> None:
    state = parser.state
    for regex in (_NANOGPT, _NANOGPT_EVAL):
        for match in regex.finditer(text):
            parser.matched += 1
            step = float(match[1])
            if not _pairs_split(match[2], ",", state, step):
                batch.skip("malformed line", _line_no(text, match.start(), first_line), match[0])


_PIPE = re.compile(r"^step\s+(\d+)(?:\s*/\s*\d+)?\s*[|:]\s*(.*\|.*)$", re.M)
_STANDALONE = re.compile(r"^(validation loss|val loss|eval loss|test loss)\s*:\s*(" + NUM + r")\s*$", re.M | re.I)


def _parse_pipe(parser: "TextParser", text: str, first_line: int, batch: Batch) -> None:
    state = parser.state
    events = []
    for match in _PIPE.finditer(text):
        events.append((match.start(), 0, match))
    for match in _STANDALONE.finditer(text):
        events.append((match.start(), 1, match))
    events.sort(key=lambda e: e[0])
    for pos, kind, match in events:
        parser.matched += 1
        if kind == 0:
            step = float(match[1])
            state.step = step
            if not _pairs_split(match[2], "|", state, step):
                batch.skip("malformed line", _line_no(text, pos, first_line), match[0])
        else:
            _emit(state, state.step if state.step is not None else 0.0, match[1].lower(), _num(match[2]))


_LLMC = re.compile(r"^s:(\d+) (\w+:.*)$", re.M)
_LLMC_PAIR = re.compile(r"(\w+):(" + NUM + r")")


def _parse_llmc(parser: "TextParser", text: str, first_line: int, batch: Batch) -> None:
    state = parser.state
    for match in _LLMC.finditer(text):
        parser.matched += 1
        step = float(match[1])
        found = 0
        for pair in _LLMC_PAIR.finditer(match[2]):
            found += _emit(state, step, pair[1], _num(pair[2]))
        if not found:
            batch.skip("malformed line", _line_no(text, match.start(), first_line), match[0])


_MEGATRON = re.compile(r"^.*?\biteration\s+(\d+)\s*/\s*\d+\s*\|(.*)$", re.M)
_MEGATRON_VAL = re.compile(r"^.*?\bvalidation loss at iteration\s+(\d+)\s*\|(.*)$", re.M)


def _parse_megatron(parser: "TextParser", text: str, first_line: int, batch: Batch) -> None:
    state = parser.state
    for match in _MEGATRON.finditer(text):
        parser.matched += 1
        if not _pairs_split(match[2], "|", state, float(match[1])):
            batch.skip("malformed line", _line_no(text, match.start(), first_line), match[0])
    for match in _MEGATRON_VAL.finditer(text):
        parser.matched += 1
        step = float(match[1])
        found = 0
        for part in match[2].split("|"):
            pair = _PAIR.search(part.strip())
            if pair is None:
                continue
            name = pair["key"].strip()
            if name.endswith(" value"):
                name = name[: -len(" value")]
            found += _emit(state, step, "validation " + name, _num(pair["value"]))
        if not found:
            batch.skip("malformed line", _line_no(text, match.start(), first_line), match[0])


_HF_DICT = re.compile(r"^\s*\{('(?:loss|eval_loss|train_loss|train_runtime|eval_runtime|grad_norm|learning_rate|epoch)'.*)\}\s*$", re.M)
_HF_PAIR = re.compile(r"'([^']+)':\s*(?:np\.float\d*\()?(" + NUM + r")")
_HF_STEP = re.compile(r"'(step|global_step|epoch)':\s*(" + NUM + r")")


def _parse_hf_dict(parser: "TextParser", text: str, first_line: int, batch: Batch) -> None:
    state = parser.state
    for match in _HF_DICT.finditer(text):
        parser.matched += 1
        body = match[1]
        pairs = {key: _num(value) for key, value in _HF_PAIR.findall(body)}
        step = None
        for key in ("step", "global_step", "epoch"):
            if pairs.get(key) is not None:
                step = pairs.pop(key)
                break
        if step is None:
            step = float(parser.rows)
        parser.rows += 1
        found = 0
        for key, value in pairs.items():
            found += _emit(state, step, key, value)
        if not found:
            batch.skip("malformed line", _line_no(text, match.start(), first_line), match[0])


_KERAS_EPOCH = re.compile(r"^Epoch (\d+)/\d+\s*$", re.M)
_KERAS_LINE = re.compile(r"^.*? - (?:\d+m?s .*? - )?(loss: .*)$", re.M)
_KERAS_PAIR = re.compile(r"(\w+): (" + NUM + r")")


def _parse_keras(parser: "TextParser", text: str, first_line: int, batch: Batch) -> None:
    state = parser.state
    events = [(m.start(), 0, m) for m in _KERAS_EPOCH.finditer(text)]
    events += [(m.start(), 1, m) for m in _KERAS_LINE.finditer(text)]
    events.sort(key=lambda e: e[0])
    for pos, kind, match in events:
        parser.matched += 1
        if kind == 0:
            state.epoch = float(match[1])
            continue
        line = match[0].rsplit("\r", 1)[-1].rsplit("\x08", 1)[-1]
        if "ETA:" in line:
            continue  # progress within the epoch; the epoch's final line follows
        step = state.epoch if state.epoch is not None else float(parser.rows)
        parser.rows += 1
        found = 0
        for key, value in _KERAS_PAIR.findall(line[line.find("loss:") :]):
            found += _emit(state, step, key, _num(value))
        if not found:
            batch.skip("malformed line", _line_no(text, pos, first_line), line)


_OLMO_HEAD = re.compile(r"\[step=(\d+)(?:/\d+)?(?:,\s*epoch=\d+)?\]\s*$", re.M)
_OLMO_ITEM = re.compile(r"^[ \t]+([A-Za-z][\w/ ().\-]*?)=(" + NUM + r")\s*$", re.M)


def _parse_olmo(parser: "TextParser", text: str, first_line: int, batch: Batch) -> None:
    state = parser.state
    events = [(m.start(), 0, m) for m in _OLMO_HEAD.finditer(text)]
    events += [(m.start(), 1, m) for m in _OLMO_ITEM.finditer(text)]
    events.sort(key=lambda e: e[0])
    for pos, kind, match in events:
        parser.matched += 1
        if kind == 0:
            state.step = float(match[1])
        elif state.step is not None:
            _emit(state, state.step, match[1], _num(match[2]))


_STEP_WORDS = "|".join(re.escape(key) for key in STEP_KEYS if "/" not in key)
_GENERIC = re.compile(
    r"^.*?(?<![\w/])(?P<stepkey>" + _STEP_WORDS + r")\s*[:= ]\s*(?P<step>\d+)(?:\s*/\s*\d+)?(?![\w.]).*$",
    re.M | re.I,
)


def _parse_generic(parser: "TextParser", text: str, first_line: int, batch: Batch) -> None:
    state = parser.state
    for match in _GENERIC.finditer(text):
        line = match[0]
        step = float(match["step"])
        found = 0
        for pair in _PAIR_TIGHT.finditer(line):
            key = pair["key"]
            if key.lower() in STEP_KEYS or pair.start() == match.start("stepkey") - match.start():
                continue
            found += _emit(state, step, key, _num(pair["value"]))
        if found:
            parser.matched += 1


FAMILIES: tuple[Family, ...] = (
    Family("megatron", re.compile(r"\biteration\s+\d+\s*/\s*\d+\s*\|.*\|"), _parse_megatron),
    Family("nanogpt", re.compile(r"(?m)^iter \d+: \w"), _parse_nanogpt),
    Family("llmc", re.compile(r"(?m)^s:\d+ t[re]l:"), _parse_llmc),
    Family("pipe", re.compile(r"(?m)^step\s+\d+(?:\s*/\s*\d+)?\s*[|:].*\|"), _parse_pipe),
    Family("olmo", re.compile(r"(?m)\[step=\d+(?:/\d+)?(?:,\s*epoch=\d+)?\]\s*$"), _parse_olmo),
    Family("hf_dict", _HF_DICT, _parse_hf_dict),
    Family("keras", re.compile(r"(?m)^Epoch \d+/\d+\s*$"), _parse_keras),
    Family("generic", _GENERIC, _parse_generic, generic=True),
)
FAMILY_NAMES = tuple(f.name for f in FAMILIES)


def detect_family(text: str) -> Family | None:
    """The first built-in family that appears in ``text``."""
    for family in FAMILIES:
        if family.detect.search(text):
            return family
    return None


class TextParser:
    """Incremental parser of a text log."""

    format = "text"

    def __init__(self, family: str | None = None) -> None:
        self.family: Family | None = None
        if family is not None:
            self.family = next(f for f in FAMILIES if f.name == family)
        self._fixed = family is not None
        self.state = _State()
        self.rows = 0
        self.matched = 0

    def restart(self) -> None:
        self.state = _State()
        self.rows = 0
        if not self._fixed:
            self.family = None

    def feed(self, data: bytes, first_line: int) -> Batch:
        text = data.decode("utf-8", "replace")
        if "\r" in text:
            text = text.replace("\r\n", "\n")
        batch = Batch()
        if not self._fixed and (self.family is None or self.family.generic):
            found = detect_family(text)
            if found is not None and (self.family is None or not found.generic):
                self.family = found
        lines = text.count("\n")
        self.matched = 0
        if self.family is not None:
            self.family.parse(self, text, first_line, batch)
        batch.unmatched = max(lines - self.matched, 0)
        for name, (steps, values) in self.state.columns.items():
            batch.add(name, steps, values)
        self.state.columns = {}
        return batch


class PatternParser:
    """A user's regex with named groups: ``step`` and one group per metric."""

    format = "pattern"

    def __init__(self, pattern: str) -> None:
        self.regex = re.compile(pattern, re.M)
        names = list(self.regex.groupindex)
        self.step_group = "step" if "step" in names else None
        self.metric_groups = [name for name in names if name != "step"]
        self.rows = 0

    def restart(self) -> None:
        self.rows = 0

    def feed(self, data: bytes, first_line: int) -> Batch:
        text = data.decode("utf-8", "replace")
        batch = Batch()
        state = _State()
        matched = 0
        for match in self.regex.finditer(text):
            matched += 1
            if self.step_group is not None:
                step = _num(match[self.step_group] or "")
                if step is None:
                    batch.skip("malformed step", _line_no(text, match.start(), first_line), match[0])
                    continue
            else:
                step = float(self.rows)
            self.rows += 1
            found = 0
            for name in self.metric_groups:
                raw = match[name]
                if raw is None:
                    continue
                value = _num(raw)
                if value is None:
                    batch.skip("malformed value", _line_no(text, match.start(), first_line), match[0])
                    continue
                found += _emit(state, step, name, value)
        batch.unmatched = max(text.count("\n") - matched, 0)
        for name, (steps, values) in state.columns.items():
            batch.add(name, steps, values)
        return batch
