"""Spend caps (cockpit/runtime/budget.py) against the stand-in: a session pauses in "budget
reached" after the response that crosses its cap, makes no request while paused, gives its slot
back and goes on when the cap is raised; the server's cap pauses every session; `cockpit run`
ends with its own exit code; the RPC, the CLI, the app's key; config values of the wrong type."""

import asyncio
import json

import pytest
from helpers import make_manager, next_event
from standin import Reply, StandIn, ToolUse

from cockpit import wire
from cockpit.cli import main
from cockpit.events import BackendRecord, BudgetNotice, SessionStatus, StatusChanged, ToolResult
from cockpit.headless import EXIT_BUDGET
from cockpit.runtime import RuntimeConfig, SessionManager, read_events
from cockpit.runtime.config import ConfigError, load_config, read_config_file
from cockpit.runtime.spawn import SpawnSpec

S = SessionStatus
USAGE = {"input": 1000, "output": 100, "cache_write": 0, "cache_read": 0}  # $0.0045 at helpers.PRICE


@pytest.fixture
def ws(tmp_path):
    w = tmp_path / "ws"
    w.mkdir()
    return w


def make_mgr(api, **cfg):
    """Interactive sessions with every tool allowed, in the workspace itself, and no retries."""
    return make_manager(api, **{"interactive": True, "max_retries": 0, "worktrees": False,
                                "permission_mode": "bypassPermissions", **cfg})


def status_is(sid, status):
    return lambda e: isinstance(e, StatusChanged) and e.session_id == sid and e.status is status


async def test_a_session_pauses_at_its_usd_cap_gives_its_slot_back_and_goes_on_when_raised(api, ws):
    api.script(
        Reply("", [ToolUse("bash", {"command": "echo hi"})], usage=USAGE),  # s1: $0.0045 ≥ its $0.004 cap
        Reply("the other one", usage=USAGE),  # s2, while s1 is paused
        Reply("done", usage=USAGE),  # s1 after the raise
    )
    mgr = make_mgr(api, concurrency=1)
    sub = mgr.subscribe()
    s1 = await mgr.spawn(SpawnSpec("say hi", workspace=ws, max_budget_usd=0.004))
    assert s1.to_dict()["budget"] == {"usd": 0.004, "tokens": None, "reached": None}
    reached = await next_event(sub, lambda e: isinstance(e, BudgetNotice) and e.level == "reached")
    assert (reached.session_id, reached.scope, reached.limit_usd) == (s1.id, "session", 0.004)
    assert reached.spent_usd == pytest.approx(0.0045) and reached.spent_tokens == 1100
    await next_event(sub, status_is(s1.id, S.BUDGET_REACHED))
    assert "session budget reached: $0.0045 of $0.0040" in s1.detail
    assert S.BUDGET_REACHED.needs_user and s1.is_idle
    # its slot is free: with a concurrency of one, another session runs to its answer meanwhile
    s2 = await mgr.spawn(SpawnSpec("another task", workspace=ws))
    await next_event(sub, status_is(s2.id, S.WAITING))
    assert s2.final_text == "the other one"
    # paused: one request only, and the response's tool did not run
    assert s1.status is S.BUDGET_REACHED and s1.requests == 1 and len(api.message_requests) == 2
    assert not any(isinstance(e, ToolResult) and e.session_id == s1.id for e in mgr.snapshot())
    info = await mgr.set_budget(s1.id, usd=0.0042)  # still under what it spent: it stays paused
    assert info["reached"] and info["status"] == "budget reached" and info["paused"] == [s1.id]
    assert s1.status is S.BUDGET_REACHED and len(api.message_requests) == 2
    assert info["held_by"] == "session"
    info = await mgr.set_budget(s1.id, usd=1.0)
    assert info["usd"] == 1.0 and not info["reached"]
    assert info["paused"] == [] and info["going_on"] == [s1.id]  # said as it will be, not as it was
    assert info["held_by"] is None
    await next_event(sub, status_is(s1.id, S.WAITING))
    assert s1.final_text == "done" and s1.requests == 2 and len(api.message_requests) == 3
    results = [r for r in api.message_requests[2]["messages"][-1]["content"] if r["type"] == "tool_result"]
    assert "hi" in results[0]["content"]  # the tool ran after the raise
    await mgr.aclose()
    budget = [(r.level, r.scope, r.limit_usd) for r in read_events(s1.transcript_path)
              if isinstance(r, BudgetNotice)]
    assert budget == [("reached", "session", 0.004), ("raised", "session", 0.0042), ("raised", "session", 1.0)]


