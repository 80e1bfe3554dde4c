"""Small text helpers shared by search, preseed, lint and eval: tokenising queries
(identifier-aware), the FTS5 MATCH expression, the texts that get embedded, and snippets."""

from __future__ import annotations

import functools
import re

from .bounds import MAX_QUERY_CHARS, as_text, bound_query  # noqa: F401 - re-exported

# words, keeping identifiers whole: ship-v2, pgb.stg.qm.internal:6432, HBL-LED-4091, hbl_test_
_WORD = re.compile(r"[A-Za-z0-9]+(?:[-_.:/][A-Za-z0-9]+)*")
_PART = re.compile(r"[A-Za-z0-9]+")

STOPWORDS = frozenset("""
a about above after again against all am an and any are as at be because been before being
below between both but by can could did do does doing down during each few for from further had
has have having he her here hers herself him himself his how i if in into is it its itself just
me more most my myself no nor not now of off on once only or other our ours ourselves out over
own same she should so some such than that the their theirs them themselves then there these
they this those through to too under until up very was we were what when where which while who
whom why will with would you your yours yourself yourselves let lets get gets got make made
use using used new add want need needs like ok okay one also us way still yet via per
""".split())


def words(text: str) -> list[str]:
    """Identifier-aware words of ``text`` in order (``ship-v2`` stays one word)."""
    return _WORD.findall(text)


def is_identifier(word: str) -> bool:
    """True for tokens that look like identifiers rather than prose: they contain a digit, an
    underscore, or inner punctuation (``-``, ``.``, ``:``, ``/``), e.g. ``ship-v2``, ``6443``,
    ``--dry-run`` (as ``dry-run``), ``stop_events``, ``HAR-2291``."""
    return bool(re.search(r"\d|[_.:/-]", word))


def content_terms(text: str) -> list[str]:
    """Lower-cased alphanumeric parts of ``text`` without stopwords and 1-letter parts (the
    parts of :func:`words`' words, in order: every ASCII letter-or-digit run lies in one word,
    so one pass over ``text`` finds them)."""
    out = []
    for p in _PART.findall(text):
        p = p.lower()
        if len(p) > 1 and p not in STOPWORDS or p.isdigit():
            out.append(p)
    return out


def quote(s: str) -> str:
    """An FTS5 string literal (a phrase when it holds several words)."""
    return '"' + s.replace('"', '""') + '"'


def fts_terms(query: str) -> tuple[list[str], list[str]]:
    """Keyword-lane terms of ``query``: ``(items, identifier_phrases)``.

    ``items`` are the FTS5 phrases to OR together: each identifier as a phrase of its parts
    (``ship-v2`` → ``ship v2``, matched by the ``unicode61`` tokenizer exactly where ``ship-v2``
    was written) and every content term (stopwords and 1-letter parts dropped, numbers kept).
    ``identifier_phrases`` are the phrases of identifier-like words (see :func:`is_identifier`),
    single parts included (``6443``).
    """
    phrases: list[str] = []
    terms: list[str] = []
    idents: list[str] = []
    for w in words(query):
        parts = _PART.findall(w.lower())
        if is_identifier(w):
            idents.append(" ".join(parts))
            if len(parts) > 1:
                phrases.append(" ".join(parts))
        for p in parts:
            if (len(p) > 1 and p not in STOPWORDS) or p.isdigit():
                terms.append(p)
                root = derivation_root(p)
                if root:
                    terms.append(root)
    return list(dict.fromkeys([*phrases, *terms])), list(dict.fromkeys(idents))


_DERIVED = re.compile(r"^([a-z]{4,}?)(ification|ifying|ified|ifies|ify|ization|isation|izing|ized|izes|ize)$")


def derivation_root(term: str) -> str:
    """The word a verb was made from, when the porter stemmer does not reach it: ``slugify`` →
    ``slug``, ``tokenize`` → ``token``, ``stringify`` → ``string`` ("" for other words)."""
    m = _DERIVED.match(term)
    return m.group(1) if m else ""


