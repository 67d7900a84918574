"""Time travel from the run screen: the step selected in a replay, whether it can be forked,
and the fork form that starts the fork (the app runs it through the one launcher)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual.screen import Screen
from textual.widgets import ContentSwitcher

from engine.protocol import ForkEdits
from engine.states import StepStatus
from engine.time_travel import ForkError
from tui.app.messages import StartFork
from tui.app.run_state import RunView, StepView
from tui.app.widgets.dag_outline import DagOutline
from tui.app.widgets.dag_view import DagView

if TYPE_CHECKING:
    from tui.launch.fork import ForkPlan
    from tui.launch.workbench import Workbench


class ForkFromTheScreen(Screen[None]):
    """The run screen's fork: ``t`` on a step selected in a replay (see docs/app.md)."""

    view: RunView
    run_id: str
    workbench: Workbench

    @property
    def live(self) -> bool:
        raise NotImplementedError

    def _refused(self, action: str) -> bool:
        raise NotImplementedError

    def selected_step(self) -> StepView | None:
        """The step selected in the graph (or the outline, when it is shown)."""
        if self.query_one("#graph", ContentSwitcher).current == "outline":
            node = self.query_one(DagOutline).cursor_node
            step_id = node.data if node is not None else None
        else:
            step_id = self.query_one(DagView).selected
        return self.view.steps.get(step_id) if step_id else None

    def _fork_refusal(self) -> str | None:
        if self.live:
            return "the run is live here: fork it once it has finished or stopped"
        step = self.selected_step()
        if step is None:
            return "select a step in the graph first: the fork runs again from it"
        if step.status is StepStatus.PENDING and not step.iteration:
            return f"{step.id} has not run at this point of the replay; fork at a step that ran"
        return None

    def action_fork(self) -> None:
        from engine.store import BaseRunStore, UnknownRun
        from tui.app.screens.fork import ForkScreen
        from tui.launch.fork import plan_fork

        if self._refused("fork"):
            return
        step = self.selected_step()
        assert step is not None
        at = f"{step.id}@{step.iteration}" if step.iteration else step.id
        run_id = self.run_id or self.view.run_id
        workbench = self.workbench

        def check(edits: ForkEdits) -> ForkPlan:
            store = workbench.store()
            if not isinstance(store, BaseRunStore):
                raise ForkError(
                    f"a run of {workbench.runs_location} is forked where its store is"
                    " (workbench runs fork there); the app forks local runs only"
                )
            try:
                return plan_fork(store, workbench.files, run_id, at, edits)
            except UnknownRun as error:
                raise ForkError(str(error)) from None

        def forked(plan: ForkPlan | None) -> None:
            if plan is not None:
                self.post_message(StartFork(plan))

        self.app.push_screen(
            ForkScreen(run_id, at, self.view.inputs, self.view.upstream_outputs(step.id), check),
            forked,
        )