async def test_the_server_budget_pauses_every_session_at_its_next_request(api, ws):
    api.script(Reply("one", usage=USAGE), Reply("two", usage=USAGE), Reply("three", usage=USAGE),
               Reply("four", usage=USAGE))
    mgr = make_mgr(api, server_budget_tokens=2000)
    sub = mgr.subscribe()
    a = await mgr.spawn(SpawnSpec("first", workspace=ws))
    await next_event(sub, status_is(a.id, S.WAITING))
    b = await mgr.spawn(SpawnSpec("second", workspace=ws))  # its answer brings the sum to 2,200 tokens
    await next_event(sub, status_is(b.id, S.WAITING))
    for s in (a, b):
        await mgr.send(s.id, "go on")
    for s in (a, b):
        await next_event(sub, status_is(s.id, S.BUDGET_REACHED))
        assert "server budget (all sessions) reached: 2,200 of 2,000 tokens" in s.detail
    assert len(api.message_requests) == 2
    info = mgr.budget_info(None)
    assert info["scope"] == "server" and info["reached"] and sorted(info["paused"]) == sorted([a.id, b.id])
    assert mgr.budget_info(a.id)["held_by"] == "server"  # its own cap is not reached: the server's is
    with pytest.raises(ValueError):
        await mgr.set_budget(None)  # nothing to set
    await mgr.set_budget(None, tokens=100_000)
    assert await mgr.wait_idle(timeout=30)
    assert {a.status, b.status} == {S.WAITING} and len(api.message_requests) == 4
    assert {a.final_text, b.final_text} == {"three", "four"}
    await mgr.aclose()
    for s in (a, b):
        recs = [(r.level, r.scope) for r in read_events(s.transcript_path) if isinstance(r, BudgetNotice)]
        assert recs == [("reached", "server"), ("raised", "server")]


async def test_a_token_cap_from_the_config_and_a_fresh_continuation_keeps_the_raised_cap(api, ws):
    api.script(Reply("", [ToolUse("bash", {"command": "true"})], usage=USAGE))
    mgr = make_mgr(api, max_budget_tokens=500)
    sub = mgr.subscribe()
    s = await mgr.spawn(SpawnSpec("t", workspace=ws))
    await next_event(sub, status_is(s.id, S.BUDGET_REACHED))
    assert "1,100 of 500 tokens" in s.detail
    await mgr.set_budget(s.id, tokens=600)  # still reached
    fresh = await mgr.continue_fresh(s.id)
    assert fresh.budget.tokens == 600
    await mgr.kill(fresh.id)
    await mgr.kill(s.id)
    assert s.status is S.KILLED
    await mgr.aclose()


def test_cockpit_run_at_the_cap_exits_with_its_own_code(tmp_path, ws, monkeypatch, capsys):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    monkeypatch.chdir(tmp_path)  # no ./notes
    with StandIn() as api:
        api.script(Reply("", [ToolUse("bash", {"command": "echo hi"})]), Reply("never sent"))
        code = main(["run", "t", "--base-url", api.base_url, "--workspace", str(ws), "--model", "claude-haiku-4-5",
                     "--max-budget-usd", "0.000001", "--json"])
        requests = len(api.message_requests)
    out = json.loads(capsys.readouterr().out)
    assert code == EXIT_BUDGET == 4 and requests == 1
    row = out["sessions"][0]
    assert row["status"] == "error" and row["error"]["kind"] == "budget"
    assert row["budget"] == {"usd": 0.000001, "tokens": None, "reached": {"scope": "session", "caps": ["usd"]}}
    assert row["error"]["message"].startswith("session budget reached")
    with StandIn() as api:
        api.script(Reply("", [ToolUse("bash", {"command": "echo hi"})]))
        code = main(["run", "t", "--base-url", api.base_url, "--workspace", str(ws), "--max-budget-tokens", "1"])
    text = capsys.readouterr().out
    assert code == 4 and "· budget reached ·" in text and "session budget reached" in text
    assert main(["run", "t", "--workspace", str(ws), "--max-budget-usd", "0"]) == 2
    assert "--max-budget-usd" in capsys.readouterr().err


