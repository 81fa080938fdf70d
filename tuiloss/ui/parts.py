"""What the viewer loads after its first frame: the numpy-backed parts and the helpers it draws with.

:mod:`tuiloss.ui.startup` imports this module once the first frame is on screen and the app
keeps it as ``app.late``: the store, the engine and its watcher, the chart's data and rasteriser,
the findings and the analyses (numpy, and with them most of tuiloss) stay off the start-up path.
"""

from __future__ import annotations

import os
from typing import Callable

from tuiloss.config import Config
from tuiloss.core.driver import Ingestor
from tuiloss.core.engine import Engine, Options
from tuiloss.core.report import nothing_found
from tuiloss.core.store import Store
from tuiloss.ui.chartdata import ChartView, edge_step, moved_cursor, next_smoothing
from tuiloss.ui.curves import Curves, legend_text, value_at_cursor, values_at
from tuiloss.ui.eventmarks import EventMarks, near_text
from tuiloss.ui.export import export_shown
from tuiloss.ui.feed import InsightsFeed
from tuiloss.ui.findings import Findings, chart_unchanged, marks, notice_title
from tuiloss.ui.grouped import Grouping
from tuiloss.ui.panel import PanelText
from tuiloss.ui.runstate import Activities, ListedRuns, list_rows, take_read
from tuiloss.ui.watcher import Watcher
from tuiloss.ui.xaxis import XAxis

__all__ = [
    "Ingestor", "InsightsFeed", "ListedRuns", "build", "chart_unchanged", "edge_step", "export_shown", "legend_text",
    "list_rows", "marks", "moved_cursor", "near_text", "next_smoothing", "nothing_found", "notice_title", "take_read",
    "value_at_cursor", "values_at",
]


def build(config: Config, engine_factory: Callable | None, watcher_factory: Callable | None) -> dict[str, object]:
    """The app's numpy-backed attributes for ``config``, by name; the factories (tests' doubles)
    default to the real engine and watcher."""
    options = Options(format=config.format, pattern=config.pattern, metric=config.metric, step=config.step,
                      poll=config.poll)
    roots = list(config.paths)
    view = ChartView(log_x=config.log_x, log_y=config.log_y, smoothing=config.smoothing,
                     ascii=config.ascii, no_color=bool(os.environ.get("NO_COLOR")))
    return {"options": options, "engine": (engine_factory or Engine)(roots, options),
            "watcher": (watcher_factory or Watcher)(roots, config.poll), "store": Store(), "view": view,
            "curves": Curves(), "xaxis": XAxis(), "eventmarks": EventMarks(), "findings": Findings(), "panel": PanelText(),
            "activity": Activities(), "grouping": Grouping(config.group_by, on=bool(config.group_by))}
