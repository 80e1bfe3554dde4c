"""Lint: advice about notes a person should fix. Reads the index only; never edits a file.

Checks:

* ``no-description`` — the note has no ``description`` (search sees only its first line).
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
"""

from __future__ import annotations

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
    issues.sort(key=lambda i: (i.kind, i.path, i.other or ""))
    return issues
