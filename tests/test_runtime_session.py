"""Session loop against the stand-in: tool loop, faults, kill, concurrency, usage, transcripts."""

import asyncio
from pathlib import Path

import pytest
from helpers import PRICE, make_manager
from standin import HTTPError, Reply, StandIn, ToolUse

from cockpit.events import (
    SessionDone,
    SessionErrorEvent,
    SessionSpawned,
    SessionStatus,
    StatusChanged,
    TextDelta,
    ToolResult,
    Usage,
    UsageUpdate,
)
from cockpit.runtime import RuntimeConfig, SessionManager, fold, read_events
from cockpit.runtime.spawn import SpawnSpec

S = SessionStatus
EDIT = "str_replace_based_edit_tool"


async def run_one(mgr, task="hello?", **kw):
    sub = mgr.subscribe()
    s = await mgr.spawn(SpawnSpec(task, **kw))
    assert await mgr.wait_idle(timeout=30)
    sub.close()
    events = [e async for e in sub]
    return s, [e for e in events if e.session_id == s.id]


async def test_tool_loop_and_transcript(api, workspace):
    api.script(Reply("Reading.", [ToolUse(EDIT, {"command": "view", "path": "README.md"})]), Reply("It is 8080."))
    mgr = make_manager(api)
    s, events = await run_one(mgr, workspace=workspace)
    assert s.status == S.DONE and s.final_text == "It is 8080."
    results = [e for e in events if isinstance(e, ToolResult)]
    assert results and not results[0].is_error and "8080" in results[0].content
    # the tool result went back to the model
    second = api.message_requests[1]["messages"]
    assert second[-1]["content"][0]["type"] == "tool_result"
    assert isinstance(events[-1], SessionDone) and events[-1].status == S.DONE
    recs = read_events(s.transcript_path)
    types = [type(r).__name__ for r in recs]
    assert types[0] == "SessionSpawned" and types[-1] == "SessionDone" and recs[-1].status is S.DONE
    assert {"UsageUpdate", "ToolCall", "ToolResult", "ConversationMessage", "SessionStarted"} <= set(types)
    # the transcript is the event log: what was published, in order (the streamed text in one
    # line; the live usage figures too, so a killed server's transcript still has what it cost)
    live = [e for e in events if not isinstance(e, TextDelta)]
    assert [e for e in recs if not isinstance(e, TextDelta)] == live
    assert any(getattr(e, "partial", False) for e in recs)
    await mgr.aclose()


async def test_cache_control_on_system_tools_and_last_message(api, workspace):
    mgr = make_manager(api)
    api.script(Reply("ok"))
    await run_one(mgr, workspace=workspace)
    body = api.message_requests[0]
    assert body["system"][0]["cache_control"] == {"type": "ephemeral"}
    assert body["tools"][-1]["cache_control"] == {"type": "ephemeral"}
    assert body["messages"][-1]["content"][-1]["cache_control"] == {"type": "ephemeral"}
    await mgr.aclose()


async def test_429_then_success(api, workspace):
    api.script(HTTPError(429), Reply("fine"))
    mgr = make_manager(api)
    s, _ = await run_one(mgr, workspace=workspace)
    assert s.status == S.DONE and s.final_text == "fine"
    assert len(api.message_requests) == 2
    await mgr.aclose()


async def test_529_until_retries_run_out(api, workspace):
    api.script(*[HTTPError(529)] * 3)
    mgr = make_manager(api, max_retries=2)
    s, events = await run_one(mgr, workspace=workspace)
    assert s.status == S.ERROR
    errs = [e for e in events if isinstance(e, SessionErrorEvent)]
    assert errs and errs[0].kind == "overloaded" and "529" in errs[0].message
    assert len(api.message_requests) == 3  # 1 + 2 SDK retries
    recs = read_events(s.transcript_path)
    assert isinstance(recs[-1], SessionDone) and recs[-1].status is S.ERROR
    await mgr.aclose()


