"""``cockpit run "task" ["task" …]``: sessions without a UI, one report.

Runs every task concurrently through the same :class:`~cockpit.runtime.SessionManager` the TUI
uses (non-interactive: a session ends ``done`` at its ``end_turn``; an approval nobody can answer
is denied and the model told why — pick ``--permission-mode acceptEdits``/``bypassPermissions``
or allow rules for unattended coding), then prints one report: per session the injected notes
(name, ★, score), the final answer, status, tokens, cost (USD or "n/a"), the worktree (path,
branch, base commit) and its diff stat, transcript path; then totals. A session that changed
files keeps its worktree and branch for review (``cockpit worktrees``); one that changed nothing
leaves none. Each session's row is its events folded (:func:`cockpit.runtime.report.session_row`):
its transcript, folded, gives the same report. ``--json`` prints the same as one JSON object::

    {"sessions": [{"id", "task", "model", "backend", "workspace", "cwd", "placement",
                   "worktree": {"path", "branch", "base_commit", "base_branch"} | null,
                   "diff": {"files", "added", "removed"} | null, "permission_mode", "interactive", "status",
                   "stop_reason", "answer", "error": {"kind", "message"} | null, "preseed",
                   "preseed_error", "injected": [{"name", "priority", "score"}], "preseed_tokens",
                   "usage": {"input", "output", "cache_write", "cache_read", "total"}, "cost_usd",
                   "cost_source": "pricing" | "claude-code" | "acp:NAME", "requests" (model responses;
                   an ACP agent's prompt turns: it reports no model calls), "denied": [ask summary],
                   "budget": {"usd", "tokens", "reached": {"scope", "caps"} | null}, "sandbox", "sandbox_note",
                   "transcript", "reviewed": {"action", "ok", "message"} | null,
                   "claude_session_id" (claude-code sessions only)}],
     "totals": {"usage": {…}, "cost_usd", "unpriced_sessions"}, "pricing": {"source", "date"}}

Tasks come from the arguments, from ``--task-file FILE`` (one task per file; ``-`` reads stdin)
or both. An empty task is a usage error; bytes that are not UTF-8 are replaced (with a warning).
``--model`` once sets every session's model; given once per task it sets each one's, in order.

``--backend claude-code`` runs each task in Claude Code (the ``claude-code`` extra) instead of
Cockpit's own loop: same preseed, worktrees, permission modes and report; the cost is Claude
Code's own ``total_cost_usd`` (``cost_source: "claude-code"``); no API key is needed when Claude
Code is logged in itself.

Spend caps: ``--max-budget-usd X`` / ``--max-budget-tokens N`` cap each session (see
:mod:`cockpit.runtime.budget`); nobody can raise a cap here, so a session that reaches one (or
the server's) ends ``error`` with kind ``budget`` and the report says "budget reached".

Exit code: 0 when every session ended ``done``; 1 when any ended in ``error`` (report still
printed; an auth/connection failure is also named in one ``cockpit: error:`` line); 2 for
usage errors (missing API key, missing notes folder, bad config, empty task, unwritable
transcripts folder, the claude-code backend without its extra) — one line, no traceback;
:data:`EXIT_BUDGET` (4) when a session stopped at a spend cap and none failed otherwise.

Configuration precedence: flags > ``ANTHROPIC_API_KEY``/``ANTHROPIC_BASE_URL``/``COCKPIT_*`` >
``config.toml`` > defaults (see :mod:`cockpit.runtime.config`). Notes folder: ``--notes`` (``auto``:
Claude Code's memory folder for the working folder, see :mod:`cockpit.notes_location`) or
``./notes`` (when neither exists, sessions run without memory: no preseed, memory tools error).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from cockpit.errors import CockpitError
from cockpit.textsafe import clean, clean_tree, one_line

if TYPE_CHECKING:  # pragma: no cover
    from cockpit.runtime.spawn import SpawnSpec

EXIT_BUDGET = 4
"""``cockpit run``'s exit code when a session stopped at a spend cap (``--max-budget-usd``,
``--max-budget-tokens``, the server's budget) and no session failed otherwise (that is 1)."""


