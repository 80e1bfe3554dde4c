"""The model-based preseed selector against the Messages API stand-in (real HTTP): what it sends,
what it does with each kind of answer, and that its usage lands in the session's totals."""

from __future__ import annotations

import json

import pytest
from standin import HTTPError, Reply
from test_memory_support import HashEmbedder, copy_fixture

from cockpit.events import Preseeded, UsageUpdate
from cockpit.runtime import RuntimeConfig, SessionManager, load_config, read_events
from cockpit.runtime.pricing import ModelPrice, PricingTable
from cockpit.runtime.selector import INSTRUCTIONS, ModelSelector, parse_answer, selector_for
from cockpit.runtime.spawn import SpawnSpec
from memory import MemoryEngine
from memory.selector import SHORTLIST, SelectorCandidate, SelectorResult

TASK = "what port does staging run on and how do we deploy?"


@pytest.fixture
def engine(tmp_path):
    eng = MemoryEngine(copy_fixture("seed", tmp_path / "notes"), index_path=tmp_path / "idx.sqlite",
                       model=HashEmbedder())
    eng.sync()
    yield eng
    eng.close()


def selector(api, **kw) -> ModelSelector:
    return ModelSelector(api_key="test-key", base_url=api.base_url, model="sel-model", **kw)


def answer(*names) -> Reply:
    return Reply(json.dumps({"notes": list(names)}))


def test_request_carries_the_shortlist_and_the_task(api, engine):
    api.script(answer("deploy-command"))
    pre = engine.build_preseed(TASK, selector=selector(api))
    body = api.message_requests[0]
    assert body["model"] == "sel-model" and not body.get("stream")
    assert body["system"] == [{"type": "text", "text": INSTRUCTIONS, "cache_control": {"type": "ephemeral"}}]
    user = body["messages"][0]["content"]
    assert body["messages"][0]["role"] == "user" and TASK in user
    listed = [line.split(":")[0] for line in user.split("<notes>\n")[1].split("\n</notes>")[0].splitlines()]
    shortlist = engine.build_preseed(TASK, top_k=SHORTLIST).considered[:SHORTLIST]
    assert listed == [h.name for h in shortlist] and len(listed) == 10  # the whole seed folder
    assert "deploy-command: Deploy with make ship-v2" in user  # name: description, no body
    assert pre.selector is not None and pre.selector.model == "sel-model"


def test_json_answer_selects_exactly_those_notes(api, engine):
    api.script(answer("staging-stack", "deploy-command"))
    pre = engine.build_preseed(TASK, selector=selector(api))
    assert pre.selected_by == "selector" and pre.selector.error is None
    assert sorted(h.name for h in pre.hits) == ["deploy-command", "staging-stack"]
    assert pre.text.count("\n[") + pre.text.count("\n★ [") == 2
    assert pre.selector.usage.input > 0 and pre.selector.usage.output > 0


@pytest.mark.parametrize("turn,reason", [
    (Reply("staging-stack and deploy-command apply here"), "malformed answer"),
    (Reply('{"notes": "deploy-command"}'), "malformed answer"),
    (Reply('{"notes": ["no-such-note"]}'), "names no shortlisted note"),
    (Reply('{"notes": ["deploy-command"'), "malformed answer"),
    (HTTPError(529), "HTTP 529"),
    (HTTPError(429), "HTTP 429"),
    (HTTPError(500), "HTTP 500"),
    (Reply(answer("deploy-command").text, delay=3.0), "timeout"),
])
def test_failures_fall_back_to_the_embedded_block(api, engine, turn, reason):
    embedded = engine.build_preseed(TASK)
    api.script(turn)
    pre = engine.build_preseed(TASK, selector=selector(api, timeout=0.5))
    assert pre.selected_by == "embedded" and pre.selector.names is None
    assert reason in pre.selector.error and "test-key" not in pre.selector.error
    assert pre.text == embedded.text and [h.name for h in pre.hits] == [h.name for h in embedded.hits]
    assert len(api.message_requests) == 1  # no retries: the fallback is the retry


def test_none_applies_gives_no_block(api, engine):
    api.script(answer())
    pre = engine.build_preseed(TASK, selector=selector(api))
    assert [h.name for h in pre.hits] == ["staging-stack"]  # the priority note only: given by rule
    assert pre.selected_by == "selector" and pre.selector.names == [] and pre.selector.error is None


def test_a_selector_that_raises_falls_back(engine):
    class Broken:
        def select(self, task, candidates):
            raise RuntimeError("boom")

    pre = engine.build_preseed(TASK, selector=Broken())
    assert pre.selected_by == "embedded" and "boom" in pre.selector.error


def test_no_key_falls_back_without_a_request(api, engine):
    pre = engine.build_preseed(TASK, selector=ModelSelector(api_key=None, base_url=api.base_url))
    assert pre.selector.names is None and "API key" in pre.selector.error
    assert api.message_requests == []


def test_parse_answer_is_strict():
    listed = ["deploy-command", "staging-stack"]
    assert parse_answer('{"notes": ["Deploy-Command", "x"]}', listed) == (["deploy-command"], None)
    assert parse_answer('```json\n{"notes": ["staging-stack"]}\n```', listed) == (["staging-stack"], None)
    assert parse_answer('{"notes": []}', listed) == ([], None)
    for bad in ("", "notes: deploy-command", '["deploy-command"]', '{"names": []}', '{"notes": [1]}'):
        names, err = parse_answer(bad, listed)
        assert names is None and err.startswith("malformed answer")


