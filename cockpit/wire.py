"""JSON forms of the runtime's values, for the server protocol (``docs/PROTOCOL.md``).

- Events: ``{"type": "<class name>", "data": {field: value}}`` for every class in
  ``cockpit.events.EVENT_TYPES``; nested values (``Usage``, ``InjectedNote``, ``WorktreeRef``,
  ``SessionStatus``) are converted from the dataclass field types, so a new event type needs no
  code here (``tests/test_wire.py`` round-trips every type).
- A diff (``cockpit.runtime.worktree.Diff``): ``{"files": [{path, status, added, removed, patch,
  old_path}]}``.

Raises :class:`WireError` for a payload that is not a known event or has fields of the wrong shape.
"""

from __future__ import annotations

import dataclasses
import enum
import types
import typing
from functools import cache
from typing import Any

from cockpit import events as ev


class WireError(ValueError):
    """A JSON payload that does not decode to the expected value."""


def _plain(value: Any) -> Any:
    if isinstance(value, enum.Enum):
        return value.value
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    return value


def event_to_json(event: ev.Event) -> dict:
    """``{"type": name, "data": {...}}`` (JSON-ready)."""
    return {"type": type(event).__name__, "data": _plain(event)}


@cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls, vars(ev))


def _build(tp: Any, value: Any) -> Any:
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        if value is None:
            return None
        options = [a for a in typing.get_args(tp) if a is not type(None)]
        last: Exception | None = None
        for option in options:
            try:
                return _build(option, value)
            except (WireError, TypeError, ValueError) as exc:
                last = exc
        raise WireError(f"no type of {tp} fits {value!r}: {last}")
    if origin is tuple:
        args = typing.get_args(tp)
        if not isinstance(value, list):
            raise WireError(f"expected a list for {tp}")
        inner = args[0] if args else Any
        return tuple(_build(inner, v) for v in value)
    if origin in (list, dict):
        return value
    if tp is Any or tp is object:
        return value
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return tp(value)
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        if not isinstance(value, dict):
            raise WireError(f"expected an object for {tp.__name__}")
        hints = _hints(tp)
        names = {f.name for f in dataclasses.fields(tp)}
        return tp(**{k: _build(hints[k], v) for k, v in value.items() if k in names})
    if tp is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if isinstance(tp, type) and tp in (str, int, float, bool) and not isinstance(value, tp):
        raise WireError(f"expected {tp.__name__}, got {type(value).__name__}")
    return value


def event_from_json(obj: Any) -> ev.Event:
    """The event for ``{"type", "data"}``. Raises WireError."""
    if not isinstance(obj, dict) or not isinstance(obj.get("data"), dict):
        raise WireError("an event is {\"type\": name, \"data\": {…}}")
    cls = ev.EVENT_TYPES.get(str(obj.get("type")))
    if cls is None:
        raise WireError(f"unknown event type {obj.get('type')!r}")
    try:
        return _build(cls, obj["data"])
    except (TypeError, ValueError) as exc:
        raise WireError(f"bad {cls.__name__}: {exc}") from None


def diff_to_json(diff: Any) -> dict:
    return {"files": [_plain(f) for f in diff.files]}


def diff_from_json(obj: dict) -> Any:
    from cockpit.runtime.worktree import Diff, FileChange

    return Diff(tuple(FileChange(**f) for f in obj.get("files", [])))


def to_plain(value: Any) -> Any:
    """Any dataclass / enum / tuple tree as JSON-ready values."""
    return _plain(value)
