"""One history: the transcript is the event log, folded by one reducer for every reader.

A live pane, a replay of the transcript (attach, review), an attach in the middle of a session
(snapshot then live events) and a resume all come to the same state; an old-format transcript
(``tests/data/old_transcript_v2.jsonl``, written by the recorder before this format) reads
through the one migration reader.
"""

import asyncio
import json
from pathlib import Path

from helpers import make_manager, next_event
from standin import Reply, ToolUse

from cockpit import events as ev
from cockpit.events import SessionStatus as S
from cockpit.runtime import fold, read_events
from cockpit.runtime.recorder import Recorder
from cockpit.runtime.spawn import SpawnSpec
from cockpit.runtime.transcript import list_transcripts
from cockpit.tui.model import SessionView
from cockpit.tui.transcript_view import render_transcript

OLD = Path(__file__).parent / "data" / "old_transcript_v2.jsonl"


def make_mgr(api, **cfg):
    """Interactive sessions with every tool allowed, in the workspace itself (no worktree, no sandbox)."""
    return make_manager(api, **{"api_key": "test-key-0123456789abcdef", "interactive": True,
                                "permission_mode": "bypassPermissions", "worktrees": False, "sandbox": False, **cfg})


def old_copy(tmp_path: Path, workspace: Path) -> Path:
    path = tmp_path / "sessions-old" / OLD.name
    path.parent.mkdir()
    path.write_text(OLD.read_text(encoding="utf-8").replace("@WS@", str(workspace))
                    .replace("@SESSIONS@", str(path.parent)), encoding="utf-8")
    return path


def shown(view) -> list[tuple]:
    """What a pane shows of a session: its blocks and the facts of its status line."""
    return ([(b.kind, b.text, b.name, b.result, b.is_error, b.approval) for b in view.blocks]
            + [("state", view.status, view.usage, view.cost_usd, view.requests, view.task, view.notes)])


async def a_session_with_a_tool_and_a_follow_up(mgr, api, workspace):
    api.script(Reply("Let me look.", tool_uses=[ToolUse("bash", {"command": "cat README.md"})]),
               Reply("It is 8080."), Reply("Still 8080."))
    sub = mgr.subscribe()
    s = await mgr.spawn(SpawnSpec("which port does staging use?", workspace=workspace))
    await next_event(sub, lambda e: isinstance(e, ev.StatusChanged) and e.session_id == s.id and e.status is S.WAITING)
    await mgr.send(s.id, "sure?")
    await next_event(sub, lambda e: isinstance(e, ev.UserMessage) and e.session_id == s.id)
    await next_event(sub, lambda e: isinstance(e, ev.StatusChanged) and e.session_id == s.id and e.status is S.WAITING)
    return s, sub


# -- the transcript is the event log ---------------------------------------------------------------
async def test_the_transcript_replays_to_what_the_live_pane_showed(api, workspace):
    mgr = make_mgr(api)
    live = SessionView("")
    s, sub = await a_session_with_a_tool_and_a_follow_up(mgr, api, workspace)
    await mgr.aclose()
    sub.close()
    events = [e for e in mgr.snapshot() if e.session_id == s.id]
    for e in events:
        live.apply(e)
    assert [b.kind for b in live.blocks] == ["text", "tool", "text", "user", "text"]
    replayed = fold(read_events(s.transcript_path))
    assert shown(replayed) == shown(live)
    assert replayed.final_text == "Still 8080." and replayed.ended.status is S.DONE
    assert replayed.conversation() == s.messages
    # the review screen renders the same events
    text = render_transcript(read_events(s.transcript_path))
    for piece in ["which port does staging use?", "Let me look.", "cat README.md", "Staging runs on port 8080.",
                  "sure?", "Still 8080.", "end: done"]:
        assert piece in text, piece


