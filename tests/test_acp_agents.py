"""Real ACP agents end to end, offline: Claude Code (``claude-agent-acp``) and OpenCode
(``opencode acp``), installed from npm by ``.ci/run``, each run as a Cockpit session against the
Messages API stand-in (through the session's relay), answering the seed's staging/deploy
question from the preseed. The first request the stand-in received holds the block in the first
user message. Skipped, with the reason, where an agent is not installed."""

import pytest
from seed_data import FACTS, QUESTION, WRONG, write_seed
from standin import FactResponder, Reply, StandIn

from cockpit.runtime import RuntimeConfig, SessionManager, read_transcript
from cockpit.runtime.acp.agents import BUILTIN
from cockpit.runtime.acp.relay import PLACEHOLDER_KEY
from cockpit.runtime.sandbox import detect
from cockpit.runtime.spawn import SpawnSpec

KEY = "sk-test-acp-real-0123456789abcdef"


@pytest.fixture(scope="module")
def seed(tmp_path_factory):
    from memory import MemoryEngine

    root = tmp_path_factory.mktemp("acp-seed")
    notes, ws = write_seed(root)
    engine = MemoryEngine(notes, index_path=root / "index.sqlite")
    engine.start_warmup()
    engine.sync()
    assert engine.wait_ready(120)
    yield engine, ws
    engine.close()


def _no_tools():
    """The stand-in's literal model, but never a tool call (the agents' tools differ from the ones
    it knows): without the notes it says so at once instead of looping."""
    facts = FactResponder()

    def answer(body):
        turn = facts(body)
        return Reply("I could not find that in the notes.") if turn.tool_uses else turn
    return answer


def _user_texts(body) -> list[str]:
    first = body["messages"][0]
    content = first["content"]
    return [content] if isinstance(content, str) else [b.get("text", "") for b in content if b.get("type") == "text"]


def _first_request(api):
    """The first request that carries the conversation (agents may first ask for a title)."""
    for body in api.message_requests:
        if any(QUESTION in t for t in _user_texts(body)):
            return body
    raise AssertionError("no request held the task")


@pytest.mark.parametrize("agent", ["claude", "opencode"])
@pytest.mark.parametrize("boxed", [True, False], ids=["sandboxed", "unconfined"])
async def test_a_real_agent_answers_the_seed_question_from_the_preseed(seed, tmp_path, agent, boxed):
    a = BUILTIN[agent]
    if a.command() is None:
        pytest.skip(f"{a.title} is not installed ({a.unavailable()})")
    if boxed and detect().backend is None:
        pytest.skip("no sandbox here")
    engine, ws = seed
    with StandIn(_no_tools()) as api:
        cfg = RuntimeConfig(api_key=KEY, base_url=api.base_url, interactive=False, backend=f"acp:{agent}",
                            worktrees_dir=tmp_path / "wt", sessions_dir=tmp_path / "sessions", acp_timeout=120.0,
                            max_retries=0)  # the default model: an id OpenCode's own list lacks
        mgr = SessionManager(engine, cfg)
        s = await mgr.spawn(SpawnSpec(QUESTION, workspace=ws, sandbox=boxed))
        assert await mgr.wait_idle(timeout=300)
        await mgr.aclose()
        first = _first_request(api)
        keys = {r.headers.get("x-api-key") for r in api.requests if r.path.endswith("/messages")}
    assert s.status.value == "done", (s.error, [r for r in read_transcript(s.transcript_path) if r["type"] == "stderr"][-5:])
    for fact in FACTS:
        assert fact in s.final_text, (fact, s.final_text)
    for wrong in WRONG:
        assert wrong not in s.final_text
    texts = _user_texts(first)
    joined = "\n".join(texts)
    # the block reached the model in the first user message, before the task, before any model turn
    assert s.preseed_text and s.preseed_text.strip() in joined
    assert joined.index(s.preseed_text.strip()) < joined.rindex(QUESTION)
    assert first["messages"][0]["role"] == "user" and "assistant" not in [m["role"] for m in first["messages"]]
    # the real key reached the stand-in through the relay; the agent only ever had the placeholder
    assert keys == {KEY} and PLACEHOLDER_KEY not in keys
    assert s.to_dict()["backend"] == f"acp:{agent}" and s.usage.total > 0
