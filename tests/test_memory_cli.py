"""``cockpit memory …``: output, JSON, exit codes, one-line errors."""

from __future__ import annotations

import argparse
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from test_memory_support import copy_fixture, snapshot

from cockpit import memory_cli
from cockpit.cli import CockpitError
from memory.embedder import get_embedder

ROOT = Path(__file__).resolve().parent.parent
SEED_QUERY = "what port does staging run on, which host do we deploy to, and with what command?"


def run(argv: list[str], capsys, stdin: str | None = None, monkeypatch=None):
    """Run ``cockpit memory …`` in-process the way cockpit.cli.main does → (code, out, err)."""
    parser = argparse.ArgumentParser(prog="cockpit")
    sub = parser.add_subparsers(dest="command")
    memory_cli.add_parser(sub)
    args = parser.parse_args(["memory", *argv])
    if stdin is not None:
        monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
    try:
        code = int(args.func(args) or 0)
    except CockpitError as exc:
        print(f"cockpit: error: {exc}", file=sys.stderr)
        code = exc.code
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.fixture(scope="module", autouse=True)
def model():
    assert get_embedder().wait(120)


@pytest.fixture()
def notes(tmp_path):
    return copy_fixture("seed", tmp_path / "notes")


def test_index_prints_counts_and_binding(notes, capsys):
    code, out, _ = run(["index", "--notes", str(notes)], capsys)
    assert code == 0
    assert "10 added, 0 updated, 0 removed, 0 renamed, 0 unchanged, 0 skipped" in out
    assert "SQLite binding" in out
    idx = Path(os.environ["COCKPIT_DATA_DIR"]) / "index"
    assert len(list(idx.glob("*.sqlite"))) == 1  # default per-user index, not in the notes folder
    code, out, _ = run(["index", "--notes", str(notes)], capsys)
    assert "up to date — 10 unchanged, none added, updated or removed since the last index, 0 skipped" in out


def test_index_reports_skipped_with_reasons(notes, capsys):
    (notes / "bad.md").write_bytes(b"\x00\x00")
    code, out, _ = run(["index", "--notes", str(notes), "--json"], capsys)
    rep = json.loads(out)
    assert code == 0 and rep["added"] == 10
    assert rep["skipped"] == [["bad.md", "binary file (NUL bytes)"]]
    assert rep["binding"] in {"sqlite3", "sqlean", "pysqlite3"}


def test_search_json_and_text(notes, capsys, tmp_path):
    idx = tmp_path / "custom.sqlite"
    code, out, _ = run(["search", "ship-v2", "--notes", str(notes), "--index", str(idx), "--json",
                        "--top-k", "2"], capsys)
    hits = json.loads(out)
    assert code == 0 and len(hits) == 2 and hits[0]["name"] == "deploy-command"
    assert set(hits[0]) >= {"name", "description", "snippet", "priority", "score", "path"}
    assert idx.exists()
    code, out, _ = run(["search", "6443", "--notes", str(notes), "--index", str(idx)], capsys)
    assert out.startswith("1. ★ [staging-stack]")


def test_preseed_prints_exactly_the_block(notes, capsys, tmp_path):
    from memory import MemoryEngine

    code, out, _ = run(["preseed", SEED_QUERY, "--notes", str(notes)], capsys)
    assert code == 0
    eng = MemoryEngine(notes)
    assert out == eng.preseed(SEED_QUERY) and "★ [staging-stack]" in out and "[deploy-command]" in out
    code, out, _ = run(["preseed", SEED_QUERY, "--notes", str(notes), "--json"], capsys)
    data = json.loads(out)
    assert data["text"] == eng.preseed(SEED_QUERY) and data["tokens"] > 0
    assert {h["name"] for h in data["hits"] + data["index"]} >= {"staging-stack", "deploy-command"}
    assert all("probability" in h for h in data["considered"])
    code, out, err = run(["preseed", "knit a wool scarf for winter", "--notes", str(notes), "--explain"], capsys)
    assert code == 0 and "[knit" not in out
    assert "candidates, most likely first (p = the judge's probability" in err and "staging-stack" in err