def _say_where_sessions_work(workspace: Path) -> None:
    """Once at start: a folder where no worktree can be made (:func:`~cockpit.runtime.worktree.find_repo`:
    not a repository, or one with no commit yet), where the sessions work in place, in the user's
    own files — said before they start, not only in the report; else changes the checkout has not
    committed, which a session's worktree (made from HEAD) does not have, as the session would not
    see them."""
    import subprocess

    from cockpit.runtime import worktree as wt

    if wt.find_repo(workspace) is None and not wt.is_bare(workspace):
        what, how = (("a git repository with no commit yet", "make a first commit") if wt.is_repository(workspace)
                     else ("not a git repository", "git init and a first commit"))
        print(f"cockpit: warning: {workspace} is {what}: the sessions work in place, in your files (no worktree "
              f"to diff, merge or discard); {how} give each session its own worktree", file=sys.stderr)
        return
    try:
        out = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=workspace,
                             capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        return
    changed = [line for line in out.splitlines() if line.strip()]
    if changed:
        print(f"cockpit: warning: {len(changed)} uncommitted change{'s' if len(changed) != 1 else ''} in "
              f"{workspace} {'are' if len(changed) != 1 else 'is'} not in the sessions' worktrees (made from HEAD): "
              "commit them first, or --no-worktree to work in the checkout", file=sys.stderr)


def _say_if_unconfined(backend: str, sandbox: bool) -> None:
    """Once at start: the sessions' commands will run unconfined (no sandbox here, or turned off)."""
    if backend != "cockpit":
        return
    if not sandbox:
        print("cockpit: commands run unconfined (--no-sandbox): they can touch anything you can", file=sys.stderr)
        return
    from cockpit.runtime.sandbox import detect

    found = detect()
    if found.backend is None:
        print(f"cockpit: commands run unconfined: {found.reason}", file=sys.stderr)


def add_parser(sub) -> None:
    p = sub.add_parser("run", help="run sessions headless and print one report",
                       description="Run one session per task concurrently, no UI; print one report.")
    p.add_argument("tasks", nargs="*", metavar="TASK", help="task text (one session each)")
    p.add_argument("--task-file", action="append", default=[], metavar="FILE",
                   help="read one task from FILE (- = stdin); may repeat")
    p.add_argument("--notes", type=Path, default=None,
                   help="notes folder, or 'auto' (Claude Code's memory folder for this project); default ./notes, "
                        "else notes/ at the root of the git work tree")
    p.add_argument("--index", type=Path, default=None, help="memory index file (default per-user cache)")
    p.add_argument("--workspace", type=Path, default=None,
                   help="project folder (default .); in a git repository each session gets its own worktree")
    p.add_argument("--model", action="append", default=None, metavar="ID",
                   help="model id (free text; default COCKPIT_MODEL / config / claude-sonnet-5-5); "
                        "once for all sessions or once per task")
    p.add_argument("--permission-mode", default=None,
                   choices=["default", "acceptEdits", "plan", "bypassPermissions", "auto"],
                   help="what sessions may do without asking (default: config / default); headless "
                        "asks are denied")
    p.add_argument("--tools", default=None, choices=["anthropic", "portable"],
                   help="Anthropic's client tool types (default) or plain JSON-schema equivalents "
                        "for local servers that reject them")
    p.add_argument("--backend", default=None, metavar="NAME",
                   help="the agent: cockpit, Cockpit's own loop (default: config / COCKPIT_BACKEND / cockpit); "
                        "claude-code, Claude Code (needs the claude-code extra); or acp:AGENT, any ACP agent "
                        "(acp:claude, acp:codex, acp:gemini, acp:opencode, acp:goose; `cockpit agents` lists them)")
    p.add_argument("--claude-setting-sources", default=None, metavar="LIST",
                   help="claude-code backend: which of the user's Claude Code settings to read, comma-separated "
                        "from user,project,local, or none (default: all, as Claude Code does)")
    p.add_argument("--no-worktree", action="store_true",
                   help="run in the workspace itself instead of a git worktree per session")
    p.add_argument("--no-sandbox", action="store_true",
                   help="run the sessions' commands unconfined, as you (default: in the OS sandbox)")
    p.add_argument("--network", default=None, choices=["off", "on", "allow"],
                   help="network inside the sandbox: off (default), on, or allow ([sandbox] allow_hosts only)")
    p.add_argument("--base-url", default=None, help="Messages API base URL (default ANTHROPIC_BASE_URL / Anthropic)")
    p.add_argument("--top-k", type=int, default=None,
                   help="at most N notes in the preseed block (default: as many as its 600-token "
                        "budget holds: lines, then names)")
    p.add_argument("--selector", choices=("embedded", "model"), default=None,
                   help="who picks the notes: the engine's ranking and gate (default) or a small "
                        "model over its shortlist (config: [preseed] selector)")
    p.add_argument("--no-preseed", action="store_true",
                   help="no preseed; the system prompt tells the model to call memory_search first")
    p.add_argument("--max-turns", type=int, default=None, help="model turns per session (default 25)")
    p.add_argument("--max-tokens", type=int, default=None, help="output tokens per response (default 4096)")
    p.add_argument("--concurrency", type=int, default=None, help="sessions at once (default 9)")
    p.add_argument("--max-budget-usd", type=float, default=None, metavar="USD",
                   help=f"spend cap per session in USD (default: config max_budget_usd / none); a session "
                        f"that reaches it ends ('budget reached', exit code {EXIT_BUDGET})")
    p.add_argument("--max-budget-tokens", type=int, default=None, metavar="N",
                   help="spend cap per session in tokens (input, output and cache; default: config "
                        "max_budget_tokens / none)")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.add_argument("--detach", action="store_true",
                   help="return at once with the session ids (they run on in the server: cockpit ls / attach)")
    p.add_argument("--no-server", action="store_true", default=argparse.SUPPRESS,
                   help="run the sessions in this process instead of the background server")
    from cockpit.host_cli import add_host_argument

    add_host_argument(p)
    p.set_defaults(func=run)


