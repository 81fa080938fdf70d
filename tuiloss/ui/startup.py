"""Start-up: the first frame waits only for Textual and the widgets.

Everything that needs numpy (the store, the engine and its watcher, the chart's data and
rasteriser, the findings and the analyses: :mod:`tuiloss.ui.parts`) is imported and built by
:meth:`DeferredStart._boot` once the first frame, footer keys included, is on screen; only then
do the driver and insights threads start. Until then only quit and help answer. The app reaches
those parts' helpers through ``app.late`` (the :mod:`tuiloss.ui.parts` module), so nothing of
them loads earlier by accident; the widgets and the helpers the first frame uses import no numpy.
"""

from __future__ import annotations

from textual.widgets import Footer

from tuiloss.core.cpus import one_blas_thread
from tuiloss.ui import collection, messages


class DeferredStart:
    """The viewer's start-up steps, mixed into :class:`~tuiloss.ui.app.TuilossApp` (a Textual App).

    They read the app's ``config``, ``_factories``, ``selection`` and ``report_root``, and call
    its ``shown_runs``, ``_ingest``, ``_tick`` and ``_draw_status``.
    """

    def boot_when_drawn(self) -> None:
        """Boot once the first frame is on screen, footer keys included (Textual lays them out a
        few refreshes after the rest)."""
        keys_placed = any(key.region.area for key in self.query_one(Footer).children)
        self.call_after_refresh(self._boot if keys_placed else self.boot_when_drawn)

    def _boot(self) -> None:
        """After the first frame: load and build the numpy-backed parts, then start the threads."""
        one_blas_thread()  # before numpy loads (an app not started by the command too)
        from tuiloss.ui import parts

        self.late = parts
        for name, part in parts.build(self.config, *self._factories).items():
            setattr(self, name, part)  # options, engine, watcher, store, view, curves, findings, panel, activity, grouping
        self.insights = parts.InsightsFeed(self.set_timer, lambda ready: self.post_message(messages.InsightsReady(ready)),
                                           self.shown_runs, lambda: self.selection.metric, self.report_root,
                                           by_configuration=self.config.group_by != ())
        self.ingestor = parts.Ingestor(self.engine, self.watcher, lambda event: self.post_message(messages.from_driver(event)))
        self.booted = True
        self.refresh_bindings()
        if self._stopped:
            return
        self.insights.start()
        self.run_worker(self._ingest, thread=True, name="ingest", group="ingest", exit_on_error=False)
        self.set_interval(1.0, self._tick)
        self.set_timer(collection.LONGEST_HOLD, collection.release)
        self._draw_status()

    def check_action(self, action: str, parameters: tuple) -> bool | None:
        """Until :meth:`_boot` (a moment after the first frame) only quit and help answer."""
        return True if self.booted or action in ("quit", "help") else None
