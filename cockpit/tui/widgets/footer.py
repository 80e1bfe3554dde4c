"""The key footer, recomposed only when the keys it shows actually change.

Textual's ``Footer`` rebuilds itself whenever bindings *may* have changed — on every focus move.
Moving between panes never changes the keys (the panes share them), so skipping identical
rebuilds keeps a focus key from costing a full layout pass while nine sessions stream.

Below :data:`COMPACT_BELOW` columns the footer fits its width: shorter labels, then the keys
of :data:`DROP_FIRST` go, then others from the right — never quit / detach, and ``^p palette``
stays docked at the right (every key is in the palette and the Keys help).
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.screen import Screen
from textual.widgets import Footer
from textual.widgets._footer import FooterKey

COMPACT_BELOW = 140  # columns: a narrower terminal gets the compact footer, fitted to its width
SHORT = {"Allow once": "Once", "Allow session": "Session", "Continue fresh": "Fresh", "Approve…": "Approve",
         "Stop working & quit": "Stop & quit"}
DROP_FIRST = ("pick_theme", "jump", "page", "shell", "zoom", "budget", "warnings")  # action names, first goes first
KEEP = ("quit", "detach")
PALETTE = 11  # columns of the docked "▏^p palette"


def _name(action: str) -> str:
    return action.split("(", 1)[0]


class KeyFooter(Footer):
    _signature: tuple | None = None  # the keys last shown (None: not drawn yet)
    _fitted_to = 0  # the width the compact keys were last fitted to

    def on_resize(self) -> None:
        width = self.size.width
        compact = width < COMPACT_BELOW
        if compact != self.compact:
            self.compact = compact
            self._fitted_to = width
            self.refresh(recompose=True)
        elif compact and width != self._fitted_to:
            self._fitted_to = width
            self.refresh(recompose=True)

    def compose(self) -> ComposeResult:
        if not self.compact or not self._bindings_ready:
            yield from super().compose()
            return
        keys: dict[str, tuple] = {}  # one key per action, as Footer
        for _node, binding, enabled, tooltip in self.screen.active_bindings.values():
            if binding.show and binding.action not in keys:
                keys[binding.action] = (binding, enabled, tooltip, SHORT.get(binding.description, binding.description))

        def width(item: tuple) -> int:
            binding, _enabled, _tooltip, label = item
            return len(self.app.get_key_display(binding)) + (len(label) + 1 if label else 0) + 1

        room = (self.size.width or self.app.size.width) - PALETTE
        order = [a for name in DROP_FIRST for a in keys if _name(a) == name]
        order += [a for a in reversed(keys) if a not in order and _name(a) not in KEEP]
        for action in order:
            if sum(width(item) for item in keys.values()) <= room:
                break
            del keys[action]
        for binding, enabled, tooltip, label in keys.values():
            yield FooterKey(binding.key, self.app.get_key_display(binding), label, binding.action,
                            disabled=not enabled, tooltip=tooltip).data_bind(compact=Footer.compact)
        if self.app.ENABLE_COMMAND_PALETTE:
            try:
                _node, binding, enabled, tooltip = self.screen.active_bindings[self.app.COMMAND_PALETTE_BINDING]
            except KeyError:
                return
            yield FooterKey(binding.key, self.app.get_key_display(binding), binding.description, binding.action,
                            classes="-command-palette", disabled=not enabled,
                            tooltip=binding.tooltip or binding.description)

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
