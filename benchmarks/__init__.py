"""tuiloss benchmarks: ``python -m benchmarks`` measures and writes ``RESULTS.md``.

Every figure is a ratio against a baseline measured in the same run (the machine
is shared and noisy), the median over repeated paired runs. Data is generated
here and cached in ``benchmarks/.data/`` (gitignored).
"""
