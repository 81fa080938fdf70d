"""Plain-text training stdout: built-in line patterns and user regexes.

Stdout is mostly other text (banners, argument dumps, warnings, generated
samples), so lines that match no pattern are counted as *unmatched*, not as
errors. A line that starts like a log record but carries no number is
*malformed* and counted with a reason.

The parser locks onto the first family whose pattern appears; a specific family
(nanoGPT, llm.c, Megatron, mmdetection, Keras, Caffe, Darknet, ...) found later replaces the
general reader, which reads any trainer's ``key: value`` / ``key=value`` fields,
dicts and JSON objects (fairseq, Hugging Face, OpenNMT, DeepSpeed, detectron2,
timm, Lightning bars, Python logging) with the finest counter of a line as its
step. What the parser learns of the axis (the planned total, the counter used,
a coarse or repeated step) goes to ``Batch.meta``.

Once a family is known and it marks its lines as standing alone, big chunks go
through a :class:`~tuiloss.core.formats.layout.LayoutReader`, which reads the
lines of one layout at once; the other lines go through the family's own parser,
in order.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Callable

import numpy as np

from tuiloss.core.analysis.metrics import role
from tuiloss.core.formats.base import (LineParser, PatternTooSlow, counter_progress, may_wrap_scalars, parse_number,
                                      strip_controls, unwrap_scalars)
from tuiloss.core.formats.counters import MAX_EPOCHS, EpochCounter, note_repeats
from tuiloss.core.formats import eventlines
from tuiloss.core.formats.endings import TAIL, Ending, ending_of, last_stamp, may_hold
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
    meta: dict = field(default_factory=dict)
    counter: EpochCounter | None = None  # an inner counter that restarts every epoch
    derived: bool = False  # a step was computed from two counters (no layout can read it)
    inner_keys: set[str] = field(default_factory=set)  # the keys of lines stepped by a count within the epoch
    handed: tuple[float | None, frozenset] = (None, frozenset())  # a step, and the names handed on at it
    held: tuple | None = None  # Keras 3: the latest bar of the current epoch, not yet final
    done_epoch: float | None = None  # Keras 3: the epoch whose final (validated) bar was read
    seen_val: bool = False
    epochs_unvalidated: bool = False  # Keras 3: an epoch ended with no validated bar
    table: tuple[str, ...] | None = None  # a whitespace table's header: its columns' names
    table_zero: bool = False  # ... whose counter counts from 0 (YOLOv5's ``0/299``: 300 epochs planned)
    table_evals: bool = False  # ... whose validation prints an ``all`` row under it (YOLOv5's)
    val_names: tuple[str, ...] | None = None  # ... the names the validation's header gives its ``all`` row (Ultralytics')
    validated: float | None = None  # ... and the step whose ``all`` row was read last
    phase: str = ""  # AllenNLP: the phase whose bar follows (``Training``, ``Validating``) ...
    bar_read: tuple | None = None  # ... and the (epoch, phase) of the last full bar read
    test_net: int = 0  # Caffe: the test net whose outputs are being printed
    best_next: bool = False  # LightGBM: the read ended at 'Best iteration is:'; its copy of a round follows
    pipe_step: int | None = None  # a Markdown table: the column of its step
    pipe_above: list[str] | None = None  # ... the last row read, a header if a rule follows
    announced: bool = False  # a line of a counter alone set the step of the metric lines under it
    block: dict | None = None  # a Stable-Baselines3 table read so far: its values by name
    section: str = ""  # ... and the section its rows are under (``rollout/``)
    nest: list = field(default_factory=list)  # a Ray Tune result block: the (indent, key) of the sections open
    setting_total: float | None = None  # the planned total a settings line gave: optimizer steps
    shown: dict = field(default_factory=dict)  # the evaluation values last shown beside training values
    dict_values: dict | None = None  # the values of the dict printed under ``Step N per-step time``
    dict_phase: str = ""  # ...and the phase its keys are named for (``eval`` under Orbit's ``eval | step: N``)
    copy_task: str = ""  # detectron2's ``copypaste: Task: bbox``
    copy_names: list[str] | None = None  # ... and the names its next row of values is for
    tf_results: dict | None = None  # TensorFlow's ``***** Eval results *****`` block: its values held till its step
    tf_read: tuple | None = None  # ... an evaluation's step and the names read at it (the block repeats the dict's)
    coco_type: str = ""  # pycocotools' ``Evaluate annotation type *segm*``: what its summary block that follows is of
    tree_section: str = ""  # super-gradients' summary of an epoch: the branch its values are under
    evaluated: str = ""  # Sentence-Transformers: the dataset whose similarity lines follow, if they have a step
    placed: bool = False  # the line read last was a record at a counter of its own (its step, state.step)
    after_record: bool = False  # ...the line before the one being read was


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
    weak: bool = False  # a guess from few lines: any other family found later replaces it


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


_PIPE = re.compile(r"^step\s+(\d+)(?:\s*/\s*(\d+))?\s*[|:]\s*(.*\|.*)$", re.M)
# ``val loss: 4.5``; llm.c prints ``val loss 4.5``
_STANDALONE = re.compile(r"^(validation loss|val loss|eval loss|test loss)(?:\s*:\s*|\s+)(" + NUM + r")\s*$", re.M | re.I)


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
            if match[2]:
                state.meta["planned_steps"] = float(match[2])
            if not _pairs_split(match[3], "|", state, step):
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


# Gradient boosting, a line a round: XGBoost ``[12]\ttrain-logloss:0.51\teval-logloss:0.55``,
# LightGBM ``[10]\tvalid_0's binary_logloss: 0.5``, CatBoost ``12:\tlearn: 0.67\ttest: 0.68\tbest: ...``
_BOOST = re.compile(r"^(?:\[(\d+)\]|(\d+):)\t(.*)$", re.M)
_BOOST_PAIR = re.compile(r"^(?P<key>[A-Za-z_][\w.@\-]*(?:'s [\w.@\-]+)?):\s?(?P<value>" + NUM + r")$")
_BOOST_NOT_METRICS = frozenset({"best", "total", "remaining"})  # CatBoost's best so far and its clock


def _parse_boost(parser: "TextParser", text: str, first_line: int, batch: Batch) -> None:
    """A round a line. LightGBM's early stopping prints its best round again after
    ``Best iteration is:``: a copy of a point read before, not a round of its own."""
    state = parser.state
    carried, state.best_next = state.best_next, False
    for match in _BOOST.finditer(text):
        parser.matched += 1
        before = text[max(text.rfind("\n", 0, max(match.start() - 1, 0)), 0) : match.start()]
        if "est iteration is" in before or (match.start() == 0 and carried):
            continue
        step = float(match[1] if match[1] is not None else match[2])
        state.step = step
        state.meta["step_key"] = "iteration"
        found = 0
        for part in match[3].split("\t"):
            pair = _BOOST_PAIR.match(part.strip())
            if pair is not None and pair["key"] not in _BOOST_NOT_METRICS:
                found += _emit(state, step, pair["key"].replace("'s ", "/"), _num(pair["value"]))
        if not found:
            batch.skip("malformed line", _line_no(text, match.start(), first_line), match[0])
    state.best_next = text.rstrip().endswith("est iteration is:")


# TensorFlow's Estimator (its hooks, through Python logging or absl): ``INFO:tensorflow:loss = 2.3,
# step = 100 (0.512 sec)``; its evaluation: ``Saving dict for global step 1000: accuracy = 0.85, ...``
_TF_TRAIN = re.compile(r"^(?P<pairs>.*?\b[A-Za-z_][\w/.]*\s=\s" + NUM + r",\s(?:global_)?step\s=\s(?P<step>\d+)\b.*)$", re.M)
_TF_EVAL = re.compile(r"^.*?\bSaving dict for global step (?P<step>\d+):(?P<pairs>.*)$", re.M)
_TF_PAIR = re.compile(r"(?P<key>[A-Za-z_][\w/.]*)\s=\s(?P<value>" + NUM + r")(?=,|\s|$)")
# BERT's run_classifier prints the evaluation again as a block, its keys sorted, each line maybe twice
# (TensorFlow's logger and absl's)::
#   INFO:tensorflow:***** Eval results *****
#   INFO:tensorflow:  eval_accuracy = 0.84068626
#   I1204 01:22:58.318926 139767509075776 run_classifier.py:925]   eval_accuracy = 0.84068626
#   INFO:tensorflow:  global_step = 343
_TF_RESULTS = re.compile(r"^[^\n]*?\*{5} Eval results \*{5}[ \t]*\r?$", re.M)
_TF_RESULT = re.compile(r"^(?:[^\n]*?[:\]])?[ \t]{2}(?P<key>[A-Za-z_][\w/.]*) = (?P<value>" + NUM + r")[ \t]*\r?$", re.M)


def _parse_tf(parser: "TextParser", text: str, first_line: int, batch: Batch) -> None:
    state = parser.state
    evals = [(m, "eval_") for m in _TF_EVAL.finditer(text)]
    at = {m.start() for m, _ in evals}
    found = [(m, "") for m in _TF_TRAIN.finditer(text) if m.start() not in at] + evals
    if "Eval results" in text or state.tf_results is not None:
        found += [(m, "") for m in _TF_RESULTS.finditer(text)] + [(m, "") for m in _TF_RESULT.finditer(text)]
    for match, prefix in sorted(found, key=lambda item: item[0].start()):
        if match.re is _TF_RESULTS:
            state.tf_results = {}
            parser.matched += 1
            continue
        if match.re is _TF_RESULT:
            parser.matched += _read_tf_result(state, match["key"], _num(match["value"]))
            continue
        state.tf_results = None  # (a block's values with no step after them give no point)
        parser.matched += 1
        step = float(match["step"])
        state.step = step
        state.meta["step_key"] = "global_step"
        read = 0
        for pair in _TF_PAIR.finditer(match["pairs"]):
            if _counter_name(pair["key"]) is None:
                value = _num(pair["value"])
                if prefix:
                    read += _tf_evaluation(state, step, pair["key"], value)
                else:
                    read += _emit(state, step, pair["key"], value)
        if not read:
            batch.skip("malformed line", _line_no(text, match.start(), first_line), match[0])


def _read_tf_result(state: _State, key: str, value: float | None) -> bool:
    """One ``key = value`` line of TensorFlow's ``***** Eval results *****`` block (see
    :data:`_TF_RESULTS`): the evaluation's values at its ``global_step``, held until that line
    comes (the keys are sorted); whether it was read."""
    held = state.tf_results
    if held is None or value is None:
        return False
    counter = _counter_name(key)
    if counter is not None and counter != "global_step":
        return True  # another counter: no value of the evaluation
    if counter == "global_step":
        state.step = value
        state.meta["step_key"] = "global_step"
        before = list(held.items())
        held.clear()
        held[None] = value  # the block's step: its values after this line are points at once
        for name, number in before:
            _tf_evaluation(state, value, name, number)
    elif None in held:
        _tf_evaluation(state, held[None], key, value)
    else:
        held.setdefault(key, value)
    return True


def _tf_evaluation(state: _State, step: float, key: str, value: float | None) -> bool:
    """An Estimator's evaluation value at ``step``, named ``eval_`` (``eval_accuracy`` keeps its name;
    the evaluation's ``loss`` is ``eval_loss``), once a step whichever of its lines gives it."""
    if value is None:
        return False
    name = _for_phase("eval", key)
    if state.tf_read is None or state.tf_read[0] != step:
        state.tf_read = (step, set())
    if name not in state.tf_read[1]:
        state.tf_read[1].add(name)
        _emit(state, step, name, value)
    return True


# ``[2024-05-01 12:00:00] iteration   10/ 500 | consumed samples: 640 | lm loss: 1.1E+01 |``; GPT-NeoX
# puts its speed first: `` samples/sec: 52.100 | iteration   10/ 500 | ... | lm_loss: 1.3E+01 |``
_MEGATRON = re.compile(r"^(?P<before>.*?)\biteration\s+(\d+)\s*/\s*(\d+)\s*\|(.*)$", re.M)
# Megatron-LM's `` validation loss at iteration 100 | lm loss value: 7.9E+00 | lm loss PPL: 2.8E+03 |``,
# GPT-NeoX's `` validation results at iteration 100 | lm_loss value: 7.9E+00 | lm_loss_ppl value: 2.8E+03 |``
_MEGATRON_VAL = re.compile(r"^.*?\bvalidation (?P<what>loss|results) at iteration\s+(\d+)\s*\|(.*)$", re.M)


def _parse_megatron(parser: "TextParser", text: str, first_line: int, batch: Batch) -> None:
    """Megatron-LM's and GPT-NeoX's ``iteration N/M | key: value | ...`` lines and their evaluations
    at an iteration, named as each names them: ``validation lm loss``, ``val_lm_loss``."""
    state = parser.state
    for match in _MEGATRON.finditer(text):
        parser.matched += 1
        step, pairs = float(match[2]), []
        for part in match[4].split("|"):
            pair = _PAIR.search(part.strip().strip("()"))
            if pair is None or _num(pair["value"]) is None:
                continue
            if _counter_name(pair["key"].strip()) in _GLOBAL_COUNTERS:
                # NeMo's ``Training epoch 1, iteration 9/199 | ... | global_step: 208 |``: the
                # iteration counts within the epoch, the global step is the step
                step = _num(pair["value"])
                continue
            pairs.append((pair["key"], _num(pair["value"])))
        if step == float(match[2]):
            state.meta["planned_steps"] = float(match[3])
        if ":" in match["before"]:
            pairs[:0] = _fields(match["before"])  # GPT-NeoX's speed, before the iteration
        if not pairs:
            batch.skip("malformed line", _line_no(text, match.start(), first_line), match[0])
        for key, value in _new_evaluations(state, pairs):
            _emit(state, step, key, value)
    for match in _MEGATRON_VAL.finditer(text):
        parser.matched += 1
        step = float(match[2])
        prefix = "validation " if match["what"] == "loss" else "val_"
        found = 0
        for part in match[3].split("|"):
            pair = _PAIR.search(part.strip())
            if pair is None:
                continue
            name = pair["key"].strip()
            if name.endswith(" value"):
                name = name[: -len(" value")]
            found += _emit(state, step, prefix + name, _num(pair["value"]))
        if not found:
            batch.skip("malformed line", _line_no(text, match.start(), first_line), match[0])


_OLMO_HEAD = re.compile(r"\[step=(\d+)(?:/(\d+))?(?:,\s*epoch=\d+)?\]\s*$", re.M)
_OLMO_ITEM = re.compile(r"^[ \t]+([A-Za-z][\w/ ().\-]*?)=(" + NUM + r")\s*$", re.M)


# MosaicML Composer's console: ``[batch=N/M]:`` (``[epoch=E][batch=N/M]:``, ``0:`` before it on a
# node's rank), then one indented ``Train key: value`` or ``Eval key: value`` a line
_COMPOSER_HEAD = re.compile(r"^(?:\d+:)?[ \t]*(?:\[epoch=\d+\])?\[batch=(\d+)/(\d+)\]:(?P<rest>[^\n]*)$", re.M)
_COMPOSER_ITEM = re.compile(r"^(?:\d+:)?[ \t]+(?=Train |Eval )(?P<rest>[^\n]*)$", re.M)
_COMPOSER_PAIR = re.compile(r"(?P<phase>Train|Eval) (?P<key>[A-Za-z_][^\n:]*?): (?P<value>" + NUM + r")(?=\s|$)")


def _parse_olmo(parser: "TextParser", text: str, first_line: int, batch: Batch) -> None:
    """Blocks of metric lines under a head that holds the step:

    OLMo's ``[step=100/739328]`` then ``    train/CrossEntropyLoss=2.43`` lines, and MosaicML
    Composer's ``[batch=100/600]:`` then ``\t Train loss/train/total: 2.43`` lines (``Eval``
    values are named ``eval/...`` unless their key already says eval).
    """
    state = parser.state
    events = [(m.start(), 0, m) for m in _OLMO_HEAD.finditer(text)]
    events += [(m.start(), 1, m) for m in _OLMO_ITEM.finditer(text)]
    if "[batch=" in text or state.meta.get("step_key") == "batch":
        events += [(m.start(), 0, m) for m in _COMPOSER_HEAD.finditer(text)]
        events += [(m.start(), 2, m) for m in _COMPOSER_ITEM.finditer(text)]
    events.sort(key=lambda e: e[0])
    for pos, kind, match in events:
        parser.matched += 1
        if kind == 0:
            state.step = float(match[1])
            if match[2]:
                state.meta["planned_steps"] = float(match[2])
            if match.re is _COMPOSER_HEAD:
                state.meta["step_key"] = "batch"
                if match["rest"].strip():
                    _composer_pairs(state, match["rest"])
        elif state.step is None:
            batch.skip("metric before any step", _line_no(text, pos, first_line), match[0])
        elif kind == 1:
            _emit(state, state.step, match[1], _num(match[2]))
        elif not _composer_pairs(state, match["rest"]):
            batch.skip("malformed line", _line_no(text, pos, first_line), match[0])


def _composer_pairs(state: _State, text: str) -> bool:
    """Emit Composer's ``Train key: value`` pairs of ``text`` at the current step; whether any."""
    found = False
    for pair in _COMPOSER_PAIR.finditer(text):
        key = pair["key"].strip()
        if pair["phase"] == "Eval" and "eval" not in key.lower():
            key = "eval/" + key
        found = _emit(state, state.step, key, _num(pair["value"])) or found
    return found


_KERAS_EPOCH = re.compile(r"^Epoch (\d+)/(\d+)\s*$", re.M)
_KERAS_LINE = re.compile(r"^[^\n]*? - loss: [^\n]*$", re.M)
_KERAS_PAIR = re.compile(r"(\w+): (" + NUM + r")")
_KERAS3_BAR = "\u2501"  # Keras 3 draws its bars with this character


def _parse_keras(parser: "TextParser", text: str, first_line: int, batch: Batch) -> None:
    """Keras ``model.fit`` stdout: an ``Epoch N/M`` header, then the epoch's bars.

    Keras 2 prints progress lines with ``ETA:`` and one final line per epoch.
    Keras 3 (``━━━`` bars) prints a bar at the end of the training batches and
    another once validation is done: the epoch's value is that last one, so the
    latest bar of an epoch is held until a bar with ``val_`` metrics or the next
    epoch's header settles it. Once an epoch has ended without validation, a full
    bar (``N/N``) is its epoch's value at once, so the last epoch is not held.
    """
    state = parser.state
    events = [(m.start(), 0, m) for m in _KERAS_EPOCH.finditer(text)]
    events += [(m.start(), 1, m) for m in _KERAS_LINE.finditer(text)]
    events.sort(key=lambda e: e[0])
    for pos, kind, match in events:
        if kind == 0:
            parser.matched += 1
            _flush_keras(state)
            state.epoch = float(match[1])
            state.meta["step_key"] = "epoch"
            state.meta["planned_steps"] = float(match[2])
            continue
        line = match[0].rsplit("\r", 1)[-1].rsplit("\x08", 1)[-1]
        if "ETA:" in line:
            continue  # progress within the epoch (unmatched text); the epoch's final line follows
        parser.matched += 1
        step = state.epoch if state.epoch is not None else float(parser.rows)
        parser.rows += 1
        pairs = [(key, _num(value)) for key, value in _KERAS_PAIR.findall(line[line.find(" - ") :])]
        pairs = [(key, value) for key, value in pairs if value is not None]
        if not pairs:
            batch.skip("malformed line", _line_no(text, pos, first_line), line)
            continue
        if _KERAS3_BAR not in line:
            for key, value in pairs:
                _emit(state, step, key, value)
            continue
        state.derived = True  # held bars: no layout reads these lines
        if any(key.startswith("val_") for key, _ in pairs):
            state.seen_val = True
            state.held = None
            if state.done_epoch != step:
                state.done_epoch = step
                for key, value in pairs:
                    _emit(state, step, key, value)
        elif state.done_epoch != step:
            count = _KERAS3_COUNT.match(_ANSI.sub("", line))
            if not state.seen_val and state.epochs_unvalidated and count and count[1] == count[2]:
                # epochs end without validation here: an epoch's full bar is its value
                state.done_epoch = step
                for key, value in pairs:
                    _emit(state, step, key, value)
            else:
                state.held = (step, pairs)


_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_KERAS3_COUNT = re.compile(r"\s*(\d+)/(\d+)\s")


def _flush_keras(state: _State) -> None:
    if state.held is not None and not state.seen_val:
        state.epochs_unvalidated = True
    if state.held is not None:
        step, pairs = state.held
        state.held = None
        if state.done_epoch != step:
            state.done_epoch = step
            for key, value in pairs:
                _emit(state, step, key, value)


# -- Markdown tables ----------------------------------------------------------------

_PIPE_ROW = re.compile(r"^[ \t]*\|(?P<cells>(?:[^|\n]*\|){2,})[ \t]*\r?$", re.M)
_PIPE_RULE = re.compile(r"^(?:\s*:?-{3,}:?\s*\|)+$")
_PIPE_COUNTERS = {"step": 0, "global step": 0, "iteration": 1, "iter": 1, "epoch": 2}
# a header row: a counter's cell and a loss's (the rule of dashes below it may come in the next read)
_PIPE_DETECT = re.compile(
    r"(?im)^[ \t]*\|(?=(?:[^\n]*\|)?[ \t]*(?:step|global step|iteration|iter|epoch)[ \t]*\|)(?=[^\n]*loss)"
    r"(?:[^|\n]*\|){2,}[ \t]*\r?$"
)


def _parse_markdown(parser: "TextParser", text: str, first_line: int, batch: Batch) -> None:
    """A Markdown table of one row a step, as a notebook's or a model card's training results::

        | Training Loss | Epoch | Step | Validation Loss | Accuracy |
        |:-------------:|:-----:|:----:|:---------------:|:--------:|
        | 0.2345        | 1.0   | 500  | 0.1987          | 0.9200   |
        | No log        | 2.0   | 1000 | 0.1800          | 0.9300   |

    A header is the row above a rule of dashes (read in another chunk, too); its step is
    the finest counter column (a step before an iteration before an epoch), and the
    counters are no metrics. A cell that is no number (``No log``: not logged at that step)
    gives no point. A row with another number of cells, or without a number in its step
    column, is no row.
    """
    state = parser.state
    for match in _PIPE_ROW.finditer(text):
        cells = [cell.strip() for cell in match["cells"].split("|")[:-1]]
        above, state.pipe_above = state.pipe_above, cells
        if _PIPE_RULE.match(match["cells"].strip()):
            if above is not None:
                ranked = sorted((_PIPE_COUNTERS[c.lower()], i) for i, c in enumerate(above) if c.lower() in _PIPE_COUNTERS)
                state.table = tuple(above) if ranked else None
                state.pipe_step = ranked[0][1] if ranked else None
                parser.matched += 2
            continue
        if state.table is None or state.pipe_step is None:
            continue
        at = state.pipe_step
        step = _num(cells[at]) if len(cells) == len(state.table) else None
        if step is None:
            continue  # a header to come, a row of another shape
        parser.matched += 1
        state.step = step
        state.meta["step_key"] = state.table[at].lower()
        found = False
        for name, cell in zip(state.table, cells):
            if name.lower() not in _PIPE_COUNTERS:
                found = _emit(state, step, name, _num(cell)) or found
        if not found:
            batch.skip("malformed line", _line_no(text, match.start(), first_line), match[0])


# -- ESPnet (and FunASR) trainer logs ---------------------------------------------

_ESPNET_BATCH = re.compile(
    r"^.*?(?<!\d)(?P<epoch>\d+)epoch:(?P<phase>[a-z]+):(?P<first>\d+)-(?P<last>\d+)batch:"
    r"(?:(?P<updates>\d+)num_updates:)?\s*(?P<rest>.*)$",
    re.M,
)
_ESPNET_EPOCH = re.compile(r"^.*?(?<!\d)(?P<epoch>\d+)epoch results:\s*(?P<rest>.*)$", re.M)
_ESPNET_PART = re.compile(r"\[(?P<part>\w+)\]\s*(?P<pairs>[^\[]*)")
_ESPNET_PAIR = re.compile(r"(?:^|,)\s*(?P<key>[A-Za-z_][\w/.\-]*)=(?P<value>" + NUM + r")\s*(?=,|$)")
_ESPNET_NOT_METRICS = frozenset({"total_count"})