async def test_stream_cut_is_retried_not_finished(api, workspace):
    api.script(Reply("partial answer here", cut_after=4), Reply("complete"))
    mgr = make_manager(api)
    s, events = await run_one(mgr, workspace=workspace)
    assert s.status == S.DONE and s.final_text == "complete"
    assert any(isinstance(e, StatusChanged) and e.detail.startswith("retry") for e in events)
    await mgr.aclose()


async def test_stream_cut_twice_is_an_error(api, workspace):
    api.script(Reply("a b c", cut_after=3), Reply("a b c", cut_after=3))
    mgr = make_manager(api)
    s, events = await run_one(mgr, workspace=workspace)
    assert s.status == S.ERROR and s.error.kind == "interrupted"
    assert s.final_text == ""
    await mgr.aclose()


async def test_mid_stream_error_event(api, workspace):
    api.script(Reply("x y z", error_after=3, error_type="invalid_request_error"))
    mgr = make_manager(api)
    s, events = await run_one(mgr, workspace=workspace)
    assert s.status == S.ERROR and s.error.kind == "api"
    assert "invalid_request_error" in s.error.message
    await mgr.aclose()


async def test_mid_stream_overloaded_is_retried_once(api, workspace):
    api.script(Reply("x y z", error_after=3), Reply("recovered"))
    mgr = make_manager(api)
    s, _ = await run_one(mgr, workspace=workspace)
    assert s.status == S.DONE and s.final_text == "recovered"
    await mgr.aclose()


async def test_kill_during_streaming(api, workspace):
    api.script(Reply("one two three four five", stall_after=4))
    mgr = make_manager(api)
    sub = mgr.subscribe()
    s = await mgr.spawn(SpawnSpec("long", workspace=workspace))
    async for ev in sub:  # wait until text is streaming
        if isinstance(ev, TextDelta) and ev.session_id == s.id:
            break
    assert s.status == S.STREAMING
    await mgr.kill(s.id)
    assert s.status == S.KILLED
    recs = read_events(s.transcript_path)
    assert isinstance(recs[0], SessionSpawned) and isinstance(recs[-1], SessionDone) and recs[-1].status is S.KILLED
    await mgr.aclose()


async def test_a_follow_up_to_a_headless_session_is_refused_not_lost(api, workspace):
    """`cockpit send` to a `cockpit run --detach` session said "queued"; the session ended at its
    last answer and the message went nowhere (not to the model, not to the transcript)."""
    api.script(Reply("one two three four five", stall_after=4))
    mgr = make_manager(api)
    sub = mgr.subscribe()
    s = await mgr.spawn(SpawnSpec("long", workspace=workspace))
    async for ev in sub:
        if isinstance(ev, TextDelta) and ev.session_id == s.id:
            break
    with pytest.raises(ValueError, match="headless .* takes no follow-up; once it has ended, cockpit resume"):
        await mgr.send(s.id, "hurry up")
    await mgr.kill(s.id)
    await mgr.aclose()


async def test_model_reading_outside_workspace_gets_tool_error(api, workspace):
    api.script(Reply("", [ToolUse(EDIT, {"command": "view", "path": "../../etc/passwd"})]), Reply("refused, ok"))
    mgr = make_manager(api)
    s, events = await run_one(mgr, workspace=workspace)
    res = [e for e in events if isinstance(e, ToolResult)][0]
    assert res.is_error and "refused" in res.content and "root:" not in res.content
    block = api.message_requests[1]["messages"][-1]["content"][0]
    assert block["is_error"] is True
    assert s.status == S.DONE
    await mgr.aclose()


async def test_bad_tool_input_and_unknown_tool_become_tool_errors(api, workspace):
    api.script(
        Reply("", [ToolUse(EDIT, {"command": "view"}), ToolUse("nope", {"a": 1}), ToolUse(EDIT, raw_json="[1, 2, 3]")]),
        Reply("done"),
    )
    mgr = make_manager(api)
    s, events = await run_one(mgr, workspace=workspace)
    res = [e for e in events if isinstance(e, ToolResult)]
    assert [r.is_error for r in res] == [True, True, True]
    assert "missing" in res[0].content and "unknown tool" in res[1].content and "object" in res[2].content
    assert s.status == S.DONE
    await mgr.aclose()