def title_text(name: str, description: str) -> str:
    return f"{name.replace('-', ' ').replace('_', ' ')}: {description}".strip()


def chunk_body(body: str, max_words: int = 120) -> list[str]:
    """Split a body into chunks of ≤ ``max_words`` words along paragraph/sentence lines."""
    body = body.strip()
    if not body:
        return []
    pieces = [p.strip() for p in re.split(r"\n\s*\n|(?<=[.!?])\s+(?=[A-Z`*\-])", body) if p.strip()]
    chunks: list[str] = []
    cur: list[str] = []
    n = 0
    for p in pieces:
        k = len(p.split())
        if cur and n + k > max_words:
            chunks.append(" ".join(cur))
            cur, n = [], 0
        cur.append(p)
        n += k
    if cur:
        chunks.append(" ".join(cur))
    return chunks


def note_texts(name: str, description: str, body: str) -> tuple[list[str], list[str]]:
    """The texts embedded for one note and their kinds: the title (name + description) and the
    body chunks, each prefixed with the name so a chunk keeps its topic."""
    texts = [title_text(name, description)]
    kinds = ["title"]
    for i, ch in enumerate(chunk_body(body)):
        texts.append(f"{name.replace('-', ' ')}: {ch}")
        kinds.append(f"body{i}")
    return texts, kinds


_HEADING = re.compile(r"^\s{0,3}#{1,6}\s")


def _sentences(body: str) -> list[str]:
    """The body's sentences, paragraph by paragraph; Markdown heading lines are left out (an ADR's
    "# 0007. Use arq" / "## Status" are labels, not facts to quote or to check)."""
    out: list[str] = []
    for para in re.split(r"\n\s*\n", body):
        text = " ".join(" ".join(ln for ln in para.splitlines() if not _HEADING.match(ln)).split())
        out += [s.strip() for s in re.split(r"(?<=[.!?])\s+", text) if s.strip()]
    return out


@functools.lru_cache(maxsize=4096)
def _sentence_terms(body: str) -> tuple[tuple[str, frozenset[str]], ...]:
    """The sentences of ``body`` with their content-term prefixes (cached: the same notes come
    up in search after search, and splitting + tokenising a body is most of a snippet's cost)."""
    return tuple((s, frozenset(t[:5] for t in content_terms(s))) for s in _sentences(body))


@functools.lru_cache(maxsize=256)
def _query_prefixes(query: str) -> frozenset[str]:
    return frozenset(t[:5] for t in content_terms(query))


def query_terms(query: str) -> frozenset[str]:
    """The task's content words as 5-letter prefixes (a cheap stemmer: ``deploys`` and
    ``deployment`` meet at ``deplo``), stopwords and 1-letter words left out."""
    return _query_prefixes(query)


@functools.lru_cache(maxsize=8192)
def _note_prefixes(name: str, description: str, body: str) -> frozenset[str]:
    return frozenset(t[:5] for t in content_terms(f"{name.replace('-', ' ').replace('_', ' ')} "
                                                  f"{description} {body}"))


def coverage(terms: frozenset[str], name: str, description: str, body: str) -> float:
    """Term coverage: the share of ``terms`` (from :func:`query_terms`) found in a note's name,
    description or body (0…1; 0.0 when ``terms`` is empty)."""
    if not terms:
        return 0.0
    return len(terms & _note_prefixes(name, description, body)) / len(terms)


def snippet(body: str, query: str, max_chars: int = 160) -> str:
    """The body sentence sharing most content terms with ``query`` (first sentence on a tie),
    cut to ``max_chars`` at a word boundary with "…". "" for an empty body."""
    sents = _sentence_terms(body)
    if not sents:
        return ""
    q = _query_prefixes(query)
    best, best_score = sents[0][0], 0
    for s, terms in sents:
        score = len(q & terms)
        if score > best_score:
            best, best_score = s, score
    if len(best) <= max_chars:
        return best
    cut = best[: max_chars - 1].rsplit(" ", 1)[0]
    return cut + "…"
