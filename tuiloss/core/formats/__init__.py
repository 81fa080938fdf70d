"""Pure parsers, one module per log family: bytes in, :class:`~tuiloss.core.model.Batch` out.

Beside its parser, a family's module knows how its files and folders look (an
MLflow run folder, a Trainer output folder, an event file's name), which
discovery asks. Reading a run's files as they grow is :mod:`tuiloss.core.sources`.
"""
