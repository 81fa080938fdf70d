"""More log shapes seen in public training logs, on small logs written here (see test_formats_wild)."""

from __future__ import annotations

from tuiloss.core.formats.stdout import TextParser


def pts(batch, name):
    steps, values = batch.series[name]
    return [(float(s), float(v)) for s, v in zip(steps, values)]


def test_a_percentage_after_a_counter_word_is_progress_not_the_step():
    # kohya-ss sd-scripts: ``steps:  10%|...| 6/60 [..., avr_loss=0.25]``: the step is the bar's count
    text = "".join(f"steps: {k * 100 // 60:3d}%|##        | {k}/60 [00:{k:02d}<00:{60 - k:02d},  1.00it/s, avr_loss={1 / k:.4f}]\n"
                   for k in (6, 12, 18))
    batch = TextParser().feed(text.encode(), 1)
    assert pts(batch, "avr_loss") == [(6, 0.1667), (12, 0.0833), (18, 0.0556)]
