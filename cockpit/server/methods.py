"""The server's methods as one registry: name → handler, its parameters read from its annotations.

A handler is a ``Server`` coroutine method ``(self, req: Request, *, name: Type = default, …)``
registered with :func:`method`. Before it runs, :meth:`Method.bind` checks the request's params
against those annotations (``cockpit.wire.check``: JSON types, ``Literal`` choices, ``Annotated``
rules such as :data:`AbsPath`), refuses a parameter the method does not take, and names the
parameter in every refusal ("top_k must be an integer, got '5'"; the server answers them with
``-32602``). One parameter may be annotated ``Annotated[SomeDataclass, FLAT]``: that dataclass's
fields are top-level params (``spawn``'s :class:`~cockpit.runtime.spawn.SpawnSpec`), built and
checked by the dataclass itself. Keys starting with ``_`` belong to a transport and are ignored.

``docs/PROTOCOL.md``'s method table is generated from this registry
(``python -m cockpit.server.methods --write``; ``tests/test_docs.py`` fails when it is stale).
"""

from __future__ import annotations

import dataclasses
import inspect
import os
import types
import typing
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Annotated, Any

from cockpit import wire


class _Flat:
    """Marker: ``Annotated[Dataclass, FLAT]`` spreads the dataclass's fields over the params."""

    def __repr__(self) -> str:
        return "FLAT"


FLAT = _Flat()
REQUIRED = inspect.Parameter.empty


def _absolute(value: str) -> bool:
    return "\x00" not in value and (value == "" or os.path.isabs(os.path.expanduser(value)))


AbsPath = Annotated[str, wire.Rule("an absolute path (the server does not share the client's current folder)",
                                   _absolute, convert=lambda v: v or None, label="absolute path")]
"""A path the server reads: absolute ("" = not given)."""
NonEmpty = Annotated[str, wire.Rule("a non-empty string", bool)]
SessionId = Annotated[str, wire.Rule("a session id (a non-empty string)", bool, label="session id")]


@dataclass(frozen=True)
class Request:
    """What a handler knows of its request besides the params: the connection and the request id."""

    conn: Any
    id: Any


@dataclass(frozen=True)
class Param:
    name: str
    type: Any
    default: Any = REQUIRED

    @property
    def required(self) -> bool:
        return self.default is REQUIRED


@dataclass
class Method:
    """One method: ``func`` (an unbound ``Server`` method), the docs' ``doc`` (what the params
    mean beyond their types) and ``result``."""

    name: str
    func: Callable[..., Awaitable[Any]]
    doc: str
    result: str

    @cached_property
    def _signature(self) -> tuple[tuple[Param, ...], tuple[str, type] | None]:
        hints = typing.get_type_hints(self.func, include_extras=True)
        params: list[Param] = []
        flat: tuple[str, type] | None = None
        for p in list(inspect.signature(self.func).parameters.values())[2:]:  # self, req
            tp = hints[p.name]
            if typing.get_origin(tp) is Annotated and FLAT in tp.__metadata__:
                flat = (p.name, typing.get_args(tp)[0])
                continue
            params.append(Param(p.name, tp, p.default))
        return tuple(params), flat

    @property
    def params(self) -> tuple[Param, ...]:
        """The top-level params: the handler's own, then a flat dataclass's fields."""
        own, flat = self._signature
        if flat is None:
            return own
        hints = typing.get_type_hints(flat[1], include_extras=True)
        spread = tuple(Param(f.name, hints[f.name], REQUIRED if f.default is dataclasses.MISSING else f.default)
                       for f in dataclasses.fields(flat[1]))
        return spread + own

    def bind(self, raw: dict[str, Any]) -> dict[str, Any]:
        """The handler's keyword arguments for the request params ``raw``. Raises
        :class:`cockpit.wire.ParamError` (one line naming the parameter)."""
        own, flat = self._signature
        known = [p.name for p in self.params]
        for key in raw:
            if key not in known and not key.startswith("_"):
                listed = ", ".join(known) or "none"
                raise wire.ParamError(f"unknown parameter {key!r} for {self.name} (it takes: {listed})")
        kwargs: dict[str, Any] = {}
        for p in own:
            value = raw.get(p.name)
            if value is None:
                if p.required:
                    raise wire.ParamError(f"{p.name} is required")
                continue  # the handler's default
            kwargs[p.name] = wire.check(p.name, value, p.type)
        if flat is not None:
            name, cls = flat
            names = {f.name for f in dataclasses.fields(cls)}
            kwargs[name] = wire.from_fields(cls, {k: v for k, v in raw.items() if k in names and v is not None},
                                            "parameter")
        return kwargs


