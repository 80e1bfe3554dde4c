"""What a spawn asks for, spelled once: :class:`SpawnSpec`.

Every face builds one and hands it on unchanged: the TUI's spawn dialog (and ``app.spawn``),
``cockpit run``'s flags, ``Runtime.spawn(spec)`` of ``SessionManager`` (in process) and of
``RemoteRuntime`` (which sends :meth:`SpawnSpec.to_wire`), and the server, whose ``spawn``
method reads its parameters into a ``SpawnSpec`` (``cockpit.server.methods``: the fields are its
params, an unknown one is refused).

Validation is here, in ``__post_init__``: each field's type from its annotation
(``cockpit.wire.check``) and its value (a task with text, ``top_k`` ≥ 1, a known permission mode,
a budget > 0 …). A bad value raises :class:`SpawnSpecError` with one line naming the option
("top_k must be an integer ≥ 1 or null, got 0"). ``None`` means "the config's value".
What only the runtime can judge (is the backend installed, is the workspace a folder, does the
sandbox exist) is refused by ``SessionManager.spawn`` with a one-line ``ValueError``.
"""

from __future__ import annotations

import dataclasses
import math
import os
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from cockpit import wire
from cockpit.runtime.permissions import PermissionMode

SpawnSpecError = wire.ParamError
"""A spawn option of the wrong type or value, or an unknown one (a ``ValueError``; one line)."""

MODES = tuple(m.value for m in PermissionMode)

Task = Annotated[str, wire.Rule("text that is not blank", lambda v: bool(v.strip()))]
Folder = Annotated[str | os.PathLike, wire.Rule("a folder path (no NUL)", lambda v: os.fspath(v) != ""
                                              and "\x00" not in os.fspath(v), convert=os.fspath, label="path")]
Text = Annotated[str, wire.Rule("a non-empty string (no NUL)", lambda v: bool(v) and "\x00" not in v)]
Count = Annotated[int, wire.Rule("an integer ≥ 1", lambda v: v >= 1, label="integer ≥ 1")]
Dollars = Annotated[float, wire.Rule("a number of dollars > 0", lambda v: 0 < v < math.inf, label="USD > 0")]
Mode = Annotated[str, wire.Rule(f"one of {', '.join(MODES)}", lambda v: v in MODES, label="permission mode")]
ToolsStyle = Literal["anthropic", "portable"]
Network = Literal["off", "on", "allow"]


@dataclass(frozen=True)
class SpawnSpec:
    """One session to start. ``task``: what to do; every other field None = the config's value.

    ``workspace``: the project folder (in process: relative to the current folder, default it;
    over the server: absolute, ``RemoteRuntime`` makes it so). ``preseed``/``top_k``: the notes
    block. ``interactive``: False = nobody answers (asks are denied, a turn's end ends the
    session). ``worktree``: its own git worktree. ``tools``: the tool schemas' style.
    ``backend``: ``cockpit`` | ``claude-code`` | ``acp:NAME``. ``max_budget_usd`` (USD) /
    ``max_budget_tokens``: its spend cap. ``sandbox``: False = commands unconfined.
    ``network``: inside the sandbox."""

    task: Task
    workspace: Folder | None = None
    model: Text | None = None
    preseed: bool | None = None
    top_k: Count | None = None
    interactive: bool | None = None
    permission_mode: Mode | None = None
    worktree: bool | None = None
    tools: ToolsStyle | None = None
    backend: Text | None = None
    max_budget_usd: Dollars | None = None
    max_budget_tokens: Count | None = None
    sandbox: bool | None = None
    network: Network | None = None

    def __post_init__(self) -> None:
        wire.check_fields(self)

    @classmethod
    def options(cls) -> tuple[str, ...]:
        """The option names (every field but ``task``)."""
        return tuple(f.name for f in dataclasses.fields(cls) if f.name != "task")

    def to_wire(self) -> dict[str, Any]:
        """The spec as JSON params: ``task`` and the options that are set."""
        return {k: v for k, v in dataclasses.asdict(self).items() if v is not None}

    @classmethod
    def from_wire(cls, data: dict[str, Any]) -> SpawnSpec:
        """The spec :meth:`to_wire` gave. Raises :class:`SpawnSpecError` for an unknown key, a
        missing task or a bad value."""
        return wire.from_fields(cls, data, "spawn option")


__all__ = ["SpawnSpec", "SpawnSpecError", "MODES"]
