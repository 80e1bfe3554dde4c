"""The ``acp:NAME`` session backends: any agent that speaks Zed's Agent Client Protocol.

The agents are data (:mod:`.agents`: a registry with Claude Code, Codex, Gemini CLI, OpenCode and
goose built in, and ``[agents.NAME]`` tables in ``config.toml``); the session is one class
(:mod:`.session`) for all of them, through the ``agent-client-protocol`` SDK. Importing this
package imports neither the SDK nor the session; :func:`session_class` does.

Where an ACP session differs from Cockpit's own loop:

- **Its tools are the agent's.** The agent process runs in the session's working tree and,
  unless the session is unconfined, inside Cockpit's sandbox (bubblewrap: writes only in the
  working tree and its own folders; network only to the model endpoint, through the session's
  relay, :mod:`.relay`). The pane says which.
- **The key stays with Cockpit.** The agent's base URL is the relay, its key a placeholder; the
  relay puts the real key on each request it forwards.
- **Preseed.** The first ``session/prompt`` carries the ``<env>`` block, the preseed block and
  the task as separate text blocks; our memory (``memory_search``/``memory_get``/``memory_save``)
  is offered in ``session/new`` as an MCP server (HTTP, through the relay) when the agent takes one.
- **Permissions.** The agent's ``session/request_permission`` goes through Cockpit's approvals,
  decided by the session's permission mode first.
- **Usage and cost.** Tokens from the prompt's ``usage`` and context from ``usage_update``;
  cost only where the agent reports it (``cost_source`` ``acp:NAME``), else "n/a".
"""

from __future__ import annotations

import importlib.util
from typing import Any

INSTALL_HINT = ("ACP agents need the agent-client-protocol package: pip install agent-client-protocol "
                "(it comes with cockpit; reinstall cockpit)")


def sdk_available() -> bool:
    try:
        return importlib.util.find_spec("acp") is not None
    except (ImportError, ValueError):
        return False


def session_class() -> Any:
    """:class:`~cockpit.runtime.acp.session.AcpSession` (imports the SDK). Raises ValueError
    with the way to install it when it is missing."""
    if not sdk_available():
        raise ValueError(INSTALL_HINT)
    from cockpit.runtime.acp.session import AcpSession

    return AcpSession


__all__ = ["INSTALL_HINT", "sdk_available", "session_class"]
