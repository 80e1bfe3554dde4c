"""Lint: advice about notes a person should fix. Reads the index only; never edits a file.

Checks:

* ``no-description`` — the note has no ``description`` (search sees only its first line).
* ``no-name`` — its frontmatter has no ``name``: the file name is used (a rename changes it).
* ``description-gap`` — a body sentence is about something the description does not cover
  (two facts in one note: the second is only found through the first). A sentence counts when
  its cosine to the description vector is below ``GAP_COS`` and it carries at least
  ``GAP_MIN_TERMS`` content words the description does not use. Claude Code's body structure
  is one fact: the rule, then ``**Why:**`` (its reason) and ``**How to apply:**`` (when it
  applies) — only the rule part is checked, never the reason or the guidance.
* ``near-duplicate`` — two notes whose title vectors (name + description) have cosine ≥
  ``DUP_COS``.
* ``name-collision`` — two files declare the same ``name`` (case-insensitive).
* ``skipped`` — files that could not be indexed, with the reason.
* ``missing-successor`` — a note says it is superseded by a note the folder does not have, or
  by none.
* ``unknown-value`` — a ``status`` or ``priority`` the engine does not know (a typo): it is read
  as the default (current; not a priority note).
* ``supersede-cycle`` — notes that supersede each other in a circle (no current decision).
* ``priority-over-budget`` — more ``priority: high`` notes than the block's priority budget
  holds: a task is given those most likely to matter to it, the rest not (which ones depends on
  the task; its preseed names them).
"""

from __future__ import annotations

import json
import re

import numpy as np

from .text import _sentences, content_terms
from .types import LintIssue

# Claude Code memory bodies: "<rule>\n\n**Why:** <reason>\n\n**How to apply:** <when>"
_SUPPORT = re.compile(r"^[ \t>*_-]*(?:\*\*|__)?\s*(?:why|how to apply)\s*(?:\*\*|__)?\s*:",
                      re.IGNORECASE | re.MULTILINE)


def fact_part(body: str) -> str:
    """The part of a note body that states its fact: everything before Claude Code's
    ``**Why:**`` / ``**How to apply:**`` lines (the whole body when it has none)."""
    m = _SUPPORT.search(body)
    return body[: m.start()] if m else body


GAP_COS = 0.20
GAP_MIN_TERMS = 3
DUP_COS = 0.92


def lint(engine) -> list[LintIssue]:
    """Run every check on ``engine``'s current index → issues sorted by (kind, path)."""
    store = engine.store
    issues: list[LintIssue] = []
    rows = store.lint_rows()
    by_id = {r[0]: r for r in rows}

    for r in rows:
        if not r[5]:
            issues.append(LintIssue("no-description", r[1],
                                    f"{r[1]} has no description; add one line saying what it is about"))

    for path, raw in store.note_warnings():
        try:
            said = json.loads(raw)
        except ValueError:
            continue
        if any(isinstance(w, str) and w.startswith(("no name;", "no frontmatter;")) for w in said):
            issues.append(LintIssue("no-name", path, f"{path} has no name in its frontmatter, so its file name is "
                                                     "used (a rename changes it); add name: …"))
        for w in said:
            if isinstance(w, str) and w.startswith(("unknown status ", "unknown priority ")):
                issues.append(LintIssue("unknown-value", path, f"{path}: {w}"))
            elif isinstance(w, str) and w.startswith("superseded without a successor"):
                issues.append(LintIssue("missing-successor", path, f"{path} is {w}; name the note that replaces "
                                                                   "it, or say status: deprecated"))

    groups: dict[str, list] = {}
    for r in rows:
        groups.setdefault(r[2].lower(), []).append(r)
    for rs in groups.values():
        if len(rs) > 1:
            rs = sorted(rs, key=lambda r: r[1])
            for other in rs[1:]:
                issues.append(LintIssue("name-collision", other[1],
                                        f"{other[1]} and {rs[0][1]} are both named {rs[0][2]!r}",
                                        other=rs[0][1]))

    # title vectors
    tv = store.title_vectors()
    if tv:
        ids = np.array([t[0] for t in tv])
        mat = np.frombuffer(b"".join(t[1] for t in tv), np.float32).reshape(len(tv), -1)
        for start in range(0, len(ids), 1024):
            block = mat[start: start + 1024] @ mat.T
            for i, j in zip(*np.nonzero(block >= DUP_COS), strict=False):
                a, b = start + i, j
                if a < b:
                    ra, rb = sorted((by_id[int(ids[a])], by_id[int(ids[b])]), key=lambda r: r[1])
                    if ra[2].lower() == rb[2].lower():
                        continue  # already a name collision
                    issues.append(LintIssue(
                        "near-duplicate", ra[1],
                        f"{ra[1]} and {rb[1]} say nearly the same thing "
                        f"(cosine {float(block[i, j]):.2f}); merge them or sharpen the descriptions",
                        other=rb[1]))
        title_of = {int(i): mat[k] for k, i in enumerate(ids)}

        # description gaps: embed body sentences of described notes
        sents, owners = [], []
        for r in rows:
            if r[5] and r[4].strip() and r[0] in title_of:
                for s in _sentences(fact_part(r[4])):
                    sents.append(s)
                    owners.append(r[0])
        if sents:
            sv = engine.embedder.encode(sents)
            flagged: set[int] = set()
            for s, nid, v in zip(sents, owners, sv, strict=False):
                if nid in flagged:
                    continue
                r = by_id[nid]
                cos = float(v @ title_of[nid])
                desc_terms = {t[:5] for t in content_terms(r[2] + " " + r[3])}
                new_terms = [t for t in content_terms(s) if t[:5] not in desc_terms]
                if cos < GAP_COS and len(set(new_terms)) >= GAP_MIN_TERMS:
                    flagged.add(nid)
                    issues.append(LintIssue(
                        "description-gap", r[1],
                        f"{r[1]}: the body says something the description does not cover "
                        f"({s[:80]!r}); split it into its own note or widen the description"))

    for p, why in store.skipped_files():
        issues.append(LintIssue("skipped", p, f"{p} is not indexed: {why}"))
    from .preseed import PRIORITY_BUDGET_TOKENS, line_tokens

    issues += lifecycle_issues(store, PRIORITY_BUDGET_TOKENS, line_tokens)
    issues.sort(key=lambda i: (i.kind, i.path, i.other or ""))
    return issues


