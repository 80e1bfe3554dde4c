"""The repaint scheduler on its own (no Textual): which panes a flush tick redraws."""

from cockpit.tui.repaint import RepaintScheduler


def sched() -> RepaintScheduler:
    return RepaintScheduler(tick_hz=20, pane_max_hz=10, budget_hz=36)


def test_anything_but_text_is_drawn_on_the_next_tick_every_time():
    s = sched()
    s.mark("a")
    assert s.due(0.0) == {"a"}
    s.mark("a")  # again 10 ms later: a status is never held back
    assert s.due(0.01) == {"a"}
    assert s.due(0.02) == set()  # nothing changed since


def test_one_streaming_pane_is_redrawn_at_most_ten_times_a_second():
    s = sched()
    drawn = []
    for tick in range(40):  # two seconds of ticks, new text before each
        now = tick / 20
        s.mark("a", urgent=False)
        if s.due(now):
            drawn.append(now)
    assert 19 <= len(drawn) <= 21  # ~10 Hz
    assert all(b - a >= 0.074 for a, b in zip(drawn, drawn[1:], strict=False))


def test_nine_streaming_panes_share_the_budget_oldest_first_two_a_tick():
    s = sched()
    panes = [f"p{i}" for i in range(9)]
    counts = dict.fromkeys(panes, 0)
    for tick in range(100):  # five seconds
        for p in panes:
            s.mark(p, urgent=False)
        got = s.due(tick / 20)
        assert len(got) <= 2  # no tick carries every body
        for p in got:
            counts[p] += 1
    total = sum(counts.values())
    assert 36 * 5 * 0.9 <= total <= 36 * 5 * 1.05  # the budget, not more
    assert max(counts.values()) - min(counts.values()) <= 2  # shared evenly (oldest first)


def test_an_urgent_pane_does_not_take_a_text_slot_and_forget_drops_a_pane():
    s = sched()
    for p in ("a", "b", "c"):
        s.mark(p, urgent=False)
    s.mark("x")
    first = s.due(0.0)
    assert "x" in first and len(first - {"x"}) == 2
    s.forget("a")
    s.forget("b")
    s.forget("c")
    assert s.due(1.0) == set() and "a" not in s.last


def test_panes_out_of_sight_stay_dirty_until_shown():
    s = sched()
    s.mark("on-page", urgent=False)
    s.mark("off-page")  # even a status change waits: nothing of it is on screen
    assert s.due(0.0, visible={"on-page"}) == {"on-page"}
    assert s.due(0.1, visible={"on-page"}) == set()
    assert s.due(0.2, visible={"on-page", "off-page"}) == {"off-page"}  # the page changed: drawn now
