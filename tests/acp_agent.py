"""A scripted ACP agent for tests, written with the agent-client-protocol SDK (agent side).

It never calls a model. ``ACP_FAKE`` picks what it does at start (``hang``: never answers
``initialize``; ``garbage``: writes lines that are not JSON-RPC on stdout before answering);
the prompt's last text picks what a turn does:

- ``PERMISSION``: a ``tool_call`` (kind ``execute``), then ``session/request_permission`` with
  allow once / allow always / reject once, twice; answers "outcome: <kind of the option chosen>"
  for each.
- ``MANY``: three permission requests at once; answers "many: yes, yes, no"-like outcomes.
- ``EDIT name text``: writes ``name`` in its cwd (its own tool) and reports an ``edit`` tool call
  (its title and input in an update after the call) with the diff.
- ``WAIT``: waits until ``session/cancel``; ends the turn ``cancelled``.
- ``CRASH``: writes a line to stderr and exits 3.
- ``SILENT``: never answers the prompt and sends nothing.
- anything else: a two-entry plan, then the text "blocks: N | " and every text block it got,
  joined with " || ", with usage (and a ``usage_update`` with a cost).

What it got (``session/new``'s cwd and MCP servers, each prompt's text blocks) goes to stderr as
``ACP_LOG {json}`` lines: the session records its agent's stderr in the transcript, so a test
reads them there (the agent may sit in a sandbox where it can write nowhere else).
"""

import asyncio
import json
import os
import sys
from pathlib import Path

import acp
from acp import schema as s


def _log(what):
    print("ACP_LOG " + json.dumps(what), file=sys.stderr, flush=True)


