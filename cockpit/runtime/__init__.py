"""Session runtime: the agent loop, manager, tools, pricing, transcripts, config.

No Textual import here (checked by tests/test_layering.py). Public API::

    from cockpit.runtime import SessionManager, RuntimeConfig, load_config
    mgr = SessionManager(engine, RuntimeConfig(api_key=..., base_url=...))
    session = await mgr.spawn(task, workspace=None, model=None, preseed=True, top_k=5, interactive=None,
                              permission_mode=None, worktree=None, tools=None)
    await mgr.send(session.id, "follow-up"); await mgr.kill(session.id)
    await mgr.answer(session.id, None, allow=True, scope="once")   # the pending approval
    diff = await mgr.diff(session.id); await mgr.review(session.id, "merge")   # | "keep" | "discard"
    async for event in mgr.subscribe(): ...     # cockpit.events.*
    usage, cost_usd = mgr.totals()
    await mgr.resume(transcript_path); await mgr.continue_fresh(session.id)
    await mgr.wait_idle(); await mgr.aclose()

See :mod:`cockpit.runtime.session` (states, the tool loop), :mod:`cockpit.runtime.model_call`
(streaming, retries, usage, context), :mod:`cockpit.runtime.manager` (events, concurrency),
:mod:`cockpit.runtime.tools` / ``bash`` / ``editor`` / ``workspace`` (the model's tools and their
confinement), :mod:`cockpit.runtime.permissions` (modes, rules), :mod:`cockpit.runtime.worktree`
(a git worktree per session, diff, merge), :mod:`cockpit.runtime.transcript` (JSONL format),
:mod:`cockpit.runtime.pricing` (price table, source and date), :mod:`cockpit.runtime.config`
(precedence), :mod:`cockpit.runtime.protocols` (the typed seams).
"""

from cockpit.runtime.config import ConfigError, RuntimeConfig, load_config, sessions_dir
from cockpit.runtime.manager import SessionClosed, SessionManager, Subscription
from cockpit.runtime.pricing import ModelPrice, PricingError, PricingTable, load_pricing
from cockpit.runtime.session import Session
from cockpit.runtime.transcript import TranscriptInfo, list_transcripts, load_messages, read_transcript

__all__ = [
    "ConfigError", "RuntimeConfig", "load_config", "sessions_dir",
    "SessionClosed", "SessionManager", "Subscription",
    "ModelPrice", "PricingError", "PricingTable", "load_pricing",
    "Session", "TranscriptInfo", "list_transcripts", "load_messages", "read_transcript",
]
