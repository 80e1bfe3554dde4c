"""Session runtime: the agent loop, manager, tools, pricing, transcripts, config.

No Textual import here (checked by tests/test_layering.py). Public API::

    from cockpit.runtime import SessionManager, RuntimeConfig, load_config
    mgr = SessionManager(engine, RuntimeConfig(api_key=..., base_url=...))
    session = await mgr.spawn(SpawnSpec(task, workspace=None, model=None, preseed=None, top_k=None,
                                        permission_mode=None, worktree=None, tools=None))  # runtime/spawn.py
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

from typing import Any

# Lazy (PEP 562): ``import cockpit.runtime.config`` (or any one module) must not pull in the
# session loop, the tools and the SDK with it — clients such as the Claude Code hook and the TUI
# before its first frame import only what they use.
_EXPORTS = {
    "ConfigError": "cockpit.runtime.config", "RuntimeConfig": "cockpit.runtime.config",
    "load_config": "cockpit.runtime.config", "sessions_dir": "cockpit.runtime.config",
    "SessionClosed": "cockpit.runtime.manager", "SessionManager": "cockpit.runtime.manager",
    "Subscription": "cockpit.runtime.manager",
    "ModelPrice": "cockpit.runtime.pricing", "PricingError": "cockpit.runtime.pricing",
    "PricingTable": "cockpit.runtime.pricing", "load_pricing": "cockpit.runtime.pricing",
    "Session": "cockpit.runtime.session",
    "TranscriptInfo": "cockpit.runtime.transcript", "list_transcripts": "cockpit.runtime.transcript",
    "load_messages": "cockpit.runtime.transcript", "read_transcript": "cockpit.runtime.transcript",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'cockpit.runtime' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