def test_search_sees_edits_without_an_explicit_index(notes, capsys):
    run(["index", "--notes", str(notes)], capsys)
    (notes / "kiwi.md").write_text("---\nname: kiwi-fruit\ndescription: The kiwi orchard is watered at dawn.\n---\n")
    code, out, _ = run(["search", "kiwi orchard watering", "--notes", str(notes), "--json"], capsys)
    assert json.loads(out)[0]["name"] == "kiwi-fruit"


def test_save_reads_body_from_stdin_and_refuses_duplicates(notes, capsys, monkeypatch):
    code, out, _ = run(["save", "--name", "cache-ttl", "--description", "Cache TTL is 300 s.",
                        "--priority", "--notes", str(notes)], capsys, stdin="Body from stdin.\n",
                       monkeypatch=monkeypatch)
    assert code == 0 and out.strip() == str(notes.resolve() / "cache-ttl.md")
    assert "Body from stdin." in (notes / "cache-ttl.md").read_text()
    before = (notes / "cache-ttl.md").read_bytes()
    code, out, err = run(["save", "--name", "cache-ttl", "--description", "Different.",
                          "--notes", str(notes)], capsys, stdin="x", monkeypatch=monkeypatch)
    assert code == 2 and err.startswith("cockpit: error:") and "already exists" in err
    assert len(err.strip().splitlines()) == 1 and (notes / "cache-ttl.md").read_bytes() == before


def test_save_refuses_a_notes_folder_given_that_does_not_exist(tmp_path, capsys, monkeypatch):
    """A mistyped --notes made a stray folder for the team's note (every other command refuses
    the same path); with no --notes the first note still starts ./notes."""
    typo = tmp_path / "noets"
    code, _out, err = run(["save", "--name", "n", "--description", "d", "--notes", str(typo)], capsys, stdin="b",
                          monkeypatch=monkeypatch)
    assert code == 2 and f"notes folder {typo} does not exist (check the path given to --notes" in err
    assert not typo.exists()
    monkeypatch.chdir(tmp_path)
    code, out, err = run(["save", "--name", "n", "--description", "d"], capsys, stdin="b", monkeypatch=monkeypatch)
    assert code == 0 and (tmp_path / "notes" / "n.md").is_file() and "starting the notes folder" in err


def test_lint_json(notes, capsys):
    (notes / "undescribed.md").write_text("no frontmatter at all\n")
    before = snapshot(notes)
    code, out, _ = run(["lint", "--notes", str(notes), "--json"], capsys)
    issues = json.loads(out)
    assert code == 0 and {"kind": "no-description", "path": "undescribed.md"}.items() <= \
        next(i for i in issues if i["path"] == "undescribed.md").items()
    assert snapshot(notes) == before


