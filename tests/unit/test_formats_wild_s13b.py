"""Log shapes of public training logs that were misread, on small logs written here (see test_formats_wild)."""

from __future__ import annotations

import pytest

from tuiloss.core.formats.stdout import TextParser


def feed_lines(parser, text: str):
    """Feed ``text`` a line at a time, as a tailer of a live file would."""
    lines = text.splitlines(keepends=True)
    out = parser.feed(lines[0].encode(), 1)
    for k, line in enumerate(lines[1:], start=2):
        out.merge(parser.feed(line.encode(), k))
    return out


def both(text: str):
    """The batch of ``text`` read whole, and read a line at a time."""
    return [TextParser().feed(text.encode(), 1), feed_lines(TextParser(), text)]


def pts(batch, name):
    steps, values = batch.series[name]
    return [(float(s), float(v)) for s, v in zip(steps, values)]


def steps_of(batch, name):
    return [step for step, _ in pts(batch, name)]


# -- MindSpore ---------------------------------------------------------------------

def mindspore(epochs, steps, sep=" ", colon=":") -> str:
    return "".join(f"epoch: {e}{sep}step{colon} {s}, loss is {0.9 - e / 10 - s / 1000:.4f}\n" for e in epochs for s in steps)


def test_mindspores_step_counts_within_the_epoch_and_its_metric_is_loss():
    # LossMonitor: ``epoch: 2 step: 3, loss is 0.697``; the step restarts every epoch
    text = "============== Starting Training ==============\n" + mindspore((1, 2, 3), (1, 2, 3, 4))
    for batch in both(text):
        assert set(batch.series) == {"loss"}
        assert steps_of(batch, "loss") == list(range(1, 13))
        assert pts(batch, "loss")[4] == (5, 0.699)
        assert batch.meta["step_key"] == "step"


def test_a_mindspore_log_that_skips_epochs_never_goes_back_nor_counts_on():
    # a README that quotes epoch 1 and then epoch 7: the steps of epoch 7 follow those of epoch 1
    # (epochs of 4 steps as far as the log shows), never a restart at step 1
    text = mindspore((1,), (1, 2, 3, 4)) + mindspore((7,), (1, 2))
    for batch in both(text):
        assert steps_of(batch, "loss") == [1, 2, 3, 4, 25, 26]
    # ... nor a global count when the quoted epoch shows a step beyond the first epoch's last
    text = mindspore((1,), (1, 2, 3, 4, 5)) + mindspore((4,), (20, 21), colon="")
    for batch in both(text):
        assert steps_of(batch, "loss") == [1, 2, 3, 4, 5, 35, 36]


def test_mindspores_tutorial_loops_and_data_sink_mode():
    # ``epoch: 0, step: 10, loss is ...`` (a loop that counts from 0); in data sink mode one line an epoch,
    # its step the epoch's size
    text = mindspore((0, 1), (0, 10, 20), sep=", ")
    for batch in both(text):
        assert steps_of(batch, "loss") == [0, 10, 20, 20, 30, 40]
    text = mindspore((1, 2, 3), (1875,))
    for batch in both(text):
        assert steps_of(batch, "loss") == [1875, 3750, 5625]


def test_mindspores_ranks_repeat_a_step_and_a_global_step_wins():
    text = "".join(f"epoch: 1 step: {s}, loss is 0.{r}{s}\n" for s in (1, 2) for r in range(1, 9))
    for batch in both(text):
        assert steps_of(batch, "loss") == [1] * 8 + [2] * 8
    # a callback that prints the global step too
    text = "".join(f"epoch: {e} step: {s} global_step: {(e - 1) * 50 + s}, loss is 0.5\n" for e in (1, 2) for s in (25, 50))
    for batch in both(text):
        assert steps_of(batch, "loss") == [25, 50, 75, 100]