def _parse_espnet(parser: "TextParser", text: str, first_line: int, batch: Batch) -> None:
    """ESPnet's ``2epoch:train:11-20batch: iter_time=..., loss=50.873, acc=0.471, ...``, the
    means of a stretch of batches, and ``2epoch results: [train] loss=..., [valid] loss=...,
    acc=..., cer=..., [att_plot] time=...``, an epoch's means.

    The batch count restarts every epoch: the step is the global batch (see
    :mod:`~tuiloss.core.formats.counters`), or the updates FunASR writes
    (``1-50batch:50num_updates:``). An epoch's ``[train]`` means are ``train_...``, its
    ``[valid]`` ones ``valid_...``, at the epoch's end; its times and counts are no metrics.
    A log of epoch results alone is stepped by epoch.
    """
    state = parser.state
    found = sorted([*_ESPNET_BATCH.finditer(text), *_ESPNET_EPOCH.finditer(text)], key=lambda m: m.start())
    for match in found:
        parser.matched += 1
        epoch = float(match["epoch"])
        if match.re is _ESPNET_BATCH:
            pairs = [(m["key"], _num(m["value"])) for m in _ESPNET_PAIR.finditer(match["rest"])]
            if match["phase"] != "train":
                pairs = [(f"{match['phase']}_{key}", value) for key, value in pairs]
            if not pairs:
                batch.skip("malformed line", _line_no(text, match.start(), first_line), match[0])
                continue
            if match["updates"] is not None:
                state.meta["step_key"] = "num_updates"
                placed = [(float(match["updates"]), pairs)]
            else:
                if state.counter is None:
                    state.counter = EpochCounter()
                state.derived = True
                state.meta["step_key"] = "batch"  # made global: (epoch - 1) * batches per epoch + batch
                placed = state.counter.add(epoch, float(match["last"]), pairs)
        else:
            pairs = []
            for part in _ESPNET_PART.finditer(match["rest"]):
                if part["part"] in ("train", "valid"):
                    pairs += [(f"{part['part']}_{m['key']}", _num(m["value"])) for m in _ESPNET_PAIR.finditer(part["pairs"])
                              if m["key"] not in _ESPNET_NOT_METRICS]
            if not pairs:
                continue
            if state.counter is not None:
                placed = state.counter.add(epoch, None, pairs)
            elif state.meta.get("step_key") == "num_updates" and state.step is not None:
                placed = [(state.step, pairs)]  # the updates reached by the epoch's end
            else:
                state.meta.setdefault("step_key", "epoch")
                placed = [(epoch, pairs)]
        for step, items in placed:
            state.step = step
            for key, value in items:
                _emit(state, step, key, value)


# -- icefall (k2 and lhotse speech recipes) ----------------------------------------

#: A number in icefall's summaries: plain, no thousands separators (a comma ends the field).
_ICEFALL_NUM = r"[-+]?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?|nan|inf)"
# ``Epoch 1, batch 50, loss[loss=0.31, ctc_loss=0.4, over 1234.00 frames. ], tot_loss[loss=0.42, ...,
# over 5678.00 frames. ], batch size: 52, lr: 4.5e-02, grad_scale: 2.0``: a training batch's line
_ICEFALL_BATCH = re.compile(
    r"Epoch (?P<epoch>\d+), batch (?P<batch>\d+), loss\[(?P<loss>[^\]\n]*)\], tot_loss\[(?P<tot>[^\]\n]*)\](?P<rest>[^\n]*)"
)
# ``Epoch 1, validation: loss=0.35, ctc_loss=0.3, over 94403.00 frames.`` (``validation loss=...`` in older recipes)
_ICEFALL_VALID = re.compile(r"Epoch (?P<epoch>\d+), validation:? (?P<pairs>[^\n]*)")
# one ``name=value`` of a summary (its ``over 1234.00 frames.`` is how much was averaged, no metric)
_ICEFALL_PAIR = re.compile(r"(?<![\w.])(?P<key>[A-Za-z_]\w*)=(?P<value>" + _ICEFALL_NUM + r")(?![\w.])")
# one ``, name: value`` field after the summaries: ``lr: 4.5e-02``, ``grad_scale: 2.0``, ``batch size: 52``
_ICEFALL_FIELD = re.compile(r",\s*(?P<key>[A-Za-z_][\w ]*?):\s*(?P<value>" + _ICEFALL_NUM + r")(?=\s*(?:,|$))")
#: Fields after the summaries that are no metrics: the utterances in the batch.
_ICEFALL_NOT_METRICS = frozenset({"batch size"})


def _parse_icefall(parser: "TextParser", text: str, first_line: int, batch: Batch) -> None:
    """icefall's training log (k2/lhotse speech recipes)::

        Epoch 1, batch 50, loss[loss=0.31, simple_loss=0.4, over 1234.00 frames. ], tot_loss[loss=0.42,
            simple_loss=0.5, over 5678.00 frames. ], batch size: 52, lr: 4.5e-02, grad_scale: 2.0
        Epoch 1, validation: loss=0.35, simple_loss=0.45, over 94403.00 frames.

    ``loss[...]`` is the batch's own values, ``tot_loss[...]`` a running average over the last
    batches (weighted by their frames): two series each, ``loss`` and ``tot_loss`` (icefall's own
    TensorBoard names, ``train/current_loss`` and ``train/tot_loss``), so a spike of the batch is
    not smoothed into the average nor the average zigzag with the batch. The batch's ``loss`` is
    the run's loss: the analysis smooths it itself. The frames are how much was averaged and the
    batch size the utterances in the batch, counts, not metrics.

    The batch count restarts every epoch, from 0: the step is the global batch (see
    :class:`~tuiloss.core.formats.counters.EpochCounter`). Validation runs every few thousand
    batches, within an epoch: its ``valid_`` values are at the batch reached.
    """
    state = parser.state
    found = sorted([*_ICEFALL_BATCH.finditer(text), *_ICEFALL_VALID.finditer(text)], key=lambda m: m.start())
    for match in found:
        if state.counter is None:
            state.counter = EpochCounter(from_zero=True)
        counter = state.counter
        epoch = float(match["epoch"])
        if match.re is _ICEFALL_BATCH:
            pairs = _icefall_pairs(match["loss"], "") + _icefall_pairs(match["tot"], "tot_")
            pairs += [(m["key"].strip(), _num(m["value"])) for m in _ICEFALL_FIELD.finditer(match["rest"])
                      if m["key"].strip() not in _ICEFALL_NOT_METRICS]
            inner = float(match["batch"])
        else:
            pairs = _icefall_pairs(match["pairs"], "valid_")
            inner = counter.last if counter.epoch == epoch and counter.last is not None else 0.0
        if not pairs:
            batch.skip("malformed line", _line_no(text, match.start(), first_line), match[0])
            continue
        parser.matched += 1
        state.derived = True
        state.meta["step_key"] = "batch"  # made global: the batches of the epochs before, plus this one
        for step, items in counter.add(epoch, inner, pairs):
            state.step = step
            for key, value in items:
                _emit(state, step, key, value)


def _icefall_pairs(summary: str, prefix: str) -> list[tuple[str, float | None]]:
    """The ``name=value`` pairs of one of icefall's summaries, named with ``prefix``."""
    return [(prefix + m["key"], _num(m["value"])) for m in _ICEFALL_PAIR.finditer(summary)]


# -- Caffe (glog) ------------------------------------------------------------------

_CAFFE_ITER = re.compile(
    r"^[^\n]*?\] Iteration (?P<step>\d+)(?: \([^)\n]*\))?, (?:(?P<key>loss|lr) = (?P<value>" + NUM + r")|(?P<test>Testing net) \(#(?P<net>\d+)\))[ \t]*\r?$",
    re.M,
)
_CAFFE_OUTPUT = re.compile(
    r"^[^\n]*?\][ \t]+(?P<phase>Train|Test) net output #\d+: (?P<key>[^\s=]+) = (?P<value>" + NUM + r")(?: \([^)\n]*\))?[ \t]*\r?$",
    re.M,
)


def _parse_caffe(parser: "TextParser", text: str, first_line: int, batch: Batch) -> None:
    """Caffe's solver log (glog lines)::

        I0717 21:06:08.612304  9965 solver.cpp:218] Iteration 100 (10.5 iter/s, 9.5s/100 iters), loss = 0.52
        I0717 21:06:08.612390  9965 solver.cpp:237]     Train net output #0: loss = 0.51 (* 1 = 0.51 loss)
        I0717 21:06:08.612417  9965 sgd_solver.cpp:105] Iteration 100, lr = 0.01
        I0717 21:06:58.502228  9965 solver.cpp:337] Iteration 500, Testing net (#0)
        I0717 21:06:58.701591  9965 solver.cpp:404]     Test net output #0: accuracy = 0.98

    (older Caffe prints ``Iteration 100, loss = 0.52``, without the speed). ``loss`` is the
    solver's loss (smoothed over ``average_loss`` iterations); a net output line belongs to the
    iteration before it and is named by its phase: ``train/loss``, ``test/accuracy``
    (``test1/...`` for a second test net).
    """
    state = parser.state
    state.meta["step_key"] = "iteration"
    events = [(m.start(), m) for m in _CAFFE_ITER.finditer(text)]
    events += [(m.start(), m) for m in _CAFFE_OUTPUT.finditer(text)]
    events.sort(key=lambda e: e[0])
    for pos, match in events:
        parser.matched += 1
        if match.re is _CAFFE_ITER:
            state.step = float(match["step"])
            if match["test"]:
                state.test_net = int(match["net"])  # the test net whose outputs follow
            else:
                _emit(state, state.step, match["key"], _num(match["value"]))
            continue
        if state.step is None:
            batch.skip("metric before any step", _line_no(text, pos, first_line), match[0])
            continue
        phase = "train" if match["phase"] == "Train" else "test" + (str(state.test_net) if state.test_net else "")
        _emit(state, state.step, f"{phase}/{match['key']}", _num(match["value"]))


# -- Marian NMT ------------------------------------------------------------------------

# ``Ep. 1 : Up. 500 : Sen. 61,500 : Cost 9.07 * 1,363,970 @ 4,095 after 4,123,456 : Time 52.07s : ...`` and
# ``[valid] Ep. 1 : Up. 5000 : cross-entropy : 5.3789 : new best``: the epoch, the updates, then fields
_MARIAN = re.compile(r"(?P<valid>\[valid\] )?Ep\. (?P<epoch>\d+) : Up\. (?P<updates>\d+) : (?P<rest>[^\n]*)")
# a field of a training line: ``Cost 9.07 * ...``, ``L.r. 1.87e-05``, ``gNorm 0.92``, ``Time 52.07s``
_MARIAN_FIELD = re.compile(r"^(?P<key>[A-Za-z][\w.\-]*)\s+(?P<value>" + NUM + r")")
# ``26189.43 words/s``: a speed, its unit after its number
_MARIAN_SPEED = re.compile(r"^(?P<value>" + NUM + r")\s+(?P<key>\w+/s)$")
#: Marian's training fields by the names given them; None: a count, no metric (sentences seen).
_MARIAN_NAMES = {"Cost": "cost", "L.r.": "lr", "Time": "time", "Sen.": None}


def _parse_marian(parser: "TextParser", text: str, first_line: int, batch: Batch) -> None:
    """Marian NMT's training log::

        [2022-06-05 10:01:08] Ep. 1 : Up. 500 : Sen. 61,500 : Cost 9.07076065 * 1,363,970 @ 4,095
            after 4,123,456 : Time 52.07s : 26189.43 words/s : gNorm 0.9214 : L.r. 1.8750e-05
        [2022-06-05 10:08:58] [valid] Ep. 1 : Up. 5000 : cross-entropy : 5.3789 : new best

    The step is the updates (``Up.``). ``Cost`` is the training loss, over the labels counted
    after ``*`` (those counts, the sentences seen and the labels so far are no metrics); ``Time``
    is the seconds the last updates shown took. A validation line gives one metric, named by
    Marian (``valid_cross-entropy``, ``valid_perplexity``, ``valid_bleu-detok``); whether it is a
    new best is no value.
    """
    state = parser.state
    for match in _MARIAN.finditer(text):
        fields = match["rest"].split(" : ")
        step = float(match["updates"])
        if match["valid"]:
            pairs = [(f"valid_{fields[0].strip()}", _num(fields[1]))] if len(fields) > 1 else []
        else:
            pairs = []
            for field in fields:
                field = field.strip()
                found = _MARIAN_FIELD.match(field) or _MARIAN_SPEED.match(field)
                if found is not None:
                    key = _MARIAN_NAMES.get(found["key"], found["key"])
                    if key is not None:
                        pairs.append((key, _num(found["value"])))
        if not pairs or any(value is None for _, value in pairs):
            batch.skip("malformed line", _line_no(text, match.start(), first_line), match[0])
            continue
        parser.matched += 1
        state.step = step
        state.meta["step_key"] = "updates"
        for key, value in pairs:
            _emit(state, step, key, value)


# -- DreamerV3's console -----------------------------------------------------------------

# ``--------------------[Step 10000]--------------------``: the step of the line of metrics under it
_DREAMER_STEP = re.compile(r"^-+\[Step (?P<step>\d+)\]-+[ \t]*$")
# one ``name value`` field of the line under it, the fields parted by `` / ``: ``train/loss/dec 2.6e4``
_DREAMER_FIELD = re.compile(r"^(?P<key>[A-Za-z_][\w/.\-]*) (?P<value>" + NUM + r")$")


def _parse_dreamer(parser: "TextParser", text: str, first_line: int, batch: Batch) -> None:
    """DreamerV3's console log (embodied's terminal output)::

        --------------------[Step 10000]--------------------

        episode/score 20 / episode/length 1000 / train/loss/dec 2.6e4 / train/loss/rew 0.52 / ...

    A ruled header gives the step; the line of ``name value`` fields under it, parted by
    `` / ``, its metrics (their names are those of its ``metrics.jsonl``, their values
    rounded to a few digits). Other lines (``Writing metrics: ...``) are no metrics.
    """
    state = parser.state
    for line in text.split("\n"):
        if line.startswith("-") and "[Step " in line:
            head = _DREAMER_STEP.match(line)
            if head is not None:
                state.step = float(head["step"])
                state.meta["step_key"] = "step"
                parser.matched += 1
            continue
        if " / " not in line or state.step is None:
            continue
        found = 0
        for field in line.strip().split(" / "):
            pair = _DREAMER_FIELD.match(field.strip())
            if pair is not None:
                found += _emit(state, state.step, pair["key"], _num(pair["value"]))
        parser.matched += found > 0


# -- Sentence-Transformers' evaluators (before v3) -------------------------------------

# ``EmbeddingSimilarityEvaluator: Evaluating the model on sts-dev dataset in epoch 0 after 180 steps:``,
# ``... dataset after epoch 0:`` (the epoch's end), ``... on sts-test dataset:`` (after training)
_SBERT_HEAD = re.compile(
    r"EmbeddingSimilarityEvaluator: Evaluating the model on (?P<name>\S+) dataset"
    r"(?: in epoch (?P<epoch>\d+) after (?P<steps>\d+) steps| after epoch (?P<end>\d+))?:[ \t]*$"
)
# ``Cosine-Similarity :	Pearson: 0.8198	Spearman: 0.8238``: two correlations of one similarity
_SBERT_LINE = re.compile(
    r"(?P<sim>Cosine-Similarity|Manhattan-Distance|Euclidean-Distance|Dot-Product-Similarity)\s*:"
    r"\s*Pearson:\s*(?P<pearson>" + NUM + r")\s+Spearman:\s*(?P<spearman>" + NUM + r")[ \t]*$"
)
#: The similarities by the names Sentence-Transformers v3 gives them.
_SBERT_SIMILARITIES = {"Cosine-Similarity": "cosine", "Manhattan-Distance": "manhattan",
                       "Euclidean-Distance": "euclidean", "Dot-Product-Similarity": "dot"}


def _parse_sbert(parser: "TextParser", text: str, first_line: int, batch: Batch) -> None:
    """Sentence-Transformers' similarity evaluations, as its versions before 3 log them::

        2021-07-06 17:41:16 - EmbeddingSimilarityEvaluator: Evaluating the model on sts-dev dataset in epoch 0 after 180 steps:
        2021-07-06 17:41:30 - Cosine-Similarity :	Pearson: 0.8198	Spearman: 0.8238
        2021-07-06 17:41:30 - Manhattan-Distance:	Pearson: 0.8098	Spearman: 0.8118

    The steps count within the epoch: an evaluation is at the global step (see
    :class:`~tuiloss.core.formats.counters.EpochCounter`), one ``after epoch 0`` at the epoch's
    end, and one with neither (the test after training) at the step reached. Each similarity
    gives two correlations, named as v3 names them: ``eval_sts-dev_spearman_cosine``. The loss
    is not logged.
    """
    state = parser.state
    for line in text.split("\n"):
        if "Evaluating the model on" in line:
            head = _SBERT_HEAD.search(line)
            if head is None:
                continue
            parser.matched += 1
            state.evaluated = _sbert_head(state, head)
        elif state.evaluated and ("Pearson" in line):
            row = _SBERT_LINE.search(line)
            if row is None:
                continue
            parser.matched += 1
            sim = _SBERT_SIMILARITIES[row["sim"]]
            for kind in ("pearson", "spearman"):
                _emit(state, state.step, f"eval_{state.evaluated}_{kind}_{sim}", _num(row[kind]))


def _sbert_head(state: _State, head: re.Match) -> str:
    """Place an evaluation's header: its step, made global, becomes ``state.step``; the name of its
    dataset, or "" when its step is not known yet (the lines of a log resumed past its first epoch)."""
    if head["epoch"] is None and head["end"] is None:
        if state.step is None:
            state.step = 0.0
        return head["name"]
    if state.counter is None:
        state.counter = EpochCounter()
    state.derived = True
    state.meta["step_key"] = "steps"
    if head["epoch"] is not None:
        placed = state.counter.add(float(head["epoch"]), float(head["steps"]), None)
    else:
        placed = state.counter.add(float(head["end"]), None, None)
    if not placed:
        return ""
    state.step = placed[-1][0]
    return head["name"]


# -- Darknet (YOLO v2-v4) ------------------------------------------------------------

_DARKNET = re.compile(
    r"^[ \t]*(?P<step>\d+): (?P<loss>" + NUM + r"), (?P<avg>" + NUM + r") avg(?: loss)?, (?P<rate>" + NUM
    + r") rate, (?P<seconds>" + NUM + r") seconds, (?P<images>\d+) images(?:, " + NUM + r" hours left)?[ \t]*\r?$",
    re.M,
)


def _parse_darknet(parser: "TextParser", text: str, first_line: int, batch: Batch) -> None:
    """Darknet's line per iteration (``detector train``)::

         402: 27.874079, 27.874079 avg loss, 0.000068 rate, 9.233807 seconds, 25728 images, -1.000000 hours left

    the iteration, its loss, the running average Darknet plots, the learning rate, the
    iteration's time and the images seen (YOLOv2 prints ``avg`` for ``avg loss``, and no
    hours left). The region and loading lines between them are other text.
    """
    state = parser.state
    state.meta["step_key"] = "iteration"
    for match in _DARKNET.finditer(text):
        parser.matched += 1
        step = float(match["step"])
        for name, group in (("loss", "loss"), ("avg loss", "avg"), ("rate", "rate"), ("seconds", "seconds"),
                            ("images", "images")):
            _emit(state, step, name, _num(match[group]))


# -- mmdetection / mmengine text logs ---------------------------------------------

_MMDET = re.compile(
    r"^.*?\bEpoch(?:\((?P<mode>\w+)\))?[ \t]*\[(?P<epoch>\d+)\][ \t]*\[[ \t]*(?P<inner>\d+)(?:[ \t]*/[ \t]*(?P<total>\d+))?[ \t]*\][ \t]*(?P<rest>.*)$",
    re.M,
)


def _parse_mmdet(parser: "TextParser", text: str, first_line: int, batch: Batch) -> None:
    """``Epoch [6][1050/3750]  lr: ..., loss: ...``: the inner count restarts every epoch.

    The step is the global iteration (see :mod:`~tuiloss.core.formats.counters`);
    ``Epoch(val) [e][...]`` lines are placed at the end of epoch ``e``, their
    metrics named ``val/...`` as in mmdetection's ``.log.json``.
    """
    state = parser.state
    if state.counter is None:
        state.counter = EpochCounter()
    state.derived = True
    state.meta["step_key"] = "iter"  # made global: (epoch - 1) * iterations per epoch + iter
    if "max_epochs" in text:
        planned = MAX_EPOCHS.search(text)  # the config dump at the top of the log
        if planned is not None:
            state.meta["planned_epochs"] = float(planned[1])
    for match in _MMDET.finditer(text):
        parser.matched += 1
        mode = (match["mode"] or "train").lower()
        val = mode in ("val", "valid", "validation", "test", "eval")
        pairs = _fields(match["rest"])
        if not pairs and not val:
            batch.skip("malformed line", _line_no(text, match.start(), first_line), match[0])
            continue
        prefix = "val/" if val else ""
        total = None if val or match["total"] is None else float(match["total"])
        payload = [(prefix + key, value) for key, value in pairs]
        inner = None if val else float(match["inner"])
        for step, items in state.counter.add(float(match["epoch"]), inner, payload, total):
            state.step = step
            for key, value in items:
                _emit(state, step, key, value)
    if "planned_epochs" in state.meta and state.counter.size:
        state.meta["planned_steps"] = state.meta["planned_epochs"] * state.counter.size


# -- YOLOv5 up to v5.0, YOLOv7, YOLOR, ScaledYOLOv4: results.txt -------------------------

# a row of ``results.txt`` (``'%10s' * 2 + '%10.4g' * 13``): the epoch and the last one (``0/29``), the GPU
# memory (``1.86G``), then 13 numbers
_YOLO_RESULTS = re.compile(
    r"^[ \t]*(?P<epoch>\d+)/(?P<last>\d+)[ \t]+[\d.]+G(?P<cells>(?:[ \t]+" + NUM + r"){13})[ \t]*\r?$", re.M
)
#: Its 13 numbers, named as YOLOv5's ``results.csv`` names them since v6 (None: no metric, the labels in
#: the last batch and the image size)
_YOLO_COLUMNS = ("train/box_loss", "train/obj_loss", "train/cls_loss", "train/total_loss", None, None,
                 "metrics/precision", "metrics/recall", "metrics/mAP_0.5", "metrics/mAP_0.5:0.95",
                 "val/box_loss", "val/obj_loss", "val/cls_loss")


def _parse_yolo_results(parser: "TextParser", text: str, first_line: int, batch: Batch) -> None:
    """The ``results.txt`` YOLOv5 (up to v5.0) and the trainers built on its code write, a row per
    epoch with no header::

              0/29     1.86G   0.09854   0.09318         0    0.1917        24       416         0 ...
             29/29     1.93G   0.05005   0.08632         0    0.1364        47       416     0.273 ...

    The step is the epoch (counted from 0, to the last one after the slash: the planned total).
    The columns are the train losses (box, objectness, class, their total), the labels of the
    last batch and the image size (no metrics), precision, recall, mAP@0.5, mAP@0.5:0.95 and the
    validation losses.
    """
    state = parser.state
    for match in _YOLO_RESULTS.finditer(text):
        parser.matched += 1
        step = float(match["epoch"])
        state.step = step
        state.meta["step_key"] = "epoch"
        state.meta["planned_steps"] = float(match["last"])
        for name, cell in zip(_YOLO_COLUMNS, match["cells"].split()):
            if name is not None:
                _emit(state, step, name, _num(cell))


