"""The DAG as an outline (a Tree): for narrow terminals and screen readers.

Each step is one line with its state spelled out in words; template rounds
are branches. The tree's shape follows the graph; updates only relabel.
"""

from __future__ import annotations

from functools import partial

from rich.text import Text
from textual.widgets import Tree
from textual.widgets.tree import TreeNode

from engine.states import StepStatus
from tui.app.run_state import RunView, StepView
from tui.app.status_style import STATUS_CLASSES, StatusStyler, on_theme_change, status_style
from tui.app.widgets.dag_view import GLYPHS, HELD_GLYPH, DagView, group_label


def step_label(step: StepView, style: StatusStyler) -> Text:
    held = step.held_by is not None and step.status is not StepStatus.WAITING_HUMAN
    glyph = HELD_GLYPH if held else GLYPHS[step.status]
    state = "held" if held else step.status.value.lower().replace("_", " ")
    label = Text(f"{glyph} {step.id}", style=style(step.status.value))
    label.append(f"  {state}", style="italic")
    return label


class DagOutline(Tree[str]):
    """Outline of the workflow: one line per step, rounds as branches."""

    HELP = """
## Workflow outline

The workflow as a list: rounds are branches, each step shows its state in
words. **Enter** opens the step's detail; **Space** folds a round.
"""

    COMPONENT_CLASSES = set(STATUS_CLASSES)

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__("workflow", id=id)
        self._view = RunView()
        self.show_root = False
        self.guide_depth = 2
        self._step_nodes: dict[str, TreeNode[str]] = {}
        self._group_nodes: dict[str, TreeNode[str]] = {}
        self._shape: tuple[str, ...] = ()

    def on_mount(self) -> None:
        on_theme_change(self, lambda: self.show(self._view))

    def show(self, view: RunView, changed: set[str] | None = None) -> None:
        self._view = view
        shape = tuple(view.order)
        if shape != self._shape:
            self._shape = shape
            self._rebuild(view)
            return
        for step_id in changed if changed is not None else view.steps:
            node = self._step_nodes.get(step_id)
            step = view.steps.get(step_id)
            if node is not None and step is not None:
                node.set_label(step_label(step, partial(status_style, self)))
        self._label_groups(view)

    def _rebuild(self, view: RunView) -> None:
        self.clear()
        self._step_nodes.clear()
        self._group_nodes.clear()
        for step_id in view.order:
            step = view.steps[step_id]
            parent = self.root
            if step.group:
                parent = self._group_nodes.get(step.group) or self.root.add(
                    step.group, data="", expand=True
                )
                self._group_nodes[step.group] = parent
            self._step_nodes[step_id] = parent.add_leaf(
                step_label(step, partial(status_style, self)), data=step_id
            )
        self._label_groups(view)

    def _label_groups(self, view: RunView) -> None:
        for group, node in self._group_nodes.items():
            members = [s for s in view.steps.values() if s.group == group]
            skipped = bool(members) and all(s.status is StepStatus.SKIPPED for s in members)
            done = sum(1 for s in members if s.status.settled)
            label = f"{group_label(group)} {group}  {done}/{len(members)}" + (
                "  skipped" if skipped else ""
            )
            node.set_label(Text(label, style="dim strike" if skipped else "bold"))

    def on_tree_node_selected(self, event: Tree.NodeSelected[str]) -> None:
        if event.node.data:
            event.stop()
            self.post_message(DagView.NodeSelected(event.node.data))