def _open_engine(args):
    from memory import MemoryEngine

    notes = _notes_folder(args)
    if notes is None:
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


def _clean(text: str, where: str) -> str:
    """Undecodable bytes (surrogate escapes from argv) become U+FFFD, with a warning."""
    try:
        cleaned = text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    except UnicodeEncodeError:
        cleaned = text.encode("utf-8", "replace").decode("utf-8", "replace")
    if cleaned != text:
        print(f"cockpit: warning: {where} is not valid UTF-8; undecodable bytes were replaced", file=sys.stderr)
    return cleaned


def collect_tasks(args: argparse.Namespace) -> list[str]:
    """The tasks of the command line and task files, cleaned. Raises CockpitError (exit 2)."""
    tasks = [_clean(t, f"task {i}") for i, t in enumerate(args.tasks, 1)]
    for name in args.task_file:
        try:
            raw = sys.stdin.buffer.read() if name == "-" else Path(name).read_bytes()
        except OSError as exc:
            raise CockpitError(f"cannot read task file {name}: {exc.strerror or exc}") from None
        text = raw.decode("utf-8", "replace")
        if "\ufffd" in text and b"\xef\xbf\xbd" not in raw:
            print(f"cockpit: warning: task file {name} is not valid UTF-8; undecodable bytes were replaced",
                  file=sys.stderr)
        tasks.append(text.rstrip("\r\n"))  # the file's final newline is not part of the task
    if not tasks:
        raise CockpitError("no task given: pass task text, or --task-file FILE (- for stdin)")
    for i, t in enumerate(tasks, 1):
        if not t.strip():
            raise CockpitError(f"task {i} is empty")
    return tasks


def _models(args: argparse.Namespace, n: int) -> list[str | None]:
    models = args.model or []
    if len(models) <= 1:
        return [models[0] if models else None] * n
    if len(models) != n:
        raise CockpitError(f"--model was given {len(models)} times for {n} tasks: give it once, or once per task")
    return list(models)


def _check_writable(folder: Path) -> None:
    try:
        folder.mkdir(parents=True, exist_ok=True)
        probe = folder / f".write-test-{os.getpid()}"
        probe.write_text("")
        probe.unlink()
    except OSError as exc:
        raise CockpitError(f"cannot write session transcripts to {folder}: {exc.strerror or exc}") from None


