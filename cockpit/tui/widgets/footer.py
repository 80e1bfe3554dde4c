"""The key footer, recomposed only when the keys it shows actually change.

Textual's ``Footer`` rebuilds itself whenever bindings *may* have changed — on every focus move.
Moving between panes never changes the keys (the panes share them), so skipping identical
rebuilds keeps a focus key from costing a full layout pass while nine sessions stream.
"""

from __future__ import annotations

from textual.screen import Screen
from textual.widgets import Footer


class KeyFooter(Footer):
    _signature: tuple | None = None  # the keys last shown (None: not drawn yet)

    def bindings_changed(self, screen: Screen) -> None:
        signature = tuple(
            (key, b.binding.action, b.binding.description, b.binding.show, b.enabled)
            for key, b in screen.active_bindings.items()
        )
        if signature == self._signature:
            return
        self._signature = signature
        super().bindings_changed(screen)