# -- rsl_rl (legged_gym, Isaac Lab, Genesis' locomotion examples) ---------------------------

# the head of a block, centred: ``                Learning iteration 5/101``
_RSL_HEAD = re.compile(r"^[ \t]*Learning iteration (?P<n>\d+)/(?P<m>\d+)[ \t]*\r?$", re.M)
# one right-aligned ``name: value`` line of a block: ``Value function loss: 0.0125``, ``Iteration time: 1.18s``
_RSL_ITEM = re.compile(r"^[ \t]*(?P<key>[A-Za-z][\w /.\-]*?):[ \t]+(?P<value>" + NUM + r")(?P<unit>s)?[ \t]*\r?$", re.M)
#: A block's lines that are no metrics: the environment steps so far (the iteration is the step).
_RSL_NOT_METRICS = frozenset({"Total timesteps"})


def _parse_rsl_rl(parser: "TextParser", text: str, first_line: int, batch: Batch) -> None:
    """rsl_rl's block an iteration of PPO::

        ################################################################################
                                  Learning iteration 5/101
                               Computation: 190068 steps/s (collection: 0.373s, learning 0.144s)
                       Value function loss: 0.0030
                            Surrogate loss: -0.0081
                         Mean total reward: 1.20
          Mean episode rew_tracking_lin_vel: 0.0850
        --------------------------------------------------------------------------------
                           Total timesteps: 589824
                            Iteration time: 0.52s

    (Isaac Lab's runner prints ``Mean value_function loss:``, ``Mean reward:``, ``Episode_Reward/...:``).
    Each value is a point at the iteration, the planned total after the slash. The speed, the times
    (``1.18s``) and the environment steps so far are no metrics.
    """
    state = parser.state
    found = sorted([*_RSL_HEAD.finditer(text), *_RSL_ITEM.finditer(text)], key=lambda m: m.start())
    for match in found:
        parser.matched += 1
        if match.re is _RSL_HEAD:
            state.step = float(match["n"])
            state.meta["step_key"] = "iteration"
            state.meta["planned_steps"] = float(match["m"])
        elif state.step is None:
            batch.skip("metric before any step", _line_no(text, match.start(), first_line), match[0])
        elif not match["unit"] and match["key"].strip() not in _RSL_NOT_METRICS:
            _emit(state, state.step, match["key"], _num(match["value"]))


# -- VITS and its descendants (so-vits-svc, Bert-VITS2, GPT-SoVITS, RVC) ---------------------

# ``Train Epoch: 8 [14%]``, then the list VITS logs: its losses, the global step and the learning rate,
# ``[2.37, 2.36, 10.53, 19.23, 1.89, 200, 9.99e-05]`` (RVC logs ``[200, 9.99e-05]`` and its losses after it)
_VITS_LIST = re.compile(r"^[^\n\[]*\[(?P<items>(?:[-+]?[\d.]+(?:[eE][-+]?\d+)?, )*(?P<step>\d+), (?P<lr>" + NUM + r"))\][ \t]*\r?$", re.M)
# RVC's losses after the list: ``loss_disc=3.728, loss_gen=3.328, loss_fm=5.902,loss_mel=23.647, loss_kl=2.332``
_VITS_PAIRS = re.compile(r"^[^\n=]*?(?P<pairs>(?<![\w.])loss_\w+=" + NUM + r"(?:,\s*[A-Za-z_]\w*=" + NUM + r")+)[ \t]*\r?$", re.M)
#: The losses of the list, as VITS's ``train.py`` puts them: the discriminator's, the generator's, feature
#: matching, mel, ..., KL last (VITS and Bert-VITS2 put the duration's before it, GPT-SoVITS ``kl_ssl``).
_VITS_LOSSES = ("loss_disc", "loss_gen", "loss_fm", "loss_mel")


def _parse_vits(parser: "TextParser", text: str, first_line: int, batch: Batch) -> None:
    """VITS's training log and the many trainers built on its ``train.py``::

        2023-02-08 18:10:29,149 32k INFO Train Epoch: 8 [14%]
        2023-02-08 18:10:29,150 32k INFO [2.37, 2.36, 10.53, 19.23, 1.89, 200, 9.99e-05]

    the losses, the global step and the learning rate in a list with no names: the first four
    and the last named as ``train.py`` names them (``loss_disc``, ``loss_gen``, ``loss_fm``,
    ``loss_mel``, ..., ``loss_kl``), the others by their place (``loss_4``). RVC logs the step
    and the rate alone, ``[200, 9.99e-05]``, then ``loss_disc=3.728, loss_gen=3.328, ...``,
    read at that step.
    """
    state = parser.state
    state.meta["step_key"] = "global_step"
    found = sorted([*_VITS_LIST.finditer(text), *_VITS_PAIRS.finditer(text)], key=lambda m: m.start())
    for match in found:
        if match.re is _VITS_PAIRS:
            if state.step is None:
                continue
            parser.matched += 1
            for pair in _PAIR_TIGHT.finditer(match["pairs"]):
                _emit(state, state.step, pair["key"], _num(pair["value"]))
            continue
        parser.matched += 1
        step = state.step = float(match["step"])
        losses = [_num(item) for item in match["items"].split(", ")[:-2]]
        names = [f"loss_{k}" for k in range(len(losses))]
        if len(losses) >= 5:
            names[:4], names[-1] = _VITS_LOSSES, "loss_kl"
        for name, value in zip(names, losses):
            _emit(state, step, name, value)
        _emit(state, step, "lr", _num(match["lr"]))


# -- Stable-Baselines3's tables -------------------------------------------------------

_SB3_ROW = re.compile(r"^\|(?P<indent>[ \t]*)(?P<key>[^|\n]*?)[ \t]*\|[ \t]*(?P<value>[^|\n]*?)[ \t]*\|[ \t]*\r?$")
_SB3_RULER = re.compile(r"^-{5,}[ \t]*\r?$")
#: What counts in an SB3 table rather than measures: the step, and the counts beside it (OpenAI
#: baselines' ``nupdates`` and ``serial_timesteps`` too, Spinning Up's ``Epoch``).
_SB3_COUNTS = frozenset({"total_timesteps", "iterations", "episodes", "n_updates", "nupdates", "serial_timesteps",
                         "Epoch"})
#: Where a table says its step, most preferred first: SB3's, OpenAI baselines', Spinning Up's (its
#: environment steps, else its epoch).
_SB3_STEPS = ("time/total_timesteps", "total_timesteps", "TotalEnvInteracts", "Epoch")


def _parse_sb3(parser: "TextParser", text: str, first_line: int, batch: Batch) -> None:
    """The tables Stable-Baselines3 prints, one per update, between rulers of dashes::

        ------------------------------------
        | rollout/           |             |
        |    ep_rew_mean     | -1.2e+03    |
        | time/              |             |
        |    total_timesteps | 2048        |
        | train/             |             |
        |    loss            | 0.123       |
        ------------------------------------

    A row under a section is ``section/key`` (``rollout/ep_rew_mean``); a table's values are
    points at its ``time/total_timesteps``, once its closing ruler is read (a table may
    arrive in two reads). Its counts (iterations, episodes, updates) are no metrics. OpenAI
    baselines' logger prints the same tables without sections (``| eprewmean | 34.9 |``,
    ``| total_timesteps | 1692672 |``), and Spinning Up's a table an epoch, its names right-aligned
    (``|      AverageEpRet |            22.7 |``), at ``TotalEnvInteracts`` (printed to three
    digits: ``4e+03``), its ``Epoch`` no metric.
    """
    state = parser.state
    if state.meta.get("step_key") not in _SB3_STEPS:
        state.meta["step_key"] = "total_timesteps"
    for line in text.split("\n"):
        if _SB3_RULER.match(line):
            parser.matched += 1
            values, state.block, state.section = state.block, None, ""
            key = next((key for key in _SB3_STEPS if key in (values or {})), None)
            if key is None:
                continue  # an opening ruler, or a table with no step to place it at
            step = values.pop(key)
            state.meta["step_key"] = key.rpartition("/")[2]
            state.step = step
            for name, value in values.items():
                if name.rpartition("/")[2] not in _SB3_COUNTS:
                    _emit(state, step, name, value)
            continue
        row = _SB3_ROW.match(line)
        if row is None:
            continue
        parser.matched += 1
        if state.block is None:
            state.block = {}
        key, value = row["key"], row["value"]
        under = len(row["indent"]) > 1  # a section's rows are indented; the section is not
        if not under and key.endswith("/") and not value:
            state.section = key
            continue
        number = _num(value)
        if number is not None and key:
            state.block[(state.section if under else "") + key] = number


# -- AllenNLP (0.x to 2.x): an epoch's bars ------------------------------------------------

# its trainer's lines, behind its logger's prefix (``2019-10-15 12:46:03,548 - INFO - allennlp.training.trainer - ``):
# ``Epoch 1/39`` (counted from 0, to the last), then ``Training`` or ``Validating`` before each bar, and the
# rows of its table of the epoch's metrics (``loss          |     3.023  |     2.489``)
_ALLENNLP_LINE = re.compile(r"\ballennlp\.training\.[\w.]+ - (?:Epoch (?P<n>\d+)/(?P<last>\d+)|(?P<phase>Training|Validating)"
                            r"|[ \t]*Training \|[ \t]*Validation|[\w/@.\-]+ *\|[^|\n]*\|[^|\n]*)[ \t]*\r?$")
# a phase's bar, its running means in the description: ``accuracy: 0.2511, loss: 3.0232 ||: 100%|###| 125/125 [...]``
_ALLENNLP_BAR = re.compile(r"^(?P<desc>[^|\n]*?)\s*\|\|:\s*\d{1,3}%\|[^|\n]*\|\s*(?P<n>\d+)/(?P<m>\d+)\b")


def _parse_allennlp(parser: "TextParser", text: str, first_line: int, batch: Batch) -> None:
    """AllenNLP's trainer: an epoch's line, then a bar for training and one for validation, whose
    descriptions hold the running means over the epoch::

        ... - INFO - allennlp.training.trainer - Epoch 1/39
        ... - INFO - allennlp.training.trainer - Training
        accuracy: 0.2511, accuracy3: 0.4494, loss: 3.0232 ||: 100%|##########| 125/125 [00:38<00:00,  3.23it/s]
        ... - INFO - allennlp.training.trainer - Validating
        accuracy: 0.3684, accuracy3: 0.5976, loss: 2.4891 ||: 100%|##########| 31/31 [00:01<00:00, 20.92it/s]
        ... - INFO - allennlp.training.tensorboard_writer - loss          |     3.023  |     2.489

    A full bar gives the epoch's points (the step is the epoch, from 0: ``Epoch 1/39`` plans 40),
    the validation's named ``val_``; a bar redrawn (``\r``, or a line a redraw in its own log file)
    gives them once, and a bar not full is progress. The table after them repeats the same
    means rounded: no points.
    """
    state = parser.state
    for line in text.split("\n"):
        if "allennlp.training" in line:
            match = _ALLENNLP_LINE.search(line)
            if match is None:
                continue
            parser.matched += 1
            if match["n"] is not None:
                state.step = state.epoch = float(match["n"])
                state.phase = ""
                state.meta["step_key"] = "epoch"
                state.meta["planned_steps"] = float(match["last"]) + 1
            elif match["phase"] is not None:
                state.phase = "val_" if match["phase"] == "Validating" else ""
            continue
        if "||:" not in line:
            continue
        bar = _ALLENNLP_BAR.match(line.rstrip("\r").rpartition("\r")[2])
        if bar is None:
            continue
        parser.matched += 1
        done = (state.epoch, state.phase)
        if state.epoch is None or bar["n"] != bar["m"] or state.bar_read == done:
            continue  # before any epoch, a bar half-way, or the same full bar drawn again
        state.bar_read = done
        for key, value in _fields(bar["desc"]):
            _emit(state, state.epoch, state.phase + key, value)


# -- Ray Tune and RLlib: ``Result for <trial>:`` blocks --------------------------------

_RAY_HEAD = re.compile(r"^Result for \S+?:[ \t]*\r?$")
_RAY_ITEM = re.compile(r"^(?P<indent> +)(?P<key>[^:\n]+?):(?:[ \t]+(?P<value>[^\n]*?))?[ \t]*\r?$")
#: Where a block says its step, most preferred first.
_RAY_STEPS = ("timesteps_total", "training_iteration")
#: Sections of a block that hold no metrics (the settings, histograms' lists, the machine's load) ...
_RAY_SECTIONS = frozenset({"config", "hist_stats", "perf", "sampler_perf", "timers", "counters"})
#: ... and keys that count, name or locate rather than measure.
_RAY_NOT_METRICS = frozenset({
    "pid", "timestamp", "node_ip", "date", "done", "experiment_id", "hostname", "trial_id", "experiment_tag",
    "agent_timesteps_total", "iterations_since_restore",
    "timesteps_since_restore", "episodes_total", "episodes_this_iter", "num_healthy_workers", "time_since_restore",
    "num_agent_steps_sampled", "num_agent_steps_trained", "num_steps_sampled", "num_steps_trained",
})


def _parse_ray(parser: "TextParser", text: str, first_line: int, batch: Batch) -> None:
    """The result Ray Tune prints at each training iteration of a trial (RLlib's runs), a YAML
    block under ``Result for <trial>:`` that ends at a blank line::

        Result for PPO_CartPole-v1_95ec4_00000:
          episode_reward_mean: 28.86
          info:
            learner:
              default_policy:
                learner_stats:
                  total_loss: 5938.03
          timesteps_total: 20000
          training_iteration: 5

    Its values are points at ``timesteps_total`` (else ``training_iteration``), nested keys
    joined by ``/`` (``info/learner/default_policy/learner_stats/total_loss``), once the block
    ends (it may arrive in several reads). The settings, histograms, timers and the machine's
    load, and what counts, names or locates the trial (``pid``, ``date``, ``episodes_total``),
    are no metrics.
    """
    state = parser.state
    state.meta["step_key"] = "timesteps_total"
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()  # the end of the read, not a blank line: a block may go on in the next
    for line in lines:
        if _RAY_HEAD.match(line):
            parser.matched += 1
            _end_ray_block(state)
            state.block, state.nest = {}, []
            continue
        if state.block is None:
            continue
        item = _RAY_ITEM.match(line)
        if item is None:
            if not line.strip() or not line[:1].isspace():
                _end_ray_block(state)  # a blank line, or text at the margin: the block is over
            continue
        parser.matched += 1
        indent = len(item["indent"])
        while state.nest and state.nest[-1][0] >= indent:
            state.nest.pop()
        path = [key for _, key in state.nest] + [item["key"].strip()]
        if not item["value"]:
            state.nest.append((indent, path[-1]))  # a section: the keys under it are its
            continue
        if path[0] in _RAY_SECTIONS or path[-1] in _RAY_NOT_METRICS:
            continue
        number = _num(item["value"])
        if number is not None:
            state.block["/".join(path)] = number


def _end_ray_block(state: _State) -> None:
    """The points of the Ray Tune block read so far, at its step (none without one)."""
    values, state.block, state.nest = state.block, None, []
    if not values:
        return
    steps = [values.pop(key) for key in _RAY_STEPS if key in values]  # counters both: no points
    step = steps[0] if steps else None
    if step is None or not math.isfinite(step):
        return
    state.step = step
    for name, value in values.items():
        _emit(state, step, name, value)


# -- eriklindernoren's PyTorch-YOLOv3, Dopamine, Sample Factory -------------------

# PyTorch-YOLOv3 (and its Complex-YOLO forks) prints a block a batch, then its evaluation's mean AP::
#   ---- [Epoch 0/300, Batch 39/19133] ----
#   | Metrics    | YOLO Layer 0 | YOLO Layer 1 | ...     (the table of each layer's values)
#   Total loss 57.91100311279297
#   ---- ETA 3:00:59.369194
#   ---- mAP 0.41235
_YOLOV3 = re.compile(
    r"^(?:-+ \[Epoch (?P<e>\d+)/(?P<epochs>\d+), Batch (?P<b>\d+)/(?P<n>\d+)\] -+|Total loss (?P<loss>" + NUM + r")"
    r"|-+ mAP (?P<map>" + NUM + r")(?: -+)?)[ \t]*\r?$",
    re.M,
)


def _parse_yolov3(parser: "TextParser", text: str, first_line: int, batch: Batch) -> None:
    """PyTorch-YOLOv3's blocks (see :data:`_YOLOV3`): ``Total loss`` is ``total_loss`` at the global
    batch ``epoch * batches + batch`` its header gives (its epochs count from 0), the mean AP of an
    evaluation ``val_mAP`` at the end of the epoch trained last. The table of each layer's values
    is left out: the total is the loss trained on."""
    state = parser.state
    state.derived = True  # a value is placed by the header above it
    if state.counter is None:
        state.counter = EpochCounter()
        state.counter.base = 0.0  # ``for epoch in range(epochs)``, also in a log that starts later
    for match in _YOLOV3.finditer(text):
        parser.matched += 1
        if match["e"] is not None:
            size = float(match["n"])
            [(state.step, _)] = state.counter.add(float(match["e"]), float(match["b"]), None, size)
            state.meta["step_key"] = "batch"
            state.meta["planned_steps"] = float(match["epochs"]) * size
        elif state.step is None:
            continue  # a value before any header: no place on the axis
        elif match["loss"] is not None:
            _emit(state, state.step, "total_loss", _num(match["loss"]))
        else:
            [(end, _)] = state.counter.add(state.counter.epoch, None, None)
            _emit(state, end, "val_mAP", _num(match["map"]))


# Dopamine's runner, through absl's logger::
#   I0908 17:19:39.618797 1803949 run_experiment.py:446] Starting iteration 0
#   I0908 17:19:40.592262 1803949 run_experiment.py:405] Average undiscounted return per training episode: -168.19
#   I0908 17:19:40.592391 1803949 run_experiment.py:407] Average training steps per second: 1027.80
#   I0908 17:19:45.699378 1803949 run_experiment.py:427] Average undiscounted return per evaluation episode: -279.07
_DOPAMINE = re.compile(
    r"\b(?:Starting iteration (?P<n>\d+)|Average (?P<what>undiscounted return|normalized return|training steps) per "
    r"(?P<per>training episode|evaluation episode|second): (?P<value>" + NUM + r"))[ \t]*\r?$",
    re.M,
)
#: The names Dopamine's statistics give the values of its sentences.
_DOPAMINE_NAMES = {"undiscounted return": "average_return", "normalized return": "average_normalized_return",
                   "training steps": "average_steps_per_second"}


def _parse_dopamine(parser: "TextParser", text: str, first_line: int, batch: Batch) -> None:
    """Dopamine's iterations (see :data:`_DOPAMINE`): each sentence's value at the iteration started
    last, named as its statistics name it (``train_average_return``, ``eval_average_return``,
    ``train_average_steps_per_second``)."""
    state = parser.state
    for match in _DOPAMINE.finditer(text):
        parser.matched += 1
        if match["n"] is not None:
            state.step = float(match["n"])
            state.meta["step_key"] = "iteration"
        elif state.step is not None:
            phase = "eval" if match["per"] == "evaluation episode" else "train"
            _emit(state, state.step, f"{phase}_{_DOPAMINE_NAMES[match['what']]}", _num(match["value"]))


# Sample Factory's reports, every few seconds::
#   [2022-11-30 19:48:21,166][07494] Fps is (10 sec: 22528.2, 60 sec: 20377.6, 300 sec: 20377.6). Total num frames: 3829760. ...
#   [2022-11-30 19:48:21,166][07494] Avg episode reward: [(0, '0.824')]
_SAMPLE_FACTORY = re.compile(
    r"\b(?:Fps is \(\d+ sec: (?P<fps>" + NUM + r")[^)\n]*\)\. Total num frames: (?P<frames>\d+)\."
    r"|Avg episode reward: \[(?P<rewards>[^\]\n]*)\])"
)
_POLICY_REWARD = re.compile(r"\(\s*(?P<policy>\d+)\s*,\s*'(?P<value>" + NUM + r")'\s*\)")


def _parse_sample_factory(parser: "TextParser", text: str, first_line: int, batch: Batch) -> None:
    """Sample Factory's reports (see :data:`_SAMPLE_FACTORY`): the frames counted so far are the step;
    the average episode reward of policy 0 is ``avg_episode_reward`` (of policy k, ``.../policy_k``),
    the frames a second over the shortest window ``fps``. Its sample counts and policy lag are no metrics."""
    state = parser.state
    for match in _SAMPLE_FACTORY.finditer(text):
        parser.matched += 1
        if match["frames"] is not None:
            state.step = float(match["frames"])
            state.meta["step_key"] = "frames"
            fps = _num(match["fps"])
            if fps is not None and math.isfinite(fps):  # ``nan`` until a window has passed
                _emit(state, state.step, "fps", fps)
        elif state.step is not None:
            for reward in _POLICY_REWARD.finditer(match["rewards"]):
                policy = reward["policy"]
                name = "avg_episode_reward" if policy == "0" else f"avg_episode_reward/policy_{policy}"
                _emit(state, state.step, name, _num(reward["value"]))


# -- MLPerf's logging: ``:::MLLOG {json}`` lines ------------------------------------

_MLLOG = re.compile(r"^[^\n]*?:::MLLOG[ \t]+(?P<body>\{[^\n]*\})[ \t]*\r?$", re.M)
#: Where an MLPerf point says its step, most preferred first (a log keeps the first it used).
_MLLOG_STEPS = ("samples_count", "step", "step_num", "iteration", "epoch_num", "epoch_count")


def _parse_mllog(parser: "TextParser", text: str, first_line: int, batch: Batch) -> None:
    """MLPerf's structured lines, behind any rank prefix (``0: :::MLLOG {...}``)::

        :::MLLOG {"namespace": "", "time_ms": 1594520079101, "event_type": "POINT_IN_TIME",
                  "key": "eval_accuracy", "value": 0.5195, "metadata": {"file": "...", "epoch_num": 44}}

    A point in time with a number (or an object of numbers: ``tracked_stats``) and a step in
    its metadata is a point of the metric ``key``; the log's step is the metadata key its
    first point used. Intervals (``eval_start``, whose value is an epoch) and settings (a
    number with no step: ``global_batch_size``) are no points.
    """
    import json

    state = parser.state
    for match in _MLLOG.finditer(text):
        try:
            record = json.loads(match["body"])
        except (ValueError, RecursionError):
            batch.skip("malformed MLLOG record", _line_no(text, match.start(), first_line), match["body"][:200])
            continue
        if not isinstance(record, dict) or record.get("event_type") != "POINT_IN_TIME":
            parser.matched += isinstance(record, dict)
            continue
        parser.matched += 1
        meta, value, key = record.get("metadata"), record.get("value"), record.get("key")
        if not isinstance(meta, dict) or not isinstance(key, str):
            continue
        axis = state.meta.get("step_key")
        if axis is None:
            axis = next((name for name in _MLLOG_STEPS if _is_number(meta.get(name))), None)
        step = meta.get(axis) if axis is not None else None
        if not _is_number(step):
            continue  # a setting, or a point on another axis than the log's
        values = value.items() if isinstance(value, dict) else [(key, value)]
        numbers = [(str(name), float(number)) for name, number in values if _is_number(number)]
        if numbers:
            state.meta["step_key"] = axis
            state.step = float(step)
            for name, number in numbers:
                _emit(state, float(step), name, number)


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


# -- CLU's logging writer (JAX trainers) -------------------------------------------

# ``I1201 12:00:00.123456 140233 logging_writer.py:48] [1000] learning_rate=0.001, train_loss=0.52``
_CLU = re.compile(r"^(?:[^\n\[]*\][ \t]+)?\[(?P<step>\d+)\][ \t]+(?P<rest>[A-Za-z_][\w/.\-]*=[^\n]*)$", re.M)