async def test_attaching_mid_session_is_the_snapshot_then_live_events_without_gaps_or_repeats(api, workspace):
    mgr = make_mgr(api)
    api.script(Reply("first part and the second part", stall_after=6), Reply("done"))
    first = mgr.subscribe()
    s = await mgr.spawn(SpawnSpec("go", workspace=workspace))
    await next_event(first, lambda e: isinstance(e, ev.TextDelta) and e.session_id == s.id)
    sub = mgr.subscribe()  # an app attaching: subscribe, then take the snapshot at once
    snapshot = [e for e in mgr.snapshot() if e.session_id == s.id]
    assert not any(isinstance(e, ev.SessionDone) for e in snapshot)
    assert fold(snapshot).usage.total > 0  # the streaming response's figures so far (an app reopened mid-stream)
    api.release()
    await mgr.send(s.id, "more")
    rest = []
    async for e in sub:
        if e.session_id == s.id:
            rest.append(e)
            if isinstance(e, ev.StatusChanged) and e.status is S.WAITING and any(
                    isinstance(x, ev.UserMessage) for x in rest):
                break
    await mgr.aclose()
    attached = fold(snapshot + rest)
    replayed = fold(read_events(s.transcript_path))  # ended since (the manager closed)
    assert shown(attached)[:-1] == shown(replayed)[:-1] and attached.usage == replayed.usage
    assert [b.text for b in attached.blocks if b.kind == "text"] == ["first part and the second part", "done"]
    whole = [e for e in snapshot + rest if not isinstance(e, ev.TextDelta) and not getattr(e, "partial", False)]
    logged = [e for e in read_events(s.transcript_path)
              if not isinstance(e, ev.TextDelta) and not getattr(e, "partial", False)]
    assert whole == logged[: len(whole)]  # every event once, in the transcript's order


async def test_resume_of_a_new_transcript_carries_the_conversation_and_notes(api, workspace):
    mgr = make_mgr(api)
    s, sub = await a_session_with_a_tool_and_a_follow_up(mgr, api, workspace)
    sub.close()
    await mgr.aclose()
    api.script(Reply("Yes, 8080."))
    mgr2 = make_mgr(api)
    r = await mgr2.resume(s.transcript_path)
    assert await mgr2.wait_idle(timeout=30)
    await mgr2.send(r.id, "once more")
    await asyncio.sleep(0)
    assert await mgr2.wait_idle(timeout=30)
    sent = api.message_requests[-1]["messages"]
    assert [m["role"] for m in sent] == ["user", "assistant", "user", "assistant", "user", "assistant", "user"]
    told = fold(read_events(r.transcript_path))
    assert told.resumed_from == str(s.transcript_path) and told.final_text == "Yes, 8080."
    assert told.conversation()[:-2] == fold(read_events(s.transcript_path)).conversation()
    await mgr2.aclose()


def test_the_recorder_redacts_what_it_writes_and_publishes(tmp_path):
    key = "sk-ant-secret-0123456789abcdef"
    published: list[ev.Event] = []
    rec = Recorder(tmp_path / "t.jsonl", published.append, lambda s: s.replace(key, "***"))
    rec.emit(ev.SessionSpawned("s", f"task {key}", "m", "/w", str(tmp_path / "t.jsonl"), True))
    rec.start()
    rec.emit(ev.ToolResult("s", "t1", "bash", f"KEY={key}", False))
    rec.emit(ev.ConversationMessage("s", "user", [{"type": "text", "text": key}]))
    rec.emit(ev.TextDelta("s", "a"))
    rec.emit(ev.TextDelta("s", "b"))
    rec.close()
    rec.emit(ev.Reviewed("s", "keep", True, "kept"))  # after the end: appended
    raw = (tmp_path / "t.jsonl").read_text()
    assert key not in raw and key not in repr(published) and "***" in raw
    written = read_events(tmp_path / "t.jsonl")
    assert [type(e).__name__ for e in written] == ["SessionSpawned", "ToolResult", "ConversationMessage", "TextDelta",
                                                   "Reviewed"]
    assert written[3].text == "ab" and all(json.loads(line)["ts"] for line in raw.splitlines())


# -- old transcripts -----------------------------------------------------------------------------
def test_an_old_transcript_reads_as_events_through_the_migration(tmp_path, workspace):
    path = old_copy(tmp_path, workspace)
    warnings: list[str] = []
    events = read_events(path, warnings)
    assert warnings == [] and isinstance(events[0], ev.SessionSpawned)
    h = fold(events)
    assert h.task == "which port does staging use?" and h.model == "test-model" and h.workspace == str(workspace)
    assert [b.kind for b in h.blocks] == ["text", "tool", "text", "user", "text"]
    assert h.blocks[1].result == "Staging runs on port 8080.\n" and h.blocks[3].text == "sure?"
    assert h.ended.status is S.DONE and h.final_text == "Still 8080." and h.requests == 3
    assert h.usage.total == sum(json.loads(line)["usage"]["output"] + json.loads(line)["usage"]["cache_write"]
                                + json.loads(line)["usage"]["cache_read"]
                                for line in OLD.read_text().splitlines() if '"type": "usage"' in line)
    assert [m["role"] for m in h.conversation()] == ["user", "assistant", "user", "assistant", "user", "assistant"]
    assert h.started is not None and h.started.version == 2 and "system_prompt" not in h.started.extra
    text = render_transcript(events)
    for piece in ["which port does staging use?", "Let me look.", "⚙ tool call bash", "Staging runs on port 8080.",
                  "sure?", "Still 8080.", "end: done", "usage (request 3)"]:
        assert piece in text, piece
    [info] = list_transcripts(path.parent)
    assert info.status == "done" and info.final_text == "Still 8080." and info.session_id == h.session_id


