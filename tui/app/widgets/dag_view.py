"""The live workflow DAG: one widget drawn with the line API (``render_line``).

The layout (dag_layout.py) is computed once per graph; state changes only
recolour nodes, and only the rows of changed nodes are re-rendered. Rows are
cached as full-width strips and cropped to the scroll window on the way out.
"""

from __future__ import annotations

from dataclasses import dataclass

from rich.segment import Segment as RichSegment
from rich.style import Style
from textual import events
from textual.binding import Binding
from textual.geometry import Region, Size
from textual.message import Message
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip

from engine.states import StepStatus
from tui.app.run_state import RunView
from tui.app.status_style import STATUS_CLASSES, status_class
from tui.app.widgets.dag_layout import DagLayout, PlacedNode, compute_layout

ZOOM_WIDTHS: tuple[int, ...] = (10, 18, 28, 36)
GAP = 2
GUTTER = 6

GLYPHS: dict[StepStatus, str] = {
    StepStatus.PENDING: "○",
    StepStatus.RUNNING: "▶",
    StepStatus.WAITING_HUMAN: "‖",
    StepStatus.SUCCEEDED: "✔",
    StepStatus.SKIPPED: "⊘",
    StepStatus.FAILED: "✖",
    StepStatus.UPSTREAM_FAILED: "✖",
}
HELD_GLYPH = "◷"

_UP, _DOWN, _LEFT, _RIGHT = 1, 2, 4, 8
_BOX: dict[int, str] = {
    _UP | _DOWN: "│",
    _LEFT | _RIGHT: "─",
    _UP | _RIGHT: "└",
    _UP | _LEFT: "┘",
    _DOWN | _RIGHT: "┌",
    _DOWN | _LEFT: "┐",
    _UP | _DOWN | _RIGHT: "├",
    _UP | _DOWN | _LEFT: "┤",
    _UP | _LEFT | _RIGHT: "┴",
    _DOWN | _LEFT | _RIGHT: "┬",
    _UP | _DOWN | _LEFT | _RIGHT: "┼",
    _UP: "╵",
    _DOWN: "▼",
    _LEFT: "─",
    _RIGHT: "─",
}
_EDGE_RANK = {"dag--edge-skipped": 0, "dag--edge": 1, "dag--edge-active": 2}


def group_label(group: str) -> str:
    """``research_round:2`` -> ``R2``; other names are shortened to fit the gutter."""
    template, _, number = group.partition(":")
    if number:
        return f"{template[:1].upper()}{number}"[: GUTTER - 1]
    return group[: GUTTER - 1]


@dataclass(frozen=True)
class _Geometry:
    """Screen columns of a layout whose x positions are node centres."""

    width: int

    def left(self, x: float) -> int:
        return GUTTER + int(x) - self.width // 2

    def centre(self, x: float) -> int:
        return GUTTER + int(x)


@dataclass(frozen=True)
class RowMap:
    """Which layer each screen row draws: a layer's nodes (``node``) or the joints under them.

    Spread out, every layer has a joint row under it. Packed (when the spread-out graph is taller
    than the view), a joint row is kept only where an edge bends; where every edge between two
    layers runs straight down, the layers sit on adjacent rows."""

    rows: tuple[tuple[int, bool], ...]
    """(layer, is the node row) per screen row."""
    node_row: tuple[int, ...]
    """The screen row of each layer's nodes."""

    @classmethod
    def of(cls, layout: DagLayout, packed: bool) -> RowMap:
        bends = {s.layer for s in layout.segments if s.x_from != s.x_to}
        rows: list[tuple[int, bool]] = []
        node_row: list[int] = []
        last = len(layout.layers) - 1
        for layer in range(len(layout.layers)):
            node_row.append(len(rows))
            rows.append((layer, True))
            if layer < last and (not packed or layer in bends):
                rows.append((layer, False))
        return cls(tuple(rows), tuple(node_row))

    def rows_of_layer(self, layer: int) -> range:
        """The node row of ``layer`` and its joint row, if it has one."""
        start = self.node_row[layer]
        end = self.node_row[layer + 1] if layer + 1 < len(self.node_row) else len(self.rows)
        return range(start, end)