def _parse_clu(parser: "TextParser", text: str, first_line: int, batch: Batch) -> None:
    """The lines CLU's ``LoggingWriter`` writes: the step in brackets, then ``key=value`` pairs
    joined by commas (a value that is no number, an array or a text, is left out)."""
    state = parser.state
    state.meta.setdefault("step_key", "step")
    for match in _CLU.finditer(text):
        step = float(match["step"])
        found = 0
        for pair in _PAIR_TIGHT.finditer(match["rest"]):
            found += _emit(state, step, pair["key"], _num(pair["value"]))
        if found:
            parser.matched += 1
            state.step = step


# -- average meters: PyTorch's ImageNet example and the many that copied it --------------

# ``Epoch: [0][  10/1307]`` (``Train: [1][10/391]``), an evaluation's batch ``Test: [ 10/196]``
# and its summary `` * Acc@1 75.000 Acc@5 92.000``; torchvision's references, DeiT, DETR and
# DINO print ``Epoch: [0]  [ 50/250]  eta: 0:02:00  lr: 0.000021  loss: 8.8695 (8.9195)``,
# and ``Test:  Acc@1 76.130 Acc@5 92.862`` as a summary
_METER_LINE = re.compile(
    r"^[ \t]*(?:(?P<phase>Epoch|Train|Training|Test|Val|Validation|Eval)\s*:\s*"
    r"(?:\[\s*(?P<epoch>\d+)\s*\]\s*)?\[\s*(?P<inner>\d+)\s*/\s*(?P<total>\d+)\s*\]"
    r"|(?P<summary>\*|(?:Test|Val|Validation|Eval)\s*:(?=\s+[A-Za-z][\w@/.\-]*\s+[-+.\d])))(?P<rest>[^\n]*)$",
    re.M,
)
# ``Loss 2.3915e+01 (1.5221e+01)``, ``loss: 8.8695 (8.9195)``: a meter's latest value, then its running average
_METER = re.compile(r"(?<![\w@.])(?P<name>[A-Za-z][\w@/.\-]*):?\s+(?P<value>" + NUM + r")\s*\(\s*" + NUM + r"\s*\)")
# ``Start training for 300 epochs`` (DeiT, MAE, DETR): the planned epochs
_TRAINING_FOR = re.compile(r"\btraining for (\d+) epochs\b", re.I)
# `` * Acc@1 75.000 Acc@5 92.000``: an evaluation's results, name then value
_METER_RESULT = re.compile(r"(?<![\w@.])(?P<name>[A-Za-z][\w@/.\-]*)\s+(?P<value>" + NUM + r")(?![\w.])")


def _parse_meters(parser: "TextParser", text: str, first_line: int, batch: Batch) -> None:
    """Lines of average meters, as PyTorch's ImageNet example prints them::

        Epoch: [0][  10/1307]\tTime  0.779 ( 5.211)\tData  0.000 ( 0.060)\tLoss 2.3915e+01 (1.5221e+01)\tAcc@1   0.00 (  5.68)
        Test: [ 10/196]\tTime  0.120 ( 0.301)\tLoss 1.2e+00 (1.1e+00)\tAcc@1  70.31 ( 72.02)
         * Acc@1 75.000 Acc@5 92.000

    Each meter is its latest value (the running average after it is left out). The batch
    count restarts every epoch, so the step is the global batch (see
    :mod:`~tuiloss.core.formats.counters`). An evaluation's batches are its progress, not
    points; its summary gives ``val_`` metrics at the end of the epoch trained last.
    """
    state = parser.state
    if state.counter is None:
        state.counter = EpochCounter()
    state.derived = True
    state.meta["step_key"] = "batch"  # made global: epoch * batches per epoch + batch
    for match in _METER_LINE.finditer(text):
        phase = (match["phase"] or "").lower()
        if match["summary"]:
            pairs = [(m["name"], _num(m["value"])) for m in _METER_RESULT.finditer(match["rest"])]
            if not pairs or state.counter.epoch is None:
                continue  # a line that starts with an asterisk, or results before any training
            parser.matched += 1
            payload = [(f"val_{name}", value) for name, value in pairs]
            for step, items in state.counter.add(state.counter.epoch, None, payload):
                state.step = step
                for key, value in items:
                    _emit(state, step, key, value)
            continue
        meters = [(m["name"], _num(m["value"])) for m in _METER.finditer(match["rest"])]
        if not meters:
            continue
        parser.matched += 1
        if phase not in ("epoch", "train", "training"):
            continue  # an evaluation's batch: its progress, read from its summary
        if match["epoch"] is None:
            continue  # ``Epoch: [10/1307]``: no epoch to place it in
        if ": " in match["rest"]:
            # ``lr: 0.000021  loss: 8.8695 (8.9195)  max mem: 5800``: a logger's meters, some
            # printed without their average; each is its first number
            meters = [(key, value) for key, value in _fields(match["rest"]) if key.lower() != "eta"]
        for step, items in state.counter.add(float(match["epoch"]), float(match["inner"]), meters, float(match["total"])):
            state.step = step
            for key, value in items:
                _emit(state, step, key, value)
    if "planned_epochs" in state.meta and state.counter.size:
        state.meta["planned_steps"] = state.meta["planned_epochs"] * state.counter.size


# mmengine's iteration-based loops: ``Iter(train) [  50/90000]  lr: ...  loss: 1.52``
_MMITER = re.compile(
    r"^.*?\bIter\((?P<mode>\w+)\)[ \t]*\[[ \t]*(?P<n>\d+)[ \t]*/[ \t]*(?P<total>\d+)[ \t]*\][ \t]*(?P<rest>.*)$", re.M
)
#: An evaluation's progress, never its results.
_MMITER_PROGRESS = frozenset({"eta", "time", "data_time", "memory"})


def _parse_mmiter(parser: "TextParser", text: str, first_line: int, batch: Batch) -> None:
    """mmengine's iteration-based training: the iteration counts globally, to a planned total::

        Iter(train) [  50/90000]  base_lr: 2.0e-02 lr: 2.0e-02  eta: 1 day, 2:03:04  time: 0.51  loss: 1.52
        Iter(val) [625/625]    coco/bbox_mAP: 0.3740  coco/bbox_mAP_50: 0.5810  time: 0.0431

    An evaluation's batches are its progress; its last (``n/n``) gives ``val/`` results at
    the iteration trained last (its times are no results).
    """
    state = parser.state
    state.meta["step_key"] = "iter"
    for match in _MMITER.finditer(text):
        parser.matched += 1
        pairs = _fields(match["rest"])
        if match["mode"].lower() == "train":
            if not pairs:
                batch.skip("malformed line", _line_no(text, match.start(), first_line), match[0])
                continue
            state.step = float(match["n"])
            state.meta["planned_steps"] = float(match["total"])
            for key, value in pairs:
                _emit(state, state.step, key, value)
        elif match["n"] == match["total"] and state.step is not None:
            for key, value in pairs:
                if key.lower() not in _MMITER_PROGRESS:
                    _emit(state, state.step, f"val/{key}", value)


# a table's header: a counter, then one word a column, a loss among them (``epoch train_loss valid_loss time``)
# or the GPU's memory (YOLOv5 up to v5.0 names its losses' parts alone: ``Epoch gpu_mem box obj cls total``)
_TABLE_WORDS = r"(?:epoch|step|iter|iteration)(?=[ \t][^\n]*(?:loss|gpu_mem))(?:[ \t]+[A-Za-z_][\w/.\-]*){2,}"
_TABLE_HEAD = re.compile(r"^[ \t]*(?P<head>" + _TABLE_WORDS + r")[ \t]*\r?$", re.M | re.I)
# a header of names two spaces apart over a ruler of dashes, one run a column (spaCy's ``spacy train``)
_RULED_HEAD = re.compile(r"^(?P<head>[ \t]*\S[^\n]*?)[ \t]*\r?\n(?P<rule>[ \t]*-+(?:[ \t]+-+)+)[ \t]*\r?$", re.M)
_RULER = re.compile(r"[ \t]*-+(?:[ \t]+-+){2,}[ \t]*\r?")
_RULED = r"\n" + _RULER.pattern + r"(?:\n|$)"  # a ruler of three columns or more: its header may be in the read before
#: Column names of a table that count rather than measure: never metrics; ``#`` (spaCy's step) is the step.
_TABLE_COUNTERS = frozenset({"#", "e", "epoch", "step", "iter", "iteration"})
_TABLE_ROW = re.compile(r"^[ \t]*\d+(?:/\d+)?[ \t].*$", re.M)
# a row whose counter a progress bar's redraw blanked (Chainer's PrintReport under its ProgressBar):
# spaces where the epoch was, then the first metric (``           0.22397     0.109173  ...``)
_BLANKED_ROW = re.compile(r"^[ \t]+[-+]?(?:\d+[.eE]|\.\d|nan|inf)[^\n]*$", re.M)
# Chainer's ProgressBar between the rows: ``200 iter, 0 epoch / 20 epochs`` (the epochs done, of
# those planned) and ``19.812 iters/sec. Estimated time to finish: 0:04:52.75.``; never rows
_CHAINER_BAR = re.compile(r"^[ \t]*(?:\d+ iter, (?P<done>\d+) epoch / (?P<epochs>\d+) epochs"
                          r"|\S+ iters/sec\. Estimated time to finish: [^\n]*?)[ \t]*\r?$")
# YOLOv5's columns named for their part of the loss, in a header that names no loss
_TABLE_PARTS = {"box": "box_loss", "obj": "obj_loss", "cls": "cls_loss", "total": "total_loss"}
#: Columns that are no metrics: the labels (Ultralytics: instances) in the epoch's last batch and the image size.
_TABLE_NOT_METRICS = frozenset({"labels", "targets", "img_size", "instances", "size"})
# YOLOv5's validation under its table, ``Class Images Labels P R mAP@.5 mAP@.5:.95``, over all classes:
# ``all  448  3.41e+03  0.279  0.767  0.57  0.237`` (the images and labels it saw are no results);
# Ultralytics' has four results a task (``Box(P R mAP50 mAP50-95) Mask(P R mAP50 mAP50-95)``)
_TABLE_ALL = re.compile(r"^[ \t]*all(?P<cells>(?:[ \t]+" + NUM + r"){6}(?:(?:[ \t]+" + NUM + r"){4})*)[ \t]*\r?$", re.M)
_TABLE_ALL_NAMES = ("val_precision", "val_recall", "val_mAP@.5", "val_mAP@.5:.95")
# Ultralytics' validation header, its bar's description: ``Class  Images  Instances  Box(P  R  mAP50  mAP50-95): 100%|...``
_VAL_HEAD = re.compile(r"^[^\n]*?\bClass[ \t]+Images[ \t]+Instances[ \t]+(?P<tasks>(?:[A-Za-z]+\([^)\n]*\)[ \t]*)+):", re.M)
_VAL_TASK = re.compile(r"(?P<task>[A-Za-z]+)\((?P<names>[^)\n]*)\)")
_VAL_SHORT = {"P": "precision", "R": "recall"}
# where a row's progress bar starts: ``640: 100%|###| 4/4 [...]`` (Ultralytics), its percentage
_TABLE_BAR = re.compile(r":\s+(\d{1,3})%")
_NOT_AVAILABLE = frozenset({"#na#", "-", "--", "n/a", "na", "none"})


def _parse_table(parser: "TextParser", text: str, first_line: int, batch: Batch) -> None:
    """A table of one row a step under a header of one word a column, as fastai prints it::

        epoch     train_loss  valid_loss  accuracy  time
        0         0.183164    0.049557    0.983807  00:11

    and Ultralytics, whose row ends in the epoch's progress bar, redrawn in place::

          Epoch    GPU_mem   box_loss   cls_loss   dfl_loss  Instances       Size
           1/20      1.19G      1.018      3.009      1.465          2        640: 100%|####| 4/4 [...]

    and spaCy (``spacy train``), whose names may hold a space, two spaces apart over a ruler
    of dashes, and whose step is its ``#`` column (``E``, the epoch, is no metric)::

        E    #       LOSS TOK2VEC  LOSS NER  ENTS_F  ENTS_P  ENTS_R  SCORE
        ---  ------  ------------  --------  ------  ------  ------  ------
          3     100         30.32    700.46   38.60   47.83   32.35    0.39

    YOLOv5 (up to v5.0, YOLOv7) names the losses' parts alone (``Epoch gpu_mem box obj cls total
    labels img_size``: ``box_loss`` ... ``total_loss``, the labels and image size no metrics),
    counts its epochs from 0 (``0/299``: 300 planned), and prints its validation's ``all`` row
    after an epoch's row (``val_precision``, ``val_recall``, ``val_mAP@.5``, ``val_mAP@.5:.95``
    at that epoch). Ultralytics names the ``all`` row's columns in the header above it
    (``Box(P R mAP50 mAP50-95)``: ``val_precision``, ``val_recall``, ``val_mAP50``,
    ``val_mAP50-95``; a mask's or pose's as ``val_mask_precision`` ...); an ``all`` row again at
    the epoch read (the best checkpoint validated after training) is no point. Chainer's PrintReport, under its ProgressBar, prints rows whose epoch the
    bar's carriage return blanked: the epoch after the bar's epochs done, else after the row
    before; the bar's lines are no rows.

    A header again starts a new table (``fine_tune``'s second fit counts its epochs from 0:
    a reset). A row with another number of cells is no row; a row whose bar is not full is
    progress (its values are running means); a cell that says nothing (``#na#``: no
    validation that epoch) or is no number (a time, ``1.19G``) gives no point.
    """
    state = parser.state
    found = list(_TABLE_HEAD.finditer(text))
    if "--" in text:
        found += _RULED_HEAD.finditer(text)
        first = text[: text.find("\n")]
        if parser.last_line and _RULER.fullmatch(first):  # the header ended the read before
            _ruled_head(parser, parser.last_line, first, lines=1)
    heads = {m.start() for m in found}
    if state.table is not None or found:
        found += _TABLE_ROW.finditer(text)
        found += _BLANKED_ROW.finditer(text)
        if "all" in text:
            found += _TABLE_ALL.finditer(text)
        if "Class" in text:
            found += _VAL_HEAD.finditer(text)
    for match in sorted(found, key=lambda m: (m.start(), m.re not in (_TABLE_HEAD, _RULED_HEAD))):
        if match.re is _TABLE_HEAD:
            head = match["head"].strip()  # a notebook's table, copied out, has tabs between names of words
            state.table = tuple(re.split(r"\t+", head)) if "\t" in head else tuple(head.split())
            state.table_evals = not any("loss" in name.lower() for name in state.table)
            if state.table_evals:
                state.table = tuple(_TABLE_PARTS.get(name, name) for name in state.table)
            parser.matched += 1
            continue
        if match.re is _RULED_HEAD:
            _ruled_head(parser, match["head"], match["rule"])
            continue
        if state.table is None or match.start() in heads:
            continue
        if match.re is _TABLE_ALL:
            parser.matched += _table_evals(state, match["cells"])
            continue
        if match.re is _VAL_HEAD:
            state.val_names = _val_names(match["tasks"])
            parser.matched += 1
            continue
        if " iter" in match[0]:
            bar = _CHAINER_BAR.match(match[0])
            if bar is not None:
                parser.matched += 1
                if bar["done"] is not None:
                    state.epoch = float(bar["done"])
                    state.meta["planned_steps"] = float(bar["epochs"])
                continue
        read = None
        for redraw in match[0].split("\r"):
            row = _table_row(state, redraw) if match.re is _TABLE_ROW else _blanked_row(state, redraw)
            read = row if row is not None else read
        if read is None:
            continue  # a progress line, a number that starts other text
        parser.matched += 1
        if not read:
            batch.skip("malformed line", _line_no(text, match.start(), first_line), match[0])


def _ruled_head(parser: "TextParser", head: str, rule: str, lines: int = 2) -> None:
    """Take ``head`` for the table's header if it names one column per run of dashes of ``rule``
    (``lines``: how many of the two lines this read holds)."""
    names = tuple(re.split(r"\s{2,}", head.strip()))
    if len(names) > 2 and len(names) == len(rule.split()) and not any(_num(name) is not None for name in names):
        parser.state.table = names
        parser.matched += lines


def _table_row(state: _State, text: str) -> bool | None:
    """Read one row of the table: whether it gave points; None when it is no finished row."""
    bar = _TABLE_BAR.search(text)
    if bar is not None:
        if bar[1] != "100":
            return None
        text = text[: bar.start()]
    cells = re.split(r"\t+", text.strip()) if "\t" in text.strip() else text.split()
    if len(cells) != len(state.table) or not cells[0].split("/")[0].isdigit():
        return None
    at = state.table.index("#") if "#" in state.table else 0
    counter, _, total = cells[at].partition("/")
    if not counter.isdigit():
        return None
    step = float(counter)
    state.step, state.epoch = step, None  # (the epochs a progress bar said were done: this row's, or before it)
    state.meta["step_key"] = "step" if at else state.table[0].lower()
    if total.isdigit() and int(total) > 0:
        state.table_zero = state.table_zero or step == 0
        state.meta["planned_steps"] = float(total) + state.table_zero
    return _row_points(state, step, cells, at)


def _row_points(state: _State, step: float, cells: list[str], at: int) -> bool:
    """Emit the cells of a row at ``step`` (``at``: its counter's column); whether one gave a point."""
    found = False
    for k, (name, cell) in enumerate(zip(state.table, cells)):
        if k == at or (at and name.lower() in _TABLE_COUNTERS) or cell.lower() in _NOT_AVAILABLE or ":" in cell:
            continue
        if name.lower() in _TABLE_NOT_METRICS:
            continue
        found = _emit(state, step, name, _num(cell)) or found
    return found


def _blanked_row(state: _State, text: str) -> bool | None:
    """Read a row whose epoch a progress bar blanked (see :data:`_BLANKED_ROW`): one cell short,
    under a header that starts with the epoch, every cell a number; None when it is none."""
    cells = text.split()
    if len(state.table) < 3 or len(cells) != len(state.table) - 1 or state.table[0].lower() != "epoch":
        return None
    if any(_num(cell) is None and cell.lower() not in _NOT_AVAILABLE for cell in cells):
        return None
    if state.epoch is not None:
        step, state.epoch = state.epoch + 1, None  # the epoch after those the bar said were done
    else:
        step = state.step + 1 if state.step is not None else 1.0
    state.step = step
    state.meta["step_key"] = "epoch"
    return _row_points(state, step, [""] + cells, 0)


def _table_evals(state: _State, cells: str) -> bool:
    """A validation over all classes (see :data:`_TABLE_ALL`) at the epoch read last, once an epoch,
    named as the validation's header said (Ultralytics) or as YOLOv5's; whether it was read."""
    results = cells.split()[2:]
    names = state.val_names if state.val_names is not None else _TABLE_ALL_NAMES if state.table_evals else None
    if names is None or len(names) != len(results) or state.step is None or state.validated == state.step:
        return False
    state.derived = True  # placed at the step the row before reached
    state.validated = state.step
    for name, cell in zip(names, results):
        _emit(state, state.step, name, _num(cell))
    return True


def _val_names(tasks: str) -> tuple[str, ...]:
    """The names of an Ultralytics validation's results (see :data:`_VAL_HEAD`): the box's
    ``val_precision`` ..., another task's named for it (``val_mask_mAP50``)."""
    names = []
    for task in _VAL_TASK.finditer(tasks):
        part = "" if task["task"] == "Box" else task["task"].lower() + "_"
        names += [f"val_{part}{_VAL_SHORT.get(name, name)}" for name in task["names"].split()]
    return tuple(names)


# -- the general reader: key: value, key=value, dict and JSON lines ---------------

#: Counters a line may carry, finest first: the step is the first one present.
COUNTERS = (
    "trainer/global_step",
    "global_step",
    "num_updates",
    "total_timesteps",
    "consumed_samples",
    "iteration",
    "step",
    "steps",
    "current_steps",
    "iter",
    "batch",
    "micro_step",
    "epoch",
)
_COUNTER_RANK = {name: rank for rank, name in enumerate(COUNTERS)}
_COUNTER_RANK["consumed_samples"] = len(COUNTERS)  # a counter, but never finer than the steps
#: Counters that restart every epoch when an epoch is logged beside them.
_INNER = frozenset({"iter", "batch", "micro_step"})
#: Counters that may count within an epoch announced on a line of its own (``Epoch 2/3`` then
#: ``step 100/500, loss ...``): read with it, they restart or go on (see :class:`EpochCounter`).
_UNDER_EPOCH = _INNER | {"step", "iteration", "steps"}
_SPLITS = ("train_", "valid_", "val_", "eval_", "test_")
#: ``Epoch loaded: 40 - test loss: 15.10``: a counter then one of these names the checkpoint a line's
#: numbers come from (SpeechBrain's tests of the best epoch), a counter still, never a metric.
_CHECKPOINT_WORDS = frozenset({"loaded", "restored", "resumed"})
_COUNTER_WORDS = "|".join(sorted(COUNTERS, key=len, reverse=True))
_COUNTER = re.compile(
    r"(?<![\w.])(?P<key>" + _COUNTER_WORDS + r")\s*(?:[:=]\s*\[?\s*|\s*#\s*|\s+|\s*\[\s*)(?P<n>\d+)(?:\.0+)?(?:\s*/\s*(?P<m>\d+))?(?![\w.%])",
    re.I,
)
# nanoT5's ``Step 100 out of 65536``: a counter and its total in words
_OUT_OF = re.compile(r"(?i)(?<![\w.])(?P<key>" + _COUNTER_WORDS + r")\s+(?P<n>\d+)\s+out of\s+(?P<m>\d+)(?![\w.])")
# the wall-clock time a logger writes before each message, then a colon: nnU-Net's ``2024-03-01 21:57:46.593456: ``
_STAMP = r"\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:[.,]\d+)?:[ \t]"
_STAMP_LEAD = re.compile(r"^" + _STAMP, re.M)
# timm's ``Train: 1 [ 100/1251 (  8%)]`` and ``Epoch 1 [100/500]``: an epoch, then the batch in it
# a line that is an epoch's number and nothing else: ``Epoch 2/3``, ``=== Epoch 2 ===``, ``[Epoch 2]``,
# nnU-Net's ``2024-03-01 21:57:46.593456: Epoch 5``
_EPOCH_LINE = re.compile(r"^(?:" + _STAMP + r")?[\W_]*epoch\s*[:#]?\s*(?P<n>\d+)(?:\s*/\s*(?P<m>\d+))?[\W_]*$", re.I | re.M)
# the same line in the bytes of a chunk a layout reads (see :meth:`TextParser._under_epoch_lines`)
_EPOCH_LINE_BYTES = re.compile(_EPOCH_LINE.pattern.encode(), re.I | re.M)
# one value of the epoch a line of its own announced, alone on its line, as nnU-Net writes them:
# ``train_loss -0.2396``, ``train loss : -0.0944``, ``Current learning rate: 0.00995``, ``Pseudo dice [0.5440]``
# (a list holds a value a class: ``Average global foreground Dice: [0.91, 0.88]``)
_RECORD = re.compile(
    r"^\s*(?P<key>[A-Za-z_][\w./\-]*(?: [A-Za-z_][\w./\-]*){0,4}?)(?:\s*:\s*|\s+)"
    r"(?:\[(?P<items>[^\[\]]*)\]|(?P<value>" + NUM + r"))\s*$"
)
# a loss alone on its line (behind a stamp or the batch's count, MONAI's ``1/16, train_loss: 0.7525``): under
# an epoch line of its own, it shows the general reader's log before any line of a counter and a metric does
# (nnU-Net writes none)
_LOSS_RECORD = re.compile(
    r"(?im)^(?:" + _STAMP + r"|\s*\d+\s*/\s*\d+\s*[,:|])?\s*(?:[A-Za-z_][\w ./\-]{0,40}?)?loss\s*:?\s*" + NUM + r"\s*$"
)
_BEST_KEY = re.compile(r"(?i)^best(?:[\s_]|$)")  # a running best: never a point of its own step
# the learning rate, the one record that names no metric (``Current learning rate: 0.00995``, ``lr: 0.0099``)
_RATE_WORD = re.compile(r"(?i)(?:^|[\s_/.-])(?:lr|learning[\s_]rate)(?:$|[\s_/.-])")
# PyTorch's CIFAR-10 tutorial, ``[1,  2000] loss: 2.170``, and ``[2][150/162] loss=4.44``: the epoch, then the
# batch in it (with the epoch's batches), leading the line
_EPOCH_BATCH = re.compile(
    r"^\s*\[\s*(?P<e>\d+)\s*(?:,\s*(?P<n>\d+)\s*|\]\s*\[\s*(?P<b>\d+)\s*/\s*(?P<m>\d+)\s*)\](?=\s*[A-Za-z_])"
)
# ``Epoch 3 [10/50]``, ``Train: 3 [10/50 (20%)]``, PaddleDetection's ``Epoch: [0] [ 20/300]``:
# the epoch, then the batch within it
_EPOCH_BRACKET = re.compile(r"(?<![\w.])(?:train|training|epoch)\s*:?\s*(?:(?P<e>\d+)|\[\s*(?P<eb>\d+)\s*\])\s*"
                            r"\[\s*(?P<n>\d+)\s*/\s*(?P<m>\d+)\s*[\](]", re.I)
