"""Labelled benchmark of the analysis detectors: ``python -m benchmarks.detection``.

It generates curves with known events (see :mod:`generate`), writes them as CSV, JSONL
and nanoGPT stdout logs, loads them with ``tuiloss.core.engine.load``, analyses every
run and scores precision and recall per kind (:mod:`score`). The table goes to
``benchmarks/detection/RESULTS.md``.
"""

#: What the detectors must reach (F1, issue 13): and verdict accuracy, and no finding on a clean control.
TARGETS = {"spike": 0.95, "nan": 0.95, "divergence": 0.95, "reset": 0.95, "drift": 0.85, "overfitting": 0.95, "eval_spike": 0.95}
VERDICT_ACCURACY = 0.9
PLATEAU_LEVEL = 0.05
