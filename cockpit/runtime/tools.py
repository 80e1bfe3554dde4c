"""The model's tools: Anthropic's bash and text editor tools, plus ``memory_search``/``memory_save``.

Definitions (:func:`tool_definitions`) are identical for every session (cacheable). Two styles:

- ``anthropic`` (default): Anthropic's client tools as the API defines them —
  ``{"type": "bash_20250124", "name": "bash"}`` and ``{"type": "text_editor_20250728", "name":
  "str_replace_based_edit_tool", "max_characters": …}`` — which Claude is trained on.
- ``portable`` (``--tools portable``): the same names and inputs as plain JSON-schema tools, for
  local Anthropic-compatible servers that reject those tool types.

A call goes in two steps so the session can ask for approval in between: :meth:`ToolRunner.prepare`
validates the input, classifies it (a :class:`~cockpit.runtime.permissions.Action`) and, for an
edit, computes the change (with its diff) without writing; :meth:`ToolRunner.execute` does it.
Every failure (bad input, unknown tool, refused path, engine error) becomes a
``ToolOutcome(is_error=True)`` with a message the model can read; nothing raises out of
:meth:`ToolRunner.run` except cancellation.
"""

from __future__ import annotations

import asyncio
import copy
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cockpit.runtime import bash as bash_tool
from cockpit.runtime import editor as editor_tool
from cockpit.runtime.editor import Editor, EditorError, EditPlan, apply_plan
from cockpit.runtime.permissions import Action
from cockpit.runtime.protocols import MemoryBackend
from cockpit.runtime.workspace import PathRefused, Workspace
from memory.types import lifecycle_label

TOOL_STYLES = ("anthropic", "portable")

MEMORY_TOOLS: list[dict] = [
    {
        "name": "memory_search",
        "description": ("Search the project's notes (hybrid keyword + semantic). Returns ranked notes with name, "
                        "description, snippet, priority (★) and score."),
        "input_schema": {
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "What to look for."},
                "top_k": {"type": "integer", "description": "How many notes (1-20, default 5).",
                          "minimum": 1, "maximum": 20},
            },
            "required": ["query"],
        },
    },
    {
        "name": "memory_get",
        "description": ("The whole note with this name (description and body): read a note the notes block lists "
                        "under 'May be relevant', or a memory_search result, before relying on it."),
        "input_schema": {
            "type": "object",
            "properties": {"name": {"type": "string", "description": "The note's name, e.g. staging-port."}},
            "required": ["name"],
        },
    },
    {
        "name": "memory_save",
        "description": "Save ONE durable fact as a new project note. Refused if a note of that name exists.",
        "input_schema": {
            "type": "object",
            "properties": {
                "name": {"type": "string", "description": "Short kebab-case name, e.g. staging-port."},
                "description": {"type": "string", "description": "One line that names the fact (used for search)."},
                "body": {"type": "string", "description": "The fact, with any detail."},
                "priority": {"type": "boolean", "description": "True for facts every session must know."},
            },
            "required": ["name", "description", "body"],
        },
    },
]

PORTABLE_BASH = {
    "name": bash_tool.TOOL_NAME,
    "description": ("Run a command in a persistent bash shell in the working tree (state such as cd and "
                    "variables persists between calls; restart=true starts a new shell). Output is capped."),
    "input_schema": {
        "type": "object",
        "properties": {
            "command": {"type": "string", "description": "The bash command to run."},
            "restart": {"type": "boolean", "description": "Restart the shell instead of running a command."},
        },
    },
}

PORTABLE_EDITOR = {
    "name": editor_tool.TOOL_NAME,
    "description": ("View, create and edit files of the working tree. Commands: view (a file with line "
                    "numbers, or a folder 2 levels deep; view_range [start, end], end -1 = to the end), "
                    "create (path, file_text), str_replace (path, old_str unique in the file, new_str), "
                    "insert (path, insert_line: 0 = before the first line, insert_text)."),
    "input_schema": {
        "type": "object",
        "properties": {
            "command": {"type": "string", "enum": list(editor_tool.COMMANDS)},
            "path": {"type": "string", "description": "Path of a file or folder in the working tree."},
            "file_text": {"type": "string"},
            "old_str": {"type": "string"},
            "new_str": {"type": "string"},
            "insert_line": {"type": "integer", "minimum": 0},
            "insert_text": {"type": "string"},
            "view_range": {"type": "array", "items": {"type": "integer"}, "minItems": 2, "maxItems": 2},
        },
        "required": ["command", "path"],
    },
}