async def test_the_budget_rpc_and_the_cli(api, ws, monkeypatch, capsys):
    from cockpit.server.client import AsyncClient, RemoteError
    from cockpit.server.daemon import Server

    monkeypatch.delenv("COCKPIT_NO_SERVER", raising=False)
    srv = Server(RuntimeConfig(api_key="test-key", base_url=api.base_url, max_retries=0, timeout=10))
    await srv.start()
    try:
        c = await AsyncClient.connect(srv.socket_path)
        await c.call("subscribe")
        api.script(Reply("", [ToolUse("bash", {"command": "echo hi"})]), Reply("done"))
        payload = {"api_key": "test-key", "base_url": api.base_url, "max_retries": 0,
                   "permission_mode": "bypassPermissions"}
        with pytest.raises(RemoteError):
            await c.call("spawn", task="t", workspace=str(ws), config=payload, max_budget_usd="5")
        row = await c.call("spawn", task="t", workspace=str(ws), config=payload, max_budget_tokens=10)
        sid = row["id"]
        assert row["budget"] == {"usd": None, "tokens": 10, "reached": None}

        async def wait_for(pred):
            while True:
                e = wire.event_from_json(await c.events.get())
                if pred(e):
                    return e

        await asyncio.wait_for(wait_for(status_is(sid, S.BUDGET_REACHED)), 30)
        shown = await c.call("budget", id=sid)
        assert shown["reached"] and shown["tokens"] == 10 and shown["paused"] == [sid]
        code = await asyncio.to_thread(main, ["budget", sid[-6:], "--tokens", "1000000"])
        out = capsys.readouterr().out
        assert code == 0 and "cap 1,000,000 tokens" in out
        assert f"{sid} (going on)" in out and "paused in" not in out  # not the state before the raise
        await asyncio.wait_for(wait_for(status_is(sid, S.WAITING)), 30)
        code = await asyncio.to_thread(main, ["budget", "--server", "--usd", "$2.50"])
        out = capsys.readouterr().out
        assert code == 0 and out.startswith("server (all sessions): cap $2.50")
        assert srv.mgr.server_budget.usd == 2.5
        assert await asyncio.to_thread(main, ["budget"]) == 2  # an id or --server
        assert await asyncio.to_thread(main, ["budget", sid, "--usd", "-1"]) == 2
        await c.close()
    finally:
        await srv.shutdown()


@pytest.mark.parametrize("text, what", [
    ('max_budget_usd = "5"', "'max_budget_usd' must be a number"),
    ("max_budget_tokens = 2.5", "'max_budget_tokens' must be a whole number"),
    ("server_budget_usd = true", "'server_budget_usd' must be a number"),
    ("[runtime]\nserver_budget_tokens = \"1k\"", "'server_budget_tokens' must be a whole number"),
])
def test_a_config_value_of_the_wrong_type_is_refused(tmp_path, text, what):
    path = tmp_path / "config.toml"
    path.write_text(text + "\n")
    with pytest.raises(ConfigError, match=what):
        read_config_file(path)


def test_config_budget_values_and_limits(tmp_path):
    path = tmp_path / "config.toml"
    path.write_text("max_budget_usd = 5\nmax_budget_tokens = 200000\nserver_budget_usd = 20.5\n")
    cfg = load_config(env={}, config_file=path)
    assert (cfg.max_budget_usd, cfg.max_budget_tokens, cfg.server_budget_usd, cfg.server_budget_tokens) == (
        5.0, 200_000, 20.5, None)
    assert load_config(env={"COCKPIT_SERVER_BUDGET_TOKENS": "1000"}, config_file=path).server_budget_tokens == 1000
    for bad in ({"COCKPIT_MAX_BUDGET_USD": "abc"}, {"COCKPIT_MAX_BUDGET_USD": "0"}, {"COCKPIT_MAX_BUDGET_USD": "inf"},
                {"COCKPIT_MAX_BUDGET_TOKENS": "0"}):
        with pytest.raises(ConfigError):
            load_config(env=bad, config_file=path)


