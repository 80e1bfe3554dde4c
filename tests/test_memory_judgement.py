"""What a reader gets from the preseed: each note judged on its own, priority notes always given,
an index of the rest, decisions that supersede others, why close notes were left out, and
misses counted from real sessions (recorded, listed, learned from)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from standin import Reply, StandIn, ToolUse

from cockpit.cli import main
from cockpit.events import MemoryMiss, Preseeded
from cockpit.runtime import RuntimeConfig, SessionManager
from cockpit.runtime.spawn import SpawnSpec
from memory import MemoryEngine
from memory.judge import load_judge
from memory.notes import lifecycle
from memory.preseed import INDEX_HEADING


def note(folder: Path, name: str, description: str, body: str = "", extra: str = "") -> Path:
    path = folder / f"{name}.md"
    path.write_text(f"---\nname: {name}\ndescription: {description}\n{extra}---\n{body}\n", encoding="utf-8")
    return path


CART = [
    ("cart-total", "Cart.total multiplies each line's price by its qty and applies discounts last",
     "Cart.total sums price * qty per line item, then applies discount codes, then tax.", ""),
    ("money-decimal", "Money is Decimal with two places, never float",
     "All amounts use decimal.Decimal quantized to 0.01; floats are a bug.", "priority: high\n"),
    ("deploy", "Deploy with make ship-v2 from the repository root", "Production needs a tag.", ""),
    ("logging", "Logs are JSON lines with a request_id on every entry", "Use structlog; never print.", ""),
    ("test-layout", "Tests live in tests/ and run with pytest -q; fixtures in conftest.py",
     "One test module per source module.", ""),
]
PHRASINGS = [
    "fix the failing test in tests/test_cart.py (Cart.total ignores qty)",
    "fix the failing test in tests/test_cart.py",
    "Cart.total ignores the quantity",
    "the cart total is wrong when qty > 1",
    "make the basket sum right for several items",
]


def write_cart(folder: Path, fillers: int = 0) -> Path:
    """The five cart notes in ``folder`` (made), and ``fillers`` unrelated ones."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, desc, body, extra in CART:
        note(folder, name, desc, body, extra)
    for i in range(fillers):
        note(folder, f"filler-{i}", f"Filler decision {i} about an unrelated subsystem {i}")
    return folder


@pytest.fixture()
def cart(tmp_path):
    folder = write_cart(tmp_path / "notes")
    eng = MemoryEngine(folder, index_path=tmp_path / "idx.sqlite")
    eng.sync()
    yield eng
    eng.close()


@pytest.mark.parametrize("task", PHRASINGS)
def test_the_five_note_example_never_flips_and_always_gives_the_priority_note(cart, task):
    pre = cart.build_preseed(task)
    lines = pre.text.splitlines()[2:-1]
    assert lines[0] == "★ [money-decimal] Money is Decimal with two places, never float"
    given = {h.name for h in pre.hits} | {h.name for h in pre.index}
    assert given == {n for n, *_ in CART}  # a small folder: every note, as a line or in the index
    assert INDEX_HEADING in lines  # the rest is an index, never lines of filler
    judged = [h.name for h in pre.hits if not h.priority]
    assert len(judged) <= 2 and not {"deploy", "logging"} & set(judged)
    assert pre.tokens <= 450


def test_the_cart_task_gets_the_cart_note_as_a_line(cart):
    pre = cart.build_preseed(PHRASINGS[0])
    assert "cart-total" in [h.name for h in pre.hits]
    assert "[cart-total] Cart.total multiplies" in pre.text


