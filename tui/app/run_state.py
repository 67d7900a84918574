"""What the run screen shows, folded from run events — plain Python, no Textual.

Widgets render a :class:`RunView`; they never interpret events themselves.
:meth:`RunView.apply` returns which parts changed, so the screen redraws only
those. Live runs, stored runs and replays all go through the same fold, which
is what makes a replay at event N look exactly like the live screen did.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field, fields, replace
from typing import Any, Literal

from engine.event_lines import EventLine
from engine.events import (
    Budget,
    Domain,
    InterruptRaised,
    InterruptResolved,
    ProviderState,
    RouteDecided,
    RunEvent,
    RunFinished,
    RunStarted,
    StepFailed,
    StepFinished,
    StepRetrying,
    StepSkipped,
    StepStarted,
)
from engine.model_answers import disclosure, tally
from engine.states import RoutingSignal, StepStatus
from research.events import (
    CoalescedPayload,
    RoundScoredPayload,
    StagePayload,
    describe_research_event,
    payload_of,
)
from tui.app.agent_trail import AdvisoryGraph
from tui.app.agent_trail import fold as fold_agent_event
from tui.present.event_lines import describe as describe_event

Part = Literal["graph", "steps", "providers", "rounds", "log", "prompts", "status"]


@dataclass
class StepView:
    id: str
    uses: str = ""
    group: str | None = None
    optional: bool = False
    has_interrupt: bool = False
    status: StepStatus = StepStatus.PENDING
    iteration: int = 0
    attempt: int = 1
    inputs: dict[str, Any] = field(default_factory=dict)
    outputs: dict[str, Any] = field(default_factory=dict)
    error: str = ""
    skip_reason: str = ""
    route: RoutingSignal | None = None
    tokens: int = 0
    llm_calls: int = 0
    duration_s: float = 0.0
    providers: list[str] = field(default_factory=list)
    held_by: str | None = None
    """Interrupt id that holds this step (LangGraph pauses its whole superstep)."""
    trail: list[str] = field(default_factory=list)
    """An agent step's thoughts, actions, observations and decisions (tui/agent_trail.py)."""


@dataclass(frozen=True)
class LogLine:
    seq: int
    kind: str
    level: str
    text: str
    step_id: str | None = None
    ts: float = 0.0
    """Wall time of the event (display only)."""
    folded: bool = False
    """A detail of its step (a research stage): the log shows it when the filter asks for it."""


@dataclass(frozen=True)
class Edge:
    source: str
    target: str
    kind: str


