"""``cockpit memory mcp``: the project's notes as a stdio MCP server (official ``mcp`` SDK).

Register it with Claude Code::

    claude mcp add cockpit-memory -- cockpit memory mcp --notes /abs/path/to/notes

or in a project's ``.mcp.json``::

    {"mcpServers": {"cockpit-memory": {"command": "cockpit", "args": ["memory", "mcp", "--notes", "notes"]}}}

Tools: ``memory_search(query, top_k)`` (ranked hits: name, description, snippet, ★, score),
``memory_get(name)`` (the whole note), ``memory_save(name, description, body, priority)`` (one new
note, never overwriting). Resource: ``notes://index`` (every note's name and description).

It is a thin client of the Cockpit server's warm engine when a server runs (this process then
imports neither torch nor the embedding model); otherwise it loads the engine itself. Every
failure is an MCP tool error with a clear message; the MCP server itself never crashes on one.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from cockpit.errors import CockpitError
from memory.types import lifecycle_label


def open_engine(notes: Path, index: str | None) -> tuple[Any, str]:
    """(engine, where): the server's engine through a client when a server runs (also when it
    is stopped: its tools then say so), else an in-process ``MemoryEngine`` (warming in the
    background, synced by a watcher thread)."""
    if not os.environ.get("COCKPIT_NO_SERVER"):
        from cockpit.server.client import server_running
        from cockpit.server.remote import LocalCaller, RemoteEngine

        if server_running():  # (a server restarted later is reconnected to; a hung one is said per call)
            return RemoteEngine(LocalCaller(), notes, index), "server"
    import threading

    from memory import MemoryEngine

    engine = MemoryEngine(notes, index_path=index)
    engine.start_warmup()
    threading.Thread(target=engine.watch, args=(threading.Event(),), daemon=True, name="notes watcher").start()
    return engine, "in-process"


def build_server(engine: Any, where: str = "") -> Any:
    """The ``MCPServer`` with the memory tools and the ``notes://index`` resource on ``engine``."""
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ToolError

    from cockpit import __version__
    from cockpit.server.client import ServerError

    mcp = MCPServer(
        name="cockpit-memory",
        version=__version__,
        log_level="WARNING",
        instructions=("The project's notes: short facts the team decided (commands, ports, conventions). "
                      "Search them before re-deciding something; save one durable fact per note."),
    )

    def call(fn, *args):
        try:
            return fn(*args)
        except ToolError:
            raise
        except (FileExistsError, ValueError) as exc:
            raise ToolError(str(exc)) from None
        except ServerError as exc:  # the Cockpit server hung or went away: its one line, no hang
            raise ToolError(str(exc)) from None
        except Exception as exc:  # the server stays up; the client gets the reason
            raise ToolError(f"{type(exc).__name__}: {exc}") from None

    @mcp.tool(description="Search the project's notes (hybrid keyword + semantic). Returns ranked notes: "
                          "name, description, snippet, priority (★) and score (cosine, 0-1); a superseded, "
                          "deprecated, rejected or proposed decision has `status` (and `superseded_by`: "
                          "follow the successor).")
    def memory_search(query: str, top_k: int = 5) -> list[dict]:
        if not query.strip():
            raise ToolError("query is empty")
        if not 1 <= top_k <= 50:
            raise ToolError("top_k must be between 1 and 50")
        if not engine.ready:
            call(engine.wait_ready, 120)
        hits = call(engine.search, query, top_k)
        out = []
        for h in hits:
            hit = {"name": h.name, "description": h.description, "snippet": getattr(h, "snippet", ""),
                   "priority": bool(h.priority), "score": round(max(0.0, float(h.score)), 4)}
            status, successor = getattr(h, "status", "") or "", getattr(h, "superseded_by", "") or ""
            if lifecycle_label(status, successor):  # a retired decision says so (its successor named)
                hit["status"] = status or "superseded"
                if successor:
                    hit["superseded_by"] = successor
            out.append(hit)
        return out

    @mcp.tool(description="The whole note with this name: name, description, body, priority, path.")
    def memory_get(name: str) -> dict:
        if not engine.ready:
            call(engine.wait_ready, 120)
        note = call(engine.get, name)
        if note is None:
            raise ToolError(f"no note named {name!r} (memory_search finds names)")
        return note

    @mcp.tool(description="Save ONE durable fact as a new note. Refused if a note of that name exists.")
    def memory_save(name: str, description: str, body: str, priority: bool = False) -> dict:
        path = call(engine.save, name, description, body, priority)
        return {"saved": name, "path": str(path)}

    @mcp.resource("notes://index", name="notes-index", mime_type="text/markdown",
                  description="Every note: name and description (★ = priority).")
    def notes_index() -> str:
        if not engine.ready:
            call(engine.wait_ready, 120)
        notes = call(engine.list_notes)
        lines = []
        for n in notes:
            label = lifecycle_label(n.get("status", ""), n.get("superseded_by", ""))
            lines.append(f"- {'★ ' if n['priority'] else ''}{n['name']}{f' ({label})' if label else ''}: "
                         f"{n['description']}")
        return "\n".join(lines) if lines else "(no notes)"

    return mcp


def run(args: Any) -> int:
    from cockpit.notes_location import resolve_notes

    notes = resolve_notes(args.notes, Path.cwd())
    if not notes.is_dir():
        given = "check the path given to --notes" if args.notes not in (None, "notes") else "use --notes DIR"
        raise CockpitError(f"notes folder {notes} does not exist ({given})")
    engine, where = open_engine(notes, args.index)
    build_server(engine, where).run("stdio")
    return 0
