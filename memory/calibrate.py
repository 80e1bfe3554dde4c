"""Learning from the user's own sessions: misses (a note the session read in full that its
preseed did not give as a line) and given-but-unused lines become labelled examples, and the
judge's line threshold is refitted on them.

An example is ``(task, note name, label)``. Its probability is what the judge gives that note for
that task *now* (the index as it is), so a calibration always fits the current engine. The
threshold chosen is the one that keeps the most positives while adding the fewest negatives
(``positives kept − negatives kept``, ties going to the threshold closest to the current one), on
a grid of 0.05 … 0.95. The caller decides whether to keep it (``cockpit memory calibrate``
checks it against labelled query files first and refuses a refit that makes them worse).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Example:
    task: str
    name: str
    label: bool          # True: a miss (the note was needed); False: given but unused
    session: str = ""


def probabilities(engine, examples: list[Example]) -> list[float]:
    """The judge's probability of each example's note for its task (0 when the note is not among
    the candidates any more)."""
    out = []
    cache: dict[str, dict[str, float]] = {}
    for ex in examples:
        if ex.task not in cache:
            pre = engine.build_preseed(ex.task)
            cache[ex.task] = {h.name.casefold(): float(h.probability or 0.0) for h in pre.considered}
        out.append(cache[ex.task].get(ex.name.casefold(), 0.0))
    return out


def fit_line(examples: list[Example], probs: list[float], current: float) -> tuple[float, dict]:
    """``(threshold, report)``: the line threshold that best separates ``examples`` (module
    docstring) and, for the current and the new threshold, positives and negatives kept."""
    grid = [round(0.05 * i, 2) for i in range(1, 20)]

    def kept(t: float) -> tuple[int, int]:
        pos = sum(1 for e, p in zip(examples, probs, strict=True) if e.label and p >= t)
        neg = sum(1 for e, p in zip(examples, probs, strict=True) if not e.label and p >= t)
        return pos, neg

    best = max(grid, key=lambda t: (kept(t)[0] - kept(t)[1], -abs(t - current)))
    pos_now, neg_now = kept(current)
    pos_new, neg_new = kept(best)
    far = sorted({e.name for e, p in zip(examples, probs, strict=True) if e.label and p < grid[0]})
    report = {"examples": len(examples), "positives": sum(e.label for e in examples), "out_of_reach": far,
              "negatives": sum(not e.label for e in examples),
              "before": {"line": current, "misses_given": pos_now, "unused_given": neg_now},
              "after": {"line": best, "misses_given": pos_new, "unused_given": neg_new}}
    return best, report