@dataclass
class RunView:
    run_id: str = ""
    workflow: str = ""
    engine: str = ""
    engine_reason: str = ""
    inputs: dict[str, Any] = field(default_factory=dict)
    status: str = "PENDING"
    """The run's status as its events say: WAITING while a prompt of a running run is open."""
    reason: str = ""
    outputs: dict[str, Any] = field(default_factory=dict)
    order: list[str] = field(default_factory=list)
    edges: list[Edge] = field(default_factory=list)
    steps: dict[str, StepView] = field(default_factory=dict)
    providers: dict[str, dict[str, Any]] = field(default_factory=dict)
    provider_seen_at: dict[str, float] = field(default_factory=dict)
    rounds: dict[int, RoundScoredPayload] = field(default_factory=dict)
    coalesced: CoalescedPayload | None = None
    stage: str = ""
    log: list[LogLine] = field(default_factory=list)
    pending: dict[str, InterruptRaised] = field(default_factory=dict)
    chosen_edges: set[tuple[str, str]] = field(default_factory=set)
    budget: Budget | None = None
    last_seq: int = 0
    last_ts: float = 0.0
    changed_steps: set[str] = field(default_factory=set)
    """Steps whose drawing changed since the screen last took them (see take_changed_steps)."""
    advisory: AdvisoryGraph = field(default_factory=AdvisoryGraph)
    finished: dict[tuple[str, int], StepFinished] = field(default_factory=dict)
    """Each step iteration's latest ``step_finished``: who answered its model calls."""

    # -- folding -------------------------------------------------------------
    def apply(self, event: RunEvent) -> set[Part]:
        self.last_seq = max(self.last_seq, event.seq)
        self.last_ts = max(self.last_ts, event.ts)
        parts: set[Part] = set()
        line = self._log_line(event)
        if line is not None:
            self.log.append(line)
            parts.add("log")
        handler = getattr(self, f"_on_{event.kind}", None)
        if handler is not None:
            parts |= handler(event)
        return parts

    def _log_line(self, event: RunEvent) -> LogLine | None:
        """The log's line for ``event``: none for a provider whose breaker state did not change
        (its panel shows the new counts), folded for a research stage that went as planned."""
        previous = None
        if isinstance(event, ProviderState):
            previous = self.providers.get(event.provider, {}).get("state")
            if previous is not None and previous == event.snapshot.get("state"):
                return None
        line = event_line(event, previous)
        kind: str = event.kind
        folded = False
        if isinstance(event, Domain):
            kind = event.name
            folded = line.level == "info" and isinstance(payload_of(event), StagePayload)
        return LogLine(
            event.seq,
            kind,
            line.level,
            line.text,
            getattr(event, "step_id", None),
            event.ts,
            folded,
        )

    def apply_all(self, events: list[RunEvent]) -> set[Part]:
        parts: set[Part] = set()
        for event in events:
            parts |= self.apply(event)
        return parts

    def copy(self) -> RunView:
        """An independent copy to fold on from (a replay checkpoint).

        Every list, dict and set the view holds is copied (the fold grows them in place);
        the values in them are shared, as the fold only ever replaces a value (events,
        outputs, round payloads, log lines are never changed in place) — except a step's
        trail and the advisory graph, which the fold extends, so they are copied too.
        """
        containers: dict[str, Any] = {
            f.name: type(value)(value)
            for f in fields(self)
            if isinstance(value := getattr(self, f.name), (list, dict, set))
        }
        containers["steps"] = {
            key: replace(step, trail=list(step.trail)) for key, step in self.steps.items()
        }
        return replace(
            self,
            **containers,
            advisory=AdvisoryGraph(dict(self.advisory.last), dict(self.advisory.current)),
        )

    def take_changed_steps(self) -> set[str]:
        changed, self.changed_steps = self.changed_steps, set()
        return changed

    def _step(self, step_id: str) -> StepView:
        view = self.steps.get(step_id)
        if view is None:
            view = StepView(id=step_id)
            self.steps[step_id] = view
            self.order.append(step_id)
        self.changed_steps.add(step_id)
        return view

    def _on_run_started(self, e: RunStarted) -> set[Part]:
        self.run_id, self.workflow, self.engine = e.run_id, e.workflow, e.engine
        self.engine_reason, self.inputs = e.engine_reason, dict(e.inputs)
        self.status = "WAITING" if self.pending else "RUNNING"
        if e.nodes and not e.resumed:
            self.steps.clear()
            self.order = []
        for node in e.nodes:
            view = self._step(node.id)
            view.uses, view.group = node.uses, node.group
            view.optional, view.has_interrupt = node.optional, node.has_interrupt
        if e.edges:
            self.edges = [Edge(edge.source, edge.target, edge.kind) for edge in e.edges]
        return {"graph", "steps", "status"}

    def _on_step_started(self, e: StepStarted) -> set[Part]:
        view = self._step(e.step_id)
        view.status, view.iteration, view.attempt = StepStatus.RUNNING, e.iteration, e.attempt
        view.inputs, view.error, view.held_by = dict(e.inputs), "", None
        return {"steps"}

    def _on_step_finished(self, e: StepFinished) -> set[Part]:
        view = self._step(e.step_id)
        view.status, view.iteration, view.outputs = (
            StepStatus.SUCCEEDED,
            e.iteration,
            dict(e.outputs),
        )
        view.duration_s, view.tokens, view.llm_calls = e.duration_s, e.tokens, e.llm_calls
        view.providers = list(e.providers)
        self.finished[(e.step_id, e.iteration)] = e
        return {"steps", "status"} if e.fallback_calls else {"steps"}

    def _on_step_skipped(self, e: StepSkipped) -> set[Part]:
        view = self._step(e.step_id)
        view.status, view.skip_reason = StepStatus.SKIPPED, e.reason
        return {"steps"}

    def _on_step_failed(self, e: StepFailed) -> set[Part]:
        view = self._step(e.step_id)
        view.status = StepStatus.UPSTREAM_FAILED if e.upstream else StepStatus.FAILED
        view.error = e.error
        return {"steps"}

    def _on_step_retrying(self, e: StepRetrying) -> set[Part]:
        view = self._step(e.step_id)
        view.attempt, view.error = e.attempt, e.error
        return {"steps"}

    def _on_route_decided(self, e: RouteDecided) -> set[Part]:
        view = self._step(e.step_id)
        view.route = e.signal
        if e.signal.next_step_id:
            self.chosen_edges.add((e.step_id, e.signal.next_step_id))
            self.changed_steps.add(e.signal.next_step_id)
        return {"steps"}

    def _on_interrupt_raised(self, e: InterruptRaised) -> set[Part]:
        self.pending[e.interrupt_id] = e
        self._step(e.step_id).status = StepStatus.WAITING_HUMAN
        for held in e.held_steps:
            self._step(held).held_by = e.interrupt_id
        if self.status == "RUNNING":
            self.status = "WAITING"
        return {"steps", "prompts", "status"}

    def _on_interrupt_resolved(self, e: InterruptResolved) -> set[Part]:
        raised = self.pending.pop(e.interrupt_id, None)
        view = self._step(e.step_id)
        if view.status is StepStatus.WAITING_HUMAN:
            view.status = StepStatus.RUNNING
        for step in self.steps.values():
            if step.held_by == e.interrupt_id:
                step.held_by = None
                self.changed_steps.add(step.id)
        if self.status == "WAITING" and not self.pending:
            self.status = "RUNNING"
        if raised is None:
            return {"steps", "status"}
        return {"steps", "prompts", "status"}

    def _on_provider_state(self, e: ProviderState) -> set[Part]:
        self.providers[e.provider] = dict(e.snapshot)
        self.provider_seen_at[e.provider] = e.ts
        return {"providers"}

    def _on_budget(self, e: Budget) -> set[Part]:
        self.budget = e
        return {"status"}

    def _on_run_finished(self, e: RunFinished) -> set[Part]:
        self.status, self.reason, self.outputs = e.status.value, e.reason, dict(e.outputs)
        for step_id, status in e.step_statuses.items():
            view = self._step(step_id)
            try:
                view.status = StepStatus(status)
            except ValueError:
                continue
        return {"steps", "status"}

    def _on_domain(self, e: Domain) -> set[Part]:
        if e.name.startswith(("agent.", "advisory.")):
            grew = fold_agent_event(e, self.advisory, self._step, self._add_edge)
            return {"graph", "steps"} if grew else {"steps"}
        payload = payload_of(e)
        if isinstance(payload, RoundScoredPayload):
            self.rounds[payload.round] = payload
            return {"rounds"}
        if isinstance(payload, CoalescedPayload):
            self.coalesced = payload
            return {"rounds"}
        if isinstance(payload, StagePayload):
            self.stage = payload.stage
            return {"status"}
        return set()

    def _add_edge(self, source: str, target: str) -> None:
        self.edges.append(Edge(source, target, "depends_on"))

    # -- queries -------------------------------------------------------------
    @property
    def fallback_note(self) -> str | None:
        """How many model answers the built-in fallback gave and in which steps (None: none)."""
        return disclosure(tally(self.finished.values()))

    @property
    def cooling_down(self) -> bool:
        """Whether some provider's breaker is not CLOSED: its cooldown counts down with time."""
        return any(s.get("state") != "CLOSED" for s in self.providers.values())

    @property
    def selected_round(self) -> int | None:
        return self.coalesced.selected_round if self.coalesced else None

    def upstream_outputs(self, step_id: str) -> dict[str, dict[str, Any]]:
        """The outputs of the steps that feed ``step_id`` (its graph edges in), as folded now:
        what the step was given besides its own inputs (a research step's state)."""
        sources = dict.fromkeys(edge.source for edge in self.edges if edge.target == step_id)
        return {
            source: dict(self.steps[source].outputs)
            for source in sources
            if source in self.steps and self.steps[source].outputs
        }

    def prompts_in_order(self) -> list[InterruptRaised]:
        return sorted(self.pending.values(), key=lambda e: e.seq)


