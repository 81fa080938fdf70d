"""Labelled benchmark of the analysis detectors: ``python -m benchmarks.detection``.

It generates curves with known events (see :mod:`generate`), writes them as CSV, JSONL
and nanoGPT stdout logs, loads them with ``tuiloss.core.engine.load``, analyses every
run and scores precision and recall per kind (:mod:`score`). The table goes to
``benchmarks/detection/RESULTS.md``.
"""

#: What the detectors must reach (issue 3, section 5).
TARGETS = {"spike": 0.95, "nan": 0.95, "divergence": 0.95, "reset": 0.95, "drift": 0.85}
PLATEAU_LEVEL = 0.05