def test_eval_figures_and_per_query_names(notes, capsys, tmp_path):
    q = tmp_path / "q.jsonl"
    rows = [
        {"id": "a", "query": SEED_QUERY, "gold": ["staging-stack", "deploy-command"], "kind": "task"},
        {"id": "b", "query": "which command deploys, ship-v2?", "gold": ["deploy-command"], "kind": "identifier"},
        {"id": "c", "query": "bake sourdough bread with a rye starter", "gold": [], "kind": "no-match"},
    ]
    q.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    q2 = tmp_path / "q2.jsonl"
    q2.write_text(json.dumps({"query": "how are database migrations written?", "gold": ["db-migrations", "no-such-note"]}))
    code, out, _ = run(["eval", str(q), str(q2), "--notes", str(notes), "--json", "--sweep"], capsys)
    res = json.loads(out)
    assert code == 0
    one = res["files"]["q.jsonl"]
    assert one["any_recall"] == 1.0 and one["false_inject_lines"] == 0.0  # ten notes: the whole index fits
    assert 0.5 <= one["line_recall"] <= one["any_recall"] and one["priority_lines"] == 1.0
    assert one["recall@5"] == 1.0 and set(one["per_kind"]) == {"identifier", "task"}
    assert one["p50_ms"] > 0 and 0 < one["mean_block_tokens"] <= 600 and one["superseded_only"] == 0
    assert res["files"]["q2.jsonl"]["any_recall"] == 0.5  # the unknown gold name counts as a miss…
    assert res["unknown_gold"] == ["no-such-note"]  # … and is reported
    assert res["all"]["queries"] == 4 and res["baseline"]["false_inject_lines"] is not None
    per = {r["id"]: r for r in res["queries"]}
    assert per["c"]["engine"]["names"] == [] and per["b"]["engine"]["names"][:1] == ["deploy-command"]
    assert per["a"]["engine"]["priority"] == ["staging-stack"] and "deploy-command" in (
        per["a"]["engine"]["names"] + per["a"]["engine"]["index"])
    # the sweep: lines only grow as the threshold falls
    curve = res["sweep"]["all"]
    assert [p["threshold"] for p in curve] == sorted(p["threshold"] for p in curve)
    assert curve[0]["extra_lines"] >= curve[-1]["extra_lines"] and curve[0]["line_recall"] >= curve[-1]["line_recall"]
    assert any(p["threshold"] == res["judge"]["line"] for p in curve)
    code, out, err = run(["eval", str(q), str(q2), "--notes", str(notes), "--sweep"], capsys)
    for needle in ("recall of the lines", "recall, lines + index", "recall@10 of the ranking", "false-inject (lines)",
                   "extra lines per query", "block tokens (mean)", "p50 preseed (ms)", "keyword",
                   "line threshold sweep (all)", "q2.jsonl"):
        assert needle in out
    assert "no-such-note" in err


@pytest.mark.parametrize("content,needle", [
    ("", "no queries (the file is empty)"),
    ("\n\n", "no queries (the file is empty)"),
    ('{"query": "deploy staging"}\n', ":1: no 'gold' list"),
    ('{"query": "a", "gold": []}\n{"query": "b", "kind": "task"}\n', ":2: no 'gold' list"),
    ('{"query": "a", "gold": "deploy-command"}\n', "'gold' must be a list"),
    ('{"gold": []}\n', "needs a non-empty string 'query'"),
    ('not json\n', ":1: not a JSON object"),
    ('[1, 2]\n', ":1: not a JSON object"),
])
def test_eval_bad_queries_file_is_a_clear_error(notes, capsys, tmp_path, content, needle):
    q = tmp_path / "q.jsonl"
    q.write_text(content)
    code, out, err = run(["eval", str(q), "--notes", str(notes)], capsys)
    assert code == 2 and needle in err and "q.jsonl" in err and len(err.strip().splitlines()) == 1
    assert "Traceback" not in err


