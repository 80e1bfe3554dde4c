"""``cockpit memory index|search|preseed|lint|save|eval`` — the memory engine from the shell.

Every sub-command takes ``--notes DIR`` (default ``./notes``) and ``--index PATH`` (default:
per-user cache, see docs/ARCHITECTURE.md). search, preseed, lint and eval sync the index first
(incremental: cheap when nothing changed), so they never answer from a stale index — except
that search and preseed skip that folder walk while a watcher (the app) keeps the index in step
(``MemoryEngine.kept_in_step``). User errors raise :class:`cockpit.cli.CockpitError` (one line,
non-zero exit).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from cockpit.cli import CockpitError

PROGRESS_MIN_TEXTS = 200


def add_parser(sub) -> None:
    p = sub.add_parser("memory", help="index, search, preseed, lint, save, eval the project notes",
                       description="The memory engine: project notes → index → preseed block.")
    msub = p.add_subparsers(dest="memory_command", metavar="{index,search,preseed,lint,save,eval}")
    p.set_defaults(func=lambda args: _usage(p))

    def common(sp):
        sp.add_argument("--notes", default="notes", metavar="DIR",
                        help="notes folder (default: ./notes)")
        sp.add_argument("--index", default=None, metavar="PATH",
                        help="index file (default: $COCKPIT_INDEX or the per-user cache)")
        return sp

    sp = common(msub.add_parser("index", help="sync the index with the notes folder"))
    sp.add_argument("--json", action="store_true", help="print the sync report as JSON")
    sp.add_argument("--rebuild", action="store_true",
                    help="delete the index file and build it anew (e.g. after changing COCKPIT_EMBED_MODEL "
                         "for an explicit --index); do not use while another process uses it")
    sp.set_defaults(func=cmd_index)

    for name, helptext, func in (("search", "hybrid search, no relevance floor (order: fused vector + keyword ranks, ★ lifted; cos: cosine)", cmd_search),
                                 ("preseed", "print exactly the block a session would get", cmd_preseed)):
        sp = common(msub.add_parser(name, help=helptext))
        sp.add_argument("query")
        sp.add_argument("--top-k", type=int, default=5, metavar="N")
        sp.add_argument("--json", action="store_true")
        sp.set_defaults(func=func)

    sp = common(msub.add_parser("lint", help="advice on notes to fix (never edits)"))
    sp.add_argument("--json", action="store_true")
    sp.set_defaults(func=cmd_lint)

    sp = common(msub.add_parser("save", help="write a new note (body from stdin) and index it"))
    sp.add_argument("--name", required=True)
    sp.add_argument("--description", required=True)
    sp.add_argument("--priority", action="store_true", help="mark it priority: high (★)")
    sp.set_defaults(func=cmd_save)

    sp = common(msub.add_parser("eval", help="recall@k / false-inject rate against gold queries"))
    sp.add_argument("queries", metavar="QUERIES.jsonl")
    sp.add_argument("--top-k", type=int, default=5, metavar="N")
    sp.add_argument("--json", action="store_true")
    sp.set_defaults(func=cmd_eval)


def _usage(p) -> int:
    p.print_help(sys.stderr)
    return 2


# ---------------------------------------------------------------------------- helpers

def _engine(args, must_exist: bool = True, warm: bool = True):
    from memory import IndexOpenError, MemoryEngine

    notes = Path(args.notes).expanduser()
    if must_exist and not notes.is_dir():
        what = "is not a folder" if notes.exists() else "does not exist"
        raise CockpitError(f"notes folder {notes} {what} (use --notes DIR)")
    if getattr(args, "top_k", None) is not None and args.top_k < 1:
        raise CockpitError("--top-k must be at least 1")
    try:
        engine = MemoryEngine(notes, index_path=args.index)
    except IndexOpenError as exc:
        raise CockpitError(str(exc)) from None
    if warm:  # index waits for the model only when something needs embedding
        engine.start_warmup()
    return engine


class _Bar:
    """A progress bar on stderr, shown only on a tty or for long work."""

    def __init__(self):
        self.shown = False

    def __call__(self, done: int, total: int) -> None:
        if not (sys.stderr.isatty() or total > PROGRESS_MIN_TEXTS):
            return
        self.shown = True
        width = 30
        fill = int(width * done / max(total, 1))
        end = "\n" if done >= total else ""
        print(f"\rembedding [{'#' * fill}{'.' * (width - fill)}] {done}/{total}", end=end,
              file=sys.stderr, flush=True)


def _sync(engine, progress=None):
    from memory import IndexOpenError

    try:
        return engine.sync(progress=progress)
    except (FileNotFoundError, NotADirectoryError) as exc:
        raise CockpitError(str(exc)) from None
    except IndexOpenError as exc:
        raise CockpitError(str(exc)) from None
    except RuntimeError as exc:  # model failed to load
        raise CockpitError(str(exc)) from None
    except Exception as exc:  # an unreadable / corrupt index surfaces as a DB error
        if type(exc).__name__ in {"DatabaseError", "OperationalError"}:
            raise CockpitError(f"index {engine.index_path} unreadable: {exc}") from None
        raise


def _print_json(obj) -> None:
    print(json.dumps(obj, indent=2, ensure_ascii=False))


# ---------------------------------------------------------------------------- commands

def cmd_index(args) -> int:
    engine = _engine(args, warm=False)
    if args.rebuild:
        path = engine.index_path
        engine.close()
        for p in (path, Path(f"{path}-wal"), Path(f"{path}-shm")):
            p.unlink(missing_ok=True)
        engine = _engine(args, warm=False)
    rep = _sync(engine, _Bar())
    st = engine.status()
    if args.json:
        _print_json(rep.to_dict() | {"notes": st.notes, "binding": st.binding,
                                     "index": str(engine.index_path), "model": st.model})
        return 0
    print(f"indexed {engine.notes_dir}: {rep.added} added, {rep.updated} updated, "
          f"{rep.removed} removed, {rep.renamed} renamed, {rep.unchanged} unchanged, "
          f"{len(rep.skipped)} skipped ({rep.embedded} texts embedded, {rep.seconds:.2f} s)")
    for path, why in rep.skipped:
        print(f"  skipped {path}: {why}")
    for w in rep.warnings:
        print(f"  warning {w}")
    print(f"index {engine.index_path} ({st.notes} notes, model {st.model}, SQLite binding {st.binding})")
    return 0


def _answer(fn, *a, **kw):
    """``engine.search``/``build_preseed`` with the index errors as one-line user errors."""
    from memory import IndexOpenError

    try:
        return fn(*a, **kw)
    except IndexOpenError as exc:  # e.g. IndexModelError: the index holds another model
        raise CockpitError(str(exc)) from None


def _sync_unless_watched(engine) -> None:
    """The folder walk of ``sync`` unless a live watcher already keeps the index in step."""
    if not engine.kept_in_step():
        _sync(engine)


def cmd_search(args) -> int:
    engine = _engine(args)
    _sync_unless_watched(engine)
    hits = _answer(engine.search, args.query, top_k=args.top_k)
    if args.json:
        _print_json([h.to_dict() for h in hits])
        return 0
    if not hits:
        print("no matching notes")
    for i, h in enumerate(hits, 1):
        star = "★ " if h.priority else ""
        print(f"{i}. {star}[{h.name}] cos {h.score:.3f}  {h.description}")
        if h.snippet:
            print(f"     {h.snippet}")
    return 0


def cmd_preseed(args) -> int:
    engine = _engine(args)
    _sync_unless_watched(engine)
    pre = _answer(engine.build_preseed, args.query, top_k=args.top_k)
    if args.json:
        _print_json(pre.to_dict())
    else:
        sys.stdout.write(pre.text)  # exactly the block; an empty block prints nothing
        if not pre.text:
            print("cockpit: no note passes the relevance floor: the session would get no block",
                  file=sys.stderr)
    return 0


def cmd_lint(args) -> int:
    engine = _engine(args)
    _sync(engine)
    issues = engine.lint()
    if args.json:
        _print_json([i.to_dict() for i in issues])
        return 0
    for i in issues:
        print(f"{i.kind}: {i.message}")
    print(f"{len(issues)} issue(s)" if issues else "no issues")
    return 0


def cmd_save(args) -> int:
    from memory import NoteExistsError

    body = "" if sys.stdin is None or sys.stdin.isatty() else sys.stdin.read()
    engine = _engine(args, must_exist=False)
    try:
        path = engine.save(args.name, args.description, body, priority=args.priority)
    except (NoteExistsError, ValueError) as exc:
        raise CockpitError(str(exc)) from None
    except OSError as exc:
        raise CockpitError(f"cannot write note: {exc}") from None
    print(path)
    return 0


def cmd_eval(args) -> int:
    from memory.eval import EvalError, load_queries, run_eval

    try:
        queries = load_queries(args.queries)
    except EvalError as exc:
        raise CockpitError(str(exc)) from None
    engine = _engine(args)
    _sync(engine, _Bar())
    res = run_eval(engine, queries, top_k=args.top_k)
    if args.json:
        _print_json(res)
        return 0
    k = args.top_k
    e, b = res["engine"], res["baseline"]

    def f(v):
        return "n/a" if v is None else f"{v:.3f}"

    print(f"{len(queries)} queries ({e['queries_with_gold']} with gold, {e['no_match_queries']} no-match), "
          f"notes {engine.notes_dir}, SQLite binding {engine.store.binding}")
    print(f"{'':22}{'engine':>10}{'keyword':>10}")
    print(f"{'recall@' + str(k):22}{f(e[f'recall@{k}']):>10}{f(b[f'recall@{k}']):>10}")
    for kind in sorted(set(e["per_kind"]) | set(b["per_kind"])):
        print(f"{'  ' + kind:22}{f(e['per_kind'].get(kind)):>10}{f(b['per_kind'].get(kind)):>10}")
    print(f"{'false-inject rate':22}{f(e['false_inject_rate']):>10}{f(b['false_inject_rate']):>10}")
    print(f"{'p50 latency (ms)':22}{e['p50_ms']:>10.2f}{b['p50_ms']:>10.2f}")
    return 0
