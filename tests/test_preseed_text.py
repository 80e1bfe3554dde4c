"""The preseed's block text is pinned: the same notes and task give the same block, byte for
byte, whatever the engine has cached (rows, query vectors) and whichever way the vector lane
runs (exact scan, or the compact first stage). ``data/memory/preseed_golden.json`` holds the
blocks the engine gave before its preseed was made faster (issue 24, target 4); a change to
ranking, judging or rendering shows here as a diff of the block. Regenerate it only for a
change meant to alter the block: ``python tests/test_preseed_text.py --write``."""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

import pytest
from test_memory_support import HashEmbedder

GOLDEN = Path(__file__).parent / "data" / "memory" / "preseed_golden.json"
WORDS = ("deploy cache queue worker billing invoice retry timeout schema migration token session "
         "ledger report export import webhook cron backup restore index shard replica proxy "
         "gateway tenant quota audit login password email template render upload bucket").split()
TASKS = [
    "fix the retry timeout in the billing worker",
    "deploy ship-v2 to the staging gateway on port 6443",
    "the invoice export job fails after the schema migration",
    "add a webhook for tenant quota changes",
    "write a haiku about autumn leaves",
    "rotate the session token used by the login proxy",
    "why does the backup restore skip the replica shard",
    "INF-4091 audit report template renders empty",
]


def write_notes(folder: Path) -> list[str]:
    """400 notes made from a fixed vocabulary (identifiers, 31 priority notes, a superseded
    chain) → the tasks: ``TASKS`` and two that restate a note's description."""
    rng = random.Random(24)
    folder.mkdir(parents=True, exist_ok=True)
    descriptions = []
    for i in range(400):
        topic = rng.sample(WORDS, 3)
        name = f"{topic[0]}-{topic[1]}-{i}"
        desc = f"The {topic[0]} {topic[1]} uses {topic[2]} (INF-{4000 + i})"
        descriptions.append(desc)
        sents = [" ".join(rng.choices(WORDS, k=rng.randint(6, 14))).capitalize() + "." for _ in range(rng.randint(1, 5))]
        if i % 7 == 0:
            sents.append(f"Run ship-v{i % 3} on port {6400 + i}.")
        meta = "priority: high\n" if i % 13 == 0 else ""
        if i == 20:
            meta += "status: superseded\nsuperseded_by: deploy-gateway-41\n"
        if i == 41:
            name = "deploy-gateway-41"
        (folder / f"{name}.md").write_text(f"---\nname: {name}\ndescription: {desc}\n{meta}---\n{' '.join(sents)}\n",
                                           encoding="utf-8")
    return [*TASKS, descriptions[5], f"how does the {descriptions[77].lower()} work"]


def blocks(tmp: Path, first_stage: bool) -> dict[str, str]:
    """Each task's block (top_k 5 and the default), with the compact first stage on (from 64
    rows, a shortlist of 200 of the ≈ 1,000 rows) or off."""
    from memory import MemoryEngine, search

    saved = search.FIRST_STAGE_MIN_ROWS, search.FIRST_STAGE_MIN_SHORTLIST
    if first_stage:
        search.FIRST_STAGE_MIN_ROWS, search.FIRST_STAGE_MIN_SHORTLIST = 64, 16
    try:
        tasks = write_notes(tmp / "notes")
        with MemoryEngine(tmp / "notes", index_path=tmp / "i.sqlite", model=HashEmbedder(dim=64)) as eng:
            eng.sync()
            assert (eng.mirror._proj is not None) == first_stage
            out = {}
            for task in tasks:
                out[f"{task} | 5"] = eng.build_preseed(task, 5).text
                out[task] = eng.build_preseed(task).text
            return out
    finally:
        search.FIRST_STAGE_MIN_ROWS, search.FIRST_STAGE_MIN_SHORTLIST = saved


@pytest.mark.parametrize("first_stage", [False, True], ids=["exact-scan", "first-stage"])
def test_the_block_text_is_the_pinned_one(tmp_path, first_stage):
    want = json.loads(GOLDEN.read_text(encoding="utf-8"))["first-stage" if first_stage else "exact-scan"]
    got = blocks(tmp_path, first_stage)
    assert sum("<project-notes>" in t for t in got.values()) >= len(TASKS)  # the corpus gives blocks
    assert sum("\n[" in t for t in got.values()) >= 2  # … and judged lines, not only ★ and the index
    for key in want:
        assert got[key] == want[key], key


def test_the_block_is_the_same_from_a_cold_engine_a_warm_one_and_a_given_vector(tmp_path):
    from memory import MemoryEngine

    tasks = write_notes(tmp_path / "notes")
    model = HashEmbedder(dim=64)
    with MemoryEngine(tmp_path / "notes", index_path=tmp_path / "i.sqlite", model=model) as eng:
        eng.sync()
        cold = {t: eng.build_preseed(t, 5).text for t in tasks}
        warm = {t: eng.build_preseed(t, 5).text for t in reversed(tasks)}  # rows and vectors cached
        given = {t: eng.build_preseed(t, 5, query_vector=model.encode([t])[0]).text for t in tasks}
    with MemoryEngine(tmp_path / "notes", index_path=tmp_path / "i.sqlite", model=model) as other:
        fresh = {t: other.build_preseed(t, 5).text for t in tasks}
    assert cold == warm == given == fresh


if __name__ == "__main__" and "--write" in sys.argv:
    import tempfile

    with tempfile.TemporaryDirectory() as a, tempfile.TemporaryDirectory() as b:
        data = {"exact-scan": blocks(Path(a), False), "first-stage": blocks(Path(b), True)}
    GOLDEN.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {GOLDEN}")


def test_a_priority_note_the_judge_chose_too_gets_its_body_snippet():
    """The README's own example: a ★ note whose body holds the deploy command, asked about that
    deploy. Given first as a ★ line, it counts among the judged lines that carry a body snippet;
    a ★ note the judge did not choose stays a bare line."""
    from memory.preseed import render_block
    from memory.types import Hit

    stack = Hit("staging-stack", "Staging runs on host callisto, port 6443", "", True, 0.9, Path("s.md"))
    rule = Hit("no-force-push", "Never force-push main", "", True, 0.1, Path("r.md"))
    other = Hit("deploy-notes", "Deploys are announced in #ops", "", False, 0.5, Path("d.md"))
    bodies = {"staging-stack": "Deploy with make ship-v2 from the repository root.",
              "no-force-push": "Ask in #ops first.", "deploy-notes": "Post the release tag."}

    def fill(h: Hit) -> Hit:
        return Hit(h.name, h.description, bodies[h.name], h.priority, h.score, h.path)

    text = render_block([stack, rule], [stack, other], [], fill=fill).text
    assert "★ [staging-stack] Staging runs on host callisto, port 6443 — Deploy with make ship-v2" in text
    assert "[deploy-notes] Deploys are announced in #ops — Post the release tag." in text
    assert "★ [no-force-push] Never force-push main\n" in text  # not chosen for this task: no body
    assert text.count("staging-stack") == 1