def test_selector_flag_needs_an_api_key(notes, capsys, monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    code, _, err = run(["preseed", "deploy", "--notes", str(notes), "--selector", "model"], capsys)
    assert code == 2 and "ANTHROPIC_API_KEY" in err


@pytest.mark.parametrize("argv,needle", [
    (["index", "--notes", "/nonexistent/notes"], "does not exist"),
    (["search", "x", "--notes", "/nonexistent/notes"], "does not exist"),
    (["eval", "/nonexistent/q.jsonl", "--notes", "."], "cannot read"),
    (["search", "x", "--notes", ".", "--top-k", "0"], "--top-k"),
])
def test_user_errors_are_one_line(argv, needle, capsys):
    code, out, err = run(argv, capsys)
    assert code == 2 and needle in err and len(err.strip().splitlines()) == 1


def test_unreadable_index_is_one_line_no_traceback(notes, tmp_path):
    bad = tmp_path / "bad.sqlite"
    bad.write_bytes(b"not a database at all" * 200)
    env = dict(os.environ, HF_HUB_OFFLINE="1")
    proc = subprocess.run([sys.executable, "-c", "import sys; from cockpit.cli import main; sys.exit(main())", "memory", "index", "--notes", str(notes),
                           "--index", str(bad)], capture_output=True, text=True, env=env, cwd=ROOT,
                          timeout=120)
    assert proc.returncode != 0
    assert "Traceback" not in proc.stderr
    assert proc.stderr.startswith("cockpit: error:") and "bad.sqlite" in proc.stderr


def test_progress_bar_only_for_long_work_or_tty(capsys, monkeypatch):
    bar = memory_cli._Bar()
    monkeypatch.setattr(sys.stderr, "isatty", lambda: False, raising=False)
    bar(10, 20)
    assert capsys.readouterr().err == "" and not bar.shown
    bar(256, 640)
    bar(640, 640)
    err = capsys.readouterr().err
    assert "640/640" in err and err.endswith("\n") and bar.shown


def test_search_and_index_output_show_escape_sequences_as_nothing(notes, capsys):
    (notes / "evil.md").write_text('---\nname: evil-note\ndescription: "ship\\u001b]0;pwned\\u0007 it with kubectl"\n'
                                   "---\nRun kubectl apply\x1b[2J\nto ship.\n")
    (notes / "bad\x1b[31m.md").write_bytes(b"\x00")
    code, out, _ = run(["index", "--notes", str(notes)], capsys)
    assert code == 0 and "skipped bad.md" in out and "\x1b" not in out
    code, out, _ = run(["search", "kubectl apply", "--notes", str(notes)], capsys)
    assert code == 0 and "[evil-note]" in out and "ship it with kubectl" in out
    assert "\x1b" not in out and "\x07" not in out


def test_non_ascii_query_under_a_posix_locale_without_utf8_mode(tmp_path):
    # argv "café" arrives as "caf\udcc3\udca9" (surrogate escapes): the tokenizer used to refuse it
    # ("TextInputSequence must be str"); stdout is ASCII, so the note's é is escaped, not fatal
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "cafe.md").write_text("---\nname: cafe-hours\ndescription: the café opens at nine\n---\nCoffee.\n",
                                   encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LC_", "PYTHONIOENCODING", "PYTHONUTF8"))}
    env.update(LC_ALL="POSIX", PYTHONUTF8="0", HF_HUB_OFFLINE="1", COCKPIT_NO_SERVER="1",
               COCKPIT_DATA_DIR=str(tmp_path / "data"))
    proc = subprocess.run([sys.executable, "-m", "cockpit", "memory", "search", "café", "--notes", str(notes)],
                          capture_output=True, env=env, cwd=ROOT, timeout=120)
    err = proc.stderr.decode("utf-8", "replace")
    assert proc.returncode == 0, err
    assert "Traceback" not in err
    assert b"[cafe-hours]" in proc.stdout and b"caf\\xe9" in proc.stdout


def test_as_text_recovers_escaped_utf8_and_bytes():
    from memory.text import as_text

    assert as_text("caf\udcc3\udca9") == "café"
    assert as_text(b"caf\xc3\xa9") == "café"
    assert as_text("caf\udce9") == "caf\ufffd"  # a Latin-1 byte: not UTF-8
    assert as_text("lone \ud800") == "lone ?"


def test_explain_says_each_left_out_note_once_and_why_a_successor_is_a_line():
    from types import SimpleNamespace as N

    from cockpit.memory_cli import explain

    hit = N(name="deploy-command", priority=False, status="accepted", probability=0.08)
    old = N(name="deploy-old", priority=False, status="superseded", probability=0.22)
    pre = N(hits=[hit], index=[old], considered=[hit, old],
            left_out=[("deploy-old", "superseded by deploy-command: its successor is given instead"),
                      ("deploy-old", "p 0.22 < 0.4 (line threshold): in the index")])
    out = explain(pre)
    assert "deploy-command [accepted]  (in place of deploy-old, which it supersedes)" in out
    assert out.count("  deploy-old:") == 1
    assert ("deploy-old: superseded by deploy-command: its successor is given instead; p 0.22 < 0.4 "
            "(line threshold): in the index") in out