class FakeAgent:
    def __init__(self):
        self.conn = None
        self.cancelled: dict[str, asyncio.Event] = {}

    def on_connect(self, conn):
        self.conn = conn

    async def initialize(self, protocol_version, client_capabilities=None, client_info=None, **kw):
        if os.environ.get("ACP_FAKE") == "hang":
            await asyncio.Event().wait()
        caps = s.AgentCapabilities(mcp_capabilities=s.McpCapabilities(http=True, sse=False))
        return s.InitializeResponse(protocol_version=protocol_version, agent_capabilities=caps,
                                    agent_info=s.Implementation(name="fake-agent", version="1.0"))

    async def new_session(self, cwd, mcp_servers=None, **kw):
        _log({"new_session": {"cwd": cwd, "mcp": [m.model_dump(mode="json") for m in mcp_servers or []]}})
        modes = s.SessionModeState(current_mode_id="default", available_modes=[
            s.SessionMode(id="default", name="Default"), s.SessionMode(id="acceptEdits", name="Accept edits")])
        return s.NewSessionResponse(session_id="fake-1", modes=modes)

    async def set_session_mode(self, session_id, mode_id, **kw):
        await self.conn.session_update(session_id, s.CurrentModeUpdate(session_update="current_mode_update",
                                                                        current_mode_id=mode_id))
        return s.SetSessionModeResponse()

    async def cancel(self, session_id, **kw):
        self.cancelled.setdefault(session_id, asyncio.Event()).set()

    async def _say(self, sid, text):
        await self.conn.session_update(sid, s.AgentMessageChunk(session_update="agent_message_chunk",
                                                                content=s.TextContentBlock(type="text", text=text)))

    async def prompt(self, session_id, prompt, **kw):
        texts = [b.text for b in prompt if getattr(b, "type", "") == "text"]
        _log({"prompt": texts})
        last = texts[-1] if texts else ""
        if last.startswith("CRASH"):
            print("fake-agent: crashing on purpose", file=sys.stderr, flush=True)
            os._exit(3)
        if last.startswith("SILENT"):  # never answers, never sends anything
            await asyncio.Event().wait()
        if last.startswith("WAIT"):
            ev = self.cancelled.setdefault(session_id, asyncio.Event())
            await self._say(session_id, "waiting for cancel")
            await ev.wait()
            return s.PromptResponse(stop_reason="cancelled")
        if last.startswith("MANY"):  # three permission requests at once
            opts = [s.PermissionOption(option_id="yes", name="Allow", kind="allow_once"),
                    s.PermissionOption(option_id="no", name="Reject", kind="reject_once")]

            async def ask(i):
                resp = await self.conn.request_permission(session_id=session_id, options=opts, tool_call=s.ToolCallUpdate(
                    tool_call_id=f"many-{i}", title=f"Run step {i}", kind="execute", raw_input={"command": f"step {i}"}))
                return getattr(resp.outcome, "option_id", resp.outcome.outcome)

            got = await asyncio.gather(*(ask(i) for i in range(3)))
            await self._say(session_id, "many: " + ", ".join(got))
            return s.PromptResponse(stop_reason="end_turn")
        if last.startswith("PERMISSION"):
            outcomes = []
            for i in range(2):
                tid = f"run-{i}"
                await self.conn.session_update(session_id, s.ToolCallStart(
                    session_update="tool_call", tool_call_id=tid, title="Run make deploy", kind="execute",
                    status="pending", raw_input={"command": "make deploy"}))
                opts = [s.PermissionOption(option_id="yes", name="Allow", kind="allow_once"),
                        s.PermissionOption(option_id="always", name="Always", kind="allow_always"),
                        s.PermissionOption(option_id="no", name="Reject", kind="reject_once")]
                resp = await self.conn.request_permission(
                    session_id=session_id, options=opts,
                    tool_call=s.ToolCallUpdate(tool_call_id=tid, title="Run make deploy", kind="execute",
                                               raw_input={"command": "make deploy"}))
                out = resp.outcome
                chosen = {"yes": "allow_once", "always": "allow_always", "no": "reject_once"}.get(
                    getattr(out, "option_id", ""), out.outcome)
                outcomes.append(chosen)
                await self.conn.session_update(session_id, s.ToolCallProgress(
                    session_update="tool_call_update", tool_call_id=tid,
                    status="completed" if chosen.startswith("allow") else "failed",
                    content=[s.ContentToolCallContent(type="content", content=s.TextContentBlock(
                        type="text", text=f"outcome: {chosen}"))]))
            await self._say(session_id, "outcomes: " + ", ".join(outcomes))
            return s.PromptResponse(stop_reason="end_turn")
        if last.startswith("EDIT"):
            _, name, text = last.split(" ", 2)
            Path(name).write_text(text + "\n")
            # as Claude Code's adapter does: the call first with no input (it is still streaming),
            # then its title and input in an update
            await self.conn.session_update(session_id, s.ToolCallStart(
                session_update="tool_call", tool_call_id="edit-1", title="Write", kind="edit",
                status="pending", raw_input={}))
            await self.conn.session_update(session_id, s.ToolCallProgress(
                session_update="tool_call_update", tool_call_id="edit-1", title=f"Write {name}",
                status="in_progress", raw_input={"path": name}))
            await self.conn.session_update(session_id, s.ToolCallProgress(
                session_update="tool_call_update", tool_call_id="edit-1", status="completed",
                content=[s.FileEditToolCallContent(type="diff", path=name, old_text=None, new_text=text + "\n")]))
            await self._say(session_id, f"wrote {name}")
            return s.PromptResponse(stop_reason="end_turn")
        await self.conn.session_update(session_id, s.AgentPlanUpdate(session_update="plan", entries=[
            s.PlanEntry(content="read the notes", priority="high", status="completed"),
            s.PlanEntry(content="answer", priority="high", status="in_progress")]))
        await self._say(session_id, f"blocks: {len(texts)} | ")
        await self._say(session_id, " || ".join(texts))
        await self.conn.session_update(session_id, s.UsageUpdate(
            session_update="usage_update", used=1200, size=200000, cost=s.Cost(amount=0.0125, currency="USD")))
        return s.PromptResponse(stop_reason="end_turn", usage=s.Usage(
            total_tokens=1300, input_tokens=1200, output_tokens=100, cached_read_tokens=0, cached_write_tokens=0))


async def main():
    if os.environ.get("ACP_FAKE") == "garbage":
        sys.stdout.write("this is not json\n{not json either\n[1, 2]\n")
        sys.stdout.flush()
    await acp.run_agent(FakeAgent())


if __name__ == "__main__":
    asyncio.run(main())
