"""Plain-text training stdout: built-in line patterns and user regexes.

Stdout is mostly other text (banners, argument dumps, warnings, generated
samples), so lines that match no pattern are counted as *unmatched*, not as
errors. A line that starts like a log record but carries no number is
*malformed* and counted with a reason.

The parser locks onto the first family whose pattern appears; a specific family
(nanoGPT, llm.c, Megatron, ...) found later replaces the generic ``key=value``
one.

Once a family is known and it marks its lines as standing alone, big chunks go
through a :class:`~tuiloss.core.formats.layout.LayoutReader`, which reads the
lines of one layout at once; the other lines go through the family's own parser,
in order.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from tuiloss.core.formats.base import STEP_KEYS, LineParser, is_metric_name, parse_number, step_rank
from tuiloss.core.formats.layout import LayoutReader, Pending
from tuiloss.core.model import Batch

NUM = r"[-+]?(?:\d[\d,]*\.?\d*(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?|nan|NaN|inf|Inf|INF|NAN|infinity|Infinity)"

# "loss 2.3456", "loss: 2.34", "lr 6.0e-04", "dt: 12.3ms", "tok/sec: 1234.5", "mfu 5.00%"
_PAIR = re.compile(
    r"(?P<key>[A-Za-z_][\w/.()\- ]{0,80}?)\s*[:=]?\s+(?P<value>" + NUM + r")(?:\s*[A-Za-z%/]+)?\s*$"
)
_PAIR_TIGHT = re.compile(r"(?P<key>[A-Za-z_][\w/.\-]*)\s*[:=]\s*(?P<value>" + NUM + r")(?![\w.])")


@dataclass
class _State:
    step: float | None = None
    epoch: float | None = None
    columns: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Family:
    """One built-in log layout.

    ``detect`` is searched in the text with a newline put in front, so patterns can
    start with a literal ``\\n`` where they mean the start of a line (the regex
    engine then skips ahead to candidates instead of trying every position).
    ``hint`` is an ASCII substring without which the family cannot appear (every
    family but the generic one has one). ``layout`` says whether its lines stand
    alone, so a :class:`~tuiloss.core.formats.layout.LineLayout` may read them.
    """

    name: str
    detect: re.Pattern
    parse: Callable[["TextParser", str, int, Batch], None]
    generic: bool = False
    hint: str | tuple[str, ...] | None = None  # text every match of the family contains
    layout: bool = False


def _num(text: str) -> float | None:
    return parse_number(text)


def _emit(state: _State, step: float, name: str, value: float | None) -> bool:
    if value is None:
        return False
    name = name.strip()
    if not is_metric_name(name):
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
_KERAS_LINE = re.compile(r"^[^\n]*? - loss: [^\n]*$", re.M)
_KERAS_PAIR = re.compile(r"(\w+): (" + NUM + r")")


def _parse_keras(parser: "TextParser", text: str, first_line: int, batch: Batch) -> None:
    state = parser.state
    events = [(m.start(), 0, m) for m in _KERAS_EPOCH.finditer(text)]
    events += [(m.start(), 1, m) for m in _KERAS_LINE.finditer(text)]
    events.sort(key=lambda e: e[0])
    for pos, kind, match in events:
        if kind == 0:
            parser.matched += 1
            state.epoch = float(match[1])
            continue
        line = match[0].rsplit("\r", 1)[-1].rsplit("\x08", 1)[-1]
        if "ETA:" in line:
            continue  # progress within the epoch (unmatched text); the epoch's final line follows
        parser.matched += 1
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
        else:
            batch.skip("metric before any step", _line_no(text, pos, first_line), match[0])


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
        step = _best_step(line, step)
        found = 0
        for pair in _PAIR_TIGHT.finditer(line):
            key = pair["key"]
            if key.lower() in STEP_KEYS or pair.start() == match.start("stepkey") - match.start():
                continue
            found += _emit(state, step, key, _num(pair["value"]))
        if found:
            parser.matched += 1


_STEP_ANY = re.compile(
    r"(?:(?<![\w/])|(?<=\d/))(?P<stepkey>" + _STEP_WORDS + r")\s*[:= ]\s*(?P<step>\d+)(?:\s*/\s*\d+)?(?![\w.])", re.I
)  # a counter anywhere in the line, also after another one's value: epoch=0/global_step=10


def _best_step(line: str, step: float) -> float:
    """The most global step counter written in ``line`` (``global_step`` over ``epoch``), else ``step``."""
    best = None
    for found in _STEP_ANY.finditer(line):
        rank = step_rank(found["stepkey"])
        if rank is not None and (best is None or rank < best[0]):
            best = (rank, float(found["step"]))
    return best[1] if best is not None else step


FAMILIES: tuple[Family, ...] = (
    Family(
        "megatron",
        re.compile(r"iteration(?<=\biteration)\s+\d+\s*/\s*\d+\s*\|.*\|"),
        _parse_megatron,
        hint="iteration",
        layout=True,
    ),
    Family(
        "nanogpt",
        re.compile(r"\niter \d+: \w|\nstep \d+: train loss "),
        _parse_nanogpt,
        hint=("iter ", ": train loss "),
        layout=True,
    ),
    Family("llmc", re.compile(r"\ns:\d+ t[re]l:"), _parse_llmc, hint="s:", layout=True),
    Family("pipe", re.compile(r"\nstep\s+\d+(?:\s*/\s*\d+)?\s*[|:].*\|"), _parse_pipe, hint="step", layout=True),
    Family("olmo", re.compile(r"(?m)\[step=\d+(?:/\d+)?(?:,\s*epoch=\d+)?\]\s*$"), _parse_olmo, hint="[step="),
    Family("hf_dict", _HF_DICT, _parse_hf_dict, hint="{'"),
    Family("keras", re.compile(r"(?m)\nEpoch \d+/\d+\s*$"), _parse_keras, hint="Epoch "),
    Family("generic", _GENERIC, _parse_generic, generic=True),
)
FAMILY_NAMES = tuple(f.name for f in FAMILIES)
_DETECT_PREFIX = 1 << 16  # bytes of a chunk decoded to detect its family first


def detect_family(text: str) -> Family | None:
    """The first built-in family that appears in ``text``."""
    lined = "\n" + text
    for family in FAMILIES:
        if family.hint is not None and not _has_hint(family, text):
            continue
        if family.detect.search(lined):
            return family
    return None


def _has_hint(family: Family, text: str | bytes) -> bool:
    hints = (family.hint,) if isinstance(family.hint, str) else family.hint
    if isinstance(text, bytes):
        return any(hint.encode() in text for hint in hints)
    return any(hint in text for hint in hints)


def _detect_in(data: bytes) -> tuple[Family | None, str | None]:
    """:func:`detect_family` of a chunk, decoding only its start when that settles it.

    A family found in the first lines is the answer when no family listed before it
    has its hint anywhere in the chunk (hints are ASCII, so looking in the bytes is
    looking in the text). Returns the family and the decoded chunk, if decoding it
    all was needed.
    """
    if len(data) > 2 * _DETECT_PREFIX:
        cut = data.rfind(b"\n", 0, _DETECT_PREFIX) + 1
        found = detect_family(_decode(data[:cut])) if cut else None
        if found is not None:
            earlier = FAMILIES[: FAMILIES.index(found)]
            if all(f.hint is not None and not _has_hint(f, data) for f in earlier):
                return found, None
    text = _decode(data)
    return detect_family(text), text


class TextParser(LineParser):
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
        self.layouts = LayoutReader(self._parse_line, self._parse_odd, self._take_pending, self._fitted)

    def restart(self) -> None:
        self.state = _State()
        self.rows = 0
        self.layouts.reset()
        if not self._fixed:
            self.family = None

    def feed(self, data: bytes, first_line: int) -> Batch:
        text = None
        if not self._fixed and (self.family is None or self.family.generic):
            found, text = _detect_in(data)
            if found is not None and (self.family is None or not found.generic):
                self.family = found
        if self.family is not None and self.family.layout and self.layouts.wants(data):
            batch = Batch()
            self.matched = 0
            fitted = self.layouts.feed(data, first_line, batch)
            if fitted is not None:
                batch.unmatched = max(data.count(b"\n") - self.matched - fitted, 0)
                return batch
        return self._feed_text(_decode(data) if text is None else text, first_line)

    def _feed_text(self, text: str, first_line: int) -> Batch:
        batch = Batch()
        lines = text.count("\n")
        self.matched = 0
        if self.family is not None:
            self.family.parse(self, text, first_line, batch)
        batch.unmatched = max(lines - self.matched, 0)
        for name, (steps, values) in self.state.columns.items():
            batch.add(name, steps, values)
        self.state.columns = {}
        return batch

    # -- what the layout reader needs ------------------------------------------------

    def _parse_line(self, line: bytes) -> tuple[float, dict[str, float]] | None:
        """The family's reading of one line on its own: a step and its metrics."""
        assert self.family is not None
        probe = TextParser(self.family.name)
        batch = Batch()
        self.family.parse(probe, line.decode("utf-8", "replace"), 1, batch)
        columns = probe.state.columns
        if batch.skipped or probe.matched != 1 or not columns:
            return None
        if any(len(steps) != 1 for steps, _ in columns.values()):
            return None
        steps = {steps[0] for steps, _ in columns.values()}
        if len(steps) != 1:
            return None
        return steps.pop(), {name: values[0] for name, (_, values) in columns.items()}

    def _parse_odd(self, data: bytes, first_line: int, batch: Batch) -> None:
        assert self.family is not None
        self.family.parse(self, _decode(data), first_line, batch)

    def _take_pending(self) -> Pending:
        pending, self.state.columns = self.state.columns, {}
        return pending

    def _fitted(self, steps: np.ndarray) -> None:
        self.state.step = float(steps[-1])


def _decode(data: bytes) -> str:
    text = data.decode("utf-8", "replace")
    if "\r" in text:
        text = text.replace("\r\n", "\n")
    return text


class PatternParser(LineParser):
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
            found = malformed = 0
            for name in self.metric_groups:
                raw = match[name]
                if raw is None:
                    continue
                value = _num(raw)
                if value is None:
                    malformed += 1
                    batch.skip("malformed value", _line_no(text, match.start(), first_line), match[0])
                    continue
                found += _emit(state, step, name, value)
            if not found and not malformed:
                # optional groups that all missed: a matched line with nothing to plot, said so
                batch.skip("no value", _line_no(text, match.start(), first_line), match[0])
        batch.unmatched = max(text.count("\n") - matched, 0)
        for name, (steps, values) in state.columns.items():
            batch.add(name, steps, values)
        return batch
