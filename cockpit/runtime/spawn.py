"""What a spawn may ask for, spelled once: :class:`SpawnOptions`.

The manager's ``spawn`` takes these as keyword arguments; ``RemoteRuntime.spawn`` builds one
(an option it does not know is a ``TypeError``, never dropped) and sends :meth:`to_wire`; the
server reads the request with :meth:`from_wire`, which checks each value against the field's
type (a wrong type or an unknown key is one clear line). A test keeps the manager's signature and
these fields the same.
"""

from __future__ import annotations

import typing
from dataclasses import asdict, dataclass, fields
from typing import Any


class SpawnOptionError(ValueError):
    """A spawn request with an unknown option or a value of the wrong type (one line)."""


@dataclass(frozen=True)
class SpawnOptions:
    """A session's spawn options (None: the config's value). ``workspace``: an absolute folder."""

    workspace: str | None = None
    model: str | None = None
    preseed: bool | None = None
    top_k: int | None = None
    interactive: bool | None = None
    permission_mode: str | None = None
    worktree: bool | None = None
    tools: str | None = None
    backend: str | None = None
    max_budget_usd: float | None = None
    max_budget_tokens: int | None = None
    sandbox: bool | None = None
    network: str | None = None

    def to_wire(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def names(cls) -> tuple[str, ...]:
        return tuple(f.name for f in fields(cls))

    @classmethod
    def from_wire(cls, params: dict[str, Any], ignore: tuple[str, ...] = ()) -> SpawnOptions:
        """The options in ``params`` (keys in ``ignore`` are someone else's: the task, the notes…;
        keys starting with ``_`` are the transport's).
        Raises :class:`SpawnOptionError` for an unknown key or a value of the wrong JSON type."""
        hints = typing.get_type_hints(cls)
        known = set(cls.names())
        unknown = sorted(k for k in params if k not in known and k not in ignore and not k.startswith("_"))
        if unknown:
            raise SpawnOptionError(f"unknown spawn option {unknown[0]!r} (known: {', '.join(sorted(known))})")
        values: dict[str, Any] = {}
        for name in known:
            value = params.get(name)
            if value is None:
                continue
            want = next(t for t in typing.get_args(hints[name]) if t is not type(None))
            ok = isinstance(value, want) and not (want in (int, float) and isinstance(value, bool))
            if want is float and isinstance(value, int) and not isinstance(value, bool):
                ok, value = True, float(value)
            if not ok:
                what = {str: "a string", int: "an integer", bool: "true or false", float: "a number"}[want]
                raise SpawnOptionError(f"{name} must be {what}, got {value!r}"[:200])
            values[name] = value
        return cls(**values)


__all__ = ["SpawnOptionError", "SpawnOptions"]