def run(args: argparse.Namespace) -> int:
    from cockpit.host_cli import host_name
    from cockpit.runtime import ConfigError, PricingError, load_config, load_pricing
    from cockpit.runtime.config import parse_setting_sources

    host = host_name(args)  # another host: its paths are not this machine's to check
    if host and getattr(args, "no_server", False):
        raise CockpitError("--host runs the sessions in that host's server: drop --no-server")
    if not host and args.workspace is not None and not args.workspace.is_dir():
        raise CockpitError(f"workspace {args.workspace} is not a folder" if args.workspace.exists()
                           else f"workspace folder not found: {args.workspace}")
    specs = spawn_specs(args, collect_tasks(args))
    for name in ("max_turns", "max_tokens", "concurrency"):
        v = getattr(args, name)
        if v is not None and v < 1:
            raise CockpitError(f"--{name.replace('_', '-')} must be at least 1")
    try:
        cfg = load_config(
            {
                "base_url": args.base_url,
                "selector": args.selector,
                "max_turns": args.max_turns,
                "max_tokens": args.max_tokens,
                "concurrency": args.concurrency,
                "interactive": False,
                "claude_setting_sources": None if args.claude_setting_sources is None
                else parse_setting_sources(args.claude_setting_sources),
            }
        )
        pricing = load_pricing(cfg.pricing_path)
    except (ConfigError, PricingError) as exc:
        raise CockpitError(str(exc)) from None
    from cockpit.runtime import backends

    backend = specs[0].backend or cfg.backend
    try:
        spec = backends.resolve(backend, cfg)
    except ValueError as exc:  # an unknown backend or ACP agent: one line, as the app's --backend says
        raise CockpitError(str(exc)) from None
    why = None if host else spec.unavailable(cfg)  # (that host's server says what it cannot run)
    if why:
        raise CockpitError(why)
    _say_if_a_usd_cap_cannot_hold(backend, specs, cfg, pricing)
    # (Claude Code may use its own login; api_key_helper gives the key where the session runs)
    if not cfg.api_key and not cfg.api_key_helper and spec.needs_api_key and _sends_keys(host):
        raise CockpitError("ANTHROPIC_API_KEY is not set (any value works for a local server that ignores it; "
                           "or api_key_helper in config.toml)")
    if host:
        report = _run_on_host(args, specs, cfg, pricing)
        return _print_report(args, report)
    _check_writable(cfg.resolved_sessions_dir())
    _say_if_unconfined(backend, cfg.sandbox if specs[0].sandbox is None else specs[0].sandbox)
    if (cfg.worktrees if specs[0].worktree is None else specs[0].worktree):
        _say_where_sessions_work(Path(specs[0].workspace or os.getcwd()))
    if not (getattr(args, "no_server", False) or os.environ.get("COCKPIT_NO_SERVER")):
        report = _run_remote(args, specs, cfg, pricing)
        return _print_report(args, report)
    if args.detach:
        raise CockpitError("--detach needs the server (drop --no-server)")
    if cfg.api_key or cfg.auth_token:  # this process runs the shells: the key out of their reach
        from cockpit.runtime import keyguard

        keyguard.guard_process()
    import asyncio

    engine = _open_engine(args)
    try:
        report = asyncio.run(_run(specs, cfg, pricing, engine))
    finally:
        if engine is not None:
            try:
                engine.close()
            except Exception:
                pass
    return _print_report(args, report)


def _print_report(args: argparse.Namespace, report: dict) -> int:
    if args.json:
        print(json.dumps(report, indent=2, ensure_ascii=False))
    elif args.detach:
        for s in clean_tree(report["sessions"]):  # what a server (a host's too) says never drives the terminal
            print(f"{s['id']}  {s['status']}  {one_line(s['task'])[:80]}")
        from cockpit.host_cli import hint, host_name

        host = host_name(args)
        on = hint(host)
        there = f"host {host}'s server" if host else "the server"
        print(f"running in {there}: cockpit ls{on} · "
              f"cockpit attach{on} ID · cockpit kill{on} ID")
    else:
        from cockpit.host_cli import host_name

        print(format_report(clean_tree(report), host_name(args)))
    if args.detach:
        return 0
    errors = [s for s in report["sessions"] if s["status"] != "done"]
    if errors:
        fatal = [s["error"] for s in errors if s["error"] and s["error"]["kind"] in ("auth", "connection")]
        if fatal:
            raise CockpitError(fatal[0]["message"], code=1)
        if all(_budget_reached(s) for s in errors):
            return EXIT_BUDGET
        return 1
    return 0


def _budget_reached(s: dict) -> bool:
    """The session stopped at a spend cap (``cockpit.runtime.budget``)."""
    return bool(s.get("error")) and s["error"].get("kind") == "budget"


