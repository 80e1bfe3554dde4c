"""A compositor that repaints what changed, not the box around it.

Textual's compositor paints a partial update by rendering every widget whose *clip* meets the
*bounding box* of the regions that changed, each one whole. In a grid of panes the clip of every
pane is the grid, and the box is mostly the whole grid: two bodies that got text on one flush
tick (top-left and bottom-right), or the two title rows a key re-highlights, and all nine panes
are rendered again, every row (≈ 30-40 widget renders a frame where a few changed: most of the
app's CPU while nine sessions stream; docs/BENCHMARKS.md, Issue 24).

``SplitCompositor`` groups the changed regions into boxes that do not overlap (``clusters``) and
renders, for each box, only the widgets whose visible region meets it, and only their rows
inside it (each row whole, so a line's fragments between widget edges — its *chops* — are
whole). A chop's widgets are the same all along it and it lies inside each one's visible region,
so the frontmost widget of a chop that meets a box is rendered with that box: each chop that
meets a box gets what Textual's one box around everything would have given. The update sent to
the terminal (its spans) is the same. With more than ``MAX_CLUSTERS`` boxes, or if Textual's
internals differ, it does what Textual does.
"""

from __future__ import annotations

from typing import Any

from textual._compositor import ChopsUpdate, Compositor
from textual.geometry import Region
from textual.strip import Strip

MAX_CLUSTERS = 12  # more separate boxes than this: one box (each box is one pass over the widgets)


def clusters(regions: list[Region]) -> list[Region]:
    """Boxes around ``regions``, grouped so that no two boxes overlap (a region that overlaps
    a box joins it, and boxes that come to overlap merge)."""
    boxes: list[Region] = []
    for region in regions:
        box = region
        merged = True
        while merged:
            merged = False
            for i, other in enumerate(boxes):
                if other.overlaps(box):
                    box = Region.union(box, other)
                    del boxes[i]
                    merged = True
                    break
        boxes.append(box)
    return boxes


class SplitCompositor(Compositor):
    """``Compositor`` whose partial updates render, per box of changed regions, the rows of the
    widgets that box meets."""

    def render_partial_update(self) -> ChopsUpdate | None:
        dirty: Any = getattr(self, "_dirty_regions", None)
        to_spans = getattr(self, "_regions_to_spans", None)
        if not isinstance(dirty, set) or to_spans is None or not dirty:
            return super().render_partial_update()
        screen_region = self.size.region
        regions = [r for r in (region.intersection(screen_region) for region in dirty) if r]
        boxes = clusters(regions)
        if len(boxes) > MAX_CLUSTERS:
            return super().render_partial_update()
        dirty.clear()
        spans = list(to_spans(regions))
        if not spans:
            return None
        rendered_lines = {y for y, _, _ in spans}
        cuts = self.cuts
        chops: list[dict[int, Strip | None]] = [dict.fromkeys(cut_set[:-1]) for cut_set in cuts]
        widgets = [(widget, region, region.intersection(clip))
                   for widget, (region, clip) in self.visible_widgets.items()]
        for box in boxes:
            self._render_box(box, rendered_lines, widgets, chops, cuts)
        chop_ends = [cut_set[1:] for cut_set in cuts]
        return ChopsUpdate(chops, spans, chop_ends)

    @staticmethod
    def _render_box(box: Region, rendered_lines: set[int], widgets: list[tuple[Any, Region, Region]],
                    chops: list[dict[int, Strip | None]], cuts: list[list[int]]) -> None:
        """Fill ``chops`` of the rows of ``box`` in ``rendered_lines`` that meet ``box``, widgets
        front to back (the first to fill a chop wins, as in Textual)."""
        box_x1, box_x2 = box.x, box.right
        box_y1, box_y2 = box.y, box.bottom
        for widget, region, visible in widgets:
            x, y, width, height = visible
            if not (width and height) or x >= box_x2 or x + width <= box_x1:
                continue
            top, bottom = max(y, box_y1), min(y + height, box_y2)
            if top >= bottom:
                continue
            rows = [row for row in range(top, bottom) if row in rendered_lines]
            if not rows:
                continue
            top, bottom = rows[0], rows[-1] + 1
            strips = widget.render_lines(Region(x - region.x, top - region.y, width, bottom - top))
            last = x + width
            for row, strip in zip(range(top, bottom), strips, strict=False):
                if row not in rendered_lines:
                    continue
                line = chops[row]
                row_cuts = [cut for cut in cuts[row] if last >= cut >= x]
                # the chops of this row inside the widget that meet the box, not filled yet
                rel = [c - x for c in row_cuts[1:]]
                # one piece, the whole strip: not through Strip.divide, which caches [strip] in the
                # strip itself — a reference cycle per line, garbage only the collector frees (its
                # passes then stall frames: 20-30 ms each, measured in tui_bench)
                pieces = [strip] if rel == [strip.cell_length] else strip.divide(rel)
                for cut, end, piece in zip(row_cuts, row_cuts[1:], pieces, strict=False):
                    if end > box_x1 and cut < box_x2 and line.get(cut) is None:
                        line[cut] = piece