# the planned total of a settings dump or argument list: ``max_iters = 5000``, ``'max_steps': 500``,
# verl's ``total_training_steps: 200``, HF's ``max_train_steps=1000``, the Trainer's banner
# ``Total optimization steps = 1,000``, torchtitan's ``Training starts at step 1, ..., total steps 1000``,
# kohya's sd-scripts ``total optimization steps / 学習ステップ数: 48600`` (its label in English, then in Japanese),
# Unsloth's banner ``Total batch size = 8 | Total steps = 60`` (a ``total steps`` only on a line naming no
# metric: ``Total steps: 5000 | reward: 12`` counts the steps taken)
_PLANNED = re.compile(r"(?<![\w])['\"]?(?:max_(?:update|updates|steps|iters|iterations|train_steps|training_steps)"
                      r"|total_training_steps|num_training_steps|[Tt]otal optimization steps(?: / [^\n:=]{1,40})?)['\"]?\s*[:=]\s*(\d[\d,]*)(?![\d.])"
                      r"|(?i:\btotal steps)\s*(?:[:=]\s*|\s)(\d[\d,]*)(?![\d.])")
#: Text without which a line can hold no planned total (a cheap test before the pattern).
_PLANNED_HINTS = ("max_", "_training_steps", "optimization steps", "otal steps", "otal Steps", "OTAL STEPS")
_PLANNED_HINTS_BYTES = tuple(hint.encode() for hint in _PLANNED_HINTS)
#: ... and those of a settings dump's planned total or planned epochs (``Start training for 300 epochs``).
_PLAN_HINTS_BYTES = _PLANNED_HINTS_BYTES + (b"raining for ",)
# a counter's name qualified as an amount (Unsloth's ``Gradient Accumulation steps = 4``, ``Total steps = 60``):
# on a line naming no metric, a setting, not the step reached
_AMOUNT_BEFORE = re.compile(r"(?i)\b(?:total|max|maximum|num|number of|accumulation|warmup|warm-up)\s+$")
# a tqdm bar's count: ``|#####     | 50/100 [00:05<00:05, ...]``
_BAR_COUNT = re.compile(r"\|\s*(?P<n>\d+)/(?P<m>\d+)\s*\[")
# torchtune's bar: ``1|25|Loss: 1.65:  10%|###   | 25/250 [...]``, the epoch and the step in its description
_COUNTED_BAR = re.compile(r"[ \t]*(?P<epoch>\d+)\|(?P<step>\d+)\|(?P<desc>[A-Za-z_][^|]*?):?\s+\d{1,3}%\|")
# a tqdm bar's head, ``Loading checkpoint shards:  25%|###   |``: its progress, never a metric
_BAR_HEAD = re.compile(r"[^|]*?\d{1,3}%\|[^|]*\|")
# an evaluation's bar, ``valid: 100%|####| 39/39 [...]``, ``Validation DataLoader 0:  40%|``: its
# count is of evaluation batches, not of training steps
_EVAL_BAR = re.compile(
    r"^\W*(?P<phase>val|valid|validation|validating|eval|evaluation|evaluating|test|testing|dev)\b[^|%]*?\d{1,3}%\|", re.I
)
_EVAL_PHASE = {"validating": "val", "validation": "val", "valid": "val", "evaluation": "eval", "evaluating": "eval",
               "testing": "test"}
_EVAL_NAME = re.compile(r"^(?:val|valid|validation|eval|test|dev)(?:[_/ ]|$)", re.I)
_KEY = r"[A-Za-z_][\w./\-()@]*"  # ``Acc@1``, verl's ``val-core/gsm8k/reward/mean@1``
# a word of a key in parentheses, its abbreviation or unit: fairseq2's ``Word Error Rate (WER)``, ``Padding Ratio (%)``
_KEY_ASIDE = r"\([A-Za-z%][\w%/]*\)"
# A field that is one pair: ``Train Loss: 1.94``, ``lr=[9.6e-06``, ``MemAllocated=3.96GB``, ``Unit Error Rate (UER): 51.2``.
_WHOLE = re.compile(
    r"^(?P<key>" + _KEY + r"(?: (?:" + _KEY + "|" + _KEY_ASIDE + r")){0,5}?)\s*[:=]\s*\[?\s*(?P<value>" + NUM + r")\s*(?P<unit>[A-Za-z%]+(?:/[A-Za-z]+)?)?\s*\]?$"
)
# Pairs inside a field: one-word keys, the value ending the field or followed by more words.
_TIGHT = re.compile(
    r"(?<![\w./\-@])(?P<key>[A-Za-z_][\w./\-@]*)\s*[:=]\s*(?P<value>" + NUM + r")(?P<unit>[A-Za-z%]+)?(?=\s*$|\s+[A-Za-z_\[(]|[\])])"
)
# ``[D loss: 0.52] [G loss: 0.91]``: brackets side by side are fields of their own too
# ``__main__:train:142``: a code location (module, function, line: loguru's), not ``train: 142``
# where a logger was called: ``train.py:main:96``, loguru's ``yolox.core.trainer:261 - `` (a module, its line)
_CODE_LOCATION = re.compile(r"(?<!\S)(?:[\w.<>]+:[\w.<>]+:\d+(?!\S)|[A-Za-z_]\w*(?:\.\w+)+:\d+(?=\s+-\s))")
# fields end at ``,`` (not one grouping thousands: torchtitan's ``tps: 1,234``), ``;``, ``|``, tabs,
# `` - ``, between brackets side by side, and at runs of spaces
_FIELD_SPLIT = re.compile(r"\s*(?:(?<!\d),|,(?!\d{3}(?!\d))|[;|\t]|\s-\s|\]\s*\[)\s*|(?<![:=\s])\s{2,}(?![:=\s])")
_PREFIX_END = re.compile(r"^.*\](?=\s*[A-Za-z_])\s*")  # a log prefix ends in ``]`` before the first key
_SOURCE_FILE = re.compile(r"\.(?:py|pyx|cc|cpp|cu|c|h|hpp|go|rs|java|js|ts|rb|lua|jl|scala|kt)$", re.I)
#: Words that name a measurement: a "key value" field is read only when one names a metric.
_METRIC_NAMES = r"(?:loss|ppl|perplexity|acc|accuracy|bleu|f1|map|reward|return|score|error|wer|cer|xent|nll|auc|precision|recall|iou|dice)"
_METRIC_WORD = re.compile(r"(?i)(?:^|[\s_/.-])" + _METRIC_NAMES + r"(?:$|[\s_/.-])")
_NAMES_METRIC = re.compile(r"(?i)(?:^|[\W_])" + _METRIC_NAMES + r"(?:$|[\W_])")  # a metric's name anywhere in a line
_ANY_PAIR = re.compile(r"[A-Za-z_][\w./\-]*\s*[:=]\s*\[?\s*(?:[-+]?[\d.]|nan|inf)", re.I)
# a time estimate; Lightning's version number; Ray's ``(Worker pid=42)``; how full tensorpack's input queue is;
# the size of the input (YOLOX's multiscale ``size: 640``)
_NOT_METRICS = frozenset({"eta", "v_num", "pid", "input_queue_size", "size"})
_DICT_START = re.compile(r"\{\s*['\"]")
# ``'loss': 0.37``, ``'loss': '0.37'`` (a number in a string is the whole string: ``'43s'``, ``'1m 2s'``
# and ``'31.25%'`` are no numbers), ``'loss': tensor(0.37, ...)``
_DICT_PAIR = re.compile(r"['\"](?P<key>[^'\"]{1,120})['\"]\s*:\s*(?:np\.float\d*\(|tensor\(|torch\.tensor\()?\s*"
                        r"(?:(?P<q>['\"])\s*(?P<quoted>" + NUM + r")\s*(?P=q)|(?P<bare>" + NUM + r"))")
# a counter's progress in a string (see counter_progress)
_DICT_PROGRESS = re.compile(r"['\"](?P<key>[^'\"]{1,120})['\"]\s*:\s*['\"](?P<value>\s*\d+\s*/\s*\d+\s*)['\"]")
_PLAIN_NUMBER = re.compile(r"^\s*[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?\s*$")


# ``loss 2.4``, ``lr 3.0e-04``, ``valid ppl 252.86``, DGL's ``Time(s) 0.0041``
_SPACED = re.compile(r"^(?P<key>[A-Za-z_][\w./\-()]*(?: [A-Za-z_(][\w./\-()]*){0,3})\s+(?P<value>" + NUM + r")\s*(?P<unit>[A-Za-z%]+)?$")
# a time in seconds and its running mean, CenterNet's ``Data 0.701s(0.736s)``
_SECONDS_MEAN = re.compile(r"^(?P<key>[A-Za-z_][\w./\-]*)\s+(?P<value>" + NUM + r")(?P<unit>m?s)\s*\(\s*" + NUM + r"\s*m?s\s*\)$")
# a count with its total leading a line of fields, MONAI's ``1/16, train_loss: 0.7525``: the batch in the
# epoch a line of its own announced (``epoch 12/20``); with no such epoch, no counter
_LEADING_COUNT = re.compile(r"^\s*(?P<n>\d+)\s*/\s*(?P<m>\d+)\s*[,:|]\s*(?=[A-Za-z_])")
# char-rnn (Karpathy's Lua original, its TensorFlow ports, ml5's trainer): ``120/154000 (epoch 0), train_loss = 2.86``,
# ``120/154000 (epoch 0.779), train_loss = ...``: the iteration over the whole run, with the run's total, then the epoch
_COUNT_OF_RUN = re.compile(r"^\s*(?P<n>\d+)/(?P<m>\d+) \(epoch \d+(?:\.\d+)?\)\s*,\s*(?=[A-Za-z_])")
# a running best and where it was reached, which ends a line: MONAI's ``best mean dice: 0.7300 at epoch: 10``,
# ``train completed, best_metric: 0.8679 at epoch: 20``, Tianshou's ``best_reward: 9.40 ± 0.92 in #3`` (the
# epoch is the best's, not the one reached)
_BEST_AT = re.compile(r"(?i)(?<![\w.])best[\s_][^\n]*?" + NUM + r"\s+(?:at\s+(?:epoch|step|iter|iteration)\b|in\s+#\d)")
# the spread after a mean: Tianshou's ``test_reward: 9.40 ± 0.92``, ``acc: 0.91 +/- 0.02`` (the mean is the value)
_SPREAD = re.compile(r"(?<=\d)\s*(?:\u00b1|\+/-)\s*" + NUM)
# ``200/ 2983 batches``: an inner counter written after its number
_COUNT_AFTER = re.compile(r"(?P<n>\d+)\s*/\s*(?P<m>\d+)\s+(?P<key>batches|steps|iters|iterations)\b", re.I)
# MindSpore's ``LossMonitor``, ``epoch: 3 step: 120, loss is 0.52``, and its tutorials' loops,
# ``epoch: 0, step: 10, loss is 0.69``: the step counts within the epoch (``cur_step_in_epoch``)
_STEP_IN_EPOCH = re.compile(r"(?i)(?<![\w.])epoch:?\s*\d+,?\s+step:?\s*\d+,\s*loss is\s")


def _spaced_fields(text: str) -> list[tuple[str, float]]:
    """Pairs of a ``|``-ruled line whose keys and values stand apart by spaces.

    PyTorch's examples print ``| epoch 1 | 200/ 2983 batches | lr 20.00 | loss 7.64 |``. A value in
    seconds whose key names nothing (CenterNet's ``|Data 0.701s(0.736s) |Net 8.990s``) is a time: ``Net time``.
    """
    out = []
    for part in text.split("|"):
        part = part.strip()
        match = _SPACED.match(part)
        if match is None and part.endswith("s)"):
            match = _SECONDS_MEAN.match(part)
        if match is not None and _counter_name(match["key"].strip()) is None:
            value = _num(match["value"])
            if value is not None:
                key = match["key"].strip()
                if match["unit"] in ("s", "ms") and role(key) == "other":
                    key = f"{key} time"
                out.append((key, value))
    return out


# after a counter, a separator or (``Epoch 1 Batch 0 Loss 4.56``) a space before a metric's name
# (Flair: ``epoch 1 - iter 46/469 - loss 2.83 - time (sec): 3.95``, a dash between fields)
#: A metric's name, maybe behind the split or set it is of (``train_loss``, ``val/acc``, ``test-acc``).
_NAMED_METRIC = r"(?:[A-Za-z]+[_/.-])*" + _METRIC_NAMES + r"\b"
_AFTER_COUNTER = re.compile(r"^(?:\s*[:|,;]\s*|\s+-\s+|\s+(?=" + _NAMED_METRIC + r"))", re.I)
# ``Step 10: loss 2.4``, ``step 10/15000 | loss 2.4 | lr 3e-4``, CenterNet's ``epoch: 5 |loss 1.2 |``: a counter,
# then "key value" fields
_COUNTER_THEN_SPACED = (
    r"(?<![\w.])(?:" + _COUNTER_WORDS + r")(?:\s*:\s*|\s+)\d+(?:\s*/\s*\d+)?(?:\s*[:|,;]\s*|\s+-\s+|\s+(?=" + _NAMED_METRIC + r"))"
    r"[A-Za-z_][\w./\-()]*(?: [A-Za-z_][\w./\-()]*){0,3}\s+[-+]?(?:\d|\.\d|nan|inf)"
)
_SPACED_AFTER_COUNTER = re.compile(_COUNTER_THEN_SPACED, re.I)


#: Where "key value" fields part: ``|``, ``,``, ``;``, or a dash between spaces (Flair's ``- loss 2.83 -``).
_SPACED_SPLIT = re.compile(r"\s*[|,;]\s*|\s+-\s+")


def _spaced_after(rest: str) -> list[tuple[str, float]]:
    """``key value`` fields right after a counter and a separator: ``Step 10: loss 2.4``,
    ``step 10/15000 | loss 2.4 | lr 3.0e-04``. Read only when one of them names a metric
    (``loss``, ``acc`` ...), so that ``epoch 3, took 20 s`` says nothing."""
    start = _AFTER_COUNTER.match(rest)
    if start is None:
        return []
    out = []
    for part in _SPACED_SPLIT.split(rest[start.end():]):
        match = _SPACED.match(part.strip())
        if match is None:
            bare = _bare_pairs(part)  # ``train_loss 0.9 val_loss 0.8``: fields parted by spaces alone
            if bare:
                out.extend(bare)
                continue
            break  # the fields end where a part is no pair
        key = match["key"].strip()
        if key.endswith(" is"):
            key = key[:-3]  # MindSpore's ``loss is 0.52``: the metric is ``loss``
        value = _num(match["value"])
        if value is None or _counter_name(key) is not None or not _is_metric_key(key):
            break
        out.append((key, value))
    return out if any(_METRIC_WORD.search(key) for key, _ in out) else []


_BARE_PAIRS = re.compile(r"(?:[A-Za-z_][\w./\-]*\s+" + NUM + r"\s+)+[A-Za-z_][\w./\-]*\s+" + NUM)


def _bare_pairs(part: str) -> list[tuple[str, float]]:
    """A part that is only one-word keys and numbers in turn (``print("epoch", e, "train_loss", x,
    "val_loss", y)``): its pairs, each key a metric's; else none."""
    part = part.strip()
    if _BARE_PAIRS.fullmatch(part) is None:
        return []
    words = part.split()
    pairs = [(key, _num(value)) for key, value in zip(words[::2], words[1::2])]
    if any(value is None or _counter_name(key) is not None or not _is_metric_key(key) for key, value in pairs):
        return []
    return pairs


def _fields(text: str) -> list[tuple[str, float]]:
    """The ``key: value`` / ``key=value`` pairs of a stretch of a line, in order.

    A pair is a field of its own (fields are split at ``,`` ``;`` ``|``, tabs,
    `` - `` and runs of spaces), whose key may be several words, or a one-word
    key inside a field. Log prefixes never become keys: whatever ends in ``]``
    before a field's pair is cut off, and a source file (``logging.py:96``), a
    clock (``time: 9:34:17``) or an ``eta`` (``eta: 1 day, 2:03:04``) is no pair.
    """
    out = []
    if text.count(":") >= 2:
        text = _CODE_LOCATION.sub(" ", text)
    if "[" in text:
        text = _LEVEL_BRACKET.sub(" ", text)
    for part in _FIELD_SPLIT.split(text):
        if not part or (":" not in part and "=" not in part):
            continue
        if "]" in part:
            part = _PREFIX_END.sub("", part)
        # a field that is one pair has one separator; with more it holds several pairs
        whole = _WHOLE.match(part) if part.count(":") + part.count("=") == 1 else None
        if whole is not None:
            key = whole["key"].strip()
            value = _scaled(_num(whole["value"]), whole["unit"])
            if value is not None and _is_metric_key(key):
                out.append((key, value))
            continue
        for pair in _TIGHT.finditer(part):
            key = pair["key"]
            value = _scaled(_num(pair["value"]), pair["unit"])
            if value is not None and _is_metric_key(key):
                out.append((key, value))
    return out


def _scaled(value: float | None, unit: str | None) -> float | None:
    """``value`` times the magnitude its suffix names: ``1.3M`` tokens/s, ``164K`` (nanotron
    writes its throughputs so). A unit (``GiB``, ``ms``, ``%``) is left as it is."""
    if value is None or unit is None or len(unit) != 1:
        return value
    return value * _MAGNITUDES.get(unit, 1.0)


#: One capital letter right after a number: its magnitude.
_MAGNITUDES = {"K": 1e3, "M": 1e6, "B": 1e9, "G": 1e9, "T": 1e12}
#: A bracketed log prefix that names a level, with fields of its own: nanotron's
#: ``[INFO|DP=0|PP=0|TP=0|lm-head-pp0]:``; its ``DP=0`` are no metrics.
_LEVEL_BRACKET = re.compile(r"\[[^\[\]\n]*\b(?:INFO|DEBUG|WARNING|WARN|ERROR|CRITICAL)\b[^\[\]\n]*\]:?")


@lru_cache(maxsize=4096)
def _is_metric_key(key: str) -> bool:
    return not _SOURCE_FILE.search(key) and key.lower() not in _NOT_METRICS


@lru_cache(maxsize=4096)
def _names_a_count(key: str) -> bool:
    """Whether ``key``'s last word is a counter's (``completed step``, ``global step``): with
    the counter's own value it is that counter written again, not a metric."""
    words = re.split(r"[\s_/.\-]+", key.strip().lower())
    return bool(words) and words[-1] in _COUNTER_RANK


@lru_cache(maxsize=4096)
def _counter_name(key: str) -> str | None:
    """The counter a key names (``step``, ``valid_num_updates`` -> ``num_updates``, SpeechBrain's
    ``Epoch loaded``: the epoch whose checkpoint the tests ran on), or None."""
    low = key.lower()
    if low in _COUNTER_RANK:
        return low
    head, _, tail = low.rpartition(" ")
    if tail in _CHECKPOINT_WORDS and head in _COUNTER_RANK:
        return head
    for split in _SPLITS:
        if low.startswith(split) and low[len(split) :] in _COUNTER_RANK:
            return low[len(split) :]
    return None


def _read_dict(body: str) -> tuple[dict[str, float], tuple[str, float] | None] | None:
    """The top-level numbers of a dict or JSON object printed on a line, and a counter and its
    planned total when a value gives them.

    Values may be numbers or numbers in strings (fairseq's ``"loss": "9.276"``);
    nested objects and other values are left out. A counter's progress in a string
    (ms-swift's ``'global_step/max_steps': '5/60'``) is that counter (``global_step``: 5)
    and its planned total (60). JSON is parsed; a Python dict is read by pattern, never
    evaluated. None when ``body`` is no object.
    """
    import json

    obj = None
    if len(body) <= 100_000 and body.startswith('{"'):
        try:
            obj = json.loads(body)
        except (ValueError, RecursionError):
            obj = None
    planned = None
    if isinstance(obj, dict):
        out = {}
        for key, value in obj.items():
            if isinstance(value, bool):
                continue
            if isinstance(value, (int, float)):
                out[str(key)] = float(value)
            elif isinstance(value, str) and _PLAIN_NUMBER.match(value):
                out[str(key)] = float(value)
            elif isinstance(value, str) and value.strip().lower() in ("nan", "inf", "-inf"):
                out[str(key)] = float(value.strip())
            elif isinstance(value, str) and (progress := _progress(str(key), value)) is not None:
                counter, out[counter], total = progress
                planned = counter, total
        return out, planned
    if obj is not None:
        return None
    # A Python dict (repr of a dict: never evaluated): its top-level ``'key': number`` pairs
    pairs = {}
    for match in _DICT_PAIR.finditer(body):
        if not _top_level(body, match.start()):
            continue  # inside a nested dict (a settings dump)
        number = _num(match["quoted"] or match["bare"])
        if number is not None:
            pairs[match["key"]] = number
    for match in _DICT_PROGRESS.finditer(body):
        if _top_level(body, match.start()) and (progress := _progress(match["key"], match["value"])) is not None:
            counter, pairs[counter], total = progress
            planned = counter, total
    return (pairs, planned) if pairs else None


def _top_level(body: str, at: int) -> bool:
    return body.count("{", 0, at) - body.count("}", 0, at) == 1


def _progress(key: str, value: str) -> tuple[str, float, float] | None:
    return counter_progress(key, value, lambda part: _counter_name(part) is not None)


def _choose_step(names) -> str | None:
    """The finest counter among ``names``; of two alike, the training's: Tianshou's summary holds
    ``test_step`` (the steps its tests took) beside ``train_step``."""
    best = None
    for name in names:
        counter = _counter_name(name)
        if counter is not None and (best is None or _step_rank(name, counter) < _step_rank(best, _counter_name(best))):
            best = name
    return best


def _step_rank(name: str, counter: str) -> tuple[int, bool]:
    return _COUNTER_RANK[counter], name.lower().startswith(_SPLITS[1:])


