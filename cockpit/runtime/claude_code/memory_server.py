"""Our memory as an in-process MCP server for Claude Code (``create_sdk_mcp_server``).

Two tools, the same names, descriptions and input schemas as in Cockpit's own loop
(:data:`cockpit.runtime.tools.MEMORY_TOOLS`), served under the server name ``cockpit`` — Claude
Code calls them ``mcp__cockpit__memory_search`` and ``mcp__cockpit__memory_save``. Both call the
session's memory engine (the manager's warm one: no second model load) in a worker thread and
answer with the same text as the loop's tools; failures are tool errors the model can read.
"""

from __future__ import annotations

from typing import Any

from claude_agent_sdk import create_sdk_mcp_server, tool
from mcp.types import ToolAnnotations

from cockpit import __version__
from cockpit.runtime.protocols import MemoryBackend
from cockpit.runtime.tools import (
    MEMORY_TOOLS,
    ToolInputError,
    ToolOutcome,
    check_memory_input,
    memory_get,
    memory_save,
    memory_search,
)

SERVER_NAME = "cockpit"
SEARCH_TOOL = f"mcp__{SERVER_NAME}__memory_search"
SAVE_TOOL = f"mcp__{SERVER_NAME}__memory_save"
GET_TOOL = f"mcp__{SERVER_NAME}__memory_get"


def _result(out: ToolOutcome) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": out.content}], "is_error": out.is_error}


def memory_server(engine: MemoryBackend | None, default_top_k: int | None = 5) -> Any:
    """The ``McpSdkServerConfig`` to put in ``ClaudeAgentOptions.mcp_servers[SERVER_NAME]``."""
    search_def, get_def, save_def = MEMORY_TOOLS

    @tool(search_def["name"], search_def["description"], search_def["input_schema"],
          annotations=ToolAnnotations(read_only_hint=True))
    async def _search(args: dict[str, Any]) -> dict[str, Any]:
        try:
            data = check_memory_input("memory_search", args)
        except ToolInputError as exc:
            return _result(ToolOutcome(str(exc), True))
        return _result(await memory_search(engine, data, default_top_k))

    @tool(get_def["name"], get_def["description"], get_def["input_schema"],
          annotations=ToolAnnotations(read_only_hint=True))
    async def _get(args: dict[str, Any]) -> dict[str, Any]:
        try:
            data = check_memory_input("memory_get", args)
        except ToolInputError as exc:
            return _result(ToolOutcome(str(exc), True))
        return _result(await memory_get(engine, data))

    @tool(save_def["name"], save_def["description"], save_def["input_schema"],
          annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False))
    async def _save(args: dict[str, Any]) -> dict[str, Any]:
        try:
            data = check_memory_input("memory_save", args)
        except ToolInputError as exc:
            return _result(ToolOutcome(str(exc), True))
        return _result(await memory_save(engine, data))

    return create_sdk_mcp_server(SERVER_NAME, version=__version__, tools=[_search, _get, _save])