def tool_definitions(style: str = "anthropic", cache: bool = True) -> list[dict]:
    """The ``tools`` array of a request (a fresh copy). ``cache``: ``cache_control`` on the last one.
    Raises ValueError for an unknown style."""
    tools: list[dict[str, Any]]
    if style == "anthropic":
        tools = [
            {"type": bash_tool.TOOL_TYPE, "name": bash_tool.TOOL_NAME},
            {"type": editor_tool.TOOL_TYPE, "name": editor_tool.TOOL_NAME,
             "max_characters": editor_tool.MAX_VIEW_CHARS},
        ]
    elif style == "portable":
        tools = [copy.deepcopy(PORTABLE_BASH), copy.deepcopy(PORTABLE_EDITOR)]
    else:
        raise ValueError(f"unknown tools style {style!r}; use one of: {', '.join(TOOL_STYLES)}")
    tools += copy.deepcopy(MEMORY_TOOLS)
    if cache:
        tools[-1]["cache_control"] = {"type": "ephemeral"}
    return tools


TOOL_NAMES = (bash_tool.TOOL_NAME, editor_tool.TOOL_NAME, "memory_search", "memory_get", "memory_save")


@dataclass(frozen=True)
class ToolOutcome:
    content: str
    is_error: bool = False
    state_changed: bool = False  # a guarded command did not run (BashSession.run)
    exit_code: int | None = None  # bash: the command's exit code


class ToolInputError(ValueError):
    pass


@dataclass(frozen=True)
class PreparedCall:
    """A validated tool call. ``action`` is what the permission policy judges; ``plan`` the edit
    (None for other tools); ``summary`` one line; ``detail`` the command or the edit's diff."""

    name: str
    data: dict
    action: Action
    summary: str
    detail: str = ""
    plan: EditPlan | None = None


def check_memory_input(name: str, data: dict) -> dict:
    """``data`` checked against the memory tool's input schema. Raises ToolInputError."""
    schema = next(t["input_schema"] for t in MEMORY_TOOLS if t["name"] == name)
    missing = [k for k in schema["required"] if k not in data]
    if missing:
        raise ToolInputError(f"{name}: missing required field(s): {', '.join(missing)}")
    types = {"string": str, "integer": int, "boolean": bool}
    for key, spec in schema["properties"].items():
        if key in data and data[key] is not None:
            want = types[spec["type"]]
            val = data[key]
            if not isinstance(val, want) or (want is int and isinstance(val, bool)):
                raise ToolInputError(f"{name}: field '{key}' must be {spec['type']}")
    return data


def format_hits(hits) -> str:
    if not hits:
        return "No matching notes."
    lines = []
    for i, h in enumerate(hits, 1):
        star = "★ " if h.priority else ""
        label = lifecycle_label(getattr(h, "status", "") or "", getattr(h, "superseded_by", "") or "")
        mark = f" [{label}]" if label else ""
        desc = f": {h.description}" if h.description else ""
        snip = f"\n   {h.snippet}" if getattr(h, "snippet", "") else ""
        lines.append(f"{i}. {star}{h.name}{mark} (score {max(0.0, h.score):.3f}){desc}{snip}")
    return "\n".join(lines)


