"""Cockpit widgets: session panes, the pane grid, the totals bar."""

from cockpit.tui.widgets.grid import PaneGrid
from cockpit.tui.widgets.pane import SessionPane
from cockpit.tui.widgets.totals import TotalsBar

__all__ = ["PaneGrid", "SessionPane", "TotalsBar"]
