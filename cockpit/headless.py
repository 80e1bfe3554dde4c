"""``cockpit run "task" ["task" …]``: sessions without a UI, one report.

Runs every task concurrently through the same :class:`~cockpit.runtime.SessionManager` the TUI
uses (non-interactive: a session ends ``done`` at its ``end_turn``), then prints one report: per
session the injected notes (name, ★, score), the final answer, status, tokens, cost (USD or
"n/a"), transcript path; then totals. ``--json`` prints the same as one JSON object::

    {"sessions": [{"id", "task", "model", "workspace", "status", "stop_reason", "answer",
                   "error": {"kind", "message"} | null, "preseed", "injected": [{"name",
                   "priority", "score"}], "preseed_tokens", "usage": {"input", "output",
                   "cache_write", "cache_read", "total"}, "cost_usd", "requests", "transcript"}],
     "totals": {"usage": {…}, "cost_usd"}, "pricing": {"source", "date"}}

Exit code: 0 when every session ended ``done``; 1 when any ended in ``error`` (report still
printed; an auth/connection failure is also named in one ``cockpit: error:`` line); 2 for
usage errors (missing API key, missing notes folder, bad config) — one line, no traceback.

Configuration precedence: flags > ``ANTHROPIC_API_KEY``/``ANTHROPIC_BASE_URL``/``COCKPIT_*`` >
``config.toml`` > defaults (see :mod:`cockpit.runtime.config`). Notes folder: ``--notes`` or
``./notes`` (when neither exists, sessions run without memory: no preseed, memory tools error).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path

from cockpit.cli import CockpitError


def add_parser(sub) -> None:
    p = sub.add_parser("run", help="run sessions headless and print one report",
                       description="Run one session per task concurrently, no UI; print one report.")
    p.add_argument("tasks", nargs="+", metavar="TASK", help="task text (one session each)")
    p.add_argument("--notes", type=Path, default=None, help="notes folder (default ./notes)")
    p.add_argument("--index", type=Path, default=None, help="memory index file (default per-user cache)")
    p.add_argument("--workspace", type=Path, default=None, help="folder the read-only tools see (default .)")
    p.add_argument("--model", default=None, help="model id (free text; default COCKPIT_MODEL / config / claude-sonnet-5-5)")
    p.add_argument("--base-url", default=None, help="Messages API base URL (default ANTHROPIC_BASE_URL / Anthropic)")
    p.add_argument("--top-k", type=int, default=None,
                   help="at most N notes in the preseed block (default: as many as its 600-token "
                        "budget holds, up to 12)")
    p.add_argument("--selector", choices=("embedded", "model"), default=None,
                   help="who picks the notes: the engine's ranking and gate (default) or a small "
                        "model over its shortlist (config: [preseed] selector)")
    p.add_argument("--no-preseed", action="store_true",
                   help="no preseed; the system prompt tells the model to call memory_search first")
    p.add_argument("--max-turns", type=int, default=None, help="model turns per session (default 25)")
    p.add_argument("--max-tokens", type=int, default=None, help="output tokens per response (default 4096)")
    p.add_argument("--concurrency", type=int, default=None, help="sessions at once (default 9)")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.set_defaults(func=run)


def _open_engine(args):
    from memory import MemoryEngine

    notes = args.notes
    if notes is not None and not notes.is_dir():
        raise CockpitError(f"notes folder not found: {notes}")
    if notes is None:
        notes = Path("notes")
        if not notes.is_dir():
            print("cockpit: warning: no ./notes folder (use --notes DIR): sessions start without "
                  "project notes and memory tools", file=sys.stderr)
            return None
    try:
        engine = MemoryEngine(notes, index_path=args.index)
        engine.start_warmup()
        report = engine.sync()
    except Exception as exc:  # engine errors are user-facing here (bad index, unreadable folder)
        raise CockpitError(f"memory engine: {exc}") from None
    for path, reason in getattr(report, "skipped", []) or []:
        print(f"cockpit: warning: skipped note {path}: {reason}", file=sys.stderr)
    return engine


def run(args: argparse.Namespace) -> int:
    from cockpit.runtime import ConfigError, PricingError, load_config, load_pricing

    if args.workspace is not None and not args.workspace.is_dir():
        raise CockpitError(f"workspace folder not found: {args.workspace}")
    for name in ("top_k", "max_turns", "max_tokens", "concurrency"):
        v = getattr(args, name)
        if v is not None and v < 1:
            raise CockpitError(f"--{name.replace('_', '-')} must be at least 1")
    try:
        cfg = load_config(
            {
                "base_url": args.base_url,
                "model": args.model,
                "top_k": args.top_k,
                "selector": args.selector,
                "max_turns": args.max_turns,
                "max_tokens": args.max_tokens,
                "concurrency": args.concurrency,
                "preseed": False if args.no_preseed else None,
                "interactive": False,
            }
        )
        pricing = load_pricing(cfg.pricing_path)
    except (ConfigError, PricingError) as exc:
        raise CockpitError(str(exc)) from None
    if not cfg.api_key:
        raise CockpitError("ANTHROPIC_API_KEY is not set (any value works for a local server that ignores it)")
    engine = _open_engine(args)
    try:
        report = asyncio.run(_run(args.tasks, cfg, pricing, engine, args.workspace))
    finally:
        if engine is not None:
            try:
                engine.close()
            except Exception:
                pass
    if args.json:
        print(json.dumps(report, indent=2, ensure_ascii=False))
    else:
        print(format_report(report))
    errors = [s for s in report["sessions"] if s["status"] != "done"]
    if errors:
        fatal = [s["error"] for s in errors if s["error"] and s["error"]["kind"] in ("auth", "connection")]
        if fatal:
            raise CockpitError(fatal[0]["message"], code=1)
        return 1
    return 0


async def _run(tasks, cfg, pricing, engine, workspace) -> dict:
    from cockpit.runtime import SessionManager

    mgr = SessionManager(engine, cfg, pricing=pricing)
    try:
        sessions = [await mgr.spawn(t, workspace=workspace) for t in tasks]
        await mgr.wait_idle()
    finally:
        await mgr.aclose()
    usage, cost = mgr.totals()
    return {
        "sessions": [s.to_dict() for s in sessions],
        "totals": {"usage": {**usage.__dict__, "total": usage.total},
                   "cost_usd": None if cost is None else round(cost, 6)},
        "pricing": {"source": pricing.source, "date": pricing.date, "override": pricing.overridden_by},
    }


def _cost(c) -> str:
    return "n/a" if c is None else f"${c:.4f}"


def format_report(report: dict) -> str:
    out = []
    for s in report["sessions"]:
        u = s["usage"]
        out.append(f"── session {s['id']} · {s['status']} · {s['model']}")
        out.append(f"task: {s['task']}")
        if s["preseed"]:
            notes = ", ".join(f"{'★ ' if n['priority'] else ''}{n['name']} ({n['score']:.2f})" for n in s["injected"])
            out.append(f"preseed: {notes or '(no note qualified)'} · {s['preseed_tokens']} tokens")
        else:
            out.append("preseed: off")
        if s["error"]:
            out.append(f"error ({s['error']['kind']}): {s['error']['message']}")
        out.append("answer:")
        out.extend("  " + line for line in (s["answer"] or "(none)").splitlines())
        out.append(
            f"tokens: in {u['input']} · out {u['output']} · cache write {u['cache_write']} · "
            f"cache read {u['cache_read']} · cost {_cost(s['cost_usd'])} · {s['requests']} requests"
        )
        out.append(f"transcript: {s['transcript']}")
        out.append("")
    t = report["totals"]
    tu = t["usage"]
    out.append(
        f"total: {len(report['sessions'])} sessions · in {tu['input']} · out {tu['output']} · "
        f"cache write {tu['cache_write']} · cache read {tu['cache_read']} · cost {_cost(t['cost_usd'])}"
    )
    out.append(f"prices: {report['pricing']['date']} (see cockpit/runtime/pricing.json)")
    return "\n".join(out)
