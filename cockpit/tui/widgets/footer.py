"""The key footer, recomposed only when the keys it shows actually change.

Textual's ``Footer`` rebuilds itself whenever bindings *may* have changed — on every focus move.
Moving between panes never changes the keys (the panes share them), so skipping identical
rebuilds keeps a focus key from costing a full layout pass while nine sessions stream.
"""

from __future__ import annotations

from textual.screen import Screen
from textual.widgets import Footer

COMPACT_BELOW = 140  # columns: a narrower terminal gets the compact footer (every key still fits at 80)


class KeyFooter(Footer):
    _signature: tuple | None = None  # the keys last shown (None: not drawn yet)

    def on_resize(self) -> None:
        compact = self.size.width < COMPACT_BELOW
        if compact != self.compact:
            self.compact = compact
            self.show_command_palette = not compact  # (ctrl+p still opens it; the keys need the room)

    def bindings_changed(self, screen: Screen) -> None:
        if not screen.app.app_focus:  # Textual rebuilds nothing meanwhile: remember nothing either
            super().bindings_changed(screen)  # (in a browser tab the app starts blurred until clicked)
            return
        signature = tuple(
            (key, b.binding.action, b.binding.description, b.binding.show, b.enabled)
            for key, b in screen.active_bindings.items()
        )
        if signature == self._signature:
            return
        self._signature = signature
        super().bindings_changed(screen)
