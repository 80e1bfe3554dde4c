"""Token prices and cost.

The packaged table ``pricing.json`` (next to this module) holds current Claude model ids with
USD per million tokens for input, output, cache write (5-minute TTL), cache read, and the
context window in tokens, plus its ``source`` (Anthropic's pricing page,
https://platform.claude.com/docs/en/about-claude/pricing) and the ``date`` it was read
(see the file; 2026-11-30 at the time of writing).

User override (merged model by model over the packaged table, so it can change or add models):
the file named by ``COCKPIT_PRICING`` / ``RuntimeConfig.pricing_path``, else ``pricing.json`` or
``pricing.toml`` in the per-user config dir (``$COCKPIT_DATA_DIR`` when set). Its shape is the
packaged one: ``{"models": {"my-local-model": {"input": 0, "output": 0}}}`` (TOML:
``[models.my-local-model]``). Missing cache prices default to 1.25× / 0.1× input.

Model lookup: exact id, then the id without a ``-YYYYMMDD`` or ``-latest`` suffix, then the
longest table id that the given id starts with. Unknown id → ``None`` cost (shown as "n/a").
"""

from __future__ import annotations

import json
import os
import re
import tomllib
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from cockpit.events import Usage

MTOK = 1_000_000


@dataclass(frozen=True)
class ModelPrice:
    """USD per million tokens; ``context_window`` in tokens (None when unknown)."""

    input: float
    output: float
    cache_write: float
    cache_read: float
    context_window: int | None = None

    def cost(self, usage: Usage) -> float:
        """USD for ``usage``."""
        return (
            usage.input * self.input
            + usage.output * self.output
            + usage.cache_write * self.cache_write
            + usage.cache_read * self.cache_read
        ) / MTOK


class PricingError(ValueError):
    """An override file cannot be read or has a malformed entry."""


def _price_from(entry: dict, where: str) -> ModelPrice:
    try:
        inp = float(entry["input"])
        out = float(entry["output"])
        cw = float(entry.get("cache_write", inp * 1.25))
        cr = float(entry.get("cache_read", inp * 0.1))
        cwin = entry.get("context_window")
        return ModelPrice(inp, out, cw, cr, int(cwin) if cwin is not None else None)
    except (KeyError, TypeError, ValueError) as exc:
        raise PricingError(f"{where}: bad price entry ({exc})") from None


@dataclass
class PricingTable:
    """Model id → :class:`ModelPrice`, with where the numbers came from."""

    models: dict[str, ModelPrice]
    source: str = ""
    date: str = ""
    overridden_by: str | None = None

    def lookup(self, model: str) -> ModelPrice | None:
        if model in self.models:
            return self.models[model]
        base = re.sub(r"-(\d{8}|latest)$", "", model)
        if base in self.models:
            return self.models[base]
        best = None
        for mid in self.models:
            if model.startswith(mid) and (best is None or len(mid) > len(best)):
                best = mid
        return self.models[best] if best else None

    def cost(self, model: str, usage: Usage) -> float | None:
        """USD for ``usage`` on ``model``; None when the model has no price."""
        price = self.lookup(model)
        return None if price is None else price.cost(usage)

    def context_window(self, model: str) -> int | None:
        price = self.lookup(model)
        return price.context_window if price else None


def _read_file(path: Path) -> dict:
    try:
        text = path.read_text(encoding="utf-8")
        if path.suffix == ".toml":
            return tomllib.loads(text)
        return json.loads(text)
    except (OSError, ValueError, tomllib.TOMLDecodeError) as exc:
        raise PricingError(f"cannot read pricing file {path}: {exc}") from None


def packaged_table() -> PricingTable:
    data = json.loads(resources.files("cockpit.runtime").joinpath("pricing.json").read_text("utf-8"))
    models = {mid: _price_from(e, f"pricing.json:{mid}") for mid, e in data["models"].items()}
    return PricingTable(models, source=data.get("source", ""), date=data.get("date", ""))


def user_pricing_path(explicit: Path | None = None) -> Path | None:
    """The override file in effect, or None."""
    if explicit:
        return Path(explicit)
    env = os.environ.get("COCKPIT_PRICING")
    if env:
        return Path(env).expanduser()
    from cockpit.runtime.config import config_dir

    for name in ("pricing.json", "pricing.toml"):
        p = config_dir() / name
        if p.is_file():
            return p
    return None


def load_pricing(override: Path | None = None) -> PricingTable:
    """Packaged table merged with the user override (see module doc).

    Raises :class:`PricingError` when an override file is given/found but unreadable.
    """
    table = packaged_table()
    path = user_pricing_path(override)
    if path is None:
        return table
    if not path.is_file():
        raise PricingError(f"pricing file not found: {path}")
    data = _read_file(path)
    entries = data.get("models", {})
    if not isinstance(entries, dict):
        raise PricingError(f"{path}: 'models' must be a table")
    for mid, entry in entries.items():
        table.models[mid] = _price_from(entry, f"{path}:{mid}")
    table.overridden_by = str(path)
    return table
