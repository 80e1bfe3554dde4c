"""Themes as files: every ``*.toml`` in the project's ``themes/`` folder and in the user's
themes folder (see ``state.user_themes_dir``) becomes a Textual ``Theme``.

A theme file::

    name = "cockpit-dark"          # optional; defaults to the file's stem
    dark = true
    primary = "#5fafff"            # + secondary, accent, warning, error, success,
    background = "#101418"         #   foreground, surface, panel, boost
    [variables]                    # our own CSS variables (status colours), plus any Textual one
    status-streaming = "#5fafff"

Status variables not set in a theme fall back to ``STATUS_DEFAULTS`` (so Textual's built-in
themes work too). A broken file is skipped with a warning, never fatal. User files override
project files of the same name.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

from textual.theme import Theme

PROJECT_THEMES = Path(__file__).resolve().parent.parent / "themes"  # cockpit/themes, shipped in the package
# (the repository's top-level ``themes/`` is a link to it)
DEFAULT_THEME = "cockpit-dark"

STATUS_DEFAULTS: dict[str, str] = {
    "status-queued": "$foreground-muted",
    "status-starting": "$foreground-muted",
    "status-preseeding": "$secondary",
    "status-streaming": "$primary",
    "status-running-tool": "$accent",
    "status-needs-approval": "$error",
    "status-waiting": "$warning",
    "status-budget-reached": "$warning",
    "status-done": "$success",
    "status-error": "$error",
    "status-killed": "$foreground-muted",
    "status-interrupted": "$warning",
    "pane-border": "$panel-lighten-2",  # a pane's frame; light themes set a darker one
}

MIN_CONTRAST = 3.0  # WCAG's ratio for large or bold text: a state's word in a pane's status line


def readable_on(colour: str, *backgrounds: str) -> str:
    """``colour`` as text on each of ``backgrounds`` (the screen's, the header's panel): itself
    when its contrast with each is at least :data:`MIN_CONTRAST`, else darkened (light
    backgrounds) or lightened until it is — a theme made for other uses (Textual's
    ``atom-one-light``: ``success`` #6CF23F on #FAFAFA, 1.4:1) keeps its hue. Anything that does
    not parse as a colour is returned as it is."""
    from textual.color import Color

    try:
        fg = Color.parse(colour)
        bgs = [Color.parse(b) for b in backgrounds if b]
    except Exception:
        return colour
    if not bgs or all(_contrast(fg, bg) >= MIN_CONTRAST for bg in bgs):
        return colour
    light = sum(bg.brightness for bg in bgs) / len(bgs) > 0.5
    towards = Color(0, 0, 0) if light else Color(255, 255, 255)
    for step in range(1, 21):
        nearer = fg.blend(towards, step / 20)
        if all(_contrast(nearer, bg) >= MIN_CONTRAST for bg in bgs):
            return nearer.hex
    return towards.hex


def _contrast(a, b) -> float:
    def lum(c) -> float:
        def ch(v: int) -> float:
            x = v / 255
            return x / 12.92 if x <= 0.03928 else ((x + 0.055) / 1.055) ** 2.4
        return 0.2126 * ch(c.r) + 0.7152 * ch(c.g) + 0.0722 * ch(c.b)

    hi, lo = sorted((lum(a), lum(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


_COLOUR_KEYS = (
    "primary secondary warning error success accent foreground background surface panel boost"
).split()


def theme_from_file(path: Path) -> Theme:
    """Parse one theme file; raises ``ValueError`` with the reason when it is not a theme."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ValueError(f"{path.name}: {exc}") from exc
    if "primary" not in data:
        raise ValueError(f"{path.name}: no 'primary' colour")
    variables = data.get("variables", {})
    if not isinstance(variables, dict):
        raise ValueError(f"{path.name}: [variables] must be a table")
    colours = {key: str(data[key]) for key in _COLOUR_KEYS if key in data}
    return Theme(
        name=str(data.get("name") or path.stem),
        dark=bool(data.get("dark", True)),
        variables={str(k): str(v) for k, v in variables.items()},
        primary=colours["primary"], secondary=colours.get("secondary"), warning=colours.get("warning"),
        error=colours.get("error"), success=colours.get("success"), accent=colours.get("accent"),
        foreground=colours.get("foreground"), background=colours.get("background"),
        surface=colours.get("surface"), panel=colours.get("panel"), boost=colours.get("boost"),
    )


def load_themes(*folders: Path) -> tuple[list[Theme], list[str]]:
    """Themes from ``folders`` in order (later folders override by name), and warnings."""
    found: dict[str, Theme] = {}
    warnings: list[str] = []
    for folder in folders:
        if not folder.is_dir():
            continue
        for path in sorted(folder.glob("*.toml")):
            try:
                theme = theme_from_file(path)
            except ValueError as exc:
                warnings.append(f"theme skipped: {exc}")
                continue
            found[theme.name] = theme
    return list(found.values()), warnings