def test_claude_code_gets_the_session_cap_as_its_own_max_budget_usd(tmp_path):
    pytest.importorskip("claude_agent_sdk", reason="the claude-code extra is not installed")
    from cockpit.runtime.claude_code.options import agent_options
    from cockpit.runtime.permissions import PermissionMode
    from cockpit.runtime.session_base import SessionSpec

    spec = SessionSpec(task="t", model="m", workspace=tmp_path, cwd=tmp_path, permission_mode=PermissionMode.DEFAULT)
    opts = agent_options(spec, RuntimeConfig(), session_id="s", key_file=None, mcp_server=None,
                         can_use_tool=lambda *a: None, hooks={}, stderr=print, max_budget_usd=2.5)
    assert opts.max_budget_usd == 2.5


async def test_the_app_sets_the_selected_sessions_cap_with_the_dollar_key():
    from tui_fakes import FakeManager
    from tui_fakes import until as pilot_until

    from cockpit.events import SessionSpawned
    from cockpit.tui.app import CockpitApp
    from cockpit.tui.screens.budget import BudgetDialog
    from cockpit.tui.widgets.totals import totals_markup

    mgr = FakeManager([SessionSpawned("s1", "a task", "m", "/ws", "/t/s1.jsonl", True)])
    app = CockpitApp(mgr)
    async with app.run_test(size=(120, 30)) as pilot:
        await pilot_until(pilot, lambda: "s1" in app.views, "the pane")
        mgr.emit(BudgetNotice("s1", "reached", "session", 0.0045, 1100, 0.004, None, "session budget reached"),
                 StatusChanged("s1", S.BUDGET_REACHED, "session budget reached: $0.0045 of $0.0040 — raise the cap"))
        await pilot_until(pilot, lambda: app.views["s1"].status is S.BUDGET_REACHED, "budget reached")
        assert "1 budget reached" in totals_markup(list(app.views.values()), app.memory, 0, 1)
        await pilot.press("dollar_sign")
        await pilot_until(pilot, lambda: isinstance(app.screen, BudgetDialog), "the budget dialog")
        for key in "abc":
            await pilot.press(key)
        await pilot.press("enter")
        assert isinstance(app.screen, BudgetDialog)  # refused: not a number of dollars
        for _ in range(3):
            await pilot.press("backspace")
        for key in "2.5":
            await pilot.press(key)
        await pilot.press("enter")
        await pilot_until(pilot, lambda: mgr.budgets == [("s1", 2.5, None, False)], "the cap sent")
        # at the server's cap, $ raises the server's
        mgr.emit(BudgetNotice("s1", "reached", "server", 9.0, 1, 5.0, None, "server budget reached"))
        await pilot_until(pilot, lambda: app.views["s1"].budget_scope == "server", "the server's cap")
        await pilot.press("dollar_sign")
        await pilot_until(pilot, lambda: isinstance(app.screen, BudgetDialog), "the budget dialog")
        for key in "10":
            await pilot.press(key)
        await pilot.press("enter")
        await pilot_until(pilot, lambda: mgr.budgets[-1] == (None, 10.0, None, False), "the server cap sent")


