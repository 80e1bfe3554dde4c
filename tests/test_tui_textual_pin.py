"""Textual internals the TUI's fast paths rely on (pinned Textual version in pyproject.toml).

Each member below is private to Textual; if an upgrade removes or renames one, the TUI falls back
to slower public behaviour *silently* (a key then waits for Textual's next 60 Hz tick, a growing
answer lays out the whole screen). This test makes that loud: fix the fast path (or its fallback)
before moving the pin.

- ``Screen._dirty_widgets`` / ``Screen._on_timer_update`` / ``App._batch_count``:
  ``MainScreen._on_idle`` draws a key's frame at once (docs/BENCHMARKS.md, key-to-screen).
- ``Widget._scroll_update``: ``PaneBody.show`` updates a body's scroll range without a layout pass.
- ``Screen._compositor``, ``Compositor._dirty_regions`` / ``_regions_to_spans``, ``ChopsUpdate``:
  ``SplitCompositor`` (the main screen's) renders each box of changed regions on its own.
"""

from __future__ import annotations

import importlib.metadata
import tomllib
from pathlib import Path

from textual.app import App
from textual.screen import Screen
from textual.widget import Widget

ROOT = Path(__file__).resolve().parent.parent


def test_textual_is_the_pinned_version():
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    pin = next(d for d in deps if d.startswith("textual"))
    assert pin.startswith("textual=="), f"Textual must be pinned exactly, found {pin!r}"
    assert importlib.metadata.version("textual") == pin.split("==")[1].split(";")[0].strip()


def test_private_members_of_the_fast_paths_exist():
    assert callable(getattr(Screen, "_on_timer_update", None)), "Screen._on_timer_update is gone"
    assert callable(getattr(Widget, "_scroll_update", None)), "Widget._scroll_update is gone"
    from textual._compositor import ChopsUpdate, Compositor

    assert callable(getattr(Compositor, "_regions_to_spans", None)), "Compositor._regions_to_spans is gone"
    assert callable(getattr(Compositor, "render_partial_update", None)), "Compositor.render_partial_update is gone"
    assert ChopsUpdate.__init__.__code__.co_varnames[1:4] == ("chops", "spans", "chop_ends"), "ChopsUpdate changed"


async def test_private_state_of_the_fast_paths_exists():
    app = App()
    async with app.run_test():
        screen = app.screen
        assert isinstance(getattr(screen, "_dirty_widgets", None), set), "Screen._dirty_widgets is gone"
        assert isinstance(getattr(app, "_batch_count", None), int), "App._batch_count is gone"
        compositor = getattr(screen, "_compositor", None)
        assert isinstance(getattr(compositor, "_dirty_regions", None), set), "Compositor._dirty_regions is gone"
