"""The main screen's compositor (``cockpit.tui.compositor.SplitCompositor``) renders each box of
changed regions on its own: what it sends to the terminal must be exactly what Textual's
compositor paints for the same changes — whatever regions changed, wherever they are (cell by
cell: Textual's also moves the cursor to the edge of a span, painting nothing there)."""

from __future__ import annotations

import random

from rich.cells import cell_len
from rich.segment import ControlType
from textual._compositor import Compositor
from textual.geometry import Region
from tui_fakes import FakeManager, session_script, settled, until

from cockpit.events import SessionStatus as S
from cockpit.tui import CockpitApp
from cockpit.tui.compositor import SplitCompositor, clusters

STATES = (S.STREAMING, S.WAITING, S.DONE, S.ERROR)


def test_clusters_merge_what_overlaps_and_keep_the_rest_apart():
    a, b, c = Region(0, 0, 10, 2), Region(5, 1, 10, 2), Region(50, 20, 5, 5)
    boxes = clusters([a, c, b])
    assert sorted(boxes) == sorted([Region(0, 0, 15, 3), c])
    # a chain: the third joins the first two's box only through the second
    chain = clusters([Region(0, 0, 4, 1), Region(10, 0, 4, 1), Region(3, 0, 8, 1)])
    assert chain == [Region(0, 0, 14, 1)]
    for boxes in (clusters([Region(x, y, 7, 3) for x in range(0, 60, 5) for y in range(0, 20, 4)]),):
        assert all(not p.overlaps(q) for i, p in enumerate(boxes) for q in boxes[i + 1:])


def _update(compositor: Compositor, regions: list[Region], split: bool, console) -> dict:
    """The cells the update paints on a terminal: (x, y) → (character, style)."""
    compositor._dirty_regions.update(regions)
    update = compositor.render_partial_update() if split else Compositor.render_partial_update(compositor)
    cells: dict = {}
    if update is None:
        return cells
    x = y = 0
    for segment in update.__rich_console__(console, console.options):
        if segment.control:
            for code in segment.control:
                if code[0] is ControlType.CURSOR_MOVE_TO:
                    x, y = code[1], code[2]
            continue
        if segment.text == "\n":
            continue
        for char in segment.text:
            cells[x, y] = (char, segment.style)
            x += cell_len(char)
    return cells


async def test_a_partial_update_paints_what_textuals_paints():
    mgr = FakeManager()
    app = CockpitApp(mgr)
    async with app.run_test(size=(200, 50)) as pilot:
        for n in range(1, 10):
            words = " ".join(f"w{n}_{i}" for i in range(300))
            mgr.emit(*session_script(f"s{n:05d}", f"task {n}", STATES[n % 4], text=f"# Answer {n}\n\n{words}"))
        await until(pilot, lambda: len(app.panes) == 9, "nine panes")
        await settled(pilot, app)
        screen = app.screen
        compositor = screen._compositor
        assert isinstance(compositor, SplitCompositor)
        panes = list(screen.grid.panes)
        bodies = [p.query_one("#pane-body").region for p in panes]
        titles = [Region(p.region.x, p.region.y, p.region.width, 1) for p in panes]
        cases = [
            [bodies[0], bodies[8]],  # two bodies far apart (a flush tick)
            [titles[2], titles[3]],  # a key moves the selection
            [titles[0]],
            [bodies[4]],
            [bodies[1], bodies[2], titles[5]],
            [screen.region],  # everything
            [Region(0, 0, 200, 1), Region(0, 49, 200, 1)],  # the header and the footer rows
        ]
        rng = random.Random(7)
        for _ in range(60):  # anywhere on screen, overlapping or not, at any size
            cases.append([Region(rng.randrange(200), rng.randrange(50), rng.randint(1, 80), rng.randint(1, 20))
                          .intersection(screen.region) for _ in range(rng.randint(1, 6))])
        for regions in cases:
            ours = _update(compositor, regions, True, app.console)
            theirs = _update(compositor, regions, False, app.console)
            assert ours == theirs, regions
            assert ours