class DagView(ScrollView, can_focus=True):
    """Layered DAG of the run; arrows move the selection, Enter opens the step."""

    HELP = """
## Workflow graph

Nodes are steps, drawn in layers from top to bottom; colour and glyph show the
state: ○ pending, ▶ running, ‖ waiting for a person, ✔ succeeded, ⊘ skipped,
✖ failed, ◷ held by a pause. Bold edges are the routes taken. The gutter groups
the rounds (R1–R4); a dimmed round was skipped.

The graph fits itself to the panel: it picks the widest node labels that fit
across, and when it is taller than the panel, layers whose edges all run
straight down sit on adjacent rows. Long edges run in thin lanes to the right.

- **Arrows**: move between steps
- **Enter** (or a click on the selected step): step detail; a click selects
- **Shift+arrows**: pan the view
- **+ / -**: zoom (the graph stops fitting itself)
- **f**: fit the graph to the panel again
"""

    BINDINGS = [
        Binding("up", "move(0, -1)", "Up", show=False, id="dag.up"),
        Binding("down", "move(0, 1)", "Down", show=False, id="dag.down"),
        Binding("left", "move(-1, 0)", "Left", show=False, id="dag.left"),
        Binding("right", "move(1, 0)", "Right", show=False, id="dag.right"),
        Binding("enter", "open", "Detail", id="dag.open"),
        Binding("plus,equals_sign", "zoom(1)", "Zoom in", id="dag.zoom_in"),
        Binding("minus", "zoom(-1)", "Zoom out", id="dag.zoom_out"),
        Binding("f", "fit", "Fit", id="dag.fit"),
        Binding("shift+left", "pan(-1, 0)", "Pan", key_display="shift+arrows", id="dag.pan_left"),
        Binding("shift+right", "pan(1, 0)", "Pan right", show=False, id="dag.pan_right"),
        Binding("shift+up", "pan(0, -1)", "Pan up", show=False, id="dag.pan_up"),
        Binding("shift+down", "pan(0, 1)", "Pan down", show=False, id="dag.pan_down"),
    ]

    COMPONENT_CLASSES = {
        *STATUS_CLASSES,
        "dag--selected",
        "dag--edge",
        "dag--edge-active",
        "dag--edge-skipped",
        "dag--group",
        "dag--group-skipped",
    }

    DEFAULT_CSS = """
    DagView { background: $surface; }
    DagView > .dag--selected { text-style: reverse bold; }
    DagView > .dag--edge { color: $foreground-muted; }
    DagView > .dag--edge-active { color: $accent; text-style: bold; }
    DagView > .dag--edge-skipped { color: $text-disabled; }
    DagView > .dag--group { color: $primary; text-style: bold; }
    DagView > .dag--group-skipped { color: $text-disabled; text-style: strike; }
    """

    zoom: reactive[int] = reactive(1)

    class NodeSelected(Message):
        """The person asked for one step's detail."""

        def __init__(self, step_id: str) -> None:
            self.step_id = step_id
            super().__init__()

    def __init__(
        self, *, name: str | None = None, id: str | None = None, classes: str | None = None
    ) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self.view = RunView()
        self.layout_: DagLayout = compute_layout([], [])
        self.rows = RowMap.of(self.layout_, packed=False)
        self.fit = True
        """Pick the zoom that fits the panel on every relayout; a manual zoom turns it off."""
        self._graph_key: tuple[object, ...] = ()
        self._rows: dict[int, Strip] = {}
        self._node_order: list[PlacedNode] = []
        self._styles: dict[str, Style] = {}
        self._skipped_groups: set[str] = set()
        self.selected: str | None = None
        self._drawn: dict[str, tuple[StepStatus, bool, bool, bool]] = {}
        """Each node as drawn now (see _drawing): a step drawn as it is needs no new row."""
        self._chosen: set[tuple[str, str]] = set()
        """The routes' chosen edges as drawn now."""

    # -- data in ----------------------------------------------------------------
    def show(self, view: RunView, changed: set[str] | None = None) -> None:
        """Take ``view``; relayout when its graph changed, else redraw the rows whose drawing
        changed among ``changed`` steps' (None: every row)."""
        self.view = view
        self._skipped_groups = self._find_skipped_groups()
        key = (tuple(view.order), tuple(view.edges))
        if key != self._graph_key:
            self._graph_key = key
            self._relayout()
            if self.selected not in self.layout_.positions and self._node_order:
                self.selected = self._node_order[0].id
            self._remember_drawing()
            return
        if changed is None:
            self._remember_drawing()
            self._rows.clear()
            self.refresh()
            return
        for row in self._rows_changed(changed):
            self._rows.pop(row, None)
            self.refresh_lines(row)

    def _drawing(self, step_id: str) -> tuple[StepStatus, bool, bool, bool]:
        """What a node's drawing depends on: its status, held or not, selected, focused."""
        step = self.view.steps.get(step_id)
        selected = step_id == self.selected
        if step is None:
            return StepStatus.PENDING, False, selected, selected and self.has_focus
        return step.status, step.held_by is not None, selected, selected and self.has_focus

    def _remember_drawing(self) -> None:
        self._drawn = {step_id: self._drawing(step_id) for step_id in self.view.steps}
        self._chosen = set(self.view.chosen_edges)

    def _rows_changed(self, step_ids: set[str]) -> set[int]:
        """The rows to draw again for ``step_ids``: none for a step drawn as it was; its node row
        for a new state; the edges into it and its round's gutter too when it became skipped or
        stopped being (edges into a skipped step are dimmed), or when a route chose an edge."""
        rows: set[int] = set()
        wide: set[str] = set()
        for step_id in step_ids:
            before, after = self._drawn.get(step_id), self._drawing(step_id)
            if before == after:
                continue
            self._drawn[step_id] = after
            node = self.layout_.positions.get(step_id)
            if node is not None:
                rows.add(self.rows.node_row[node.layer])
            if before is None or (before[0] is StepStatus.SKIPPED) != (
                after[0] is StepStatus.SKIPPED
            ):
                wide.add(step_id)
        if self.view.chosen_edges != self._chosen:
            for edge in self.view.chosen_edges ^ self._chosen:
                wide.update(edge)
            self._chosen = set(self.view.chosen_edges)
        return rows | self._rows_of(wide)

    def _find_skipped_groups(self) -> set[str]:
        settled: dict[str, bool] = {}
        for step in self.view.steps.values():
            if step.group:
                settled[step.group] = (
                    settled.get(step.group, True) and step.status is StepStatus.SKIPPED
                )
        return {group for group, skipped in settled.items() if skipped}

    def notify_style_update(self) -> None:
        self._styles.clear()
        self._rows.clear()
        super().notify_style_update()

    def _rows_of(self, step_ids: set[str]) -> set[int]:
        rows: set[int] = set()
        for step_id in step_ids:
            node = self.layout_.positions.get(step_id)
            if node is None:
                continue
            for layer in (node.layer - 1, node.layer):
                if layer >= 0:
                    rows.update(self.rows.rows_of_layer(layer))
            group = node.group and self.layout_.group_layers.get(node.group)
            if group:
                for layer in range(group[0], group[1] + 1):
                    rows.update(self.rows.rows_of_layer(layer))
        return rows

    def _layout_at(self, zoom: int) -> DagLayout:
        view = self.view
        return compute_layout(
            list(view.order),
            [(e.source, e.target, e.kind) for e in view.edges],
            {sid: s.group for sid, s in view.steps.items()},
            node_width=ZOOM_WIDTHS[zoom],
        )

    def _relayout(self) -> None:
        """Lay the graph out again: at the widest zoom that fits across when fitting, packed when
        taller than the panel."""
        room = self.size
        if self.fit and room.width:
            for zoom in reversed(range(len(ZOOM_WIDTHS))):
                layout = self._layout_at(zoom)
                if GUTTER + layout.width + 1 <= room.width or zoom == 0:
                    self.set_reactive(DagView.zoom, zoom)
                    break
        else:
            layout = self._layout_at(self.zoom)
        self.layout_ = layout
        spread = RowMap.of(layout, packed=False)
        self.rows = RowMap.of(layout, packed=True) if len(spread.rows) > room.height > 0 else spread
        self._node_order = sorted(layout.real_nodes, key=lambda n: (n.layer, n.x))
        self._rows.clear()
        self.virtual_size = Size(GUTTER + layout.width + 1, max(1, len(self.rows.rows)))
        self.refresh()

    def cols_needed(self) -> int:
        """Columns the graph takes with every step's whole name shown (or at the widest zoom):
        what the run screen tries to give it."""
        longest = max((len(step_id) for step_id in self.view.order), default=0) + 2
        zoom = next(
            (z for z, width in enumerate(ZOOM_WIDTHS) if width >= longest), len(ZOOM_WIDTHS) - 1
        )
        return GUTTER + self._layout_at(zoom).width + 1

    def rows_needed(self, packed: bool = True) -> int:
        """Rows the whole graph takes packed (or spread out, the same at every zoom): what the
        run screen tries to give it."""
        return len(RowMap.of(self.layout_, packed=packed).rows)

    def watch_zoom(self) -> None:
        self._relayout()
        self._scroll_to_selected()

    def on_resize(self) -> None:
        self._relayout()

    # -- actions ----------------------------------------------------------------
    def action_zoom(self, delta: int) -> None:
        self.fit = False
        self.zoom = max(0, min(len(ZOOM_WIDTHS) - 1, self.zoom + delta))

    def action_fit(self) -> None:
        """Fit the graph to the panel again and show it from its top left corner."""
        self.fit = True
        self._relayout()
        self.scroll_to(0, 0, animate=False, force=True)

    def action_pan(self, dx: int, dy: int) -> None:
        """Move the view a quarter of the panel (the selection stays where it is)."""
        self.scroll_to(
            self.scroll_x + dx * max(4, self.size.width // 4),
            self.scroll_y + dy * max(2, self.size.height // 4),
            animate=False,
            force=True,
        )

    def action_move(self, dx: int, dy: int) -> None:
        current = self.layout_.positions.get(self.selected or "")
        if current is None:
            if self._node_order:
                self.select(self._node_order[0].id)
            return
        if dy:
            candidates = [n for n in self._node_order if (n.layer - current.layer) * dy > 0]
            if not candidates:
                return
            nearest_layer = min(abs(n.layer - current.layer) for n in candidates)
            row = [n for n in candidates if abs(n.layer - current.layer) == nearest_layer]
            target = min(row, key=lambda n: (abs(n.x - current.x), n.x))
        else:
            row = [
                n
                for n in self._node_order
                if n.layer == current.layer and (n.x - current.x) * dx > 0
            ]
            if not row:
                return
            target = min(row, key=lambda n: abs(n.x - current.x))
        self.select(target.id)

    def action_open(self) -> None:
        if self.selected:
            self.post_message(self.NodeSelected(self.selected))

    def select(self, step_id: str) -> None:
        previous, self.selected = self.selected, step_id
        self.show(self.view, {step_id} | ({previous} if previous else set()))
        self._scroll_to_selected()

    def node_region(self, step_id: str) -> Region | None:
        """Where ``step_id``'s box is drawn, in the graph's (unscrolled) content cells."""
        node = self.layout_.positions.get(step_id)
        if node is None:
            return None
        geometry = _Geometry(self.layout_.node_width)
        return Region(geometry.left(node.x), self.rows.node_row[node.layer], geometry.width, 1)

    def _scroll_to_selected(self) -> None:
        node = self.layout_.positions.get(self.selected or "")
        box = self.node_region(self.selected or "")
        if node is None or box is None:
            return
        self.scroll_to_region(
            Region(
                box.x - GUTTER,
                box.y,
                box.width + GUTTER,
                len(self.rows.rows_of_layer(node.layer)),
            ),
            animate=False,
            force=True,
        )

    def on_click(self, event: events.Click) -> None:
        """One click selects a step; a double click opens it, as Enter does."""
        offset = event.get_content_offset(self)
        if offset is None:
            return
        cell = offset + self.scroll_offset
        for node in self.layout_.positions.values():
            box = self.node_region(node.id)
            if box is not None and box.contains_point(cell):
                self.select(node.id)
                if event.chain > 1:
                    self.post_message(self.NodeSelected(node.id))
                return

    # -- drawing ----------------------------------------------------------------
    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        row = y + scroll_y
        width = self.scrollable_content_region.width
        base = self._base_style()
        if row >= len(self.rows.rows):
            return Strip.blank(width, base)
        strip = self._rows.get(row)
        if strip is None:
            strip = self._render_row(row)
            self._rows[row] = strip
        return strip.crop_extend(scroll_x, scroll_x + width, base)

    def _base_style(self) -> Style:
        """The widget's own style, kept until its styles change (``rich_style`` walks the DOM)."""
        style = self._styles.get("")
        if style is None:
            style = self._styles[""] = self.rich_style
        return style

    def _style(self, name: str) -> Style:
        style = self._styles.get(name)
        if style is None:
            style = self._styles[name] = self.get_component_rich_style(name)
        return style

    def _style_on(self, base: Style, name: str) -> Style:
        key = f"+{name}"
        style = self._styles.get(key)
        if style is None:
            style = self._styles[key] = base + self._style(name)
        return style

    def _render_row(self, row: int) -> Strip:
        geometry = _Geometry(self.layout_.node_width)
        width = self.virtual_size.width
        chars = [" "] * width
        styles: list[str | None] = [None] * width
        self._draw_gutter(row, chars, styles)
        layer, node_row = self.rows.rows[row]
        if node_row:
            self._draw_nodes(layer, geometry, chars, styles)
        else:
            self._draw_connectors(layer, geometry, chars, styles)
        segments: list[RichSegment] = []
        base = self._base_style()
        start = 0
        for index in range(1, width + 1):
            if index == width or styles[index] != styles[start]:
                name = styles[start]
                style = self._style_on(base, name) if name else base
                segments.append(RichSegment("".join(chars[start:index]), style))
                start = index
        return Strip(segments, width)

    def _draw_gutter(self, row: int, chars: list[str], styles: list[str | None]) -> None:
        layer = self.rows.rows[row][0]
        for group, (first, last) in self.layout_.group_layers.items():
            if not first <= layer <= last:
                continue
            skipped = group in self._skipped_groups
            style = "dag--group-skipped" if skipped else "dag--group"
            top = self.rows.node_row[first]
            if row == top:
                text = group_label(group)
            elif row == top + 1 and skipped:
                text = "skip"
            else:
                text = "│"
            for i, char in enumerate(text[: GUTTER - 1]):
                chars[i], styles[i] = char, style

    def _draw_nodes(
        self, layer: int, geometry: _Geometry, chars: list[str], styles: list[str | None]
    ) -> None:
        for node in self.layout_.layers[layer]:
            if node.dummy:
                centre = geometry.centre(node.x)
                source, target = node.id.split("\0")[1:3]
                chars[centre], styles[centre] = "│", self._edge_style(source, target)
                continue
            step = self.view.steps.get(node.id)
            status = step.status if step else StepStatus.PENDING
            held = (
                step is not None
                and step.held_by is not None
                and status is not StepStatus.WAITING_HUMAN
            )
            glyph = HELD_GLYPH if held else GLYPHS[status]
            label = f"{glyph} {node.id}"
            if len(label) > geometry.width:
                label = label[: geometry.width - 1] + "…"
            text = label.ljust(geometry.width)
            style = status_class("HELD" if held else status.value)
            if node.id == self.selected and self.has_focus:
                style = "dag--selected"
            elif node.id == self.selected:
                inner = (
                    label if len(label) <= geometry.width - 2 else label[: geometry.width - 3] + "…"
                )
                text = f"[{inner}]".ljust(geometry.width)
            left = geometry.left(node.x)
            for i, char in enumerate(text):
                chars[left + i], styles[left + i] = char, style

    def _edge_style(self, source: str, target: str) -> str:
        if (source, target) in self.view.chosen_edges:
            return "dag--edge-active"
        step = self.view.steps.get(target)
        if step is not None and step.status is StepStatus.SKIPPED:
            return "dag--edge-skipped"
        return "dag--edge"

    def _draw_connectors(
        self, layer: int, geometry: _Geometry, chars: list[str], styles: list[str | None]
    ) -> None:
        """Box-drawing joints at edge ends; horizontal runs summed with difference arrays (O(width + edges))."""
        width = len(chars)
        ranks = sorted(_EDGE_RANK, key=_EDGE_RANK.__getitem__)
        runs = [[0] * (width + 1) for _ in ranks]
        bits: dict[int, int] = {}
        cell_style: dict[int, str] = {}

        def mark(column: int, flag: int, style: str) -> None:
            bits[column] = bits.get(column, 0) | flag
            if _EDGE_RANK[style] >= _EDGE_RANK.get(cell_style.get(column, "dag--edge-skipped"), 0):
                cell_style[column] = style

        for segment in self.layout_.segments:
            if segment.layer != layer:
                continue
            style = self._edge_style(segment.source, segment.target)
            start, end = geometry.centre(segment.x_from), geometry.centre(segment.x_to)
            if start == end:
                mark(start, _UP | _DOWN, style)
                continue
            right = end > start
            mark(start, _UP | (_RIGHT if right else _LEFT), style)
            mark(end, _DOWN | (_LEFT if right else _RIGHT), style)
            low, high = min(start, end) + 1, max(start, end)
            if low < high:
                counts = runs[_EDGE_RANK[style]]
                counts[low] += 1
                counts[high] -= 1
        totals = [0] * len(ranks)
        for column in range(width):
            for rank, counts in enumerate(runs):
                totals[rank] += counts[column]
            if column in bits:
                flag = bits[column]
                if any(totals):
                    flag |= _LEFT | _RIGHT
                    top = max(rank for rank, total in enumerate(totals) if total)
                    if top > _EDGE_RANK[cell_style[column]]:
                        cell_style[column] = ranks[top]
                chars[column], styles[column] = _BOX[flag], cell_style[column]
            elif any(totals):
                top = max(rank for rank, total in enumerate(totals) if total)
                chars[column], styles[column] = "─", ranks[top]

    def on_focus(self) -> None:
        if self.selected:
            self.show(self.view, {self.selected})

    def on_blur(self) -> None:
        if self.selected:
            self.show(self.view, {self.selected})