async def test_unparseable_tool_json_is_retried_then_error(api, workspace):
    bad = Reply("", [ToolUse(EDIT, raw_json='{"path": README}')])
    api.script(bad, Reply("", [ToolUse(EDIT, raw_json='{"path": README}')]))
    mgr = make_manager(api)
    s, _ = await run_one(mgr, workspace=workspace)
    assert s.status == S.ERROR and "tool parameter JSON" in s.error.message
    assert len(api.message_requests) == 2
    await mgr.aclose()


async def test_nine_sessions_usage_per_session_and_total(api, workspace):
    u = {"input": 100, "output": 10, "cache_write": 5, "cache_read": 50}
    api.responder = lambda body: Reply("ok", usage=u)
    mgr = make_manager(api)
    sessions = [await mgr.spawn(SpawnSpec(f"task {i}", workspace=workspace)) for i in range(9)]
    assert await mgr.wait_idle(timeout=30)
    for s in sessions:
        assert s.status == S.DONE
        assert s.usage == Usage(100, 10, 5, 50)
        assert s.cost_usd == pytest.approx(PRICE.cost(Usage(100, 10, 5, 50)))
    total, cost = mgr.totals()
    assert total == Usage(900, 90, 45, 450)
    assert cost == pytest.approx(9 * PRICE.cost(Usage(100, 10, 5, 50)))
    assert len({s.transcript_path for s in sessions}) == 9
    await mgr.aclose()


async def test_concurrency_cap_queues(api, workspace):
    api.script(Reply("a b c d", stall_after=4))
    mgr = make_manager(api, concurrency=1)
    sub = mgr.subscribe()
    first = await mgr.spawn(SpawnSpec("first", workspace=workspace))
    async for ev in sub:
        if isinstance(ev, TextDelta):
            break
    second = await mgr.spawn(SpawnSpec("second", workspace=workspace))
    async for ev in sub:
        if isinstance(ev, StatusChanged) and ev.session_id == second.id:
            break
    assert second.status == S.QUEUED
    api.release()
    assert await mgr.wait_idle(timeout=30)
    assert first.status == S.DONE and second.status == S.DONE
    await mgr.aclose()


async def test_unknown_model_cost_is_none(api, workspace):
    api.script(Reply("ok"))
    mgr = make_manager(api)
    s, events = await run_one(mgr, workspace=workspace, model="local-llama")
    assert s.usage.total > 0 and s.cost_usd is None
    upd = [e for e in events if isinstance(e, UsageUpdate)][0]
    assert upd.cost_usd is None and upd.context_window is None
    await mgr.aclose()


async def test_max_tokens_and_turn_cap_are_visible(api, workspace):
    api.script(Reply("cut off", stop_reason="max_tokens"))
    mgr = make_manager(api)
    s, events = await run_one(mgr, workspace=workspace)
    assert s.status == S.DONE and s.stop_reason == "max_tokens"
    assert any(isinstance(e, StatusChanged) and "max_tokens" in e.detail for e in events)
    api.responder = lambda body: Reply("again", [ToolUse(EDIT, {"command": "view", "path": "."})])
    mgr2 = make_manager(api, max_turns=2)
    s2, _ = await run_one(mgr2, workspace=workspace)
    assert s2.status == S.ERROR and s2.error.kind == "turn_cap"
    await mgr.aclose(), await mgr2.aclose()


async def test_interactive_waits_then_follow_up(api, workspace):
    api.script(Reply("first answer"), Reply("second answer"))
    mgr = make_manager(api, interactive=True)
    s = await mgr.spawn(SpawnSpec("q1", workspace=workspace))
    assert await mgr.wait_idle(timeout=30)
    assert s.status == S.WAITING and s.final_text == "first answer"
    await mgr.send(s.id, "q2")
    await asyncio.sleep(0)
    assert await mgr.wait_idle(timeout=30)
    assert s.final_text == "second answer" and s.status == S.WAITING
    last = api.message_requests[-1]["messages"]
    assert [m["role"] for m in last] == ["user", "assistant", "user"]
    await mgr.aclose()
    assert s.status == S.DONE  # it had finished its turn: closing ends it done, never killed
    assert fold(read_events(s.transcript_path)).ended.status is S.DONE