def changes(before: RunView, after: RunView) -> tuple[set[Part], set[str]]:
    """What differs between two views: the parts to redraw and the steps whose drawing changed.

    A replay step swaps one view for another (a fold from a checkpoint); this is what the
    events between them changed, found by comparing the two, so the screen redraws those parts
    only. Values the fold shares between views compare by identity first, so this is cheap.
    """
    parts: set[Part] = set()
    if before.order != after.order or before.edges != after.edges:
        parts.add("graph")
    steps = {
        step_id
        for step_id in before.steps.keys() | after.steps.keys()
        if before.steps.get(step_id) != after.steps.get(step_id)
    }
    steps |= {target for _, target in before.chosen_edges ^ after.chosen_edges}
    if steps:
        parts.add("steps")
    if (
        before.providers != after.providers
        or before.provider_seen_at != after.provider_seen_at
        or (before.last_ts != after.last_ts and after.cooling_down)
    ):
        parts.add("providers")
    if before.rounds != after.rounds or before.coalesced != after.coalesced:
        parts.add("rounds")
    if len(before.log) != len(after.log) or before.log[-1:] != after.log[-1:]:
        parts.add("log")
    if before.pending.keys() != after.pending.keys():
        parts.add("prompts")
    if _status_of(before) != _status_of(after) or before.finished != after.finished:
        parts.add("status")
    return parts, steps