def test_selector_for_follows_the_config():
    cfg = load_config({"selector": "model", "api_key": "k", "base_url": "http://127.0.0.1:1"}, env={})
    sel = selector_for(cfg)
    assert isinstance(sel, ModelSelector) and sel.model == "claude-haiku-5-5" and sel.timeout == 5.0
    assert selector_for(cfg) is sel  # one client per key, URL, model, timeout
    assert selector_for(load_config({}, env={})) is None  # off by default


def test_config_file_preseed_table(tmp_path):
    from cockpit.runtime import ConfigError

    f = tmp_path / "config.toml"
    f.write_text('[runtime]\ntop_k = 7\n[preseed]\nselector = "model"\nmodel = "small-model"\ntimeout = 2.5\n')
    cfg = load_config({}, env={}, config_file=f)
    assert (cfg.selector, cfg.selector_model, cfg.selector_timeout, cfg.top_k) == ("model", "small-model", 2.5, 7)
    assert load_config({"selector": "embedded"}, env={"COCKPIT_SELECTOR": "model"}, config_file=f).selector == "embedded"
    f.write_text('[preseed]\nselector = "magic"\n')
    with pytest.raises(ConfigError, match="selector must be one of"):
        load_config({}, env={}, config_file=f)


def test_shortlist_candidates_are_unique_names(engine):
    (engine.notes_dir / "team").mkdir()
    (engine.notes_dir / "team" / "deploy.md").write_text(
        "---\nname: deploy-command\ndescription: A second deploy-command note.\n---\nbody\n")
    engine.sync()
    seen = []

    class Spy:
        def select(self, task, candidates):
            seen.extend(candidates)
            return SelectorResult(["deploy-command"])

    pre = engine.build_preseed(TASK, selector=Spy())
    names = [c.name for c in seen]
    assert len(names) == len(set(names)) and all(isinstance(c, SelectorCandidate) for c in seen)
    assert [h.name for h in pre.hits if not h.priority] == ["deploy-command"]


async def test_selector_usage_lands_in_the_session_totals(api, engine, tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    api.script(answer("staging-stack"), Reply("Port 6443."))
    price = ModelPrice(input=1.0, output=5.0, cache_write=1.25, cache_read=0.1, context_window=200000)
    pricing = PricingTable({"test-model": price, "sel-model": price}, source="test", date="2026-01-01")
    cfg = RuntimeConfig(api_key="test-key", base_url=api.base_url, interactive=False, model="test-model",
                        selector="model", selector_model="sel-model", timeout=10.0)
    mgr = SessionManager(engine, cfg, pricing=pricing)
    sub = mgr.subscribe()
    s = await mgr.spawn(SpawnSpec(TASK, workspace=ws))
    assert await mgr.wait_idle(timeout=30)
    sub.close()
    events = [e async for e in sub if e.session_id == s.id]
    pre = next(e for e in events if isinstance(e, Preseeded))
    assert [n.name for n in pre.notes if n.kind == "line"] == ["staging-stack"] and "[staging-stack]" in pre.text
    sel = pre.selector
    assert sel.model == "sel-model" and sel.chosen == 1 and sel.error is None and sel.usage.total > 0
    assert sel.cost_usd == pytest.approx(price.cost(sel.usage))
    updates = [e for e in events if isinstance(e, UsageUpdate)]
    assert updates[0].usage == sel.usage  # the selector's call is the first usage of the session
    model_usage = updates[-1].usage
    assert s.usage == sel.usage + model_usage
    assert s.cost_usd == pytest.approx(price.cost(sel.usage) + price.cost(model_usage))
    assert mgr.totals()[0] == s.usage
    recs = read_events(s.transcript_path)
    usage_recs = [r for r in recs if isinstance(r, UsageUpdate)]
    assert usage_recs[0].source == "selector" and usage_recs[0].model == "sel-model"
    pre = next(r for r in recs if isinstance(r, Preseeded))
    assert [n.name for n in pre.notes if n.kind == "line"] == ["staging-stack"]
    # the session's own request carried the block the selector chose
    first = next(b["text"] for b in api.message_requests[1]["messages"][0]["content"] if "<project-notes>" in b["text"])
    assert "★ [staging-stack]" in first and "\n[deploy-command]" not in first  # a line: only the chosen one
    await mgr.aclose()


async def test_session_selector_failure_falls_back_and_still_counts(api, engine, tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    api.script(Reply("not json at all"), Reply("ok"))
    cfg = RuntimeConfig(api_key="test-key", base_url=api.base_url, interactive=False, model="test-model",
                        selector="model", selector_model="sel-model", timeout=10.0)
    mgr = SessionManager(engine, cfg, pricing=PricingTable({}, source="test", date="2026-01-01"))
    sub = mgr.subscribe()
    s = await mgr.spawn(SpawnSpec(TASK, workspace=ws))
    assert await mgr.wait_idle(timeout=30)
    sub.close()
    pre = [e async for e in sub if isinstance(e, Preseeded) and e.session_id == s.id][0]
    assert pre.selector.chosen is None and "malformed" in pre.selector.error
    assert pre.selector.usage.total > 0 and s.usage.total > pre.selector.usage.total  # billed anyway
    embedded = engine.build_preseed(TASK)
    assert [n.name for n in pre.notes if n.kind == "line"] == [h.name for h in embedded.hits]
    await mgr.aclose()