@pytest.mark.parametrize("meta,body,want", [
    ({"status": "Superseded", "superseded_by": "api-errors-v2"}, "", ("superseded", "api-errors-v2")),
    ({"status": "accepted"}, "", ("accepted", "")),
    ({}, "# 3. Use REST\n\n## Status\n\nSuperseded by [ADR-0012](0012-use-grpc.md)\n\n## Context\n",
     ("superseded", "0012-use-grpc.md")),
    ({}, "# 3. Use REST\n\n## Status\n\nRejected\n", ("rejected", "")),
    ({}, "Status: Deprecated\n\nWe no longer do this.", ("deprecated", "")),
    ({"status": "draft-ish"}, "", ("", "")),
    ({}, "No status here at all.", ("", "")),
])
def test_lifecycle_is_read_from_frontmatter_or_the_status_section(meta, body, want):
    assert lifecycle(meta, body) == want


@pytest.fixture()
def decisions(tmp_path):
    folder = tmp_path / "adr"
    folder.mkdir()
    note(folder, "0003-error-format", "API errors use a custom {error, code} JSON envelope",
         "## Status\n\nSuperseded by [ADR-0012](0012-problem-json.md)\n\nErrors are {error, code}.")
    (folder / "0012-problem-json.md").write_text(
        "---\nname: errors-problem-json\ndescription: API errors use RFC 9457 problem+json documents\n"
        "status: accepted\n---\nErrors are application/problem+json with type, title, status, detail.\n")
    note(folder, "graphql", "We will not adopt GraphQL for the public API", "Decided against.",
         "status: rejected\n")
    for i in range(14):  # a folder whose index does not fit whole
        note(folder, f"other-{i}", f"Unrelated decision number {i} about build caching and CI runners {i}")
    eng = MemoryEngine(folder, index_path=tmp_path / "adr.sqlite")
    eng.sync()
    yield eng
    eng.close()


def test_a_superseded_decision_is_never_a_line_its_successor_comes_first(decisions):
    pre = decisions.build_preseed("what JSON shape should API error responses use", line_threshold=0.0)
    names = [h.name for h in pre.hits]
    assert "0003-error-format" not in names
    assert names[0] == "errors-problem-json"  # the current decision, first
    old = next(h for h in pre.index if h.name == "0003-error-format")
    assert old.superseded_by == "errors-problem-json"
    assert "- [0003-error-format] API errors use a custom {error, code} JSON envelope " \
           "(superseded by errors-problem-json)" in pre.text
    assert any(n == "0003-error-format" and "superseded by errors-problem-json" in why for n, why in pre.left_out)


def test_search_names_a_superseded_notes_successor(decisions, capsys):
    hits = {h.name: h for h in decisions.search("custom error envelope JSON", 5)}
    assert hits["0003-error-format"].superseded_by == "errors-problem-json"
    assert all(h.superseded_by == "" for n, h in hits.items() if n != "0003-error-format")
    assert main(["memory", "search", "custom error envelope JSON", "--notes", str(decisions.notes_dir),
                 "--index", str(decisions.index_path), "--no-server"]) == 0
    assert "[0003-error-format] (superseded by errors-problem-json)" in capsys.readouterr().out


def test_a_rejected_decision_is_a_line_that_says_so(decisions):
    pre = decisions.build_preseed("should we adopt GraphQL for the public API?", line_threshold=0.0)
    line = next(ln for ln in pre.text.splitlines() if ln.startswith("[graphql]"))
    assert line.startswith("[graphql] We will not adopt GraphQL for the public API (rejected)")


def test_lint_warns_on_a_missing_successor_a_cycle_and_too_many_priority_notes(tmp_path):
    folder = tmp_path / "n"
    folder.mkdir()
    note(folder, "a", "Decision a", extra="status: superseded\nsuperseded_by: b\n")
    note(folder, "b", "Decision b", extra="status: superseded\nsuperseded_by: a\n")
    note(folder, "c", "Decision c", extra="status: superseded\nsuperseded_by: no-such-note\n")
    for i in range(12):
        note(folder, f"rule-{i}", f"A rule every task must follow, number {i}, with some words", extra="priority: high\n")
    with MemoryEngine(folder, index_path=tmp_path / "i.sqlite") as eng:
        issues = eng.lint()
    kinds = {i.kind: i for i in issues}
    assert "no-such-note" in kinds["missing-successor"].message
    assert "a → b → a" in kinds["supersede-cycle"].message or "b → a → b" in kinds["supersede-cycle"].message
    over = kinds["priority-over-budget"].message
    assert "12 priority notes" in over
    # which ones a task misses depends on the task: lint named a fixed set the preseed did not cut
    assert "which ones depends on the task" in over and "rule-" not in over


