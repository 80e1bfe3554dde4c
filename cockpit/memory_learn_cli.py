"""``cockpit memory misses`` and ``cockpit memory calibrate``: what the preseed missed in real
sessions (from their transcripts), and a line threshold refitted on it.

A *miss* is a transcript ``memory_miss`` record: the session read a note in full (``memory_get``,
the MCP tool, or the note's file) that its preseed did not give as a line. A *given-but-unused*
line is a judged (non-priority) line of which the session wrote neither the name nor two words of
the description in a message or a tool call. ``calibrate`` turns both into labelled examples for
the notes folder, refits the judge's line threshold on them (:mod:`memory.calibrate`), shows the
figures before and after — on those examples and, with ``--dev``, on labelled query files — and
keeps the refit only when none of them gets worse (line recall down, false-inject up, or more
than a quarter of a wrong line more per query): ``calibration.json`` beside the config;
``--dry-run`` only shows.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from cockpit.errors import CockpitError


def add_parsers(msub: argparse._SubParsersAction, common) -> None:
    sp = msub.add_parser("misses", help="notes sessions read in full that their preseed did not give")
    sp.add_argument("--notes", metavar="DIR", default=None, help="only sessions on this notes folder")
    sp.add_argument("--json", action="store_true")
    sp.set_defaults(func=cmd_misses)
    sp = common(msub.add_parser("calibrate", help="refit the line threshold on your sessions' misses; "
                                                   "kept only if no figure gets worse"))
    sp.add_argument("--dev", metavar="QUERIES", action="append", default=[],
                    help="labelled queries file (cockpit memory eval's format) the refit must not make worse; "
                         "repeatable")
    sp.add_argument("--dev-notes", metavar="DIR", default=None, help="notes folder of the --dev files")
    sp.add_argument("--dry-run", action="store_true", help="show the refit, do not keep it")
    sp.add_argument("--json", action="store_true")
    sp.set_defaults(func=cmd_calibrate)


def _sessions() -> list[tuple[Path, list[tuple[str, Any]]]]:
    from cockpit.runtime.config import sessions_dir
    from cockpit.runtime.transcript import read_timed

    out = []
    folder = sessions_dir()
    for path in sorted(folder.glob("*.jsonl")) if folder.is_dir() else []:
        try:
            out.append((path, read_timed(path, [])))
        except (OSError, ValueError):
            continue
    return out


def _same_folder(a: str, b: Path | None) -> bool:
    if b is None:
        return True
    try:
        return Path(a).expanduser().resolve() == b.expanduser().resolve()
    except OSError:
        return False


def _hook_misses(notes: Path | None) -> list[dict]:
    """Misses the Claude Code hook recorded (``<data>/hooks/misses.jsonl``)."""
    from cockpit.memory_hook import misses_path, read_misses

    path = misses_path()
    rows = []
    for r in read_misses():
        if _same_folder(str(r.get("notes", "")), notes):
            rows.append({"session": r.get("session", ""), "time": r.get("ts", ""), "note": r.get("name", ""),
                         "via": r.get("via", ""), "in_index": bool(r.get("in_index")), "task": r.get("task", ""),
                         "notes": r.get("notes", ""), "transcript": str(path)})
    return rows


def collect_misses(notes: Path | None) -> list[dict]:
    rows = _hook_misses(notes)
    from cockpit.events import MemoryMiss

    for path, timed in _sessions():
        task = getattr(timed[0][1], "task", "")
        for ts, e in timed:
            if isinstance(e, MemoryMiss) and _same_folder(e.notes, notes):
                rows.append({"session": e.session_id or path.stem, "time": ts, "note": e.name, "via": e.via,
                             "in_index": e.in_index, "task": e.task or task, "notes": e.notes,
                             "transcript": str(path)})
    return rows


def cmd_misses(args) -> int:
    notes = Path(args.notes) if args.notes else None
    rows = collect_misses(notes)
    if args.json:
        print(json.dumps(rows, indent=2, ensure_ascii=False))
        return 0
    if not rows:
        if not _sessions():
            print("no session transcripts yet: misses are counted as sessions run (cockpit, cockpit run, the hook)")
        else:
            print("no misses recorded: every note the sessions read in full had been given as a line")
        return 0
    for r in rows:
        where = "listed in the index" if r["in_index"] else "not in the block"
        task = r["task"] if len(r["task"]) <= 70 else r["task"][:69] + "…"
        print(f"{r['session']}  {r['note']}  via {r['via']} ({where})  task: {task}")
    notes_count = len({r['note'] for r in rows})
    print(f"{len(rows)} miss(es) of {notes_count} note(s) in {len({r['session'] for r in rows})} session(s)")
    return 0


def collect_examples(notes: Path) -> list:
    """Misses (positive) and given-but-unused judged lines (negative) of the sessions on ``notes``."""
    from memory.calibrate import Example
    from memory.text import content_terms

    out: list[Example] = [Example(r["task"], r["note"], True, r["session"]) for r in _hook_misses(notes) if r["task"]]
    from cockpit.events import ToolCall
    from cockpit.runtime.history import fold

    for path, timed in _sessions():
        h = fold(e for _, e in timed)
        folder = h.started.notes if h.started else ""
        if not folder or not _same_folder(folder, notes) or not h.task:
            continue
        sid = h.session_id or path.stem
        for miss in h.miss_events:
            out.append(Example(h.task, miss.name, True, sid))
        said = json.dumps([{"name": e.name, "input": e.input} for _, e in timed if isinstance(e, ToolCall)]
                          + [m for m in h.messages if m["role"] == "assistant"], default=str).casefold()
        said_terms = {t[:5] for t in content_terms(said)}
        for n in h.notes:
            if n.kind != "line" or n.priority or not n.name:
                continue
            desc = {t[:5] for t in content_terms(n.description)}
            used = n.name.casefold() in said or len(desc & said_terms) >= min(2, len(desc))
            if not used:  # neither its name nor two words of its description in what the session wrote
                out.append(Example(h.task, n.name, False, sid))
    return out


def cmd_calibrate(args) -> int:
    from cockpit.memory_cli import _engine, _sync
    from memory.calibrate import fit_line, probabilities
    from memory.judge import load_judge, read_calibration
    from memory.paths import calibration_path

    engine = _engine(args)
    _sync(engine)
    examples = collect_examples(engine.notes_dir)
    if not examples:
        raise CockpitError(f"no sessions on {engine.notes_dir} with misses or given lines to learn from yet "
                           "(cockpit memory misses lists what is recorded)", code=1)
    judge = load_judge()
    probs = probabilities(engine, examples)
    line, report = fit_line(examples, probs, judge.line)
    report["dev"] = _dev_check(args, judge.line, line) if args.dev else None
    worse = []
    b, a = report["before"], report["after"]
    if a["misses_given"] - a["unused_given"] < b["misses_given"] - b["unused_given"]:
        worse.append("your sessions")
    for name, fig in (report["dev"] or {}).items():
        f0, f1 = fig["before"], fig["after"]
        if (f1["line_recall"] < f0["line_recall"] - 0.005
                or f1["false_inject_lines"] > f0["false_inject_lines"] + 0.005
                or f1["extra_lines"] > f0["extra_lines"] + 0.25):
            worse.append(name)
    keep = not worse and line != judge.line and not args.dry_run
    report["kept"] = keep
    report["refused"] = worse
    if keep:
        path = calibration_path()
        path.parent.mkdir(parents=True, exist_ok=True)
        prev = read_calibration() or {}
        path.write_text(json.dumps({"line": line, "model": judge.model, "examples": len(examples),
                                    "previous": prev.get("line", judge.line)}, indent=1) + "\n", encoding="utf-8")
        report["written"] = str(path)
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    _print(report)
    return 0


def _dev_check(args, before: float, after: float) -> dict[str, Any]:
    from cockpit.memory_cli import _sync
    from memory import MemoryEngine
    from memory.eval import EvalError, load_queries, run_eval

    if not args.dev_notes:
        raise CockpitError("--dev needs --dev-notes DIR (the notes folder its queries are about)")
    try:
        queries = [q for path in args.dev for q in load_queries(path)]
    except EvalError as exc:
        raise CockpitError(str(exc)) from None
    engine = MemoryEngine(Path(args.dev_notes).expanduser())
    _sync(engine)
    out: dict[str, Any] = {}
    figs = {t: run_eval(engine, queries, line_threshold=t) for t in (before, after)}
    for name in figs[before]["files"]:
        out[name] = {when: {k: figs[t]["files"][name][k] for k in ("line_recall", "any_recall", "extra_lines",
                                                                   "false_inject_lines")}
                     for when, t in (("before", before), ("after", after))}
    return out


def _print(rep: dict) -> None:
    b, a = rep["before"], rep["after"]
    print(f"{rep['examples']} examples from your sessions: {rep['positives']} misses, "
          f"{rep['negatives']} given-but-unused lines")
    print(f"line threshold {b['line']:.2f} → {a['line']:.2f}")
    print(f"  misses that would have been lines: {b['misses_given']} → {a['misses_given']}")
    print(f"  unused lines still given:          {b['unused_given']} → {a['unused_given']}")
    for name, fig in (rep.get("dev") or {}).items():
        f0, f1 = fig["before"], fig["after"]
        print(f"  {name}: line recall {f0['line_recall']:.3f} → {f1['line_recall']:.3f}, "
              f"extra lines {f0['extra_lines']:.2f} → {f1['extra_lines']:.2f}, "
              f"false-inject (lines) {f0['false_inject_lines']:.3f} → {f1['false_inject_lines']:.3f}")
    if rep.get("out_of_reach"):
        print(f"  out of reach of any threshold (p < 0.05 for their tasks): {', '.join(rep['out_of_reach'])} — "
              "a description that names what the task would say helps more than a threshold")
    if rep["refused"]:
        print(f"refused: the refit is worse on {', '.join(rep['refused'])}; the threshold stays {b['line']:.2f}")
    elif rep.get("written"):
        print(f"kept: {rep['written']}")
    elif a["line"] == b["line"]:
        print("the threshold already fits your sessions: nothing to change")
    else:
        print("dry run: nothing written")
    sys.stdout.flush()