METHODS: dict[str, Method] = {}
"""Every method the server answers, in the order of ``docs/PROTOCOL.md``'s table."""

F = typing.TypeVar("F", bound=Callable[..., Awaitable[Any]])


def method(name: str, *, result: str, doc: str = "") -> Callable[[F], F]:
    """Register the decorated ``Server`` handler as ``name``."""
    def register(func: F) -> F:
        if name in METHODS:
            raise ValueError(f"method {name!r} is registered twice")
        METHODS[name] = Method(name, func, doc, result)
        return func
    return register


# -- docs/PROTOCOL.md's table ----------------------------------------------------------------
TABLE_START = "<!-- methods: generated from cockpit/server/methods.py by `python -m cockpit.server.methods --write` -->"
TABLE_END = "<!-- end of methods -->"


_SHORT = {str: "string", int: "integer", float: "number", bool: "boolean", dict: "object"}


def _short(tp: Any) -> str:
    """``tp`` in a table cell: "string", "integer ≥ 1", "absolute path", "`final` \\| `idle`"."""
    origin = typing.get_origin(tp)
    if origin is Annotated:
        rules = [r for r in tp.__metadata__ if isinstance(r, wire.Rule) and r.label]
        return rules[0].label if rules else _short(typing.get_args(tp)[0])
    if origin in (typing.Union, types.UnionType):
        return " or ".join(_short(a) for a in typing.get_args(tp) if a is not type(None))
    if origin is typing.Literal:
        return " \\| ".join(f"`{a}`" for a in typing.get_args(tp))
    if origin in (list, tuple):
        args = typing.get_args(tp)
        return f"list of {_short(args[0]) if args else 'value'}s"
    if origin is dict:
        return "object"
    return _SHORT.get(tp, getattr(tp, "__name__", str(tp)))


def _param_cell(p: Param) -> str:
    return f"`{p.name}` ({_short(p.type)}{'' if p.required else ', optional'})"


def table() -> str:
    """The Markdown method table (the registry must be loaded: ``import cockpit.server.daemon``)."""
    rows = ["| method | params | result |", "| --- | --- | --- |"]
    for m in METHODS.values():
        params = "; ".join(_param_cell(p) for p in m.params) or "—"
        if m.doc:
            params += f". {m.doc}"
        rows.append(f"| `{m.name}` | {params} | {m.result} |")
    return "\n".join(rows)


def protocol_doc(current: str) -> str:
    """``current`` (docs/PROTOCOL.md's text) with the table between its markers regenerated."""
    import cockpit.server.daemon  # noqa: F401  (registers the methods)

    head, found, rest = current.partition(TABLE_START)
    if not found or TABLE_END not in rest:
        raise ValueError(f"docs/PROTOCOL.md has no {TABLE_START!r} … {TABLE_END!r} section")
    tail = rest.split(TABLE_END, 1)[1]
    return f"{head}{TABLE_START}\n{table()}\n{TABLE_END}{tail}"


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m cockpit.server.methods",
                                     description="Print (or --write) docs/PROTOCOL.md, its method table regenerated.")
    parser.add_argument("--write", action="store_true", help="rewrite the file in place")
    parser.add_argument("--file", type=Path, default=Path(__file__).resolve().parents[2] / "docs" / "PROTOCOL.md")
    args = parser.parse_args(argv)
    from cockpit.server import methods  # this module as the package knows it (not __main__'s copy)

    text = methods.protocol_doc(args.file.read_text(encoding="utf-8"))
    if args.write:
        args.file.write_text(text, encoding="utf-8")
    else:
        print(text, end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