def _parse_generic(parser: "TextParser", text: str, first_line: int, batch: Batch) -> None:
    """Any trainer's lines: ``key: value`` / ``key=value`` fields, dicts and JSON objects.

    A line gives points when it carries a counter (``step=10``, ``Step 150/100000;``,
    ``Epoch [3/50]``, ``'epoch': 0.05``, ``"num_updates": "200"``); the finest counter
    is the step (global_step, num_updates, ... before epoch), and an inner counter
    logged with an epoch restarts every epoch. A line that is nothing but one
    metric (``ppl: 4.99``, ``Validation perplexity: 5.45``) is placed at the latest
    step. The total a counter announces (``N/M``) is kept as ``planned_steps``.
    """
    state = parser.state
    text = _STAMP_LEAD.sub("", text)  # the logger's clock before each message: the message is the line
    for line in text.split("\n"):
        if "poch" in line or "POCH" in line:
            head = _EPOCH_LINE.match(line)
            if head is not None:  # ``Epoch 2/3``, ``=== Epoch 2 ===``: the epoch of the lines under it
                _announce(parser, [("epoch", float(head["n"]), head["m"])])
                parser.matched += 1
                continue
        if state.announced and _under_epoch_line(state) and _read_record(state, line):
            parser.matched += 1
            continue
        if "\u2500\u2500 " in line or "SUMMARY OF EPOCH" in line:  # super-gradients' summary of an epoch
            read = _read_summary_tree(state, line)
            if read is not None:
                parser.matched += read
                continue
        if ":" not in line and "=" not in line and "|" not in line and _SPACED_AFTER_COUNTER.search(line) is None:
            if "annotation type *" in line:
                _note_coco_type(state, line)
            if line.strip():
                state.placed = False  # a line of other text: the next is no continuation of a record
            continue
        if any(hint in line for hint in _PLANNED_HINTS):
            planned = _planned(line)  # a settings dump or argument list: the planned total
            if planned and "planned_steps" not in parser.state.meta:
                parser.state.meta["planned_steps"] = parser.state.setting_total = planned
            if planned and _NAMES_METRIC.search(line) is None:
                continue  # ``Total optimization steps = 3,000``: a setting, neither a step nor a metric
        if "\r" in line:
            # a progress bar redrawn in place: every redraw is an update of its own
            found = False
            for segment in line.split("\r"):
                found = _read_line(parser, segment) or found
        else:
            found = _read_line(parser, line)
        parser.matched += found


def _is_amount(line: str, at: int) -> bool:
    """Whether the counter at ``at`` is an amount set for the run, not the step reached (see
    :data:`_AMOUNT_BEFORE`): named so, on a line that names no metric."""
    return _AMOUNT_BEFORE.search(line, max(0, at - 24), at) is not None and _NAMES_METRIC.search(line) is None


def _under_epoch_line(state: _State) -> bool:
    """Whether the log's step is an epoch announced on a line of its own (``Epoch 5``), with no
    count under it: the lines of one value that follow are that epoch's record."""
    return state.announced and state.counter is None and state.meta.get("step_key") == "epoch"


def _read_record(state: _State, line: str) -> bool:
    """A line of one value under an epoch line of its own (see :data:`_RECORD`): that epoch's
    point (one a class, ``name[k]``, for a list of several), when its name says it is a metric or
    the learning rate: a setting printed again (``Desired fold for training: 0``), a counter, a
    running best (``best_metric: 0.87``) and a value with more words after it (``Epoch time: 95.3 s``)
    are none."""
    match = _RECORD.match(line)
    if match is None:
        return False
    key = match["key"]
    if not (_METRIC_WORD.search(key) or _RATE_WORD.search(key)) or _BEST_KEY.match(key) or _counter_name(key):
        return False
    cells = [match["value"]] if match["items"] is None else match["items"].split(",")
    values = [_num(cell) for cell in cells]
    if any(value is None for value in values):
        return False
    names = [key] if len(values) == 1 else [f"{key}[{k}]" for k in range(len(values))]
    for name, value in zip(names, values):
        _emit(state, state.step, name, value)
    return True


def _read_line(parser: "TextParser", line: str) -> bool:
    """Read one line (or one redraw of a progress bar); whether it gave points."""
    state = parser.state
    if "copypaste:" in line:
        return _read_copypaste(state, line)
    if "maxDets=" in line:
        return _read_coco_summary(state, line)
    if "est" in line or "EST" in line:  # (best, Best, BEST)
        line = _before_best_so_far(line)
        best = _BEST_AT.search(line)
        if best is not None:
            line = line[: best.start()]  # a running best and the epoch it was reached at: no point
    if "\u00b1" in line or "+/-" in line:
        line = _SPREAD.sub("", line)  # a mean and its spread: the mean, not a point of the next key
    if "-->" in line:
        line = _ARROW.sub(r"\g<key>: ", line)  # nanoT5's ``| Loss --> 59.881 |``
    if ":" not in line and "=" not in line and "|" not in line and _SPACED_AFTER_COUNTER.search(line) is None:
        return False  # ``epoch 1, loss 0.29, train acc 0.91`` has none of them, and a counter first
    state.after_record, state.placed = state.placed, False
    start = _DICT_START.search(line) if "{" in line else None
    if start is not None and line.rstrip().endswith("}"):
        if _read_dict_line(parser, line[start.start() : line.rstrip().rfind("}") + 1], line[: start.start()]):
            return True
    if "output:" in line and "step:" in line:
        read = _read_orbit(parser, line)
        if read is not None:
            return read
    ruled = line.count("|") >= 3
    if "per-step time" in line or (state.announced and "'" in line):
        read = _read_step_dict(state, line)
        if read is not None:
            return read
    if not ruled and _ANY_PAIR.search(line) is None and _SPACED_AFTER_COUNTER.search(line) is None:
        if _EVAL_SPACED.search(line) is not None:
            return _read_alone(parser, line)  # ``DEV : loss 1.5114 - f1-score (micro avg)  0.6850``
        return False  # no key next to a number (a progress bar, a banner): nothing to read
    if "=" in line and _is_settings(line):
        return False
    counters = []
    after = 0  # where the last counter ends: "key value" fields may follow it
    for match in _COUNTER.finditer(line):
        at = match.start()
        if at > 1 and line[at - 2].isalpha() and _is_amount(line, at):  # (a word right before it: a cheap test first)
            continue
        counters.append((match["key"].lower(), float(match["n"]), match["m"]))
        after = match.end()
    if " out of " in line:  # the total of a counter, in words
        for match in _OUT_OF.finditer(line):
            key, count = match["key"].lower(), float(match["n"])
            counters = [(name, n, match["m"]) if (name, n) == (key, count) else (name, n, m) for name, n, m in counters]
    words = set()
    if "[" in line:
        pair = _EPOCH_BATCH.match(line)
        if pair is not None:  # ``[1,  2000] loss: 2.170``, ``[2][150/162] loss=4.44``
            counters.append(("epoch", float(pair["e"]), None))
            counters.append(("batch", float(pair["n"] or pair["b"]), pair["m"]))
        for match in _EPOCH_BRACKET.finditer(line):
            counters.append(("epoch", float(match["e"] or match["eb"]), None))
            counters.append(("batch", float(match["n"]), match["m"]))
            words.add(match[0].split(":")[0].split()[0].lower())
    if "|" in line and line.lstrip()[:1].isdigit():
        described = _COUNTED_BAR.match(line)
        if described is not None:
            # torchtune: the epoch and the step (within the epoch in older recipes) lead its bar
            pairs = _fields(described["desc"])
            if not pairs:
                return False
            counters = [("iter", float(described["step"]), None), ("epoch", float(described["epoch"]), None)]
            _place(parser, counters, pairs)
            return True
    bar = _BAR_COUNT.search(line) if "|" in line else None
    if bar is not None:
        phase = _EVAL_BAR.match(line)
        if phase is not None:
            return _read_eval_bar(parser, line, bar, phase["phase"].lower())
        counters.append(("batch", float(bar["n"]), bar["m"]))
    if ruled:
        for match in _COUNT_AFTER.finditer(line):
            counters.append(("batch", float(match["n"]), match["m"]))
    if "loss is" in line and _STEP_IN_EPOCH.search(line) is not None:
        counters = _steps_in_epoch(state, counters)
    if "(epoch " in line:
        run = _COUNT_OF_RUN.match(line)
        if run is not None:  # the iteration over the run is finer than the epoch, and global
            counters = [("global_step", float(run["n"]), run["m"])]
    if not counters and state.epoch is not None and line.lstrip()[:1].isdigit():
        lead = _LEADING_COUNT.match(line)
        if lead is not None:  # MONAI's ``1/16, train_loss: 0.7525`` under ``epoch 12/20``
            counters.append(("batch", float(lead["n"]), lead["m"]))
    if not counters:
        return _read_alone(parser, line)
    fields = _fields(_BAR_HEAD.sub("", line, count=1) if bar is not None else line)
    counted = {count for _, count, _ in counters}
    pairs = [(key, value) for key, value in fields
             if _counter_name(key) is None and key.lower() not in words
             and not (value in counted and _names_a_count(key))]
    if ruled:
        known = {key for key, _ in pairs}
        pairs += [(key, value) for key, value in _spaced_fields(line) if key not in known]
    elif after:  # ``step 1: loss 2.5, iter time: 123.4ms``: "key value" first, then pairs
        known = {key for key, _ in pairs}
        pairs = [(key, value) for key, value in _spaced_after(line[after:]) if key not in known] + pairs
    if not pairs:
        _announce(parser, counters)
        return False
    if not _BARE_PHASES.keys().isdisjoint([key for key, _ in pairs]) and not any(
            role(key) == "loss" for key, _ in pairs if key not in _BARE_PHASES):
        # ``train: 16.14 | val: 2.65``: their losses; beside a loss of its own (PyG's ``Loss: 1.95, Train: 0.18,
        # Val: 0.11``) a phase's bare value is some other measure of it, named as written
        pairs = [(_BARE_PHASES.get(key, key), value) for key, value in pairs]
    phase = _epoch_summary(line) if ruled and "epoch" in line else None
    if phase:  # fairseq's results of an epoch: never points of the running series
        pairs = [(f"{phase}_{key}", value) for key, value in pairs]
    elif len({key for key, _ in pairs}) < len(pairs):  # a key twice: once per phase the line reports
        pairs = _phased_pairs(line, pairs)
    else:
        tag = _PHASE_TAG.search(line)
        if tag is not None:
            named = _METRIC_WORD.search(line)  # the tag leads the line's metrics, never follows them
            phase = tag["phase"].lower() if named is None or tag.start() < named.start() else "train"
            phase = _EVAL_PHASE.get(phase, phase)
            if not phase.startswith("train"):  # ``[val] epoch 1 step 500 loss 0.61``: the evaluation's loss
                pairs = [(key if _EVAL_NAME.match(key) else f"{phase}_{key}", value) for key, value in pairs]
    _place(parser, counters, pairs)
    return True


# ``| Loss --> 59.881 |``: an arrow between a key and its value (nanoT5), a field's separator; never
# between two numbers (``Validation loss decreased (0.69 --> 0.65)``)
_ARROW = re.compile(r"(?<=\| )(?P<key>[A-Za-z_][\w/.\-]*) --> (?=[-+]?(?:\d|\.\d|nan|inf))")


# A phase word that opens a stretch of a line (``| val: loss=0.6``, ``- Val loss: 0.6, acc: 0.7``)
_SEGMENT = re.compile(r"(?i)(?<![\w/.])(?P<phase>train(?:ing)?|val(?:id(?:ation)?)?|eval(?:uation)?|test(?:ing)?|dev)\b(?![_/.])")


def _phased_pairs(line: str, pairs: list[tuple[str, float]]) -> list[tuple[str, float]]:
    """The pairs of a line that reports two phases under the same keys
    (``train: loss=0.5 acc=0.8 | val: loss=0.6 acc=0.7``): each stretch from a phase word to the
    next is that phase's, its keys named for it (``val_acc``) unless they name it already."""
    cuts = [(m.start(), m["phase"].lower()) for m in _SEGMENT.finditer(line)]
    if not cuts:
        return _repeats_evaluated(pairs)
    left = Counter(pairs)  # each pair of the line once: one a stretch does not hold keeps its name
    out = []
    for (start, phase), (end, _) in zip([(0, "train")] + cuts, cuts + [(len(line), "")]):
        phase = _EVAL_PHASE.get(phase, phase)
        for pair in _fields(line[start:end]):
            if left[pair] > 0:
                left[pair] -= 1
                key, value = pair
                out.append((key if phase.startswith("train") or _EVAL_NAME.match(key) else f"{phase}_{key}", value))
    return out + list(left.elements())


def _repeats_evaluated(pairs: list[tuple[str, float]]) -> list[tuple[str, float]]:
    """The pairs of a line that names no phase but writes its keys twice, CenterNet's ``log.txt``
    (``epoch: 5 |loss 1.2 | hm_loss 0.8 | ... | loss 1.4 | hm_loss 0.9 |``): the training's values,
    then the validation's, named for it (``val_loss``)."""
    seen = set()
    out = []
    for key, value in pairs:
        out.append((f"val_{key}" if key in seen and not _EVAL_NAME.match(key) else key, value))
        seen.add(key)
    return out


#: A phase's name alone as a key (``Epoch 2/5 | train: 16.14 | val: 2.65``): that phase's loss.
_BARE_PHASES = {written: f"{loss}_loss" for phase, loss in (("train", "train"), ("training", "train"), ("val", "val"),
                                                             ("valid", "valid"), ("validation", "val"), ("eval", "eval"),
                                                             ("test", "test"))
                for written in (phase, phase.capitalize(), phase.upper())}


# A word that says which phase a whole line reports, standing apart as a tag: ``[val] ...``,
# ``eval: step 500, ...``, ``VALID | ...``, ``Validation - Epoch 1 - ...``, ``mode=val ...``,
# ``Evaluation at step 500: ...``; never the start of a key (``val loss``, ``val_loss``).
_PHASE_TAG = re.compile(
    r"(?i)(?:^|(?<=[\s\[(|:=\-]))(?P<phase>train(?:ing)?|val(?:id(?:ation)?)?|eval(?:uation)?|test(?:ing)?|dev)"
    r"(?=\s*[\])|]|\s*:(?!\s*[-+]?\.?\d)|\s+-\s|\s*$|\s+(?:at|on|after|epoch|step|iter|iteration|set|phase|results?|metrics)\b)"
)


# fairseq's epoch results: ``| epoch 001 | valid on 'valid' subset | loss 9.43 | ...`` (an
# evaluation, of the subset it names) and ``| train | epoch 001 | loss 9.8 | ...`` (the epoch's
# training means; before fairseq 0.10, ``| epoch 001 | loss 9.8 | ...`` at the line's start, a
# key after the epoch: PyTorch's ``| epoch   1 |   200/ 2983 batches | ...`` is a running line)
_VALID_ON = re.compile(r"\|\s*valid on '(?P<subset>[\w.\-]+)' subset\s*\|")
_TRAIN_SUMMARY = re.compile(r"\|\s*train\s*\|\s*epoch\s+\d+\s*\||^\s*\|\s*epoch\s+\d+\s*\|\s*[A-Za-z_]")


def _epoch_summary(line: str) -> str | None:
    """The phase an epoch's summary line gives results of (``valid``, ``train``), or None."""
    valid = _VALID_ON.search(line)
    if valid is not None:
        return valid["subset"]
    return "train" if _TRAIN_SUMMARY.search(line) else None


def _steps_in_epoch(state: _State, counters: list[tuple[str, float, str | None]]) -> list[tuple[str, float, str | None]]:
    """``counters`` with the ``step`` of a MindSpore line (see :data:`_STEP_IN_EPOCH`) read as the
    count within its epoch, made global by the log's :class:`EpochCounter`.

    MindSpore prints the step within the epoch, with no total: taken as the global step, every
    epoch would go back to step 1 and read as a resumed run. Its counter never counts on, so a
    log that quotes epoch 1 and then epoch 10 (``step 774`` after ``step 10``) is not taken for
    a global count either.
    """
    if state.counter is None:
        state.counter = EpochCounter()
        state.counter.always_restarts = True
    state.meta["step_key"] = "step"  # made global: (epoch - 1) * steps per epoch + step
    return [("batch", count, total) if name == "step" else (name, count, total) for name, count, total in counters]


def _announce(parser: "TextParser", counters: list[tuple[str, float, str | None]]) -> None:
    """A line of a counter and no metric (``Epoch: 01 | Epoch Time: 0m 5s``) announces the
    step of the lines of metrics under it, when it counts on the log's own axis; an epoch's
    (``=== Epoch 2 ===``) is also the epoch of the inner counts under it (``Batch 100: ...``)."""
    if len(counters) != 1:
        return
    state, (name, value, total) = parser.state, counters[0]
    if name == "epoch":
        state.epoch = value
        if total:
            state.meta["planned_epochs"] = float(total)  # ``epoch 12/20``: times an epoch's size, the planned steps
    if state.counter is None and state.meta.get("step_key", name) == name:
        state.step = value
        state.meta["step_key"] = name
        state.announced = True


def _given_at_step(state: _State) -> set[str]:
    """The names given a point at the latest step, in what is read now or was handed on before."""
    given = {name for name, (steps, _) in state.columns.items() if steps and steps[-1] == state.step}
    if state.handed[0] == state.step:
        given |= state.handed[1]
    return given


def _counted_in_steps(state: _State) -> bool:
    """Whether the log's points so far stand on a count of the run's steps (``step``, ``iteration``,
    ``global_step``), not on epochs nor on a count within each epoch (a batch, a progress bar's)."""
    known = state.meta.get("step_key")
    if known is None or state.step is None or state.counter is not None:
        return False
    counter = _counter_name(known)
    return counter is not None and counter != "epoch" and counter not in _INNER


def _place(parser: "TextParser", counters: list[tuple[str, float, str | None]], pairs: list[tuple[str, float]]) -> None:
    """Emit ``pairs`` at the step the finest of ``counters`` gives (made global when it is an
    inner counter beside an epoch); ``counters`` holds ``(name, count, total or None)``."""
    state = parser.state
    counters.sort(key=lambda c: _COUNTER_RANK.get(c[0], len(COUNTERS)))
    name, value, total = counters[0]
    epoch = next((c for c in counters if c[0] == "epoch"), None)
    if epoch is None and state.epoch is not None and name in _UNDER_EPOCH:
        epoch = ("epoch", state.epoch, state.meta.get("planned_epochs"))  # the epoch a line of its own announced above it
    if epoch is not None and total and float(total) == state.setting_total:
        epoch = None  # its total is the run's, as the settings said (kohya's bar under ``epoch 1/60``): a global count
    if epoch is not None and name != "epoch" and (name in _INNER or total is not None):
        if state.counter is None:
            state.counter = EpochCounter()
        # a total beside the count may be the run's when the epochs have none (PaddleSeg's ``epoch: 2, iter:
        # 80/2000``; see EpochCounter); beside an epoch of a total (``Epoch [3/5], Step [100/300]``) it is the epoch's
        state.counter.doubt_totals = not epoch[2]
        state.derived = True
        state.inner_keys.update(key for key, _ in pairs)
        placed = state.counter.add(epoch[1], value, _new_evaluations(state, pairs), float(total) if total else None,
                                   float(epoch[2]) if epoch[2] else None)
        if not state.counter.restarts and total:
            state.meta["planned_steps"] = float(total)  # it was a global counter with its total
        elif epoch[2] and state.counter.size:
            state.meta["planned_steps"] = float(epoch[2]) * state.counter.size
    elif name == "epoch" and len(counters) == 1 and _counted_in_steps(state):
        # An epoch's line in a log counted in steps (``step 300, loss 1.7`` lines, then ``epoch 1, val_loss
        # 1.8``): at the step the epoch ended on, the latest, not on an axis of epochs (read as one, the
        # steps went back to 1 there). What the step's own line gave is not given twice.
        given = _given_at_step(state)
        placed = [(state.step, [(key, number) for key, number in pairs if key not in given])]
    elif name == "epoch" and state.counter is not None:
        placed = state.counter.add(value, None, _epoch_means(state, pairs))  # an epoch's summary: at its end (held till known)
        if total and state.counter.size:
            state.meta["planned_steps"] = float(total) * state.counter.size  # ``Epoch 2/5 | ...``: the epochs planned
    else:
        placed = [(value, pairs if name == "epoch" else _new_evaluations(state, pairs))]
        if total:
            state.meta["planned_steps"] = float(total)
        state.meta["step_key"] = name
        state.placed = True
    for step, items in placed:
        state.step = step
        for key, number in items:
            _emit(state, step, key, number)


def _epoch_means(state: _State, pairs: list[tuple[str, float]]) -> list[tuple[str, float]]:
    """The pairs of an epoch's summary, those the lines within the epoch also print named ``key_epoch``.

    MXNet's ``Epoch[0] Train-accuracy=0.67`` after its ``Epoch[0] Batch [180] ... Train-accuracy=0.62``
    lines, GluonCV's ``[Epoch 0] training: accuracy=0.25``: the mean over the epoch is no point of the
    series of the latest batches (Lightning names such means ``train_loss_epoch``).
    """
    return [(f"{key}_epoch" if key in state.inner_keys else key, value) for key, value in pairs]


# a running best, as a sentence: GluonCV's ``[Epoch 3] Current best top-1: 0.75 vs previous 0.43, saved to ...``,
# ``New best val_loss: 0.31``: a copy of an evaluation read before, no point
_BEST_SO_FAR = re.compile(r"(?i)(?<![\w.])(?:current|new) best\b")


def _before_best_so_far(line: str) -> str:
    """``line`` up to a running best it states (see :data:`_BEST_SO_FAR`)."""
    best = _BEST_SO_FAR.search(line) if "best" in line or "Best" in line or "BEST" in line else None
    return line if best is None else line[: best.start()]


#: Counters that count every step of the whole training.
_GLOBAL_COUNTERS = frozenset({"global_step", "trainer/global_step", "num_updates"})


def _new_evaluations(state: _State, pairs: list[tuple[str, float]]) -> list[tuple[str, float]]:
    """``pairs`` of a training step's line without the evaluation values it shows again.

    A logger that prints the latest validation beside every step's training values (NeMo's
    ``| reduced_train_loss: 7.42 | ... | val_loss: 7.591``, a progress bar's postfix) repeats one
    evaluation on every line until the next: a value equal to the last one shown is that same
    evaluation, not a new point. Lines of evaluations alone, and epochs, are left as they are.
    """
    evals = [k for k, (key, _) in enumerate(pairs) if _EVAL_NAME.match(key)]
    if not evals or len(evals) == len(pairs):
        return pairs
    state.derived = True  # what is read depends on the lines before: no layout reads it
    kept = []
    for k, (key, value) in enumerate(pairs):
        if k in evals:
            if state.shown.get(key) == value:
                continue
            state.shown[key] = value
        kept.append((key, value))
    return kept


# ``task=detect``, ``save=True``, ``device=None``, ``model=yolov8n.pt``: a setting, not a measurement
_WORD_PAIR = re.compile(r"(?<![\w.\-])[A-Za-z_][\w.\-]*=(?:True|False|None|null|true|false|[A-Za-z_./'\"])")


def _is_settings(line: str) -> bool:
    """Whether a line is a settings dump (``engine/trainer: task=detect, mode=train, epochs=20,
    batch=8, ...``): three settings or more that are words, not numbers. Its ``batch=8`` is the
    batch size, not a counter, and its numbers are settings, not points."""
    found = 0
    for _ in _WORD_PAIR.finditer(line):
        found += 1
        if found >= 3:
            return True
    return False


# a counter that ends the text before a dict: ``epoch 0: {...}``, ``step=200 {...}``
_COUNTER_BEFORE = re.compile(
    r"(?<![\w.])(?P<key>" + _COUNTER_WORDS + r")\s*[:=]?\s*(?P<n>\d+)(?:\.0+)?\s*[:=,\-|]?\s*$", re.I
)


def _read_eval_bar(parser: "TextParser", line: str, bar: re.Match, phase: str) -> bool:
    """An evaluation's progress bar: ``valid: 100%|####| 39/39 [00:00<00:00, loss=0.469]``.

    Its count is of evaluation batches, so it is no step: the values are the evaluation's
    (``val_loss``), placed at the latest training step, once the bar is full (the running
    values of a bar half-way are partial). A bar half-way is progress, not a point.
    """
    if bar["n"] != bar["m"]:
        return False
    pairs = [(key, value) for key, value in _fields(_BAR_HEAD.sub("", line, count=1)) if _counter_name(key) is None]
    return _eval_pairs(parser, pairs, phase, named=False)


