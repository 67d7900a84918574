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

ZOOM_WIDTHS: tuple[int, ...] = (10, 18, 28)
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
    width: int

    @property
    def slot(self) -> int:
        return self.width + GAP

    def left(self, x: float) -> int:
        return GUTTER + int(round(x * self.slot))

    def centre(self, x: float) -> int:
        return self.left(x) + self.width // 2


class DagView(ScrollView, can_focus=True):
    """Layered DAG of the run; arrows move the selection, Enter opens the step."""

    HELP = """
## Workflow graph

Nodes are steps, drawn in layers from top to bottom; colour and glyph show the
state: ○ pending, ▶ running, ‖ waiting for a person, ✔ succeeded, ⊘ skipped,
✖ failed, ◷ held by a pause. Bold edges are the routes taken. The gutter groups
the rounds (R1–R4); a dimmed round was skipped.

- **Arrows**: move between steps
- **Enter** or click: step detail
- **+ / -**: zoom
"""

    BINDINGS = [
        Binding("up", "move(0, -1)", "Up", show=False, id="dag.up"),
        Binding("down", "move(0, 1)", "Down", show=False, id="dag.down"),
        Binding("left", "move(-1, 0)", "Left", show=False, id="dag.left"),
        Binding("right", "move(1, 0)", "Right", show=False, id="dag.right"),
        Binding("enter", "open", "Detail", id="dag.open"),
        Binding("plus,equals_sign", "zoom(1)", "Zoom in", id="dag.zoom_in"),
        Binding("minus", "zoom(-1)", "Zoom out", id="dag.zoom_out"),
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
        self._graph_key: tuple[object, ...] = ()
        self._rows: dict[int, Strip] = {}
        self._node_order: list[PlacedNode] = []
        self._styles: dict[str, Style] = {}
        self._skipped_groups: set[str] = set()
        self.selected: str | None = None

    # -- data in ----------------------------------------------------------------
    def show(self, view: RunView, changed: set[str] | None = None) -> None:
        """Take ``view``; relayout when its graph changed, else redraw the changed steps' rows."""
        self.view = view
        self._skipped_groups = self._find_skipped_groups()
        key = (tuple(view.order), tuple(view.edges))
        if key != self._graph_key:
            self._graph_key = key
            self.layout_ = compute_layout(
                list(view.order),
                [(e.source, e.target, e.kind) for e in view.edges],
                {sid: s.group for sid, s in view.steps.items()},
            )
            self._node_order = sorted(self.layout_.real_nodes, key=lambda n: (n.layer, n.x))
            if self.selected not in self.layout_.positions and self._node_order:
                self.selected = self._node_order[0].id
            self._relayout()
            return
        if changed is None:
            self._rows.clear()
            self.refresh()
            return
        for row in self._rows_of(changed):
            self._rows.pop(row, None)
            self.refresh_lines(row)

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
            rows.update({2 * node.layer - 1, 2 * node.layer, 2 * node.layer + 1})
            group = node.group and self.layout_.group_layers.get(node.group)
            if group:
                rows.update(range(2 * group[0], 2 * group[1] + 2))
        return {row for row in rows if row >= 0}

    def _relayout(self) -> None:
        self._rows.clear()
        geometry = _Geometry(ZOOM_WIDTHS[self.zoom])
        width = geometry.left(self.layout_.width_slots) + 1
        self.virtual_size = Size(width, max(1, 2 * len(self.layout_.layers)))
        self.refresh()

    def watch_zoom(self) -> None:
        self._relayout()
        self._scroll_to_selected()

    # -- actions ----------------------------------------------------------------
    def action_zoom(self, delta: int) -> None:
        self.zoom = max(0, min(len(ZOOM_WIDTHS) - 1, self.zoom + delta))

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

    def _scroll_to_selected(self) -> None:
        node = self.layout_.positions.get(self.selected or "")
        if node is None:
            return
        geometry = _Geometry(ZOOM_WIDTHS[self.zoom])
        self.scroll_to_region(
            Region(geometry.left(node.x) - GUTTER, 2 * node.layer, geometry.width + GUTTER, 2),
            animate=False,
            force=True,
        )

    def on_click(self, event: events.Click) -> None:
        offset = event.get_content_offset(self)
        if offset is None:
            return
        x, y = offset.x + int(self.scroll_offset.x), offset.y + int(self.scroll_offset.y)
        if y % 2:
            return
        geometry = _Geometry(ZOOM_WIDTHS[self.zoom])
        for node in self.layout_.layers[y // 2] if y // 2 < len(self.layout_.layers) else []:
            if (
                not node.dummy
                and geometry.left(node.x) <= x < geometry.left(node.x) + geometry.width
            ):
                self.select(node.id)
                self.post_message(self.NodeSelected(node.id))
                return

    # -- drawing ----------------------------------------------------------------
    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        row = y + scroll_y
        width = self.scrollable_content_region.width
        base = self.rich_style
        if row >= 2 * len(self.layout_.layers):
            return Strip.blank(width, base)
        strip = self._rows.get(row)
        if strip is None:
            strip = self._render_row(row)
            self._rows[row] = strip
        return strip.crop_extend(scroll_x, scroll_x + width, base)

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
        geometry = _Geometry(ZOOM_WIDTHS[self.zoom])
        width = self.virtual_size.width
        chars = [" "] * width
        styles: list[str | None] = [None] * width
        self._draw_gutter(row, chars, styles)
        layer = row // 2
        if row % 2 == 0:
            self._draw_nodes(layer, geometry, chars, styles)
        else:
            self._draw_connectors(layer, geometry, chars, styles)
        segments: list[RichSegment] = []
        base = self._styles.get("") or self._styles.setdefault("", self.rich_style)
        start = 0
        for index in range(1, width + 1):
            if index == width or styles[index] != styles[start]:
                name = styles[start]
                style = self._style_on(base, name) if name else base
                segments.append(RichSegment("".join(chars[start:index]), style))
                start = index
        return Strip(segments, width)

    def _draw_gutter(self, row: int, chars: list[str], styles: list[str | None]) -> None:
        for group, (first, last) in self.layout_.group_layers.items():
            if not 2 * first <= row <= 2 * last + 1:
                continue
            skipped = group in self._skipped_groups
            style = "dag--group-skipped" if skipped else "dag--group"
            if row == 2 * first:
                text = group_label(group)
            elif row == 2 * first + 1 and skipped:
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