def test_lint_names_a_mistyped_status_or_priority_and_a_successor_never_named(tmp_path):
    """`status: supersded` read as current (the retired decision stayed a line), `priority: urgent`
    as normal, `status: superseded` with no successor: each passed lint silently."""
    folder = tmp_path / "n"
    folder.mkdir()
    note(folder, "typo", "Staging runs on port 7000", extra="status: supersded\n")
    note(folder, "loud", "Deploys need two approvals", extra="priority: urgent\n")
    note(folder, "orphan", "We used Jenkins", extra="status: superseded\n")
    note(folder, "fine", "We use GitHub Actions", extra="status: accepted\npriority: medium\n")
    note(folder, "madr", "We used Travis", extra="status: superseded by fine\n")  # MADR's wording
    note(folder, "named", "We used Drone", extra="status: supersded\nsuperseded_by: fine\n")
    with MemoryEngine(folder, index_path=tmp_path / "i.sqlite") as eng:
        issues = eng.lint()
        warnings = eng.status().warnings
        madr = {r[1]: r for r in eng.store.lifecycles()}["madr"]  # (id, name, path, status, successor)
    said = {(i.kind, i.path) for i in issues}
    assert {("unknown-value", "typo.md"), ("unknown-value", "loud.md"), ("missing-successor", "orphan.md")} <= said
    assert not any(path in ("fine.md", "madr.md") for _kind, path in said)
    typo = next(i for i in issues if i.path == "typo.md")
    assert "unknown status 'supersded'" in typo.message and "counts as current" in typo.message
    named = next(i for i in issues if i.path == "named.md")  # its successor still retires it: said so
    assert "its superseded_by (fine) still retires it: it is superseded" in named.message, named.message
    assert any(w.startswith("loud.md: unknown priority 'urgent'") for w in warnings)  # the header counts them
    assert madr[3:] == ("superseded", "fine")


def test_priority_notes_past_their_budget_are_named(tmp_path):
    folder = tmp_path / "n"
    folder.mkdir()
    for i in range(12):
        note(folder, f"rule-{i}", f"A rule every task must follow, number {i}, with some words", extra="priority: high\n")
    with MemoryEngine(folder, index_path=tmp_path / "i.sqlite") as eng:
        eng.sync()
        pre = eng.build_preseed("add a health check endpoint")
    assert pre.priority_cut and len(pre.priority_cut) + sum(h.priority for h in pre.hits) == 12
    assert any("priority budget" in why for _, why in pre.left_out)


def test_why_not_names_the_threshold_and_the_probability(cart):
    pre = cart.build_preseed(PHRASINGS[1])  # the test-layout note wins; the cart note comes close
    judge = load_judge()
    for name, why in pre.left_out:
        if "line threshold" in why:
            p = float(why.split()[1])
            assert p < judge.line and f"< {judge.line:g} " in why and name in {h.name for h in pre.index}


def test_preseed_explain_prints_every_candidates_probability(cart, capsys):
    main(["memory", "preseed", PHRASINGS[0], "--notes", str(cart.notes_dir), "--index", str(cart.index_path),
          "--explain", "--no-server"])
    err = capsys.readouterr().err
    assert "candidates, most likely first (p = the judge's probability" in err
    first = err.splitlines()[1].split()
    assert first[1:] == ["line", "cart-total"] and float(first[0]) >= load_judge().line