async def _run(specs: list[SpawnSpec], cfg, pricing, engine) -> dict:
    from cockpit.runtime import SessionManager
    from cockpit.runtime import worktree as wt
    from cockpit.runtime.protocols import BatchRuntime

    mgr: BatchRuntime = SessionManager(engine, cfg, pricing=pricing)
    try:
        try:
            sessions = [await mgr.spawn(spec) for spec in specs]
        except (ValueError, wt.WorktreeError) as exc:
            raise CockpitError(str(exc)) from None
        await mgr.wait_idle()
        rows = [await mgr.describe(s.id) for s in sessions]  # each its folded events' row
    finally:
        await mgr.aclose()
    from cockpit.runtime.report import build_report

    return build_report(rows, pricing)


SPEC_FLAGS = {"top_k": "--top-k", "max_budget_usd": "--max-budget-usd", "max_budget_tokens": "--max-budget-tokens",
              "permission_mode": "--permission-mode", "tools": "--tools", "network": "--network",
              "backend": "--backend", "model": "--model", "workspace": "--workspace"}


def spawn_specs(args: argparse.Namespace, tasks: list[str]) -> list[SpawnSpec]:
    """One :class:`SpawnSpec` per task from the flags. Raises CockpitError (exit 2) naming the
    flag of a bad value: "--top-k must be an integer ≥ 1, got 0"."""
    from cockpit.runtime.spawn import SpawnSpec, SpawnSpecError

    models = _models(args, len(tasks))
    try:
        return [SpawnSpec(task, workspace=str(args.workspace) if args.workspace is not None else None, model=model,
                          interactive=False, permission_mode=args.permission_mode, tools=args.tools,
                          worktree=False if args.no_worktree else None, sandbox=False if args.no_sandbox else None,
                          network=args.network, top_k=args.top_k, preseed=False if args.no_preseed else None,
                          backend=args.backend, max_budget_usd=args.max_budget_usd,
                          max_budget_tokens=args.max_budget_tokens)
                for task, model in zip(tasks, models, strict=True)]
    except SpawnSpecError as exc:
        flag = SPEC_FLAGS.get(exc.name)
        raise CockpitError(f"{flag} {exc.reason}" if flag else str(exc)) from None


def _say_if_a_usd_cap_cannot_hold(backend: str, specs: list[SpawnSpec], cfg, pricing) -> None:
    """A warning on stderr for each model of Cockpit's own loop given a USD cap and no price: its
    cost is n/a, so the cap never trips (a token cap does). Other backends report their own cost."""
    usd = specs[0].max_budget_usd if specs[0].max_budget_usd is not None else cfg.max_budget_usd
    if usd is None or backend != "cockpit":
        return
    for model in sorted({s.model or cfg.model for s in specs}):
        if pricing.lookup(model) is None:
            print(f"cockpit: warning: model {model} has no price (add it to a pricing.toml in the config folder): "
                  f"the USD cap of ${usd:g} cannot hold it — give --max-budget-tokens as well", file=sys.stderr)


def _notes_folder(args) -> Path | None:
    from cockpit.notes_location import resolve_notes

    notes = resolve_notes(args.notes, Path.cwd())  # (none: ./notes, else the git root's notes/)
    if args.notes is not None and not notes.is_dir():
        raise CockpitError(f"notes folder not found: {notes}")
    if not notes.is_dir():
        print(f"cockpit: warning: no notes folder at {notes} (use --notes DIR): sessions start without "
              "project notes and memory tools", file=sys.stderr)
        return None
    return notes


def _sends_keys(host: str | None) -> bool:
    """Whether this machine's keys go with the spawn: always to this machine's server; to a host
    unless its ``[hosts.NAME]`` says ``api_keys = "host"`` (it uses its own)."""
    if not host:
        return True
    from cockpit.host_cli import entry

    return entry(host).sends_keys


def _run_remote(args, specs: list[SpawnSpec], cfg, pricing) -> dict:
    """The sessions run in the background server (started when none runs)."""
    from cockpit.server.transport import UnixTransport

    notes = _notes_folder(args)
    index = str(args.index.resolve()) if args.index else None
    return _run_in_server(UnixTransport(start=True), specs, cfg, pricing, str(notes) if notes else None, index,
                          None, args.detach)