async def test_an_old_transcript_resumes_and_shows_in_a_resumed_pane(api, tmp_path, workspace):
    path = old_copy(tmp_path, workspace)
    api.script(Reply("8080, as before."))
    mgr = make_mgr(api)
    sub = mgr.subscribe()
    r = await mgr.resume(path)
    assert await mgr.wait_idle(timeout=30)
    await mgr.send(r.id, "and now?")
    await asyncio.sleep(0)
    assert await mgr.wait_idle(timeout=30)
    sent = api.message_requests[-1]["messages"]
    assert sent[1]["content"][0]["text"] == "Let me look." and sent[-1]["content"][-1]["text"] == "and now?"
    assert r.final_text == "8080, as before."
    await mgr.aclose()
    sub.close()
    view = SessionView(r.id)
    for e in [e async for e in sub if e.session_id == r.id]:
        view.apply(e)
    view.add_history(fold(read_events(path)).earlier_blocks(), "(resumed)")
    assert [b.kind for b in view.blocks] == ["user", "text", "tool", "text", "user", "text", "note", "user", "text"]
    assert view.blocks[0].text == "which port does staging use?" and view.blocks[-1].text == "8080, as before."


def test_a_damaged_old_record_is_skipped_with_a_warning(tmp_path, workspace):
    path = old_copy(tmp_path, workspace)
    lines = path.read_text().splitlines()
    lines.insert(2, json.dumps({"type": "status", "ts": "t", "status": "dancing"}))
    path.write_text("\n".join(lines) + "\n")
    warnings: list[str] = []
    h = fold(read_events(path, warnings))
    assert len(warnings) == 1 and "line 3 skipped" in warnings[0] and "dancing" in warnings[0]
    assert h.ended.status is S.DONE


def test_a_call_whose_end_the_session_never_saw_is_not_shown_running_once_it_ended():
    """A server killed while a command ran: the interrupted pane showed `$ sleep 1000 …` as if it
    still ran. At the session's end an open call says it got no result; a call that got its
    result keeps it."""
    sid = "s1"
    h = fold([ev.ToolCall(sid, "t1", "bash", {"command": "ls"}), ev.ToolResult(sid, "t1", "bash", "a.txt", False),
              ev.ToolCall(sid, "t2", "bash", {"command": "sleep 1000"}),
              ev.SessionDone(sid, S.INTERRUPTED, reason="the server stopped while it ran")])
    assert [(b.input["command"], b.result) for b in h.blocks if b.kind == "tool"] == [
        ("ls", "a.txt"), ("sleep 1000", "(no result: the session ended interrupted)")]


def test_the_snapshot_joins_streamed_text_between_the_other_events_whenever_it_is_read():
    """The server's log joins a session's consecutive deltas (one event per run of text, for a
    late-attaching client) — now when read, not delta by delta (a long answer cost its length
    squared: 19 CPU-s for 800 kB in 200,000 deltas)."""
    from cockpit.runtime import SessionManager

    mgr = SessionManager(None)

    def log(*events: ev.Event) -> list[tuple[str, str]]:
        for e in events:
            mgr._log(e)
        return [(type(e).__name__, getattr(e, "text", "")) for e in mgr.snapshot()]

    assert log(ev.TextDelta("s", "a"), ev.TextDelta("s", "b"), ev.TextDelta("t", "other session")) == [
        ("TextDelta", "ab"), ("TextDelta", "other session")]
    assert log(ev.TextDelta("s", "c"), ev.ToolCall("s", "t1", "bash", {}), ev.TextDelta("s", "d"),
               ev.TextDelta("s", "e")) == [("TextDelta", "abc"), ("ToolCall", ""), ("TextDelta", "de"),
                                           ("TextDelta", "other session")]
