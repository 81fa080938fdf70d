"""The viewer's widgets, each named after what it shows."""

from tuiloss.ui.widgets.filter_bar import FilterBar
from tuiloss.ui.widgets.insights_panel import InsightsPanel
from tuiloss.ui.widgets.keys_footer import KeysFooter
from tuiloss.ui.widgets.loss_chart import LossChart
from tuiloss.ui.widgets.run_list import RunList
from tuiloss.ui.widgets.status_bar import StatusBar

__all__ = ["FilterBar", "InsightsPanel", "KeysFooter", "LossChart", "RunList", "StatusBar"]