def _status_of(view: RunView) -> tuple[object, ...]:
    """What the run's status line shows of ``view``."""
    return (
        view.run_id,
        view.workflow,
        view.engine,
        view.status,
        view.reason,
        view.stage,
        view.budget,
    )


CHECKPOINT_EVERY = 250
"""Events between two replay checkpoints kept for the whole replay."""
NEAR_EVERY = 16
"""Events between two checkpoints near the cursor: stepping about it folds at most this many."""


class ReplayFold:
    """A stored run's view after any number of its events, without refolding from event 0.

    Folding forward keeps a copy of the view every ``every`` events for the whole replay; and
    in the stretch between two of those where the cursor is, a copy every ``near`` events (None:
    none), dropped when the cursor moves to another stretch. A step late in a long run costs at
    most ``near`` events plus one copy once its stretch has been folded.
    """

    def __init__(
        self,
        events: list[RunEvent],
        run_id: str = "",
        *,
        every: int = CHECKPOINT_EVERY,
        near: int | None = NEAR_EVERY,
    ) -> None:
        self.events = events
        self.every = every
        self.near = near
        self._positions: list[int] = [0]
        self._views: list[RunView] = [RunView(run_id=run_id)]
        self._stretch = 0
        """Where the stretch with the near checkpoints starts."""
        self._near: dict[int, RunView] = {0: self._views[0]}

    def view_at(self, position: int) -> RunView:
        """A fresh view of the run after ``position`` events (the caller may fold on from it)."""
        position = max(0, min(position, len(self.events)))
        index = bisect.bisect_right(self._positions, position) - 1
        at, checkpoint = self._positions[index], self._views[index]
        while at == self._positions[-1] and (at // self.every + 1) * self.every <= position:
            view = checkpoint.copy()  # a stretch the cursor only crosses: its end is kept
            view.apply_all(self.events[at : at + self.every])
            at, checkpoint = at + self.every, view
            self._positions.append(at)
            self._views.append(checkpoint)
        return self._near_view(at, checkpoint, position)

    def _near_view(self, start: int, checkpoint: RunView, position: int) -> RunView:
        """The view at ``position``, folded from the nearest near checkpoint in the stretch that
        ``checkpoint`` (at ``start``) begins, keeping the near checkpoints it passes."""
        if self.near is None:
            view = checkpoint.copy()
            view.apply_all(self.events[start:position])
            return view
        if self._stretch != start:
            self._stretch, self._near = start, {start: checkpoint}
        at = start + (position - start) // self.near * self.near
        while at not in self._near:
            at -= self.near
        view = self._near[at].copy()
        while at < position:
            step_end = min(position, at + self.near)
            view.apply_all(self.events[at:step_end])
            at = step_end
            if (at - start) % self.near == 0:
                self._near[at] = view.copy()
        return view


def spend_text(budget: Budget) -> str:
    """The run's spend and what ``limits.max_cost_usd`` leaves of it, e.g. "$0.0123 of $1.00
    spent, $0.9877 left"; empty for a run with no cost limit that has spent nothing."""
    spent = budget.cost_usd
    if budget.max_cost_usd is None:
        return f"${spent:.4f} spent" if spent > 0 else ""
    left = max(0.0, budget.max_cost_usd - spent)
    return f"${spent:.4f} of ${budget.max_cost_usd:.2f} spent, ${left:.4f} left"


def event_line(event: RunEvent, previous_state: str | None = None) -> EventLine:
    """The engine's line for ``event``, research's own events worded by research
    (``previous_state``: a provider's breaker state before this ``provider_state`` event)."""
    return describe_event(event, describe_research_event, previous_state)


def describe(event: RunEvent, previous_state: str | None = None) -> str:
    """One line of the event log for ``event``."""
    return event_line(event, previous_state).text
