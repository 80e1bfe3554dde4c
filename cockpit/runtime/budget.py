"""Spend caps: a session's and the server's budget, in USD and/or tokens.

- **A session's cap** (``RuntimeConfig.max_budget_usd`` / ``max_budget_tokens``; ``cockpit run
  --max-budget-usd`` / ``--max-budget-tokens``; the spawn dialog's "budget $" field) is measured
  against that session's own spend (``SessionBase.cost_usd``, ``usage.total``).
- **The server's cap** (``server_budget_usd`` / ``server_budget_tokens``) is measured against the
  sum over every session of the :class:`~cockpit.runtime.SessionManager` — the sessions of the
  server, or of the process with ``--no-server`` — closed ones included (``SessionManager.totals``).

Both are checked after each model response's usage is added (a response asking for tools does not
run them) and before each model request. At a cap an interactive session pauses in ``budget
reached`` (its concurrency slot given back; a :class:`~cockpit.events.BudgetNotice` ``reached``
and a transcript ``budget`` record) until the user raises the cap
(``SessionManager.set_budget`` / ``set_server_budget``: the ``budget`` RPC, ``cockpit budget``,
``$`` in the app); a headless one (``cockpit run``) ends ``error`` with kind ``budget``.

A cap is reached when the spend is at or over it (``>=``). A USD cap does not hold a session
whose model has no price (its cost is unknown): give a token cap for those.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from cockpit.events import Usage

SCOPES = ("session", "server")


class BudgetError(ValueError):
    """A cap that cannot be a cap (not a number, zero or less, infinite). One line."""


def parse_usd(value: Any, what: str = "a budget in USD") -> float:
    """A USD cap: a finite number > 0 (a string such as ``"5"`` or ``"$2.50"`` too)."""
    if isinstance(value, str):
        text = value.strip().removeprefix("$").strip()
        try:
            value = float(text)
        except ValueError:
            raise BudgetError(f"{what} must be a number of dollars > 0, got {value!r}") from None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < math.inf:
        raise BudgetError(f"{what} must be a number of dollars > 0, got {value!r}")
    return float(value)


def parse_tokens(value: Any, what: str = "a budget in tokens") -> int:
    """A token cap: a whole number ≥ 1 (a string of digits too)."""
    if isinstance(value, str):
        try:
            value = int(value.strip().replace("_", "").replace(",", ""))
        except ValueError:
            raise BudgetError(f"{what} must be a whole number of tokens ≥ 1, got {value!r}") from None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise BudgetError(f"{what} must be a whole number of tokens ≥ 1, got {value!r}")
    return value


def _usd(x: float) -> str:
    return f"${x:.4f}" if x < 1 else f"${x:,.2f}"


def _tok(n: int) -> str:
    return f"{n:,} tokens"


@dataclass(frozen=True)
class Budget:
    """A cap: ``usd`` (USD) and/or ``tokens`` (all tokens of every response: input, output,
    cache writes and reads); None = no cap of that kind."""

    usd: float | None = None
    tokens: int | None = None

    @property
    def is_set(self) -> bool:
        return self.usd is not None or self.tokens is not None

    def reached(self, usage: Usage, cost_usd: float | None) -> bool:
        if self.tokens is not None and usage.total >= self.tokens:
            return True
        return self.usd is not None and cost_usd is not None and cost_usd >= self.usd

    def describe(self) -> str:
        parts = [_usd(self.usd)] if self.usd is not None else []
        if self.tokens is not None:
            parts.append(_tok(self.tokens))
        return " or ".join(parts) or "none"

    def to_dict(self) -> dict[str, Any]:
        return {"usd": self.usd, "tokens": self.tokens}

    def updated(self, usd: float | None = None, tokens: int | None = None, clear: bool = False) -> Budget:
        """This cap with ``usd`` / ``tokens`` replaced where given (``clear``: start from none)."""
        base = Budget() if clear else self
        return Budget(base.usd if usd is None else parse_usd(usd),
                      base.tokens if tokens is None else parse_tokens(tokens))


@dataclass(frozen=True)
class BudgetHit:
    """A cap that is reached: ``scope`` session | server, the cap, and the spend it was measured
    against (USD None when unpriced; tokens)."""

    scope: str
    budget: Budget
    spent_usd: float | None
    spent_tokens: int

    def message(self) -> str:
        spent = []
        if self.budget.usd is not None and self.spent_usd is not None:
            spent.append(f"{_usd(self.spent_usd)} of {_usd(self.budget.usd)}")
        if self.budget.tokens is not None and self.spent_tokens >= self.budget.tokens:
            spent.append(f"{self.spent_tokens:,} of {_tok(self.budget.tokens)}")
        where = "server budget (all sessions)" if self.scope == "server" else "session budget"
        return f"{where} reached: {' · '.join(spent) or self.budget.describe()}"


def check(scope: str, budget: Budget, usage: Usage, cost_usd: float | None) -> BudgetHit | None:
    """The hit when ``budget`` is reached by this spend, else None."""
    if budget.reached(usage, cost_usd):
        return BudgetHit(scope, budget, cost_usd, usage.total)
    return None


__all__ = ["Budget", "BudgetHit", "BudgetError", "check", "parse_usd", "parse_tokens", "SCOPES"]
