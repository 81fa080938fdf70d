"""Lines of a text log that say something happened: a checkpoint saved, an fp16 overflow.

They carry no metric, so the family parsers pass them over as unmatched text; this module
finds them so the text parser can keep them as events at the step the log had reached
(see :class:`~tuiloss.core.formats.stdout.TextParser`; it looks among the lines a layout read
did not fit, so a log read at layout speed pays for no search of its metric lines):

* checkpoint saves: Hugging Face's ``Saving model checkpoint to out/checkpoint-500``,
  Megatron's ``saving checkpoint at iteration 1000 to ...``, DeepSpeed's ``[Torch] Checkpoint
  global_step10 is about to be saved!`` and ``Saving model checkpoint: ...``, fairseq's and
  OpenNMT's ``Saving checkpoint to ...``, mmdetection's ``Saving checkpoint at 5 epochs``,
  OLMo's ``Saving unsharded checkpoint...``, Lightning's and Keras's ``..., saving model to
  '.../epoch=0-step=500.ckpt'``;
* DeepSpeed's ``OVERFLOW! Rank 0 Skipping step. Attempted loss scale: 65536, reducing to
  32768`` (and ``Overflow detected. Skipping step. ...``): a skipped step and the new scale.

"not saving checkpoint", "Preparing to save checkpoint" and settings dumps
(``save_checkpoint ....... True``) are none.
"""

from __future__ import annotations

import re

from tuiloss.core.analysis.events import CHECKPOINT_SERIES, OVERFLOW_SERIES

_CHECKPOINT = (
    r"(?<!not )(?<!Not )\b[Ss]aving\s+(?:[\w-]+\s+){0,2}?(?:checkpoint|Checkpoint|CHECKPOINT)s?\b"
    r"|\b[Cc]heckpoint\s+\S+\s+is about to be saved"
    r"|(?<!not )\bsaving model to\s"
)
_OVERFLOW = r"(?:OVERFLOW!|[Oo]verflow detected\.)[^\n]*?[Ss]kipping step(?:[^\n]*?reducing to\s+(?P<scale>[0-9.eE+]+))?"
EVENT_LINE = re.compile(r"(?P<checkpoint>" + _CHECKPOINT + r")|(?P<overflow>" + _OVERFLOW + r")")
#: Text one of those lines contains: text with none of them is not searched.
HINTS = ("heckpoint", "HECKPOINT", "aving model to", "OVERFLOW", "verflow detected")


def may_hold(data: str) -> bool:
    """Whether ``data`` may hold an event line (a cheap test before the search)."""
    return any(hint in data for hint in HINTS)


def event_lines(data: str) -> list[tuple[int, str, float]]:
    """Each event line of ``data``: the offset just past its line, its series and its value.

    The series is :data:`~tuiloss.core.analysis.events.CHECKPOINT_SERIES` (value 1) or
    :data:`~tuiloss.core.analysis.events.OVERFLOW_SERIES` (the loss scale reduced to, NaN when
    the line does not say). A line holding both is an overflow. Only the lines that hold one
    of :data:`HINTS` are searched (found at C speed), so a big chunk costs little.
    """
    starts = set()
    for hint in HINTS:
        at = data.find(hint)
        while at >= 0:
            starts.add(data.rfind("\n", 0, at) + 1)
            end = data.find("\n", at)
            if end < 0:
                break
            at = data.find(hint, end)
    out: list[tuple[int, str, float]] = []
    for start in sorted(starts):
        end = data.find("\n", start)
        end = len(data) if end < 0 else end + 1
        match = EVENT_LINE.search(data, start, end)
        if match is None:
            continue
        overflow = None
        for one in EVENT_LINE.finditer(data, start, end):  # an overflow anywhere on the line wins
            if one["overflow"] is not None:
                overflow = one
                break
        if overflow is not None:
            scale = overflow["scale"]
            try:
                value = float(scale.rstrip(".")) if scale else float("nan")
            except ValueError:
                value = float("nan")
            out.append((end, OVERFLOW_SERIES, value))
        else:
            out.append((end, CHECKPOINT_SERIES, 1.0))
    return out
