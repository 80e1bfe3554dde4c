"""The Textual UI of Cockpit. ``CockpitApp(manager, engine)``; see ``cockpit.tui.app``."""

from cockpit.tui.app import CockpitApp

__all__ = ["CockpitApp"]