def _run_on_host(args, specs: list[SpawnSpec], cfg, pricing) -> dict:
    """The sessions run in the server of ``--host`` (through ssh; its bridge starts the server).
    ``--workspace``, ``--notes`` and ``--index`` name folders there; the host's ``workspace``
    and ``notes`` of ``[hosts.NAME]`` are the defaults."""
    from cockpit.host_cli import entry, host_name, transport

    host = entry(host_name(args) or "")
    notes = str(args.notes) if args.notes is not None else host.notes
    index = str(args.index) if args.index is not None else None
    workspace = str(args.workspace) if args.workspace is not None else host.workspace
    if not workspace:
        raise CockpitError(f"no workspace on host {host.name}: give --workspace (a folder there), or set "
                           f"workspace in [hosts.{host.name}]")
    for path in (notes, index, workspace, *(s.workspace for s in specs)):
        _check_host_path(path)
    return _run_in_server(transport(args), specs, cfg, pricing, notes, index, workspace, args.detach,
                          where=f" on host {host.name}", send_keys=host.sends_keys)


def _check_host_path(path) -> None:
    """A path on another host: ``~/…`` (its home, as its bridge says) or absolute there."""
    path = None if path is None else str(path)
    if path and not (path == "~" or path.startswith(("~/", "/"))):
        raise CockpitError(f"a path on another host must be absolute (or start with ~/): {path}")


def _run_in_server(transport, specs: list[SpawnSpec], cfg, pricing, notes: str | None, index: str | None,
                   workspace: str | None, detach: bool, where: str = "", send_keys: bool = True) -> dict:
    """The one spawning path of :func:`_run_remote` (this machine's server) and
    :func:`_run_on_host` (a host's, ``where`` = " on host NAME"): connect through ``transport``,
    index the notes, spawn ``specs`` through :class:`RemoteRuntime` (which names the paths as
    the server's side does), wait unless ``detach``."""
    import asyncio

    return asyncio.run(_remote(transport, specs, cfg, pricing, notes, index, workspace, detach, where, send_keys))


async def _remote(transport, specs: list[SpawnSpec], cfg, pricing, notes, index, workspace, detach,
                  where: str = "", send_keys: bool = True) -> dict:
    from cockpit.server.client import AsyncClient, RemoteError, ServerError
    from cockpit.server.remote import RemoteRuntime

    try:
        client = await AsyncClient.over(transport)
    except ServerError as exc:  # no server here / the host unreachable (exit 1: not a usage error)
        raise CockpitError(str(exc), code=1 if where else 2) from None
    rt = RemoteRuntime(client, cfg, notes, index, workspace, send_keys)
    try:
        await rt.client.call("hello", client="cockpit run")
        if rt.notes is not None:
            try:
                report = await rt.client.call("memory.index", notes=rt.notes, index=rt.index)
            except RemoteError as exc:
                raise CockpitError(f"memory engine{where}: {exc.message}") from None
            for path, reason in report.get("skipped", []):
                print(f"cockpit: warning: skipped note {path}: {reason}", file=sys.stderr)
        try:
            rows = [dict(vars(await rt.spawn(spec))) for spec in specs]
        except RemoteError as exc:
            raise CockpitError(exc.message) from None
        if not detach:
            rows = (await rt.client.call("wait", ids=[r["id"] for r in rows], until="final"))["sessions"]
    finally:
        await rt.aclose()
    from cockpit.runtime.report import build_report

    return build_report(rows, pricing)


def _n(count: int, word: str) -> str:
    """``1 request``, ``2 requests``."""
    return f"{count} {word}{'' if count == 1 else 's'}"


def _cost(c) -> str:
    return "n/a" if c is None else f"${c:.4f}"


def _source(s: dict) -> str:
    return " (Claude Code's own figure)" if s.get("cost_source") == "claude-code" else ""


def budget_hint(row: dict, on: str = "") -> str:
    """How to go on past the cap the session ``row`` stopped at (its ``budget.reached``): the
    server's with the flag of each limit that was reached (``--usd``, ``--tokens``), a session's
    by a rerun. ``on``: `` --host NAME`` when the sessions ran on a host."""
    reached = (row.get("budget") or {}).get("reached") or {}
    caps = reached.get("caps") or ["usd", "tokens"]  # (a report from an older Cockpit does not say)
    message = (row.get("error") or {}).get("message") or ""
    if reached.get("scope", "server" if message.startswith("server") else "session") == "server":
        return f"cockpit budget{on} --server {' / '.join(f'--{c} N' for c in caps)} raises it"
    flags = {"usd": "--max-budget-usd", "tokens": "--max-budget-tokens"}
    return f"rerun with a higher {' / '.join(flags[c] for c in caps if c in flags)}"