class ToolRunner:
    """Runs one session's tool calls in its working tree ``cwd``.

    ``engine``: the memory backend (None: memory tools answer with an error). ``env``: the
    environment of the session's shell (already stripped of secrets). ``bash_timeout``: seconds
    per command."""

    def __init__(self, cwd: Path | str, engine: MemoryBackend | None = None, default_top_k: int | None = 5,
                 env: dict[str, str] | None = None, bash_timeout: float = bash_tool.DEFAULT_TIMEOUT_S):
        self.workspace = Workspace(cwd)
        self.editor = Editor(self.workspace)
        self.engine = engine
        self.default_top_k = default_top_k or 5  # None: the preseed's own default; search shows 5
        self.bash = bash_tool.BashSession(self.workspace.root, env if env is not None else {"PATH": "/usr/bin:/bin"},
                                          timeout=bash_timeout)

    # -- step 1 ---------------------------------------------------------------------------
    def prepare(self, name: str, data: Any) -> PreparedCall:
        """Validate and classify a call (reads files for an edit's diff: call from a thread).
        Raises ToolInputError, PathRefused or EditorError (messages for the model)."""
        if name not in TOOL_NAMES:
            raise ToolInputError(f"unknown tool '{name}'. Available: {', '.join(TOOL_NAMES)}")
        if not isinstance(data, dict):
            raise ToolInputError(f"{name}: input must be a JSON object, got {type(data).__name__}")
        if name == bash_tool.TOOL_NAME:
            if data.get("restart") is True:
                return PreparedCall(name, data, Action("read", "restart"), "restart the shell")
            cmd = data.get("command")
            if not isinstance(cmd, str) or not cmd.strip():
                raise ToolInputError("bash: give a non-empty 'command' (or restart: true)")
            # the shell's folder: a relative redirection is judged where it will land
            return PreparedCall(name, data, Action("bash", cmd.strip(), cwd=self.bash.current_dir()), cmd.strip(), cmd)
        if name == editor_tool.TOOL_NAME:
            command = data.get("command")
            if command == "view":
                # judged by the path it resolves to: './.env', an absolute path or a symlink to it
                # must meet the same Read rules as '.env'
                given = data.get("path")
                rel = self.workspace.rel(self.workspace.resolve(given)) if isinstance(given, str) else ""
                return PreparedCall(name, data, Action("read", rel), editor_tool.summarize(data))
            plan = self.editor.plan(data)
            kind = "create" if plan.old is None else "edit"
            summary = f"{command} {plan.rel} (+{plan.added} -{plan.removed})"
            return PreparedCall(name, data, Action(kind, plan.rel), summary, plan.diff, plan)
        data = check_memory_input(name, data)
        if name == "memory_save":
            detail = f"name: {data['name']}\ndescription: {data['description']}\n\n{data['body']}"
            return PreparedCall(name, data, Action("memory_save", data["name"]), f"save note {data['name']}", detail)
        if name == "memory_get":
            return PreparedCall(name, data, Action("memory_search", data["name"]), f"read note {data['name']}")
        return PreparedCall(name, data, Action("memory_search", data["query"]), f"search notes: {data['query']}")

    # -- step 2 ---------------------------------------------------------------------------
    async def execute(self, call: PreparedCall, guarded: bool = False) -> ToolOutcome:
        """Do a prepared call. Never raises except on cancellation. ``guarded``: a command an allow
        rule let through (see :meth:`BashSession.run`): when the shell's state changed it does not
        run and the outcome has ``state_changed``."""
        try:
            if call.name == bash_tool.TOOL_NAME:
                if call.data.get("restart") is True:
                    await self.bash.restart()
                    return ToolOutcome("bash tool has been restarted.")
                result = await self.bash.run(call.data["command"], guarded=guarded)
                if result.state_changed:
                    return ToolOutcome("", state_changed=True)
                return ToolOutcome(result.for_model(), is_error=result.timed_out, exit_code=result.exit_code)
            if call.name == editor_tool.TOOL_NAME:
                if call.plan is None:
                    return ToolOutcome(await asyncio.to_thread(self.editor.view, call.data))
                plan = call.plan
                await asyncio.to_thread(apply_plan, plan)
                return ToolOutcome(plan.message)
            return await memory_call(self.engine, call.name, call.data, self.default_top_k)
        except (ToolInputError, PathRefused, EditorError) as exc:
            return ToolOutcome(str(exc), True)
        except asyncio.CancelledError:
            raise
        except (FileNotFoundError, IsADirectoryError) as exc:
            return ToolOutcome(f"{call.name}: no such file or a folder: {exc}", True)
        except Exception as exc:  # a tool must never crash the session
            return ToolOutcome(f"{call.name} failed: {type(exc).__name__}: {exc}", True)

    async def prepare_call(self, name: str, data: Any) -> PreparedCall | ToolOutcome:
        """:meth:`prepare` in a thread; a call it refuses, or one whose file cannot be read (a
        symlink loop, a name too long), comes back as the error result the model reads — never
        an exception that would end the session."""
        try:
            return await asyncio.to_thread(self.prepare, name, data)
        except (ToolInputError, PathRefused, EditorError) as exc:
            return ToolOutcome(str(exc), True)
        except (FileNotFoundError, IsADirectoryError) as exc:
            return ToolOutcome(f"{name}: no such file or a folder: {exc}", True)
        except (OSError, RuntimeError) as exc:
            return ToolOutcome(f"{name}: {type(exc).__name__}: {getattr(exc, 'strerror', None) or exc}", True)

    async def run(self, name: str, data: Any) -> ToolOutcome:
        """prepare + execute without any permission check (tests, trusted callers)."""
        call = await self.prepare_call(name, data)
        return call if isinstance(call, ToolOutcome) else await self.execute(call)

    async def run_unconfined(self, command: str) -> ToolOutcome:
        """``command`` once in a new shell outside the sandbox (the user allowed it), from the
        persistent shell's current folder, with the same environment."""
        shell = bash_tool.BashSession(self.bash.current_dir(), self.bash.env, timeout=self.bash.timeout)
        try:
            result = await shell.run(command)
        finally:
            await shell.close()
        return ToolOutcome(result.for_model(), is_error=result.timed_out, exit_code=result.exit_code)

    async def close(self) -> None:
        """Kill the shell (and its process group)."""
        await self.bash.close()