# ---- misses from real sessions ---------------------------------------------------------------
@pytest.fixture()
def miss_run(tmp_path):
    """A scripted model that reads, with memory_get, a note the preseed did not give as a line."""
    folder = write_cart(tmp_path / "notes", fillers=14)
    engine = MemoryEngine(folder, index_path=tmp_path / "idx.sqlite")
    engine.start_warmup()
    engine.sync()
    assert engine.wait_ready(120)
    ws = tmp_path / "ws"
    ws.mkdir()
    yield engine, ws
    engine.close()


async def _session(engine, ws, api, task):
    cfg = RuntimeConfig(api_key="test-key", base_url=api.base_url, interactive=False, max_retries=1,
                        timeout=30.0, model="standin-model", worktrees=False, sandbox=False)
    mgr = SessionManager(engine, cfg)
    sub = mgr.subscribe()
    s = await mgr.spawn(SpawnSpec(task, workspace=ws))
    assert await mgr.wait_idle(timeout=120)
    await mgr.aclose()
    return s, [e async for e in sub if e.session_id == s.id]


async def test_a_note_read_in_full_that_was_not_a_line_is_a_miss_listed_and_learned_from(miss_run, capsys):
    engine, ws = miss_run
    task = "fix the failing test in tests/test_cart.py"
    given = {h.name for h in (await asyncio.to_thread(engine.build_preseed, task)).hits}
    assert "deploy" not in given
    with StandIn() as api:
        api.script(Reply("Reading the deploy note.", [ToolUse("memory_get", {"name": "deploy"})]),
                   Reply("Reading the logging note.", [ToolUse("memory_get", {"name": "logging"})]),
                   Reply("Again.", [ToolUse("memory_get", {"name": "deploy"})]),
                   Reply("Done."))
        s, events = await _session(engine, ws, api, task)
        assert "make ship-v2" in json.dumps(api.message_requests[1]["messages"])  # the tool gave the note
    misses = [e for e in events if isinstance(e, MemoryMiss)]
    assert [m.name for m in misses] == ["deploy", "logging"]  # once per note
    assert misses[0].via == "memory_get"
    pre = next(e for e in events if isinstance(e, Preseeded))
    assert {n.kind for n in pre.notes} <= {"line", "index"}
    from cockpit.runtime.transcript import read_events

    miss_recs = [r for r in read_events(s.transcript_path) if isinstance(r, MemoryMiss)]
    assert miss_recs == misses and misses[0].task == task and misses[0].notes == str(engine.notes_dir)

    assert main(["memory", "misses", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert [r["note"] for r in listed] == ["deploy", "logging"] and listed[0]["session"] == s.id
    assert main(["memory", "misses"]) == 0
    assert "2 miss(es) of 2 note(s) in 1 session(s)" in capsys.readouterr().out

    code = await asyncio.to_thread(main, ["memory", "calibrate", "--notes", str(engine.notes_dir), "--index",
                                          str(engine.index_path), "--no-server", "--json", "--dry-run"])
    rep = json.loads(capsys.readouterr().out)
    assert code == 0 and rep["positives"] == 2 and rep["before"]["line"] == load_judge().line
    assert rep["kept"] is False  # a dry run never writes


def test_calibrate_without_sessions_says_so(cart, capsys):
    code = main(["memory", "calibrate", "--notes", str(cart.notes_dir), "--index", str(cart.index_path), "--no-server"])
    assert code == 1 and "no sessions on" in capsys.readouterr().err


@pytest.fixture()
def calib(tmp_path, monkeypatch):
    """A notes folder, a labelled file about it, and a history of one example (the refit itself
    is set by each test, so what is checked is the keep-or-refuse rule)."""
    from cockpit import memory_learn_cli as learn
    from memory.calibrate import Example

    folder = write_cart(tmp_path / "notes", fillers=14)
    dev = tmp_path / "dev.jsonl"
    dev.write_text("\n".join(json.dumps(q) for q in [
        {"query": "Cart.total ignores the quantity", "gold": ["cart-total"]},
        {"query": "fix the failing test in tests/test_cart.py", "gold": ["test-layout", "cart-total"]},
        {"query": "rotate the TLS certificates of the load balancer", "gold": []},
        {"query": "paint the office walls green", "gold": []},
    ]) + "\n")
    monkeypatch.setattr(learn, "collect_examples", lambda notes: [Example("Cart.total ignores the quantity",
                                                                          "cart-total", True)])
    args = ["memory", "calibrate", "--notes", str(folder), "--index", str(tmp_path / "i.sqlite"), "--no-server",
            "--dev", str(dev), "--dev-notes", str(folder), "--json"]
    return args


def _refit_to(monkeypatch, line: float) -> None:
    import memory.calibrate as cal

    real = cal.fit_line

    def fixed(examples, probs, current):
        _, rep = real(examples, probs, current)
        rep["after"] = dict(rep["before"], line=line)  # the same history figures: only the dev file decides
        return line, rep

    monkeypatch.setattr(cal, "fit_line", fixed)


def test_calibrate_refuses_a_refit_that_is_worse_on_the_dev_file(calib, monkeypatch, capsys):
    from memory.paths import calibration_path

    _refit_to(monkeypatch, 0.0)  # every candidate a line: wrong lines for the no-match tasks
    assert main(calib) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["kept"] is False and rep["refused"] == ["dev.jsonl"]
    before, after = rep["dev"]["dev.jsonl"]["before"], rep["dev"]["dev.jsonl"]["after"]
    assert after["false_inject_lines"] > before["false_inject_lines"] and after["extra_lines"] > before["extra_lines"]
    assert not calibration_path().exists()


def test_calibrate_keeps_a_refit_no_figure_gets_worse_on_and_the_engine_uses_it(calib, monkeypatch, capsys):
    from memory.judge import load_judge, read_calibration

    new = round(load_judge().line - 0.01, 2)
    _refit_to(monkeypatch, new)
    assert main(calib) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["kept"] is True, rep
    assert read_calibration()["line"] == new
    load_judge.cache_clear()
    try:
        assert load_judge().line == new
    finally:
        load_judge.cache_clear()


@pytest.fixture()
def inside(tmp_path):
    """A notes folder inside the workspace (./notes)."""
    ws = tmp_path / "ws"
    folder = write_cart(ws / "notes")
    engine = MemoryEngine(folder, index_path=tmp_path / "idx.sqlite")
    engine.start_warmup()
    engine.sync()
    assert engine.wait_ready(120)
    yield engine, ws
    engine.close()


async def test_opening_a_note_file_the_block_did_not_give_is_a_miss_too(inside):
    engine, ws = inside
    with StandIn() as api:
        api.script(Reply("Reading.", [ToolUse("str_replace_based_edit_tool", {"command": "view",
                                                                               "path": "notes/logging.md"})]),
                   Reply("Reading a line I had.", [ToolUse("str_replace_based_edit_tool", {
                       "command": "view", "path": "notes/money-decimal.md"})]),
                   Reply("Done."))
        s, events = await _session(engine, ws, api, "Cart.total ignores the quantity")
    misses = [e for e in events if isinstance(e, MemoryMiss)]
    assert [(m.name, m.via, m.in_index) for m in misses] == [("logging", "file", True)]


def test_a_superseded_chain_gives_the_current_decision_and_a_loop_gives_none(tmp_path):
    folder = tmp_path / "n"
    folder.mkdir()
    note(folder, "cycle-a", "Config is read from TOML files in config/", extra="status: superseded\nsuperseded_by: cycle-b\n")
    note(folder, "cycle-b", "Config is read from environment variables only", extra="status: superseded\nsuperseded_by: cycle-a\n")
    note(folder, "queue-v1", "Background jobs run on Celery with RabbitMQ",
         "## Status\n\n**Superseded** by [ADR-0007](0007-arq.md)\n")
    (folder / "0007-arq.md").write_text("---\nname: queue-v2\ndescription: Background jobs run on arq with Redis\n"
                                        "status: superseded\nsuperseded_by: queue-v3\n---\nReplaced.\n")
    note(folder, "queue-v3", "Background jobs run on Dramatiq with Redis", extra="status: accepted\n")
    for i in range(14):
        note(folder, f"other-{i}", f"Unrelated decision {i} about the documentation site theme {i}")
    with MemoryEngine(folder, index_path=tmp_path / "i.sqlite") as eng:
        eng.sync()
        loop = eng.build_preseed("read the app configuration from TOML files in config/", line_threshold=0.0)
        chain = eng.build_preseed("add a celery task to resize uploaded images")
    assert not {"cycle-a", "cycle-b"} & {h.name for h in loop.hits}  # a loop has no current decision
    assert any("not a current decision" in why for _, why in loop.left_out)
    assert chain.hits and chain.hits[0].name == "queue-v3"  # the chain's end, pulled in by the old decision
    assert not {"queue-v1", "queue-v2"} & {h.name for h in chain.hits}


@pytest.mark.parametrize("meta,want", [
    ({"status": 42}, ("", "")),
    ({"status": "superseded", "superseded_by": ["a", "b"]}, ("superseded", "a")),
    ({"superseded_by": {"x": 1}}, ("", "")),
])
def test_odd_lifecycle_values_are_read_or_ignored_never_a_crash(meta, want):
    assert lifecycle(meta, "") == want


def test_an_empty_task_still_gets_the_priority_notes(cart):
    pre = cart.build_preseed("   ")
    assert [h.name for h in pre.hits] == ["money-decimal"] and pre.index == []


def test_lint_says_a_note_superseded_by_itself_is(tmp_path):
    folder = tmp_path / "n"
    folder.mkdir()
    note(folder, "self-succ", "A decision", extra="status: superseded\nsuperseded_by: self-succ\n")
    with MemoryEngine(folder, index_path=tmp_path / "i.sqlite") as eng:
        issues = eng.lint()
    assert any(i.kind == "missing-successor" and "superseded by itself" in i.message for i in issues)


def test_preseed_as_markdown_for_agents_without_hooks(cart, capsys):
    main(["memory", "preseed", PHRASINGS[0], "--notes", str(cart.notes_dir), "--index", str(cart.index_path),
          "--format", "md", "--no-server"])
    out = capsys.readouterr().out
    assert out.startswith("## Project notes for this task\n")
    assert "- ★ **money-decimal**: Money is Decimal with two places, never float" in out
    assert "- **cart-total**: Cart.total multiplies" in out and "### May be relevant" in out
    assert "<project-notes>" not in out


def test_a_snippet_quotes_a_sentence_not_an_adr_heading():
    from memory.text import snippet

    body = "# ADR-0007: arq on Redis\n\n## Status\n\nAccepted\n\n## Decision\n\nBackground jobs run on arq with Redis. Celery is removed.\n"
    assert snippet(body, "background jobs with celery") == "Background jobs run on arq with Redis."
    assert "#" not in snippet(body, "status of the decision")


def test_the_first_preseed_after_a_sync_is_the_same_as_the_next(tmp_path):
    """A small folder with several priority notes: its whole index from the very first call
    (the priority notes, given by rule, are not counted against it)."""
    folder = write_cart(tmp_path / "n")
    for i in range(8):
        note(folder, f"rule-{i}", f"House rule {i}", extra="priority: high\n")
    note(folder, "extra-1", "Release notes go in CHANGELOG.md")
    note(folder, "extra-2", "Feature flags live in LaunchDarkly")
    with MemoryEngine(folder, index_path=tmp_path / "i.sqlite") as eng:
        eng.sync()
        first = eng.build_preseed(PHRASINGS[2])
        second = eng.build_preseed(PHRASINGS[2])
    assert first.text == second.text
    assert {h.name for h in first.index} >= {"extra-1", "extra-2", "deploy"}