def format_report(report: dict, host: str | None = None) -> str:
    """The report as text; ``host``: the sessions ran on that host (its hints name it)."""
    from cockpit.host_cli import hint

    on = hint(host)
    out = []
    for s in report["sessions"]:
        u = s["usage"]
        status = "budget reached" if _budget_reached(s) else s["status"]
        out.append(f"── session {s['id']} · {status} · {s['model']} · {s['permission_mode']}"
                   + (f" · {s['backend']}" if s.get("backend", "cockpit") != "cockpit" else ""))
        task = one_line(s["task"])
        out.append(f"task: {task if len(task) < 300 else task[:299] + '…'}")
        if s.get("sandbox_note"):
            out.append(f"commands: {s['sandbox_note']}")
        w = s.get("worktree")
        if w and w.get("removed"):  # its branch went with it: name neither
            out.append("worktree: removed, with its branch (the session changed nothing;"
                       f" base {w['base_commit'][:10]})")
        elif w:
            d = s.get("diff") or {}
            files = d.get("files", 0)
            out.append(f"worktree: {w['path']} · branch {w['branch']} · base {w['base_commit'][:10]}"
                       f" · {files} file{'' if files == 1 else 's'} +{d.get('added', 0)} -{d.get('removed', 0)}")
        else:
            out.append(f"where: {s['cwd']} ({s['placement']})")
        if w and not w.get("removed") and not s.get("reviewed"):  # what to do with the change
            out.append(f"next: cockpit worktrees diff{on} {s['id']} · then merge, keep or discard it"
                       f" (cockpit worktrees merge{on} {s['id']}; or in the app: d)")
        if s["preseed"]:
            given = [n for n in s["injected"] if n.get("kind", "line") == "line"]
            listed = [n["name"] for n in s["injected"] if n.get("kind", "line") != "line"]
            notes = ", ".join(f"{'★ ' if n['priority'] else ''}{n['name']} ({n['score']:.2f})" for n in given)
            if listed:  # named in the block's "may be relevant" index only: not given
                notes = ", ".join(filter(None, [notes, f"listed: {', '.join(listed)}"]))
            if s.get("preseed_error"):
                out.append(f"preseed: FAILED ({s['preseed_error']}) · the session ran without notes")
            else:
                out.append(f"preseed: {notes or '(no note qualified)'} · {s['preseed_tokens']} tokens")
        else:
            out.append("preseed: off")
        if _budget_reached(s):
            out.append(f"{s['error']['message']} — {budget_hint(s, on)}")
        elif s["error"]:
            out.append(f"error ({s['error']['kind']}): {s['error']['message']}")
        denied = s.get("denied") or []
        if denied:
            out.append(f"denied: {_n(len(denied), 'ask')} nobody could answer ({'; '.join(denied)[:200]})"
                       " — each denial told the model what would run it: another --permission-mode, an allow"
                       " rule in [permissions], or (a protected path, a command no rule can name: they ask in"
                       " every mode) the app, where you answer asks")
        out.append("answer:")
        out.extend("  " + line for line in (s["answer"] or "(none)").splitlines())
        out.append(
            f"tokens: in {u['input']} · out {u['output']} · cache write {u['cache_write']} · "
            f"cache read {u['cache_read']} · cost {_cost(s['cost_usd'])}{_source(s)} · "
            # an ACP agent reports its prompt turns, not its model calls
            f"{_n(s['requests'], 'prompt turn' if str(s.get('backend', '')).startswith('acp:') else 'request')}"
        )
        if s.get("claude_session_id"):
            out.append(f"claude code session: {s['claude_session_id']}")
        out.append(f"transcript: {s['transcript']}")
        out.append("")
    t = report["totals"]
    tu = t["usage"]
    out.append(
        f"total: {_n(len(report['sessions']), 'session')} · in {tu['input']} · out {tu['output']} · "
        f"cache write {tu['cache_write']} · cache read {tu['cache_read']} · cost {_cost(t['cost_usd'])}"
        + (f" (leaves out {_n(t['unpriced_sessions'], 'session')} with no price: cost n/a)"
           if t.get("unpriced_sessions") and t["cost_usd"] is not None else "")
    )
    p = report["pricing"]
    out.append(f"prices: {p['date']} (" + (f"from {p['override']})" if p.get("override") else
                                          "built in; a pricing.toml in the config folder overrides them)"))
    return clean("\n".join(out))  # the answer and note names are shown, their escape sequences are not