async def memory_call(engine: MemoryBackend | None, name: str, d: dict,
                      default_top_k: int | None = 5) -> ToolOutcome:
    """One memory tool (``memory_search`` | ``memory_get`` | ``memory_save``) on ``engine``,
    its input already checked by :func:`check_memory_input`: our loop and the claude-code
    backend's MCP server both call this."""
    if name == "memory_search":
        return await memory_search(engine, d, default_top_k)
    if name == "memory_get":
        return await memory_get(engine, d)
    return await memory_save(engine, d)


async def memory_search(engine: MemoryBackend | None, d: dict, default_top_k: int | None = 5) -> ToolOutcome:
    """The ``memory_search`` tool on ``engine`` (input already checked by :func:`check_memory_input`):
    ranked hits as text (:func:`format_hits`). The engine runs in a worker thread."""
    if engine is None:
        return ToolOutcome("memory_search unavailable: no notes folder configured", True)
    top_k = max(1, min(20, d.get("top_k") or default_top_k or 5))
    hits = await asyncio.to_thread(engine.search, d["query"], top_k)
    return ToolOutcome(format_hits(hits))


async def memory_get(engine: MemoryBackend | None, d: dict) -> ToolOutcome:
    """The ``memory_get`` tool: one whole note by name (a tool error naming memory_search when
    there is none)."""
    if engine is None:
        return ToolOutcome("memory_get unavailable: no notes folder configured", True)
    note = await asyncio.to_thread(engine.get, d["name"])
    if not note:
        return ToolOutcome(f"no note named {d['name']!r} (memory_search finds names)", True)
    star = "★ " if note.get("priority") else ""
    status = f" [{note['status']}]" if note.get("status") else ""
    head = f"{star}{note['name']}{status}: {note.get('description', '')}"
    return ToolOutcome(f"{head}\n\n{note.get('body', '')}".rstrip())


async def memory_save(engine: MemoryBackend | None, d: dict) -> ToolOutcome:
    """The ``memory_save`` tool: one new note (refused, as a tool error, when the name exists)."""
    if engine is None:
        return ToolOutcome("memory_save unavailable: no notes folder configured", True)
    try:
        path = await asyncio.to_thread(
            engine.save, d["name"], d["description"], d["body"], bool(d.get("priority", False))
        )
    except (FileExistsError, ValueError) as exc:
        return ToolOutcome(f"memory_save refused: {exc}", True)
    return ToolOutcome(f"saved note '{d['name']}' ({Path(path).name})")