def _read_dict_line(parser: "TextParser", body: str, before: str = "") -> bool:
    """A dict or JSON object printed on a line, its step one of its keys or a counter written
    just before it (Hugging Face's no-trainer examples: ``epoch 0: {'accuracy': 0.76, 'f1': 0.84}``)."""
    read = _read_dict(body)
    if not read or not read[0]:
        return False
    values, planned = read
    key = _choose_step(values)
    if key is None:
        counter = _COUNTER_BEFORE.search(before) if before else None
        if counter is None:
            return False  # a settings dict, not a log record
        key = counter["key"].lower()
        values[key] = float(counter["n"])
    state = parser.state
    step = values.pop(key)
    if not math.isfinite(step):
        return False  # no place on the axis: the line is counted as not matched
    for name in [name for name in values if _counter_name(name) is not None or _BEST_KEY.match(name)]:
        del values[name]  # the other counters, and running bests (``'best_reward': 200.0``): no points
    if not values:
        return False
    if _counter_name(key) == "epoch" and step != int(step) and _counted_in_steps(state):
        # A fraction of an epoch in a log counted in steps (TRL's and HF's dicts under a harness' own
        # ``[STEP 12] loss=...`` lines): the record of the latest step, not an axis of its own (read as
        # one, the steps went back at every dict). What the step's own line gave is not given twice.
        given = _given_at_step(state)
        for name, value in values.items():
            if name not in given:
                _emit(state, state.step, name, value)
        return True
    state.step = step
    state.meta["step_key"] = key
    if planned is not None and planned[0] == key and planned[1] > 0 and _counter_name(key) != "epoch":
        state.meta["planned_steps"] = planned[1]
    if _counter_name(key) == "epoch" and step != int(step):
        state.meta["coarse_steps"] = True
    for name, value in values.items():
        _emit(state, step, name, value)
    return True


# detectron2's evaluation in CSV form, behind its logger's prefix::
#   copypaste: Task: bbox
#   copypaste: AP,AP50,AP75,APs,APm,APl
#   copypaste: 40.2210,61.0130,43.8120,24.2030,43.5110,52.0040
_COPYPASTE = re.compile(r"\bcopypaste:\s*(?P<body>.*?)\s*$")


def _read_copypaste(state: _State, line: str) -> bool:
    """One line of detectron2's ``copypaste:`` block: the task, the names, then their values,
    the evaluation at the latest step (``eval_bbox/AP``). Whether the line was one of them."""
    match = _COPYPASTE.search(line)
    if match is None:
        return False
    body = match["body"]
    if body.startswith("Task:"):
        state.copy_task, state.copy_names = body[len("Task:"):].strip(), None
        return True
    cells = [cell.strip() for cell in body.split(",")]
    values = [_num(cell) for cell in cells]
    if all(cells) and all(value is None for value in values):
        state.copy_names = cells
        return True
    names, state.copy_names = state.copy_names, None  # a row of values follows its names once
    if names is None or len(names) != len(values) or any(value is None for value in values):
        return False
    state.derived = True  # placed at the step the lines before reached
    step = state.step if state.step is not None else 0.0
    task = f"{state.copy_task}/" if state.copy_task else ""
    for name, value in zip(names, values):
        _emit(state, step, f"eval_{task}{name}", value)
    return True


# pycocotools' summary of an evaluation (``COCOeval.summarize()``), a value a line, printed by many
# detection trainers (YOLOX, DETR, detectron2)::
#    Average Precision  (AP) @[ IoU=0.50:0.95 | area=   all | maxDets=100 ] = 0.258
#    Average Recall     (AR) @[ IoU=0.50:0.95 | area= small | maxDets=100 ] = 0.304
_COCO_SUMMARY = re.compile(r"\bAverage (?:Precision|Recall)\s+\((?P<kind>AP|AR)\) @\[\s*IoU=(?P<iou>[\d.:]+)\s*\|"
                           r"\s*area=\s*(?P<area>\w+)\s*\|\s*maxDets=\s*(?P<dets>\d+)\s*\]\s*=\s*(?P<value>" + NUM + r")")
# what pycocotools evaluates next: ``Evaluate annotation type *bbox*`` (``segm``, ``keypoints``)
_COCO_TYPE = re.compile(r"\bEvaluate annotation type \*(?P<type>\w+)\*")


def _note_coco_type(state: _State, line: str) -> None:
    """Keep what pycocotools says it evaluates (see :data:`_COCO_TYPE`) for the summary block after it."""
    match = _COCO_TYPE.search(line)
    if match is not None:
        state.coco_type = match["type"]


def _read_coco_summary(state: _State, line: str) -> bool:
    """One line of pycocotools' summary block (see :data:`_COCO_SUMMARY`): the validation's value at
    the latest step, named for its IoU, area and detections as ``val_AP``, ``val_AP50``,
    ``val_AP_small``, ``val_AR100``, ...; a mask's or keypoints' block as ``val_segm/AP``; a -1 (no
    object of that area) gives no point. Whether the line was one of them."""
    match = _COCO_SUMMARY.search(line)
    if match is None:
        return False
    value = _num(match["value"])
    if value is None or value < 0:
        return True
    iou, area = match["iou"], match["area"]
    name = match["kind"]
    if ":" not in iou:
        name += str(round(float(iou) * 100))  # ``IoU=0.50``: AP50
    if area != "all":
        name += f"_{area}"
    elif name == "AR":
        name += match["dets"]  # the recall at 1, 10, 100 detections
    kind = f"{state.coco_type}/" if state.coco_type and state.coco_type != "bbox" else ""
    state.derived = True  # placed at the step the lines before reached
    return _emit(state, state.step if state.step is not None else 0.0, f"val_{kind}{name}", value)


# TensorFlow's Object Detection API: ``Step 100 per-step time 0.567s``, then its losses in a dict
# printed over several lines (twice: by TensorFlow's logger and by absl's)::
#   INFO:tensorflow:{'Loss/classification_loss': 0.88019011,
#    'Loss/total_loss': 1.6256098,
#    'learning_rate': 0.008}
_STEP_TIME = re.compile(r"\bStep (?P<n>\d+) per-step time (?P<t>" + NUM + r")s\b")
_DICT_PIECE = re.compile(r"^(?:[^{'\"]*[\]:])?\s*\{?\s*['\"](?P<key>[^'\"]{1,120})['\"]\s*:\s*(?P<value>" + NUM + r")\s*,?\s*\}?\s*$")


def _read_step_dict(state: _State, line: str) -> bool | None:
    """A step announced with its time, or one ``'key': value`` line of a dict printed over
    several lines under it, at that step (a value printed again by a second logger is read
    once); None when the line is neither."""
    stepped = _STEP_TIME.search(line)
    if stepped is not None:
        step, took = float(stepped["n"]), _num(stepped["t"])
        if state.dict_values is not None and state.step == step and state.dict_values.get("per-step time") == took:
            return True  # the same line printed again
        state.step, state.announced, state.dict_values, state.dict_phase = step, True, {"per-step time": took}, ""
        state.meta["step_key"] = "step"
        return _emit(state, step, "per-step time", took)
    piece = _DICT_PIECE.match(line) if state.dict_values is not None else None
    if piece is None:
        return None
    key, value = piece["key"], _num(piece["value"])
    if value is None or state.step is None:
        return None
    if state.dict_values.get(key) == value:
        return True  # the same dict printed again
    state.dict_values[key] = value
    return _emit(state, state.step, _for_phase(state.dict_phase, key), value)


def _for_phase(phase: str, key: str) -> str:
    """``key`` named for an evaluation's ``phase`` (``eval_map``), unless it names one already
    (``validation_loss``) or the phase is training's (``""``)."""
    return key if not phase or _EVAL_NAME.match(key) else f"{phase}_{key}"


# TensorFlow Model Garden's Orbit controller: ``train | step:    188 | steps/sec:    0.1 | output: {...}``
# and ``eval | step:    188 | eval time:   48.1 | output: {...}``, the dict of outputs on the line or
# printed over the lines under it (``    {'learning_rate': 0.0099,`` ... ``     'training_loss': 0.0096}``)
_ORBIT = re.compile(r"(?<![\w.])(?P<phase>train|eval)\s*\|\s*step:\s*(?P<n>\d+)\s*\|(?P<fields>[^{\n]*?)\boutput:\s*(?P<dict>\{.*\})?\s*$")


def _read_orbit(parser: "TextParser", line: str) -> bool | None:
    """One of Orbit's lines of outputs (see :data:`_ORBIT`): its fields (``steps/sec``, ``eval
    time``) and the dict's values at its step, an evaluation's named for it (``eval_map``);
    when the dict is printed under it, its lines are read as the Object Detection API's are.
    None when the line is none of them."""
    match = _ORBIT.search(line)
    if match is None:
        return None
    state = parser.state
    step = state.step = float(match["n"])
    state.meta["step_key"] = "step"
    phase = "eval" if match["phase"] == "eval" else ""
    for key, value in _fields(match["fields"]):
        _emit(state, step, _for_phase(phase, key), value)
    if match["dict"] is None:  # the dict follows, a value a line
        state.announced, state.dict_values, state.dict_phase = True, {}, phase
        return True
    state.announced, state.dict_values = False, None
    read = _read_dict(match["dict"])
    for key, value in (read[0] if read else {}).items():
        _emit(state, step, _for_phase(phase, key), value)
    return True


# super-gradients' summary of an epoch, a tree of its means (YOLO-NAS)::
#   SUMMARY OF EPOCH 0
#   ├── Train
#   │   └── Ppyoloeloss/loss = 3.633
#   └── Validation
#       ├── Ppyoloeloss/loss = 3.2886
#       │   ├── Epoch N-1      = 3.2886 (↘ -1.3628)
#       └── Map@0.50:0.95 = 0.0022
_TREE_ITEM = re.compile(r"^(?P<lead>(?:\u2502   |    )*)[\u251c\u2514]\u2500\u2500 (?P<name>[^=\n]*?[^=\s])[ \t]*(?:=[ \t]*(?P<value>"
                        + NUM + r")(?:[ \t]+\([^)\n]*\))?)?[ \t]*\r?$")
_TREE_HEAD = re.compile(r"^[ \t]*SUMMARY OF EPOCH \d+[ \t]*\r?$")


def _read_summary_tree(state: _State, line: str) -> bool | None:
    """One line of super-gradients' summary of an epoch (see :data:`_TREE_ITEM`): the validation's
    means are ``val_`` points at the step trained last; the training's are the epoch's means of
    what its bar showed (no points), and the lines under each value (``Epoch N-1``, ``Best
    until now``) compare it with earlier epochs. None when the line is none of them."""
    if _TREE_HEAD.match(line):
        state.tree_section = ""
        return True
    item = _TREE_ITEM.match(line)
    if item is None:
        return None
    depth = len(item["lead"]) // 4
    if depth == 0:
        state.tree_section = item["name"].strip().lower() if item["value"] is None else ""
        return True
    name = item["name"].strip()
    if depth > 1 or item["value"] is None or state.step is None or not state.tree_section.startswith("valid"):
        return True
    if name.lower().endswith("threshold"):
        return True  # the score threshold the evaluation chose (``Best_score_threshold``): a setting
    state.derived = True  # placed at the step the lines before reached
    return _emit(state, state.step, name if _EVAL_NAME.match(name) else f"val_{name}", _num(item["value"]))


# an evaluation's summary line: ``Test set: Average loss: 0.0474, Accuracy: 9846/10000 (98%)``,
# PaddleOCR's ``cur metric, precision: 0.61, recall: 0.51, hmean: 0.56`` (its ``best metric`` is a running best),
# PaddleSeg's ``[EVAL] #Images: 76 mIoU: 0.76 Acc: 0.99 Kappa: 0.69``
_EVAL_HEAD = re.compile(r"^\W*(?:(?P<phase>test|val|valid|validation|eval|evaluation|dev)(?: set| results?)?(?:\s*[:|\-]|\](?:\s*:)?)"
                        r"|(?P<current>cur(?:rent)? metrics?)\s*[:,])\s", re.I)
# a logging library's prefix before the message: ``[2023/12/01 10:10:00] ppocr INFO: ``,
# ``2023-12-01 10:10:00,123 - INFO - ``, ``INFO:root:``
_LEVEL_PREFIX = re.compile(r"^[^\n]{0,160}?\b(?:INFO|DEBUG|NOTICE|WARNING|WARN)\b[\s:\]\-|]*(?:[\w.]+:(?=\S))?\s*")
# an evaluation's summary of "key value" fields (Flair): its phase, then a name and a number
_EVAL_SPACED = re.compile(r"(?i)\b(?:test|val|valid|validation|eval|evaluation|dev)(?: set| results?)?\s*:\s+[A-Za-z_][\w\-]*\s+[-+]?[\d.]")
# a date and time alone before the message: Flair's ``2023-02-27 17:07:47,458 DEV : loss 1.51``
_STAMP_PREFIX = re.compile(r"^\s*\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?\s+")
_BRACKET_COUNT = re.compile(r"\[\s*(?P<n>\d+)\s*/\s*(?P<m>\d+)\s*\]")
# tensorpack's statistics of an epoch, one a line after ``Epoch 1 (global_step 25000) finished``:
# ``[0724 10:47:52 @monitor.py:310] cost: 0.001137`` (a value whatever its name says: ``cost`` is the loss)
_MONITOR = re.compile(r"\[\d{4} \d\d:\d\d:\d\d @monitor\.py:\d+\] ")
# ``Loss:  0.5951 (0.5882)``: a batch's value and the running mean
_WITH_MEAN = re.compile(r"(?P<key>[A-Za-z_][\w@/.\-]*):\s*" + NUM + r"\s*\(\s*(?P<mean>" + NUM + r")\s*\)")


def _read_alone(parser: "TextParser", line: str) -> bool:
    """A line with no counter: one metric and nothing else, or an evaluation's summary
    (``Test set: Average loss: 0.0474, ...``), placed at the latest step."""
    head = _EVAL_HEAD.match(line)
    if head is None and ((level := _LEVEL_PREFIX.match(line)) is not None or (level := _STAMP_PREFIX.match(line)) is not None):
        message = line[level.end() :]  # the evaluation's line written through a logger
        head = _EVAL_HEAD.match(message)
        if head is not None:
            line = message
    if head is not None:
        phase = (head["phase"] or "eval").lower()
        count = _BRACKET_COUNT.search(line)
        if count is None:
            return _read_eval_summary(parser, line[head.end() :], phase)
        if count["n"] == count["m"]:  # timm's last batch: its running means are the evaluation's
            return _read_eval_means(parser, line[count.end() :], phase)
        return False  # one batch of an evaluation: its values are that batch's
    pairs = _fields(line)
    if len(pairs) > 1:
        return _read_pairs_alone(parser, line, pairs)
    if len(pairs) != 1 or not (_METRIC_WORD.search(pairs[0][0]) or ("@monitor.py:" in line and _MONITOR.match(line))):
        return False
    rest = _PREFIX_END.sub("", line).strip()
    if _WHOLE.match(rest) is None:
        return False
    state = parser.state
    _emit(state, state.step if state.step is not None else 0.0, pairs[0][0], pairs[0][1])
    return True


def _read_pairs_alone(parser: "TextParser", line: str, pairs: list[tuple[str, float]]) -> bool:
    """A line of nothing but metric pairs, under a counter line of their own::

        Epoch: 01 | Epoch Time: 0m 5s
        \tTrain Loss: 0.693 | Train Acc: 50.00%
        \t Val. Loss: 0.690 |  Val. Acc: 53.00%

    placed at the step the line before announced (never before any step: a settings dump); or
    right under a record at a counter, as its continuation (``Epoch: 001, Loss: 1.6046`` then
    ``Train acc:0.2422, Test acc:0.2200``)."""
    state = parser.state
    if state.step is None or not (state.announced or state.after_record) or not any(_METRIC_WORD.search(key) for key, _ in pairs):
        return False
    fields = [part for part in _FIELD_SPLIT.split(_PREFIX_END.sub("", line).strip()) if part]
    if len(fields) != len(pairs):
        return False  # words beside the pairs: a sentence, not a record
    for key, value in pairs:
        if _counter_name(key) is None:
            _emit(state, state.step, key, value)
        else:  # SpeechBrain's ``Epoch loaded: 40 - test loss: ...``: a record of its own, which the next line may go on
            state.placed = True
    return True


def _read_eval_means(parser: "TextParser", rest: str, phase: str) -> bool:
    """timm's ``Test: [  29/29]  Time: 0.041 (0.064)  Loss:  0.5951 (0.5882)  Acc@1: 81.25 (87.5)``:
    the running means of the evaluation's last batch are its results (times are no results)."""
    pairs = [(m["key"], _num(m["mean"])) for m in _WITH_MEAN.finditer(rest) if m["key"].lower() not in ("time", "data")]
    return _eval_pairs(parser, [(key, value) for key, value in pairs if value is not None], phase)


# ``#Images: 76``: how many samples an evaluation saw, no result of it
_NUMBER_OF = re.compile(r"#\s*[A-Za-z_]\w*\s*[:=]\s*\d+")


def _read_eval_summary(parser: "TextParser", rest: str, phase: str) -> bool:
    if "#" in rest:
        rest = _NUMBER_OF.sub(" ", rest)
    pairs = _fields(rest)
    if not pairs:  # Flair's ``DEV : loss 1.5114 - f1-score (micro avg)  0.6850``: "key value" fields
        pairs = [(m["key"].strip(), _num(m["value"])) for part in _SPACED_SPLIT.split(rest.strip())
                 if (m := _SPACED.match(part.strip())) is not None]
        pairs = [(key, value) for key, value in pairs if value is not None]
    return _eval_pairs(parser, [(key, value) for key, value in pairs if _counter_name(key) is None], phase)


def _eval_pairs(parser: "TextParser", pairs: list[tuple[str, float]], phase: str, named: bool = True) -> bool:
    """An evaluation's values at the latest training step, named for it (``val_loss``); with
    ``named``, only when one of them names a metric (``loss``, ``acc``, ...)."""
    if not pairs or (named and not any(_METRIC_WORD.search(key) for key, _ in pairs)):
        return False
    state = parser.state
    state.derived = True  # placed by the lines before it: no layout reads it
    prefix = _EVAL_PHASE.get(phase, phase)
    step = state.step if state.step is not None else 0.0
    for key, value in pairs:
        _emit(state, step, key if _EVAL_NAME.match(key) else f"{prefix}_{key}", value)
    return True


_GENERIC = re.compile(
    # unanchored, each way in starts with a literal and looks at most a few hundred
    # characters on: long lines (tqdm redraws joined by \r) stay linear
    r"(?i)(?:(?<![\w.])(?:" + _COUNTER_WORDS + r")\s*(?:[:=]\s*\[?\s*|\s*#\s*|\s+|\s*\[\s*)\d+(?:\.0+)?(?![\w.])[^\n\r]{0,400}?[A-Za-z_]\s*(?:[:=]|-->)\s*\[?\s*[-+]?(?:\d|\.\d|nan|inf)"
    # PyTorch's CIFAR-10 tutorial: ``[1,  2000] loss: 2.170``, the epoch and the batch in it
    r"|\n[ \t]*\[\s*\d+\s*(?:,\s*\d+\s*|\]\s*\[\s*\d+\s*/\s*\d+\s*)\][ \t]*[A-Za-z_][\w ./\-]*[:=][ \t]*[-+]?(?:\d|\.\d|nan|inf)"
    r"|\{\s*(?:['\"][^\n\r]{0,4000}?)?['\"](?:" + _COUNTER_WORDS + r")['\"]\s*:"
    # ``epoch 0: {'accuracy': 0.76}``: a counter, then a dict of metrics
    r"|(?<![\w.])(?:" + _COUNTER_WORDS + r")\s*[:=]?\s*\d+\s*[:=,\-|]?\s*\{\s*['\"]"
    r"|(?:train|training|epoch)\s*:?\s*(?:\d+|\[\s*\d+\s*\])\s*\[\s*\d+\s*/\s*\d+[^\n\r]{0,400}?[A-Za-z_]\s*[:=]\s*[-+]?\d"
    r"|\|\s*\d+/\d+\s*\[[^\]\n\r]{0,400}?[A-Za-z_]\s*=\s*[-+]?\d"
    # torchtune's bar description: ``1|25|Loss: 1.65:  10%|``
    r"|\|\d+\|[A-Za-z_][\w/ .\-]{0,40}:\s*[-+]?(?:\d|\.\d|nan|inf)[^\n\r|]{0,80}?\d%\|"
    # char-rnn's ``120/154000 (epoch 0.779), train_loss = 2.86``: an iteration of the run, then the epoch
    r"|\n[ \t]*\d+/\d+ \(epoch \d+(?:\.\d+)?\)\s*,\s*[A-Za-z_][\w/ ]{0,40}=\s*[-+]?(?:\d|\.\d|nan|inf)"
    # ``Step 10: loss 2.4``, ``step 10/15000 | loss 2.4 | lr 3e-4``: a counter, then "key value" fields
    r"|" + _COUNTER_THEN_SPACED +
    # TensorFlow's Object Detection API: ``Step 100 per-step time 0.567s``, then a dict of losses
    r"|\bStep \d+ per-step time [\d.]+s\b" + ")"
)


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
    Family(
        "olmo",
        re.compile(r"(?m)\[step=\d+(?:/\d+)?(?:,\s*epoch=\d+)?\]\s*$|\[batch=\d+/\d+\]:\s*(?:$|Train |Eval )"),
        _parse_olmo,
        hint=("[step=", "[batch="),
    ),
    Family("mmdet", re.compile(r"Epoch(?:\(\w+\))?[ \t]*\[\d+\][ \t]*\[[ \t]*\d+[ \t]*/[ \t]*\d+[ \t]*\]"), _parse_mmdet, hint="Epoch"),
    Family("mmiter", re.compile(r"\bIter\(train\)[ \t]*\[[ \t]*\d+[ \t]*/[ \t]*\d+[ \t]*\]"), _parse_mmiter, hint="Iter(train)"),
    Family("mllog", re.compile(r":::MLLOG[ \t]+\{"), _parse_mllog, hint=":::MLLOG"),
    Family("dreamer", re.compile(r"\n-+\[Step \d+\]-+[ \t]*\r?\n"), _parse_dreamer, hint="[Step "),
    Family("sbert", re.compile(r"EmbeddingSimilarityEvaluator: Evaluating the model on \S+ dataset"), _parse_sbert,
           hint="EmbeddingSimilarityEvaluator"),
    Family("marian", re.compile(r"\bEp\. \d+ : Up\. \d+ : "), _parse_marian, hint=" : Up. "),
    Family("clu", re.compile(r"\][ \t]+\[\d+\][ \t]+[A-Za-z_][\w/.\-]*=" + NUM), _parse_clu, hint="] ["),
    Family(
        "meters",
        re.compile(r"\n[ \t]*(?:Epoch|Train|Training):\s*\[\s*\d+\s*\]\s*\[\s*\d+\s*/\s*\d+\s*\][^\n]*?[A-Za-z]:?\s+"
                   + NUM + r"\s*\(\s*" + NUM + r"\s*\)"),
        _parse_meters,
        hint=": [",
    ),
    # an epoch's line, then Keras' bar or summary (``[====``, ``━━━``, `` - loss: 0.3``), not other text
    Family("keras", re.compile(r"\nEpoch \d+/\d+[ \t]*\r?\n[^\n]*(?:\[[=.>]|━| - \w+: ?[-+.\dna])"), _parse_keras, hint="Epoch "),
    Family("espnet", re.compile(r"\depoch(?::[a-z]+:\d+-\d+batch:| results: \[)"), _parse_espnet, hint="epoch"),
    # icefall's batch line, or its validation line (the first comes before any batch)
    Family(
        "icefall",
        re.compile(r"Epoch \d+, (?:batch \d+, loss\[[^\]\n]*\], tot_loss\[|validation:? [^\n]*?, over \d+\.\d+ frames\.)"),
        _parse_icefall,
        hint=("tot_loss[", " frames."),
    ),
    Family(
        "tf_estimator",
        re.compile(r"(?m)(?:, step = \d+\b|Saving dict for global step \d+:"
                   r"|(?:INFO:tensorflow:|\.py:\d+\] )\*{5} Eval results \*{5})"),
        _parse_tf,
        hint=(", step = ", "Saving dict for global step", "***** Eval results"),
    ),
    Family(
        "boost",
        re.compile(r"\n(?:\[\d+\]|\d+:)\t[A-Za-z_][\w.@\-]*(?:'s [\w.@\-]+)?:\s?[-+]?(?:\d|\.\d|nan|inf)"),
        _parse_boost,
        hint="\t",
    ),
    Family(
        "caffe",
        re.compile(r"\] Iteration \d+(?: \([^)\n]*\))?, (?:loss|lr) = |\] Iteration \d+, Testing net \(#|\][ \t]+T(?:rain|est) net output #"),
        _parse_caffe,
        hint=("] Iteration ", " net output #"),
    ),
    Family(
        "darknet",
        re.compile(r"\n[ \t]*\d+: [-+\d.naifNI]+, [-+\d.naifNI]+ avg(?: loss)?, [-+\d.eE]+ rate, "),
        _parse_darknet,
        hint=" rate, ",
        layout=True,
    ),
    Family(
        "sb3",
        re.compile(r"\n\|[ \t]+(?:total_timesteps[ \t]+\|[ \t]*\d+|(?:rollout|time|train|eval)/[ \t]+\|"
                   r"|TotalEnvInteracts[ \t]+\|[ \t]*[\d.e+]+)[ \t]*\|"),
        _parse_sb3,
        # a section's name, padded to its column (``| rollout/      |``), or the step of OpenAI
        # baselines' and Spinning Up's tables, which have no sections (``| total_timesteps    | 1692672     |``,
        # ``| TotalEnvInteracts |           4e+03 |``: the rows before it, read before the family was known,
        # are held from the table's ruler on)
        hint=("/    ", "total_timesteps ", "TotalEnvInteracts "),
    ),
    Family(
        "ray",
        re.compile(r"\nResult for \S+?:[ \t]*\r?\n {2}[A-Za-z_][\w/]*:"),
        _parse_ray,
        hint="Result for ",
    ),
    Family("markdown", _PIPE_DETECT, _parse_markdown, hint="|"),
    Family(
        "vits",
        re.compile(r"Train Epoch: \d+ \[\d+%\][ \t]*\r?\n[^\n\[]*\[(?:[-+]?[\d.]+(?:[eE][-+]?\d+)?, )*\d+, [-+\d.eE]+\][ \t]*\r?(?:\n|$)"),
        _parse_vits,
        hint="Train Epoch: ",
    ),
    Family("rsl_rl", re.compile(r"\n[ \t]*Learning iteration \d+/\d+[ \t]*\r?\n"), _parse_rsl_rl, hint="Learning iteration"),
    Family("allennlp", re.compile(r"\ballennlp\.training\.[\w.]+ - Epoch \d+/\d+"), _parse_allennlp, hint="allennlp.training"),
    Family("yolov3", re.compile(r"\n-+ \[Epoch \d+/\d+, Batch \d+/\d+\] -+[ \t]*\r?(?:\n|$)"), _parse_yolov3, hint=", Batch "),
    # its first iteration's line, then the first value of its training (the one may end a read, the other start the next)
    Family(
        "dopamine",
        re.compile(r"\bStarting iteration \d+[ \t]*\r?\n[^\n]*\bAverage undiscounted return per training episode: "),
        _parse_dopamine,
        hint="Starting iteration",
    ),
    Family("sample_factory", re.compile(r"\bFps is \(\d+ sec: [^)\n]*\)\. Total num frames: \d+\."), _parse_sample_factory,
           hint="Fps is ("),
    Family(
        "yolo_results",
        re.compile(r"\n[ \t]*\d+/\d+[ \t]+[\d.]+G(?:[ \t]+" + NUM + r"){13}[ \t]*\r?(?:\n|$)"),
        _parse_yolo_results,
        hint="G ",
    ),
    Family("generic", _GENERIC, _parse_generic, generic=True, layout=True),
    # last: only a log in which the general reader finds nothing is looked at for a table
    Family(
        "table",
        re.compile(r"(?i)\n[ \t]*" + _TABLE_WORDS + r"[ \t]*\r?(?:\n|$)|" + _RULED),
        _parse_table,
        weak=True,
    ),
)
FAMILY_NAMES = tuple(f.name for f in FAMILIES)
_TABLE = next(f for f in FAMILIES if f.name == "table")
_GENERAL = next(f for f in FAMILIES if f.generic)
#: Characters of text kept from an epoch line of its own until a family is known (its values may
#: come on lines alone, before the loss that shows the family: see ``_shows_epoch_records``).
_HELD_RECORDS = 16 * 1024
#: A line that is a ruler of dashes alone, as tables of metrics open and close (see TextParser.since_ruler).
_RULER_LINE = re.compile(r"(?m)^-{5,}[ \t]*\r?$")
_ALIASES = {"hf_dict": "generic"}  # read by the general reader since dicts are one of its shapes
_DETECT_PREFIX = 1 << 16  # bytes of a chunk decoded to detect its family first


