"""The stand-in speaks the wire format the real anthropic client reads."""

import json

import anthropic
import pytest
from standin import FactResponder, HTTPError, Reply, StandIn, ToolUse


async def test_stream_text_and_tool_use_roundtrip(api):
    api.script(Reply("hello there", [ToolUse("read_file", {"path": "a.txt"}, id="toolu_1")]))
    client = anthropic.AsyncAnthropic(base_url=api.base_url, api_key="k", max_retries=0)
    async with client.messages.stream(model="m", max_tokens=10, messages=[{"role": "user", "content": "hi"}]) as st:
        texts = [e.text async for e in st if e.type == "text"]
        msg = await st.get_final_message()
    assert "".join(texts) == "hello there"
    assert msg.stop_reason == "tool_use"
    assert msg.content[1].input == {"path": "a.txt"} and msg.content[1].id == "toolu_1"
    assert msg.usage.output_tokens > 0 and msg.usage.input_tokens > 0
    assert api.message_requests[0]["messages"][0]["content"] == "hi"
    await client.close()


async def test_error_body_and_count_tokens(api):
    api.script(HTTPError(400, message="bad thing"))
    client = anthropic.AsyncAnthropic(base_url=api.base_url, api_key="k", max_retries=0)
    with pytest.raises(anthropic.BadRequestError) as ei:
        await client.messages.create(model="m", max_tokens=5, messages=[{"role": "user", "content": "x"}])
    assert ei.value.api_message == "bad thing"
    n = await client.messages.count_tokens(model="m", messages=[{"role": "user", "content": "x" * 400}])
    assert n.input_tokens >= 100
    await client.close()


async def test_cut_stream_has_no_stop_reason(api):
    api.script(Reply("a b c d e f", cut_after=4))
    client = anthropic.AsyncAnthropic(base_url=api.base_url, api_key="k", max_retries=0)
    async with client.messages.stream(model="m", max_tokens=10, messages=[{"role": "user", "content": "hi"}]) as st:
        msg = await st.get_final_message()
    assert msg.stop_reason is None
    await client.close()


async def test_prompt_cache_simulation_writes_once_then_reads(api):
    client = anthropic.AsyncAnthropic(base_url=api.base_url, api_key="k", max_retries=0)
    system = [{"type": "text", "text": "S" * 4000, "cache_control": {"type": "ephemeral"}}]
    usages = []
    for q in ("one", "two"):
        api.script(Reply("ok"))
        m = await client.messages.create(model="m", max_tokens=5, system=system, messages=[{"role": "user", "content": q}])
        usages.append(m.usage)
    assert usages[0].cache_creation_input_tokens >= 1000 and usages[0].cache_read_input_tokens == 0
    assert usages[1].cache_creation_input_tokens == 0 and usages[1].cache_read_input_tokens >= 1000
    await client.close()


async def test_require_key_gives_401():
    with StandIn(require_key="right") as api:
        client = anthropic.AsyncAnthropic(base_url=api.base_url, api_key="wrong", max_retries=0)
        with pytest.raises(anthropic.AuthenticationError):
            await client.messages.create(model="m", max_tokens=5, messages=[{"role": "user", "content": "x"}])
        await client.close()


def test_fact_responder_prefers_memory_then_readme():
    r = FactResponder()
    q = "what port does staging run on?"
    # preseed block present → answers from it without a tool call
    t = r({"messages": [{"role": "user", "content": [{"type": "text", "text": "note: staging port 6443"},
                                                        {"type": "text", "text": q}]}]})
    assert "6443" in t.text and not t.tool_uses
    # nothing known → reads the README
    t = r({"messages": [{"role": "user", "content": [{"type": "text", "text": q}]}]})
    assert t.tool_uses[0].name == "str_replace_based_edit_tool" and t.tool_uses[0].input["command"] == "view"
    # told to search first → calls memory_search
    t = r({"system": "Start by calling memory_search with the task", "messages": [{"role": "user", "content": q}]})
    assert t.tool_uses[0].name == "memory_search"


def test_fact_responder_speaks_claude_code_tool_names():
    r = FactResponder()
    q = "what port does staging run on?"
    tools = [{"name": "Read"}, {"name": "Bash"}, {"name": "mcp__cockpit__memory_search"}]
    reminder = {"type": "text", "text": "<system-reminder>\nport numbers in commit messages\n</system-reminder>"}
    # Claude Code's reminders are not memory; told to search first → the MCP search tool
    t = r({"system": [{"type": "text", "text": "Start by calling mcp__cockpit__memory_search first."}], "tools": tools,
           "messages": [{"role": "user", "content": [reminder, {"type": "text", "text": q}]}]})
    assert t.tool_uses[0].name == "mcp__cockpit__memory_search" and t.tool_uses[0].input == {"query": q}
    # its result is memory
    call = {"type": "tool_use", "id": "t1", "name": "mcp__cockpit__memory_search", "input": {"query": q}}
    res = {"type": "tool_result", "tool_use_id": "t1", "content": [{"type": "text", "text": "staging port 6443"}]}
    t = r({"tools": tools, "messages": [{"role": "user", "content": [reminder, {"type": "text", "text": q}]},
                                        {"role": "assistant", "content": [call]}, {"role": "user", "content": [res]}]})
    assert "6443" in t.text
    # nothing known → reads the README with Read
    t = r({"tools": tools, "messages": [{"role": "user", "content": [reminder, {"type": "text", "text": q}]}]})
    assert t.tool_uses[0].name == "Read" and t.tool_uses[0].input == {"file_path": "README.md"}


def test_fact_responder_reads_what_a_prompt_hook_added_to_claude_codes_context_message():
    """Claude Code (2.1) sends a prompt hook's context inside a message of role ``system``, after
    its own environment text; the stand-in answered from the README as if the hook had failed."""
    r = FactResponder()
    q = "what port does staging run on?"
    context = ("# Environment\n - Shell: bash, port numbers in commit messages\n"
               "UserPromptSubmit hook additional context: <project-notes>\n"
               "★ [staging-stack] Staging runs on host callisto, port 6443\n</project-notes>")
    t = r({"messages": [{"role": "system", "content": [{"type": "text", "text": context}]},
                        {"role": "user", "content": [{"type": "text", "text": q}]}]})
    assert t.text == "Based on the project notes:\n- ★ [staging-stack] Staging runs on host callisto, port 6443"


def test_log_file_has_every_request(tmp_path):
    log = tmp_path / "requests.jsonl"
    with StandIn(log_path=str(log)) as api:
        client = anthropic.Anthropic(base_url=api.base_url, api_key="k", max_retries=0)
        client.messages.create(model="m", max_tokens=5, messages=[{"role": "user", "content": "hello"}])
    lines = [json.loads(x) for x in log.read_text().splitlines()]
    assert lines == [{"path": "/v1/messages", "body": {"model": "m", "max_tokens": 5,
                                                      "messages": [{"role": "user", "content": "hello"}]}}]
