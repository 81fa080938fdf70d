"""TensorFlow Model Garden's Orbit controller: ``train | step: N | ... | output: {...}``, the dict of
outputs on the line or over the lines under it (on small logs written here)."""

from __future__ import annotations

from tuiloss.core.formats.stdout import TextParser
from wild_helpers import feed_lines, pts

ONE_LINE = "".join(
    f"I0324 07:55:{20 + k:02d}.597360 140348344015936 controller.py:479] train | step: {k:6d} | steps/sec: {3.5 - 0.1 * k:6.1f}"
    f" | output: {{'train_accuracy': {0.1 * k:.1f}, 'train_loss': {12.6 - k:.4f}}}\n"
    for k in range(1, 4)
) + ("I0324 07:55:30.163815 140348344015936 controller.py:479] eval | step:      3 | eval time:   48.1 | output:"
     " {'top_1_accuracy': 0.25, 'validation_loss': 9.5}\n")

OVER_LINES = """train | step:    141 | training until step 188...
train | step:    188 | steps/sec:    0.1 | output:
    {'learning_rate': 0.0099,
     'model_loss': 0.0091,
     'total_loss': 0.0096,
     'training_loss': 0.0096}
eval | step:    188 | running 11 steps of evaluation...
eval | step:    188 | eval time:   48.1 | output:
    {'map': 0.0012,
     'model_loss': 0.0158,
     'validation_loss': 0.0163}
train | step:    235 | steps/sec:    0.1 | output:
    {'learning_rate': 0.0098,
     'model_loss': 0.0081,
     'total_loss': 0.0086,
     'training_loss': 0.0086}
"""


def test_the_outputs_on_the_line_are_points_at_its_step_an_evaluations_named_for_it():
    for batch in (TextParser().feed(ONE_LINE.encode(), 1), feed_lines(TextParser(), ONE_LINE)):
        assert pts(batch, "train_loss") == [(1.0, 11.6), (2.0, 10.6), (3.0, 9.6)]
        assert pts(batch, "train_accuracy") == [(1.0, 0.1), (2.0, 0.2), (3.0, 0.3)]
        assert pts(batch, "steps/sec")[0] == (1.0, 3.4)
        assert pts(batch, "eval_top_1_accuracy") == [(3.0, 0.25)]
        assert pts(batch, "validation_loss") == [(3.0, 9.5)]  # it names its phase already
        assert pts(batch, "eval_time") == [(3.0, 48.1)]
        assert batch.meta["step_key"] == "step"


def test_the_outputs_printed_under_the_line_are_read_at_its_step():
    for batch in (TextParser().feed(OVER_LINES.encode(), 1), feed_lines(TextParser(), OVER_LINES)):
        assert pts(batch, "training_loss") == [(188.0, 0.0096), (235.0, 0.0086)]
        assert pts(batch, "learning_rate") == [(188.0, 0.0099), (235.0, 0.0098)]
        assert pts(batch, "model_loss") == [(188.0, 0.0091), (235.0, 0.0081)]
        assert pts(batch, "eval_model_loss") == [(188.0, 0.0158)]
        assert pts(batch, "eval_map") == [(188.0, 0.0012)]
        assert pts(batch, "validation_loss") == [(188.0, 0.0163)]