async def test_resume_from_transcript(api, workspace):
    api.script(Reply("remember 42"))
    mgr = make_manager(api)
    s, _ = await run_one(mgr, "what number?", workspace=workspace)
    await mgr.aclose()
    api.script(Reply("it was 42"))
    mgr2 = make_manager(api, interactive=True)
    r = await mgr2.resume(s.transcript_path)
    assert await mgr2.wait_idle(timeout=30)
    assert r.status == S.WAITING and r.final_text == "remember 42"
    await mgr2.send(r.id, "say it again")
    await asyncio.sleep(0)
    assert await mgr2.wait_idle(timeout=30)
    assert r.final_text == "it was 42"
    sent = api.message_requests[-1]["messages"]
    assert sent[0]["content"][-1]["text"] == "what number?" and sent[1]["content"][0]["text"] == "remember 42"
    assert fold(read_events(r.transcript_path)).resumed_from == str(s.transcript_path)
    await mgr2.aclose()


async def test_401_is_one_clear_auth_error_without_key(workspace):
    with StandIn(require_key="the-right-key") as api:
        mgr = make_manager(api, api_key="sk-secret-wrong-key")
        s, events = await run_one(mgr, workspace=workspace)
        assert s.status == S.ERROR and s.error.kind == "auth"
        assert "sk-secret" not in s.error.message and "\n" not in s.error.message
        assert "sk-secret" not in Path(s.transcript_path).read_text()
        assert "sk-secret" not in repr(mgr.config)
        await mgr.aclose()


async def test_unreachable_base_url(workspace):
    with StandIn() as api:
        url = api.base_url
    mgr = SessionManager(None, RuntimeConfig(api_key="k", base_url=url, interactive=False, max_retries=0, timeout=5))
    s, _ = await run_one(mgr, workspace=workspace)
    assert s.status == S.ERROR and s.error.kind == "connection" and url in s.error.message
    await mgr.aclose()


async def test_error_in_one_session_leaves_others_running(api, workspace):
    def responder(body):
        task = body["messages"][0]["content"][-1]["text"]
        return HTTPError(500) if task == "bad" else Reply("good")

    api.responder = responder
    mgr = make_manager(api, max_retries=1)
    bad = await mgr.spawn(SpawnSpec("bad", workspace=workspace))
    good = await mgr.spawn(SpawnSpec("fine", workspace=workspace))
    assert await mgr.wait_idle(timeout=30)
    assert bad.status == S.ERROR and bad.error.kind == "api"
    assert good.status == S.DONE and good.final_text == "good"
    await mgr.aclose()


async def test_an_unwritable_transcripts_folder_ends_the_session_in_error_at_once(api, workspace, tmp_path):
    """The app's side of it (``cockpit run`` refuses before it starts, exit 2): the session
    does not sit in "preseeding" forever — it ends in error, saying which folder and why."""
    import os

    blocked = tmp_path / "sessions"
    blocked.write_text("a file where the transcripts folder should be")
    api.script(Reply("never asked"))
    mgr = make_manager(api, sessions_dir=str(blocked))
    s, events = await run_one(mgr, workspace=workspace)
    assert s.status == S.ERROR and s.error.kind == "io" and str(blocked) in s.error.message
    assert [e for e in events if isinstance(e, SessionErrorEvent)] and isinstance(events[-1], SessionDone)
    assert not os.path.isdir(blocked) and api.requests == []  # no model call made without a transcript
    await mgr.aclose()