def detect_family(text: str) -> Family | None:
    """The first built-in family that appears in ``text``."""
    lined = "\n" + text
    for family in FAMILIES:
        if family.hint is not None and not _has_hint(family, text):
            continue
        if family.detect.search(lined):
            return family
    if _shows_epoch_records(text):
        return _GENERAL
    return None


def _shows_epoch_records(text: str) -> bool:
    """Whether ``text`` shows epoch lines of their own with the epoch's values on lines alone
    (nnU-Net's ``Epoch 5``, then ``train_loss -0.2396``), which no family's pattern detects:
    a loss alone under an epoch line."""
    if ("oss" not in text and "OSS" not in text) or ("poch" not in text and "POCH" not in text):
        return False
    head = _EPOCH_LINE.search(text)
    return head is not None and _LOSS_RECORD.search(text, head.end()) is not None


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
            family = _ALIASES.get(family, family)
            self.family = next(f for f in FAMILIES if f.name == family)
        self._fixed = family is not None
        self.state = _State()
        self.rows = 0
        self.matched = 0
        self._plan_room = PLAN_BYTES
        self._probe_meta: dict = {}
        self.ending: Ending | None = None
        self.reached: float | None = None  # the step of the last point read: where an event line happened
        self.events: dict[str, tuple[list[float], list[float]]] = {}  # events read, not yet in a batch
        self.layouts = LayoutReader(self._parse_line, self._parse_odd, self._take_pending, self._fitted)
        self.read_any = False  # whether the family read a point yet (a guess may still change before)
        self.last_line = ""  # the last line of the text read before
        self.since_epoch = ""  # before any family: the text from the last epoch line of its own on
        self.since_ruler = ""  # ...and from the last ruler of dashes on (a table whose rows show its family late)
        self.replay = ""  # the line before a read, when the two showed the family together
        self.epoch_lines = False  # an epoch line of its own was seen: the batches under it count within it
        self._epoch_bound = False  # the lines of the layout learnt last step otherwise under such a line
        self._chunk = b""  # the chunk a layout reads, until it was looked at for an epoch line

    def rest(self) -> None:
        self.layouts.rest()

    def restart(self) -> None:
        self.state = _State()
        self.rows = 0
        self._plan_room = PLAN_BYTES
        self.ending = None
        self.reached = None
        self.events = {}
        self.layouts.reset()
        self.read_any = False
        self.last_line = ""
        self.since_epoch = ""
        self.since_ruler = ""
        self.replay = ""
        self.epoch_lines = False
        self._epoch_bound = False
        if not self._fixed:
            self.family = None

    def feed(self, data: bytes, first_line: int) -> Batch:
        batch = self._reach(self._feed(data, first_line))
        self.read_any = self.read_any or bool(batch.series)
        for series, (steps, values) in self.events.items():  # derived from lines that stay other text
            batch.add(series, steps, values)
        self.events = {}
        self.ending = _read_ending(data, self.ending, self._went_on)
        batch.meta["end"] = self.ending  # how the log ends so far (None: no end marker after the last metric line)
        stamp = last_stamp(data)
        if stamp is not None:
            batch.meta["stamped"] = stamp  # the last wall-clock time the log printed (its own clock)
        return batch

    def _detect(self, data: bytes) -> str | None:
        """Lock onto the family ``data`` shows, unless one is fixed or specific; the text decoded to see, if any."""
        family = self.family
        if self._fixed or (family is not None and not family.generic and not (family.weak and not self.read_any)):
            return None
        if family is not None and family.generic and self.read_any and len(data) > 2 * _DETECT_PREFIX:
            # a long log the general reader reads: only the start of each later read is looked at
            # for another family's lines (the whole read's search for each family's hints cost
            # a sixth of such a log's read)
            cut = data.rfind(b"\n", 0, _DETECT_PREFIX) + 1
            found = detect_family(_decode(data[:cut])) if cut else None
            if found is not None and not (found.generic or found.weak):
                self.family = found
            return None
        found, text = _detect_in(data)
        if found is None and family is None and self.last_line:
            # a family shown by two lines that came in two reads (VITS's ``Train Epoch: 8 [14%]``, then its
            # list; Ray Tune's ``Result for <trial>:``, then its block): the line before is read again with it
            found = detect_family(self.last_line + "\n" + text)
            if found is not None:
                self.replay = self.last_line + "\n"
        if found is not None and found.generic and not self.read_any:
            # the general reader finds nothing to read so far (a settings dump matched it): a table may
            text = _decode(data) if text is None else text
            if _TABLE.detect.search("\n" + text) is not None:
                found = _TABLE
        if found is not None and (
            family is None
            or (not self.read_any and (family.weak or family.generic))
            or (family.generic and not (found.generic or found.weak))
        ):
            self.family = found
        return text

    def _parse_pieces(self, text: str, first_line: int, batch: Batch) -> None:
        """The family's reading of ``text``, with its event lines kept as events at the step reached.

        Event lines (checkpoint saves, overflows: :mod:`~tuiloss.core.formats.eventlines`) are
        other text to the family; they are rare, so ``text`` is read in pieces that end at them,
        as if the log had been read to there. Only text the family reads line by line comes here
        (a layout read's lines are metric lines), so the search costs what those lines cost.
        """
        assert self.family is not None
        found = eventlines.event_lines(text) if eventlines.may_hold(text) else []
        start, line = 0, first_line
        for end, series, value in found:
            piece = text[start:end]
            self.family.parse(self, piece, line, batch)
            line += piece.count("\n")
            start = end
            step = self._reached_now()
            if step is not None:
                steps, values = self.events.setdefault(series, ([], []))
                steps.append(step)
                values.append(value)
        self.family.parse(self, text[start:] if start else text, line, batch)

    def _reached_now(self) -> float | None:
        """The step the log has reached at this point of the read: its latest point's, or the last step seen."""
        lasts = [steps[-1] for steps, _ in self.state.columns.values() if steps]
        if lasts:
            return float(max(lasts))
        return self.state.step if self.state.step is not None else self.reached

    def _reach(self, batch: Batch) -> Batch:
        """Note the step the log reached with ``batch``'s points: the latest last step of its series."""
        lasts = [float(steps[-1]) for steps, _ in batch.series.values() if len(steps)]
        if lasts:
            self.reached = max(lasts)
        return batch

    def _went_on(self, text: str) -> bool:
        """Whether ``text`` holds a metric line of the family: training went on."""
        return self.family is not None and self.family.detect.search("\n" + text) is not None

    def _feed(self, data: bytes, first_line: int) -> Batch:
        if self._plan_room > 0 and "planned_steps" not in self.state.meta:
            head = data if len(data) <= self._plan_room else data[: self._plan_room]
            self._plan_room -= len(head)
            if any(hint in head for hint in _PLAN_HINTS_BYTES):
                _note_planned(head, self.state.meta)
                self.state.setting_total = self.state.meta.get("planned_steps")
        data = strip_controls(data)  # a colourised log: its colours are no text
        if b">:" in data:
            data = _OUTPUT_TAG.sub(b"", data)  # ``[1,0]<stdout>:``: which process printed the line
        family = self.family
        if (family is None or family.generic or family.weak) and may_wrap_scalars(data):
            data = unwrap_scalars(data)  # ``loss: tensor(0.69, device='cuda:0')`` is ``loss: 0.69``
        text = self._detect(data)
        if self.family is not None and self.family.layout and not self.since_epoch and self.layouts.wants(data):
            self._chunk = data
            if self._epoch_bound and self.layouts.layout is not None and self._under_epoch_lines():
                self.layouts.reset()  # learnt before the first epoch line: its steps are no longer the lines' own
            batch = Batch()
            self.matched = 0
            fitted = self.layouts.feed(data, first_line, batch)
            self._chunk = b""
            if fitted is not None:
                batch.unmatched = max(data.count(b"\n") - self.matched - fitted, 0)
                batch.meta.update(self._meta())
                note_repeats(batch)
                return batch
        return self._feed_text(_decode(data) if text is None else text, first_line)

    def _feed_text(self, text: str, first_line: int) -> Batch:
        batch = Batch()
        lines = text.count("\n")
        self.matched = 0
        if self.family is None and _under_epoch_line(self.state) and _LOSS_RECORD.search(text) is not None:
            self.family = _GENERAL  # a loss alone under the epoch line read before (see detect_family)
        if self.family is not None:
            if self.since_epoch:  # the lines from an epoch line on, read before the family was known
                held, self.since_epoch = self.since_epoch, ""
                text, first_line = held + text, first_line - held.count("\n")
            elif self.since_ruler:  # ...or from a table's ruler on
                held, self.since_ruler = self.since_ruler, ""
                text, first_line = held + text, first_line - held.count("\n")
            elif self.replay:  # ...or the line before, which showed the family with this read
                text, first_line = self.replay + text, first_line - 1
            self.since_ruler = self.replay = ""
            self._parse_pieces(text, first_line, batch)
        else:
            head = None
            if "poch" in text or "POCH" in text:  # ``=== Epoch 1 ===`` before any metric line shows the family
                for head in _EPOCH_LINE.finditer(text):
                    _announce(self, [("epoch", float(head["n"]), head["m"])])
            if head is not None:
                self.since_epoch = text[head.start() :]
            elif self.since_epoch:
                self.since_epoch = self.since_epoch + text if len(self.since_epoch) < _HELD_RECORDS else ""
            ruler = None
            if "-----" in text:  # OpenAI baselines' table: its step, the family's sign, may be its last row
                for ruler in _RULER_LINE.finditer(text):
                    pass
            if ruler is not None:
                self.since_ruler = text[ruler.start() :]
            elif self.since_ruler:
                self.since_ruler = self.since_ruler + text if len(self.since_ruler) < _HELD_RECORDS else ""
            for end, series, value in eventlines.event_lines(text) if eventlines.may_hold(text) else []:
                if self.reached is not None:  # a log whose family is not known yet: at the step read before
                    steps, values = self.events.setdefault(series, ([], []))
                    steps.append(self.reached)
                    values.append(value)
        batch.unmatched = max(lines - self.matched, 0)
        end = text.rfind("\n", 0, len(text) - 1)
        self.last_line = text[end + 1 :].rstrip("\r\n")  # a ruled table's header, maybe: its ruler may come next
        for name, (steps, values) in self.state.columns.items():
            batch.add(name, steps, values)
        self._hand_on()
        batch.meta.update(self._meta())
        if self.state.counter is not None and self.state.counter.held:
            batch.meta["held"] = len(self.state.counter.held)  # lines that wait for the epoch's length
        note_repeats(batch)
        return batch

    def _meta(self) -> dict:
        """What the log says of its axis. A total of optimizer steps from its settings (the
        Trainer's ``Total optimization steps = 245``) is no total of an axis of epochs
        (``epoch 0: perplexity: ...`` lines): it is left out there."""
        meta = self.state.meta
        total = self.state.setting_total
        if total is not None and meta.get("planned_steps") == total and _counter_name(str(meta.get("step_key") or "")) == "epoch":
            return {**meta, "planned_steps": None}  # None, not left out: it replaces what an earlier batch said
        return meta

    # -- what the layout reader needs ------------------------------------------------

    def _parse_line(self, line: bytes) -> tuple[float, dict[str, float]] | None:
        """The family's reading of one line on its own: a step and its metrics.

        A line read on its own knows nothing of the lines above it: ``Batch 100: loss=...`` is
        step 100 alone, but batch 100 of the epoch under an epoch line of its own (``=== Epoch 2
        ===``), made global line by line (see :func:`_place`). Such a line is read under an epoch
        too; when that changes its reading and the log shows epoch lines, no layout reads it, so
        a chunk read at once gives the steps its lines read one by one give.
        """
        text = line.decode("utf-8", "replace")
        alone, meta = self._read_alone(text, None)
        if alone is not None:
            self._epoch_bound = self._read_alone(text, 1.0)[0] != alone
            if self._epoch_bound and self._under_epoch_lines():
                return None
            self._probe_meta = meta
        return alone

    def _read_alone(self, text: str, epoch: float | None) -> tuple[tuple[float, dict[str, float]] | None, dict]:
        """:meth:`_parse_line`'s reading of one line, under an epoch line of ``epoch`` if one is given, and
        what it says of the axis."""
        assert self.family is not None
        probe = TextParser(self.family.name)
        probe.state.epoch = epoch
        batch = Batch()
        self.family.parse(probe, text, 1, batch)
        columns = probe.state.columns
        if batch.skipped or probe.matched != 1 or not columns or probe.state.derived:
            return None, {}
        meta = {k: v for k, v in probe.state.meta.items() if k != "coarse_steps"}
        if any(len(steps) != 1 for steps, _ in columns.values()):
            return None, meta
        steps = {steps[0] for steps, _ in columns.values()}
        if len(steps) != 1:
            return None, meta
        return (steps.pop(), {name: values[0] for name, (_, values) in columns.items()}), meta

    def _under_epoch_lines(self) -> bool:
        """Whether the log showed an epoch line of its own (``=== Epoch 2 ===``) up to the end of the
        chunk a layout reads. The chunk is searched once, and only for lines whose step an epoch line
        changes (a search of a long log whose every line names its epoch cost a tenth of its read)."""
        if not self.epoch_lines:
            data, self._chunk = self._chunk, b""
            self.epoch_lines = self.state.epoch is not None or (
                (b"poch" in data or b"POCH" in data) and _EPOCH_LINE_BYTES.search(data) is not None
            )
        return self.epoch_lines

    def _parse_odd(self, data: bytes, first_line: int, batch: Batch) -> None:
        self._parse_pieces(_decode(data), first_line, batch)

    def _take_pending(self) -> Pending:
        pending = self.state.columns
        self._hand_on()
        return pending

    def _hand_on(self) -> None:
        """The points read are handed on: what was given at the latest step is remembered
        (a record of that step read later does not give it twice)."""
        state = self.state
        state.handed = (state.step, frozenset(_given_at_step(state)))
        state.columns = {}

    def _fitted(self, steps: np.ndarray) -> None:
        self.state.step = float(steps[-1])
        meta = self.state.meta
        meta.update(self._probe_meta)
        if _counter_name(str(meta.get("step_key", ""))) == "epoch" and (steps != np.floor(steps)).any():
            meta["coarse_steps"] = True


#: How far into a log its settings dump (``max_iters = 5000``) is looked for: trainers print
#: their plan before they train, and searching every chunk of a long log cost ~10% of its read.
PLAN_BYTES = 1 << 20


#: The tag an MPI launcher puts before each line of a process's output: Open MPI's
#: ``--tag-output`` ``[1,0]<stdout>:``, horovodrun's ``[0]<stdout>:``.
_OUTPUT_TAG = re.compile(rb"(?m)^\[\d+(?:,\d+)*\]<std(?:out|err)>:")


def _note_planned(data: bytes, meta: dict) -> None:
    """The planned total of a settings dump or argument list (``max_iters = 5000``, ``--max-steps``
    spelled ``max_steps=...``), whatever the family: the first one the log prints. The planned
    epochs of ``Start training for 300 epochs`` are noted too (a family that counts batches
    within epochs makes them a total of steps)."""
    if b"raining for " in data and "planned_epochs" not in meta:
        epochs = _TRAINING_FOR.search(data.decode("utf-8", "replace"))
        if epochs is not None and int(epochs[1]) > 0:
            meta["planned_epochs"] = float(epochs[1])
    for line in data.split(b"\n"):
        if any(hint in line for hint in _PLANNED_HINTS_BYTES):
            planned = _planned(line.decode("utf-8", "replace"))
            if planned:
                meta["planned_steps"] = planned
                return


def _planned(line: str) -> float | None:
    """The planned total ``line`` gives (see :data:`_PLANNED`), or None."""
    match = _PLANNED.search(line)
    if match is not None and match[2] and _NAMES_METRIC.search(line):
        return None  # the steps taken so far, beside the metrics at them
    total = float((match[1] or match[2]).replace(",", "")) if match is not None else 0.0
    return total if total > 0 else None


def _read_ending(data: bytes, held: Ending | None, went_on: Callable[[str], bool]) -> Ending | None:
    """How the log ends after ``data`` (see :mod:`~tuiloss.core.formats.endings`).

    Only the chunk's last :data:`~tuiloss.core.formats.endings.TAIL` bytes can hold the
    markers that count; the whole chunk is read only to see whether training went on
    after an ending found before.
    """
    cut = max(0, len(data) - TAIL)
    if held is None:
        last = data[data.rfind(b"\n", 0, len(data) - 1) + 1 :]
        if not may_hold(last) and went_on(_decode(last)):
            return None  # it ends in a metric line: nothing after it to read (the common case, in O(line))
        if not may_hold(data[cut:] if cut else data):
            return None
        if cut:
            cut = data.find(b"\n", cut) + 1
            data = data[cut:] if cut else b""
    return ending_of(_decode(data), went_on, held)


def _decode(data: bytes) -> str:
    text = data.decode("utf-8", "replace")
    if "\r" in text:
        text = text.replace("\r\n", "\n")
    return text


#: Seconds a user pattern may take over one block of lines before it is given up as too slow.
PATTERN_SECONDS = 1.0
#: Characters of whole lines matched under one deadline.
PATTERN_BLOCK = 256 * 1024


def compile_pattern(pattern: str):
    """A user pattern, compiled by ``regex`` (``re``'s syntax, but a match can be given a deadline
    and lets other threads run meanwhile); raises ``ValueError`` saying why it is no regex."""
    import regex

    try:
        return regex.compile(pattern, regex.M)
    except (regex.error, TypeError, ValueError) as exc:
        raise ValueError(str(exc)) from None


class PatternParser(LineParser):
    """A user's regex with named groups: ``step`` and one group per metric.

    Lines are matched a block of :data:`PATTERN_BLOCK` characters at a time, each under a
    deadline of ``seconds``: a pattern that backtracks without end on some line (``(a+)+$``
    on a long line of ``a``) raises :class:`PatternTooSlow` instead of freezing the reader.
    """

    format = "pattern"

    def __init__(self, pattern: str, seconds: float = PATTERN_SECONDS) -> None:
        self.regex = compile_pattern(pattern)
        self.seconds = seconds
        names = list(self.regex.groupindex)
        self.step_group = "step" if "step" in names else None
        self.metric_groups = [name for name in names if name != "step"]
        self.rows = 0
        self.ending: Ending | None = None

    def restart(self) -> None:
        self.rows = 0
        self.ending = None

    def feed(self, data: bytes, first_line: int) -> Batch:
        text = data.decode("utf-8", "replace")
        batch = Batch()
        state = _State()
        matched = 0
        for match in self._matches(text, first_line):
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
        self.ending = _read_ending(data, self.ending, lambda rest: self.regex.search(rest) is not None)
        batch.meta["end"] = self.ending
        return batch

    def _matches(self, text: str, first_line: int):
        """Every match in ``text``, a block of whole lines at a time, each block under the deadline."""
        start = 0
        while start < len(text):
            end = text.find("\n", start + PATTERN_BLOCK) + 1 or len(text)
            try:
                found = list(self.regex.finditer(text, start, end, timeout=self.seconds))
            except TimeoutError:
                raise PatternTooSlow(
                    f"it took over {self.seconds:g} s on {end - start} characters of lines from line "
                    f"{_line_no(text, start, first_line)} (nested repeats such as (a+)+ backtrack without end)"
                ) from None
            yield from found
            start = end
