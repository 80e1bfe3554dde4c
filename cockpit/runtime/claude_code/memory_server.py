"""Our memory as an in-process MCP server for Claude Code (``create_sdk_mcp_server``).

Three tools, the same names, descriptions and input schemas as in Cockpit's own loop
(:data:`cockpit.runtime.tools.MEMORY_TOOLS`), served under the server name ``cockpit`` — Claude
Code calls them ``mcp__cockpit__memory_search``, ``…_memory_get`` and ``…_memory_save``. All call the
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
    memory_call,
)

SERVER_NAME = "cockpit"
SEARCH_TOOL = f"mcp__{SERVER_NAME}__memory_search"
SAVE_TOOL = f"mcp__{SERVER_NAME}__memory_save"
GET_TOOL = f"mcp__{SERVER_NAME}__memory_get"


def _result(out: ToolOutcome) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": out.content}], "is_error": out.is_error}


def memory_server(engine: MemoryBackend | None, default_top_k: int | None = 5) -> Any:
    """The ``McpSdkServerConfig`` to put in ``ClaudeAgentOptions.mcp_servers[SERVER_NAME]``: the
    same memory tools as our own loop (:data:`MEMORY_TOOLS`, run by :func:`memory_call`)."""

    def sdk_tool(spec: dict[str, Any]) -> Any:
        name = spec["name"]
        read_only = name != "memory_save"
        annotations = (ToolAnnotations(read_only_hint=True) if read_only
                       else ToolAnnotations(read_only_hint=False, destructive_hint=False))

        @tool(name, spec["description"], spec["input_schema"], annotations=annotations)
        async def run(args: dict[str, Any]) -> dict[str, Any]:
            try:
                data = check_memory_input(name, args)
            except ToolInputError as exc:
                return _result(ToolOutcome(str(exc), True))
            return _result(await memory_call(engine, name, data, default_top_k))

        return run

    return create_sdk_mcp_server(SERVER_NAME, version=__version__, tools=[sdk_tool(t) for t in MEMORY_TOOLS])
