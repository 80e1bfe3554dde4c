"""Session runtime: the agent loop, manager, tools, pricing, transcripts, config.

No Textual import here (checked by tests/test_layering.py). Public API::

    from cockpit.runtime import SessionManager, RuntimeConfig, load_config
    mgr = SessionManager(engine, RuntimeConfig(api_key=..., base_url=...))
    session = await mgr.spawn(task, workspace=None, model=None, preseed=True, top_k=5, interactive=None)
    await mgr.send(session.id, "follow-up"); await mgr.kill(session.id)
    async for event in mgr.subscribe(): ...     # cockpit.events.*
    usage, cost_usd = mgr.totals()
    await mgr.resume(transcript_path); await mgr.wait_idle(); await mgr.aclose()

See :mod:`cockpit.runtime.session` (states, retries), :mod:`cockpit.runtime.manager`
(events, concurrency), :mod:`cockpit.runtime.transcript` (JSONL format),
:mod:`cockpit.runtime.pricing` (price table, source and date), :mod:`cockpit.runtime.config`
(precedence).
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