async def test_a_preseed_failure_is_recorded_and_shown_never_no_note_qualified(api, workspace):
    from cockpit.events import Preseeded
    from cockpit.headless import format_report
    from memory import IndexModelError

    class BrokenEngine:
        ready = True

        def wait_ready(self, timeout=None):
            return True

        def build_preseed(self, query, top_k=None, **kw):
            raise IndexModelError("/tmp/i.sqlite", "other-model (dim 48)", "test-hash (dim 32)")

        def search(self, query, top_k=5):
            return []

        def save(self, *a, **k):
            raise ValueError("no")

    api.script(Reply("answered without notes"))
    mgr = make_manager(api, engine=BrokenEngine())
    s, events = await run_one(mgr, workspace=workspace)
    pre = next(e for e in events if isinstance(e, Preseeded))
    assert "IndexModelError" in pre.error and "other-model" in pre.error and pre.notes == ()
    assert s.status == S.DONE and s.preseed_error == pre.error
    told = fold(read_events(s.transcript_path))
    assert told.preseed_error == pre.error and told.notes == ()
    report = format_report({"sessions": [s.to_dict()], "totals": {"usage": s.to_dict()["usage"], "cost_usd": 0},
                            "pricing": {"date": "d"}})
    assert "preseed: FAILED" in report and "no note qualified" not in report
    await mgr.aclose()


async def test_resume_skips_damaged_transcript_lines_with_a_warning(api, workspace, caplog):
    api.script(Reply("remember 42"))
    mgr = make_manager(api)
    s, _ = await run_one(mgr, "what number?", workspace=workspace)
    await mgr.aclose()
    path = Path(s.transcript_path)
    lines = path.read_bytes().split(b"\n")
    garbage = [b"[1, 2]", b"\xff\xfe not utf-8", b"{broken", b'{"type": "TextDelta"}', b"7"]
    path.write_bytes(b"\n".join(lines[:1] + garbage + lines[1:]) + b'{"type": "usa')  # + a torn last line
    warnings: list[str] = []
    records = read_events(path, warnings)
    assert isinstance(records[0], SessionSpawned) and len(records) == len(read_events(s.transcript_path, []))
    assert warnings == [f"{path}: line 2 skipped: not a JSON object", f"{path}: line 3 skipped: not UTF-8",
                        f"{path}: line 4 skipped: not JSON (Expecting property name enclosed in double quotes)",
                        f'{path}: line 5 skipped: an event is {{"type": name, "data": {{…}}}}',
                        f"{path}: line 6 skipped: not a JSON object"]
    api.script(Reply("it was 42"))
    mgr2 = make_manager(api, interactive=True)
    with caplog.at_level("WARNING", logger="cockpit.transcript"):
        r = await mgr2.resume(path)
    assert "line 3 skipped: not UTF-8" in caplog.text
    assert await mgr2.wait_idle(timeout=30)
    assert r.status == S.WAITING and r.final_text == "remember 42"
    await mgr2.aclose()


def test_a_lone_surrogate_cannot_break_a_transcript_line(tmp_path):
    from cockpit.runtime.transcript import TranscriptWriter

    path = tmp_path / "t.jsonl"
    w = TranscriptWriter(path)
    w.write(SessionSpawned("s", "t", "m", "w", str(path), True))
    w.write(ToolResult("s", "id", "bash", "caf\udce9.txt", False))
    w.close()
    records = read_events(path)
    assert records[1].content == "caf\udce9.txt"


async def test_forget_drops_a_finished_session_and_refuses_a_running_one(api, workspace):
    from cockpit.events import SessionForgotten

    api.script(Reply("done"), Reply("slow " * 20, stall_after=4))
    mgr = make_manager(api)
    sub = mgr.subscribe()
    done, _ = await run_one(mgr, workspace=workspace)
    running = await mgr.spawn(SpawnSpec("slow", workspace=workspace))
    async for e in sub:
        if isinstance(e, TextDelta) and e.session_id == running.id:
            break
    with pytest.raises(ValueError, match="still"):
        await mgr.forget(running.id)
    await mgr.forget(done.id)
    assert [s.id for s in mgr.sessions] == [running.id]
    # a late client never sees it again — but for its spend, which stays in the totals
    assert [type(e) for e in mgr.snapshot() if e.session_id == done.id] == [SessionForgotten]
    async for e in sub:
        if isinstance(e, SessionForgotten):
            assert e.session_id == done.id
            break
    with pytest.raises(KeyError):
        await mgr.forget(done.id)
    await mgr.kill(running.id)
    api.release()
    await mgr.aclose()
