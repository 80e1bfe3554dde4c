"""The seed's end-to-end test: facts only the notes know reach the model before its first turn.

Real memory engine (MiniLM, offline), real anthropic client, the stand-in's FactResponder (answers
from the facts in the conversation it receives; otherwise reads the workspace README, which is
deliberately wrong). The twin runs with preseeding off. The ``live`` variant runs the same against
the real API when ANTHROPIC_API_KEY is set.
"""

import json
import os

import pytest
from seed_data import FACTS, QUESTION, write_seed
from standin import FactResponder, StandIn

from cockpit.events import SessionStatus, ToolCall
from cockpit.runtime import RuntimeConfig, SessionManager
from cockpit.runtime.spawn import SpawnSpec


@pytest.fixture(scope="module")
def seed(tmp_path_factory):
    from memory import MemoryEngine

    root = tmp_path_factory.mktemp("seed")
    notes, ws = write_seed(root)
    engine = MemoryEngine(notes, index_path=root / "index.sqlite")
    engine.start_warmup()
    engine.sync()
    assert engine.wait_ready(120)
    yield engine, ws
    engine.close()


def _cfg(**kw):
    base = dict(interactive=False, max_retries=1, timeout=30.0, model="standin-model")
    base.update(kw)
    return RuntimeConfig(**base)


async def _run(engine, ws, cfg, preseed):
    mgr = SessionManager(engine, cfg)
    sub = mgr.subscribe()
    s = await mgr.spawn(SpawnSpec(QUESTION, workspace=ws, preseed=preseed))
    assert await mgr.wait_idle(timeout=120)
    await mgr.aclose()
    events = [e async for e in sub if e.session_id == s.id]
    return s, events


def _first_user_text(body) -> str:
    first = body["messages"][0]
    assert first["role"] == "user"
    return "\n".join(b.get("text", "") for b in first["content"])


async def test_seed_preseed_answers_from_notes_before_any_tool_call(seed):
    engine, ws = seed
    with StandIn(FactResponder()) as api:
        s, events = await _run(engine, ws, _cfg(api_key="test-key", base_url=api.base_url), preseed=True)
        first = api.message_requests[0]
    assert s.status == SessionStatus.DONE, s.error
    for fact in FACTS:
        assert fact in s.final_text, (fact, s.final_text)
        assert fact in _first_user_text(first), (fact, s.preseed_text)
    assert not any(isinstance(e, ToolCall) for e in events)  # answered with no tool call at all
    assert len(first["messages"]) == 1  # the facts were there on the very first request
    assert {n.name for n in s.injected} == {"staging-stack", "deploy-command"}
    assert next(n for n in s.injected if n.name == "staging-stack").priority
    assert s.preseed_tokens > 0 and s.preseed_text in _first_user_text(first)
    header = json.loads(s.transcript_path.read_text().splitlines()[0])
    assert header["preseed_text"] == s.preseed_text and len(header["injected"]) == 2


async def test_seed_twin_without_preseed_needs_memory_search(seed):
    """Preseed off: the first request lacks the facts; the model must call memory_search first."""
    engine, ws = seed
    with StandIn(FactResponder()) as api:
        s, events = await _run(engine, ws, _cfg(api_key="test-key", base_url=api.base_url), preseed=False)
        first = api.message_requests[0]
    assert "memory_search" in first["system"][0]["text"]
    assert not any(f in _first_user_text(first) for f in FACTS)
    calls = [e for e in events if isinstance(e, ToolCall)]
    assert calls and calls[0].name == "memory_search"
    assert s.status == SessionStatus.DONE
    assert all(f in s.final_text for f in FACTS), s.final_text
    assert s.requests == 2 and s.injected == ()


async def test_seed_twin_model_that_skips_search_answers_from_wrong_readme(seed):
    """Preseed off and a model that ignores the instruction: it reads README.md and is wrong."""
    engine, ws = seed
    with StandIn(FactResponder(obey_search_instruction=False)) as api:
        s, events = await _run(engine, ws, _cfg(api_key="test-key", base_url=api.base_url), preseed=False)
    assert s.status == SessionStatus.DONE
    assert [e.name for e in events if isinstance(e, ToolCall)] == ["str_replace_based_edit_tool"]
    assert "8080" in s.final_text and "6443" not in s.final_text and "ship-v2" not in s.final_text


@pytest.mark.live
@pytest.mark.skipif(not os.environ.get("ANTHROPIC_API_KEY"), reason="needs ANTHROPIC_API_KEY")
async def test_seed_live(seed):
    engine, ws = seed
    cfg = _cfg(api_key=os.environ["ANTHROPIC_API_KEY"], base_url=os.environ.get("ANTHROPIC_BASE_URL"),
               model=os.environ.get("COCKPIT_MODEL", "claude-haiku-4-5"), max_retries=2)
    s, events = await _run(engine, ws, cfg, preseed=True)
    assert s.status == SessionStatus.DONE, s.error
    assert {n.name for n in s.injected} >= {"staging-stack", "deploy-command"}
    for fact in FACTS:
        assert fact in s.final_text, s.final_text