async def test_claude_code_stops_at_the_cap_and_is_resumed_with_the_raised_one(ws, tmp_path_factory, monkeypatch):
    pytest.importorskip("claude_agent_sdk", reason="the claude-code extra is not installed")
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path_factory.mktemp("claude-config")))
    monkeypatch.setenv("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
    monkeypatch.setenv("ENABLE_TOOL_SEARCH", "false")
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_BASE_URL", raising=False)
    (ws / "README.md").write_text("hello\n")
    read = ToolUse("Read", {"file_path": str(ws / "README.md")})
    with StandIn() as api:
        api.script(Reply("", [read]), Reply("", [read]), Reply("done"))
        cfg = RuntimeConfig(api_key="sk-test-cockpit-key-0123456789", base_url=api.base_url, max_retries=0,
                            timeout=30.0, model="standin-model", backend="claude-code", claude_setting_sources=(),
                            worktrees=False, max_budget_usd=0.01)
        mgr = SessionManager(None, cfg)
        sub = mgr.subscribe()
        s = await mgr.spawn(SpawnSpec("read the readme", workspace=ws))
        await next_event(sub, status_is(s.id, S.BUDGET_REACHED), timeout=120)
        assert len(api.message_requests) == 1 and s.usage.total > 0  # Claude Code stopped itself at its cap
        await mgr.set_budget(s.id, usd=1.0)
        await next_event(sub, status_is(s.id, S.WAITING), timeout=120)  # a new claude process, same conversation
        assert "budget was raised" in s.detail
        await mgr.send(s.id, "go on")
        await next_event(sub, lambda e: isinstance(e, StatusChanged) and e.session_id == s.id
                    and e.status is S.WAITING and not e.detail, timeout=120)
        assert s.final_text == "done" and len(api.message_requests) == 3
        await mgr.aclose()
    results = [r.data["subtype"] for r in read_events(s.transcript_path)
               if isinstance(r, BackendRecord) and r.kind == "result"]
    assert results == ["error_max_budget_usd", "success"]


def _stopped_at(scope: str, spent_usd, spent_tokens: int, usd=None, tokens=None) -> dict:
    """The report row of a session that stopped at a cap (its events folded)."""
    from cockpit import events as ev
    from cockpit.runtime.budget import Budget, BudgetHit
    from cockpit.runtime.history import fold
    from cockpit.runtime.report import session_row

    hit = BudgetHit(scope, Budget(usd, tokens), spent_usd, spent_tokens)
    return session_row(fold([
        ev.BudgetNotice("s1", "reached", scope, spent_usd, spent_tokens, usd, tokens, hit.message()),
        ev.SessionErrorEvent("s1", hit.message(), "budget"),
    ], "s1"))


def test_a_reached_cap_names_the_flag_of_each_limit_that_was_hit():
    """A server *token* cap said "cockpit budget --server --usd N raises it"; and a cap of both
    kinds reached by its tokens named both (the hint read the message, which shows the dollars)."""
    from cockpit.headless import budget_hint

    tokens = _stopped_at("server", 0.002, 5376, tokens=5018)
    assert tokens["budget"]["reached"] == {"scope": "server", "caps": ["tokens"]}
    assert budget_hint(tokens) == "cockpit budget --server --tokens N raises it"
    usd = _stopped_at("server", 0.02, 900, usd=0.01)
    assert budget_hint(usd, " --host box") == "cockpit budget --host box --server --usd N raises it"
    both_set = _stopped_at("server", 0.002, 9, usd=5.0, tokens=5)  # the dollars are in its message…
    assert "$0.0020 of $5.00" in both_set["error"]["message"]
    assert budget_hint(both_set) == "cockpit budget --server --tokens N raises it"  # …not reached
    both = _stopped_at("server", 0.02, 9, usd=0.01, tokens=5)
    assert budget_hint(both) == "cockpit budget --server --usd N / --tokens N raises it"
    session = _stopped_at("session", None, 9, tokens=5)
    assert session["budget"]["reached"] == {"scope": "session", "caps": ["tokens"]}
    assert budget_hint(session) == "rerun with a higher --max-budget-tokens"


def test_an_unpriced_model_is_named_by_the_total_and_by_a_usd_cap(tmp_path, ws, monkeypatch, capsys):
    """The run's total cost left out a session whose model has no price without a word, and a USD
    cap on such a model was taken silently (it never trips)."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    monkeypatch.chdir(tmp_path)  # no ./notes
    with StandIn() as api:
        api.script(Reply("one", usage=USAGE), Reply("two", usage=USAGE))
        code = main(["run", "first", "second", "--base-url", api.base_url, "--workspace", str(ws),
                     "--model", "m1", "--model", "claude-haiku-4-5", "--max-budget-usd", "5", "--concurrency", "1"])
    out, err = capsys.readouterr()
    assert code == 0
    assert "warning: model m1 has no price" in err and "claude-haiku-4-5 has no price" not in err
    total = next(line for line in out.splitlines() if line.startswith("total: "))
    assert "(leaves out 1 session with no price: cost n/a)" in total, total
