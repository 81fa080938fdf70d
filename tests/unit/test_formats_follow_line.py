"""A line of metric pairs right under a record at a counter continues that record: hand-written
loops print the loss beside the epoch, then the accuracies on the next line."""

from __future__ import annotations

from wild_helpers import batches, pts

TWO_LINES = "Initializing ptens without GPU support.\n" + "".join(
    f"Epoch: {e:03d}, Loss: {1.6 - 0.01 * e:.4f}\nTrain acc:{0.2 + 0.01 * e:.4f}, Test acc:{0.19 + 0.01 * e:.4f}\n"
    for e in range(1, 6)
)


def test_the_line_under_a_record_is_read_at_its_step():
    for batch in batches(TWO_LINES):
        assert pts(batch, "Loss") == [(float(e), round(1.6 - 0.01 * e, 4)) for e in range(1, 6)]
        assert pts(batch, "Train acc") == [(float(e), round(0.2 + 0.01 * e, 4)) for e in range(1, 6)]
        assert pts(batch, "Test acc")[-1] == (5.0, 0.24)


def test_settings_or_a_sentence_under_a_record_are_no_points():
    text = ("Epoch: 001, Loss: 1.6046\nlr: 0.001, momentum: 0.9\n"
            "Epoch: 002, Loss: 1.5845\nsaved the best acc: 0.27 so far, continuing\n")
    for batch in batches(text):
        assert sorted(batch.series) == ["Loss"]


def test_only_the_line_right_under_a_record_continues_it():
    text = "Epoch: 001, Loss: 1.6046\nnothing to see here\nTrain acc:0.2422, Test acc:0.2200\n"
    for batch in batches(text):
        assert sorted(batch.series) == ["Loss"]


def test_pygs_bare_phase_values_beside_its_loss_are_no_losses():
    """PyG's examples print ``Loss`` and then each split's accuracy under the split's bare name."""
    text = "".join(f"Epoch: {e:03d}, Loss: {1.95 - 0.1 * e:.4f}, Train: {0.18 + 0.05 * e:.4f}, "
                   f"Val: {0.11 + 0.04 * e:.4f}, Test: {0.11 + 0.04 * e:.4f}\n" for e in range(1, 6))
    for batch in batches(text):
        assert sorted(batch.series) == ["Loss", "Test", "Train", "Val"]
        assert pts(batch, "Train")[0] == (1.0, 0.23)