def _successor_key(ref: str) -> tuple[str, str]:
    """A successor reference as (name-ish, record number): ``"0012-use-x.md"`` → ("0012-use-x",
    "12"); ``"ADR-0012"`` → ("adr-0012", "12")."""
    stem = ref.rsplit("/", 1)[-1]
    if stem.lower().endswith(".md"):
        stem = stem[:-3]
    num = re.search(r"(\d{1,5})", stem)
    return stem.casefold(), str(int(num.group(1))) if num else ""


def resolve_successors(lifecycles, notes) -> dict[int, str]:
    """``{note id: successor's name}`` from ``Store.lifecycles()`` rows ``(id, name, path, status,
    superseded_by)`` and ``Store.note_list()`` rows ``(name, description, priority, path)``: the
    successor named exactly, else the note whose file is named so, else — for a reference such
    as "ADR-0012" — the note in the same folder whose file or name carries that record number.
    Unresolved references are left out (lint reports them)."""
    by_name = {n.casefold(): n for n, _d, _p, _path in notes}
    by_stem: dict[str, str] = {}
    by_num: dict[tuple[str, str], str] = {}
    for n, _d, _p, path in notes:
        folder, _, file = path.rpartition("/")
        stem, num = _successor_key(file)
        by_stem.setdefault(stem, n)
        lead = re.match(r"(?:[a-z]+-)?0*(\d{1,5})\b", file.casefold())
        if lead:
            by_num.setdefault((folder, lead.group(1)), n)
        lead = re.search(r"(?:adr|rfc|decision)[-_ ]?0*(\d{1,5})", n.casefold())
        if lead:
            by_num.setdefault((folder, lead.group(1)), n)
    out: dict[int, str] = {}
    for nid, name, path, _status, ref in lifecycles:
        if not ref:
            continue
        stem, num = _successor_key(ref)
        folder = path.rpartition("/")[0]
        found = by_name.get(ref.casefold()) or by_stem.get(stem) or (by_num.get((folder, num)) if num else None)
        if found and found.casefold() != name.casefold():
            out[nid] = found
    return out


def lifecycle_issues(store, priority_budget_tokens: int, line_cost) -> list[LintIssue]:
    """The lifecycle and priority checks (module docstring)."""
    issues: list[LintIssue] = []
    lifecycles = store.lifecycles()
    notes = store.note_list()
    resolved = resolve_successors(lifecycles, notes)
    for nid, name, path, _status, ref in lifecycles:
        if ref and nid not in resolved:
            own = (name.casefold(), path.casefold(), path.rsplit("/", 1)[-1].removesuffix(".md").casefold())
            if ref.casefold() in own:
                issues.append(LintIssue("missing-successor", path, f"{path} says it is superseded by itself; "
                                        "name the note that replaces it in superseded_by"))
                continue
            issues.append(LintIssue("missing-successor", path,
                                    f"{path} is superseded by {ref!r}, which no note of this folder is; "
                                    "fix superseded_by (a note name) or add the successor"))
    name_of = {nid: name for nid, name, *_ in lifecycles}
    path_of = {nid: path for nid, _n, path, *_ in lifecycles}
    id_of = {name.casefold(): nid for nid, name, *_ in lifecycles}
    reported: set[int] = set()
    for start in resolved:
        seen, cur = [start], start
        while cur in resolved:
            nxt = id_of.get(resolved[cur].casefold())
            if nxt is None:
                break
            if nxt in seen:
                loop = seen[seen.index(nxt):]
                if not reported & set(loop):
                    reported |= set(loop)
                    names = " → ".join(name_of[i] for i in [*loop, nxt])
                    issues.append(LintIssue("supersede-cycle", path_of[loop[0]],
                                            f"these notes supersede each other in a circle: {names}; "
                                            "one of them must be the current decision"))
                break
            seen.append(nxt)
            cur = nxt
    prio = [(n, d, path) for n, d, p, path in notes if p]
    total, over = 0, []
    for n, d, path in prio:
        total += line_cost(n, d)
        if total > priority_budget_tokens:
            over.append((n, path))
    if over:
        issues.append(LintIssue("priority-over-budget", over[0][1],
                                f"{len(prio)} priority notes; {len(over)} do not fit the "
                                f"{priority_budget_tokens}-token priority budget: each task is given the "
                                f"{len(prio) - len(over)} most likely to matter to it and the rest are left out "
                                "(which ones depends on the task: its preseed names them): keep priority: high "
                                "for the few rules every task needs"))
    return issues
