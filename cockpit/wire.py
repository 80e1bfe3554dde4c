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
import sys
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
    return {"files": [_plain(f) for f in diff.files], "conflicts": list(diff.conflicts),
            "unresolved": list(diff.unresolved)}


def diff_from_json(obj: dict) -> Any:
    from dataclasses import fields

    from cockpit.runtime.worktree import Diff, FileChange

    known = {f.name for f in fields(FileChange)}  # (a newer server's extra keys are left out)
    return Diff(tuple(FileChange(**{k: v for k, v in f.items() if k in known}) for f in obj.get("files", [])),
                tuple(obj.get("conflicts", ())), tuple(obj.get("unresolved", ())))  # (an older server sends neither)


def to_plain(value: Any) -> Any:
    """Any dataclass / enum / tuple tree as JSON-ready values."""
    return _plain(value)


# -- typed parameters: one check for a value against its annotation ---------------------------------
class ParamError(WireError):
    """A parameter that does not fit its declared type or rule: one line naming it. ``name``: the
    parameter (when one is to blame), ``reason``: the message without it ("must be …, got …")."""

    def __init__(self, message: str, name: str = "", reason: str = ""):
        super().__init__(message)
        self.name = name
        self.reason = reason or message


@dataclasses.dataclass(frozen=True)
class Rule:
    """A constraint in ``Annotated[base, Rule(...)]``: ``what`` the value must be ("an integer ≥ 1"),
    ``test`` True when it fits; ``convert`` maps an accepted value (e.g. "" → None); ``label``
    names it in reference tables."""

    what: str
    test: typing.Callable[[Any], bool]
    convert: typing.Callable[[Any], Any] | None = None
    label: str = ""  # a short name for reference tables ("absolute path"); default: the base type's


_NAMES: dict[Any, str] = {str: "a string", int: "an integer", float: "a number", bool: "true or false",
                          dict: "an object", list: "a list", type(None): "null"}
_PLURAL: dict[Any, str] = {str: "strings", int: "integers", float: "numbers", bool: "booleans"}


def describe(tp: Any) -> str:
    """What ``tp`` accepts, in words ("an integer ≥ 1 or null")."""
    origin = typing.get_origin(tp)
    if origin is typing.Annotated:
        rules = [r for r in tp.__metadata__ if isinstance(r, Rule)]
        return rules[0].what if rules else describe(typing.get_args(tp)[0])
    if origin in (typing.Union, types.UnionType):  # None is "not given": not worth saying
        return " or ".join(describe(a) for a in typing.get_args(tp) if a is not type(None))
    if origin is typing.Literal:
        return "one of " + ", ".join(repr(a) for a in typing.get_args(tp))
    if origin in (list, tuple):
        args = typing.get_args(tp)
        inner = args[0] if args else Any
        if typing.get_origin(inner) is typing.Annotated:
            inner = typing.get_args(inner)[0]
        return f"a list of {_PLURAL.get(inner, 'values')}"
    if origin is dict:
        return "an object"
    return _NAMES.get(tp, getattr(tp, "__name__", str(tp)))


def _fits(value: Any, tp: Any) -> tuple[bool, Any]:
    """(fits, value converted) for a JSON value and a parameter type."""
    if tp is Any or tp is object:
        return True, value
    origin = typing.get_origin(tp)
    if origin is typing.Annotated:
        base, *meta = typing.get_args(tp)
        ok, value = _fits(value, base)
        for rule in meta:
            if isinstance(rule, Rule) and ok:
                ok = bool(rule.test(value))
                if ok and rule.convert is not None:
                    value = rule.convert(value)
        return ok, value
    if origin in (typing.Union, types.UnionType):
        for option in typing.get_args(tp):
            ok, got = _fits(value, option)
            if ok:
                return True, got
        return False, value
    if origin is typing.Literal:
        return any(value == a and type(value) is type(a) for a in typing.get_args(tp)), value
    if origin in (list, tuple):
        if not isinstance(value, list):
            return False, value
        args = typing.get_args(tp)
        items = [_fits(v, args[0]) if args else (True, v) for v in value]
        return all(ok for ok, _ in items), [v for _, v in items]
    if origin is dict or tp is dict:
        return isinstance(value, dict), value
    if tp is type(None):
        return value is None, value
    if tp is float:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return True, float(value)
        return False, value
    if tp is int:
        return isinstance(value, int) and not isinstance(value, bool), value
    if isinstance(tp, type):
        return isinstance(value, tp), value
    raise TypeError(f"no check for the type {tp!r}")


def check(name: str, value: Any, tp: Any) -> Any:
    """``value`` as parameter ``name`` of type ``tp`` (``int`` → ``float`` where a number is
    wanted; ``Annotated`` rules applied). Raises :class:`ParamError`: "top_k must be an integer, got '5'"."""
    ok, got = _fits(value, tp)
    if not ok:
        reason = f"must be {_wanted(value, tp)}, got {value!r}"[:300]
        raise ParamError(f"{name} {reason}", name, reason)
    return got


def _wanted(value: Any, tp: Any) -> str:
    """What ``value`` missed: the base type when it is not even that ("a string"), else the rule."""
    if typing.get_origin(tp) in (typing.Union, types.UnionType):
        options = [a for a in typing.get_args(tp) if a is not type(None)]
        if len(options) == 1:
            tp = options[0]
    if typing.get_origin(tp) is typing.Annotated:
        base = typing.get_args(tp)[0]
        if not _fits(value, base)[0]:
            return describe(base)
    return describe(tp)


@cache
def _field_hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls, vars(sys.modules[cls.__module__]), include_extras=True)


def check_fields(obj: Any) -> None:
    """Check every field of the frozen dataclass ``obj`` against its annotation (in ``__post_init__``),
    storing converted values. Raises :class:`ParamError` naming the first field that does not fit."""
    hints = _field_hints(obj.__class__)
    for f in dataclasses.fields(obj):
        value = getattr(obj, f.name)
        got = check(f.name, value, hints[f.name])
        if got is not value:
            object.__setattr__(obj, f.name, got)


def from_fields(cls: type, data: dict[str, Any], what: str) -> Any:
    """An instance of the dataclass ``cls`` from ``data``: an unknown key is refused ("unknown
    ``what`` 'x' (known: …)"), each value checked by the class itself. Raises :class:`ParamError`."""
    names = [f.name for f in dataclasses.fields(cls)]
    unknown = sorted(k for k in data if k not in names)
    if unknown:
        raise ParamError(f"unknown {what} {unknown[0]!r} (known: {', '.join(names)})")
    missing = [f.name for f in dataclasses.fields(cls) if f.name not in data
               and f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING]
    if missing:
        raise ParamError(f"{missing[0]} is required")
    return cls(**data)
