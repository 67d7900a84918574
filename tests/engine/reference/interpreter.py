"""The reference interpreter: DESIGN §3–5 read a second time, sequential and pure.

It shares nothing with the engines but the spec models (engine/spec.py): its own
graph, its own expression evaluator (expressions.py), its own routing. It runs
workflows made of ``ref.probe`` steps (probe.py) whose outputs it computes
itself, with every interrupt answered at once by :func:`answer_for`.

In waves, one step at a time: the steps whose dependencies have settled are
settled in topological order, then the steps that made ready, and so on (run
counters then read as on a wavefront scheduler with steps that take no time). The semantic
rules the engines must follow are the ones written in docs/workflows.md, "What a run means";
each is marked here with its rule name (``# rule: ...``). Which loops and detours a step
waits for ("When a step runs") was written there from the docs and the tests' expected
values, and this reading of it from that text alone, without the engine's code.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from engine.spec import StepSpec, WorkflowDefinition
from tests.engine.reference.expressions import Missing, evaluate, matches
from tests.engine.reference.probe import probe_fails, probe_outputs

SETTLED = ("SUCCEEDED", "SKIPPED", "FAILED", "UPSTREAM_FAILED")
FAILED = ("FAILED", "UPSTREAM_FAILED")


def answer_for(spec: StepSpec) -> str:
    """How the automatic responder answers a step's interrupt: a prompt saying
    ``reject`` is rejected, any other is approved."""
    assert spec.interrupt is not None
    return "reject" if "reject" in spec.interrupt.prompt else "approve"


@dataclass
class Step:
    spec: StepSpec
    status: str = "PENDING"
    iteration: int = 0
    outputs: dict[str, Any] = field(default_factory=dict)
    history: list[dict[str, Any]] = field(default_factory=list)
    runs: int = 0
    routed_by: set[str] = field(default_factory=set)
    not_routed_by: set[str] = field(default_factory=set)


@dataclass
class Result:
    status: str
    steps: dict[str, Step]
    step_runs: int
    stopped_by_limit: bool
    order: list[tuple[str, int, str]]
    """(step, iteration, status) as each settled, in order."""
    detours_met: bool = False
    """A detour was rejected because another step's detour was active (see ``Interpreter``)."""


class _Graph:
    """Forward edges (depends_on, routing targets other than the loop's) and back edges."""

    def __init__(self, wf: WorkflowDefinition) -> None:
        ids = [s.id for s in wf.steps]
        self.ids = ids
        self.deps: dict[str, list[str]] = {i: [] for i in ids}
        self.routers: dict[str, list[str]] = {i: [] for i in ids}
        self.loops: list[tuple[str, str]] = []
        for spec in wf.steps:
            for d in spec.depends_on:
                if d not in self.deps[spec.id]:
                    self.deps[spec.id].append(d)
            routing = spec.routing
            if routing is None:
                continue
            loop_target = routing.loop.target if routing.loop else None
            if loop_target:
                self.loops.append((spec.id, loop_target))
            for target in _targets(spec):
                if target == loop_target:
                    continue
                if spec.id not in self.deps[target]:
                    self.deps[target].append(spec.id)
                self.routers[target].append(spec.id)
        self.order = self._topological()
        self.upstream = {i: self.ancestors(i) for i in ids}
        self._waits: dict[tuple[str, str] | None, dict[str, list[str]]] = {}

    def loop_waits(self, detour: tuple[str, str] | None) -> dict[str, list[str]]:
        """rule: when a step runs — step -> the routers of the loops it waits for, while
        ``detour`` (declarer, target) is under way (or none is).

        A step waits for every loop that would run again a step upstream of it without
        running it again, unless that loop's router already waits for it; the waits are
        taken step by step in dependency order, loops in file order. "Waits for": what is
        upstream, the loops taken so far, and a declaring step for its detour's target."""
        if detour not in self._waits:
            waits = {i: set(self.deps[i]) for i in self.ids}
            if detour is not None:
                waits[detour[0]].add(detour[1])
            taken: dict[str, list[str]] = {i: [] for i in self.ids}
            for step in self.order:
                for router, target in self.loops:
                    reach = self.reach(router, target)
                    if step in reach or not self.upstream[step] & reach:
                        continue
                    if step in _closure(waits, router):
                        continue
                    waits[step].add(router)
                    taken[step].append(router)
            self._waits[detour] = taken
        return self._waits[detour]

    def _topological(self) -> list[str]:
        done: list[str] = []
        while len(done) < len(self.ids):
            done.append(
                next(i for i in self.ids if i not in done and set(self.deps[i]) <= set(done))
            )
        return done

    def descendants(self, step: str) -> set[str]:
        """Forward descendants."""
        seen: set[str] = set()
        todo = [step]
        while todo:
            current = todo.pop()
            for n in (i for i in self.ids if current in self.deps[i]):
                if n not in seen:
                    seen.add(n)
                    todo.append(n)
        return seen

    def body(self, router: str, target: str) -> list[str]:
        inside = {router, target} | (self.descendants(target) & self.ancestors(router))
        return [i for i in self.order if i in inside]

    def reach(self, router: str, target: str) -> set[str]:
        """rule: nested loops — what a pass of the loop can run again: its body and the body
        of every loop whose router is in it, which counts afresh and may go back again."""
        reach = set(self.body(router, target))
        grown = True
        while grown:
            inner = [self.body(r, t) for r, t in self.loops if r in reach]
            grown = any(not set(b) <= reach for b in inner)
            for b in inner:
                reach |= set(b)
        return reach

    def ancestors(self, step: str) -> set[str]:
        return {i for i in self.ids if step in self.descendants(i)}


def _closure(waits: dict[str, set[str]], start: str) -> set[str]:
    """Everything ``start`` waits for, directly or through other steps."""
    seen: set[str] = set()
    todo = [start]
    while todo:
        for w in waits[todo.pop()]:
            if w not in seen:
                seen.add(w)
                todo.append(w)
    return seen


def _targets(spec: StepSpec) -> list[str]:
    routing = spec.routing
    assert routing is not None
    found: list[str] = []
    for t in [
        routing.next,
        *[c.target for c in routing.conditions],
        *routing.branches.values(),
        routing.loop.target if routing.loop else None,
        routing.detour.target if routing.detour else None,
    ]:
        if t is not None and t not in found:
            found.append(t)
    return found


def _trigger(rule: str, statuses: list[str]) -> str:
    """RUN, SKIPPED or UPSTREAM_FAILED (Airflow's meanings)."""
    if not statuses or rule == "all_done":
        return "RUN"
    ok = statuses.count("SUCCEEDED")
    bad = sum(s in FAILED for s in statuses)
    off = statuses.count("SKIPPED")
    if rule == "one_failed":
        return "RUN" if bad else "SKIPPED"
    if rule == "one_success":
        return "RUN" if ok else "UPSTREAM_FAILED" if bad else "SKIPPED"
    if bad:
        return "UPSTREAM_FAILED"
    if rule == "all_success":
        return "SKIPPED" if off else "RUN"
    if rule == "none_failed":
        return "RUN"
    return "RUN" if ok else "SKIPPED"


class Interpreter:
    def __init__(self, wf: WorkflowDefinition, inputs: dict[str, Any]) -> None:
        self.wf = wf
        self.inputs = inputs
        self.graph = _Graph(wf)
        self.steps = {s.id: Step(s) for s in wf.steps}
        self.loop_counts: dict[str, int] = {}
        self.detour: tuple[str, str] | None = None
        self.detours_met = False
        """Set when a detour is rejected because another step's detour is active: which of
        two detours is taken then depends on which step settles first, which the design
        leaves to the scheduler (ADR-004 phase 1 says only "single level")."""
        self.returned: set[str] = set()
        self.step_runs = 0
        self.bound = wf.limits.step_run_bound(len(wf.steps))
        self.limit = False
        self.stopped: set[str] = set()
        self.order: list[tuple[str, int, str]] = []

    # -- the run -------------------------------------------------------------------
    def run(self) -> Result:
        while not self.limit:
            wave = [i for i in self.graph.order if self._readiness(i) != "wait"]
            if not wave:
                break
            for step_id in wave:  # the steps ready together, one after the other
                if not self.limit and self._readiness(step_id) != "wait":
                    self._settle_next(step_id)
        unsettled = self._unsettled()
        # rule: stop — what a limit cut off is skipped, else a defect (FAILED); a detour target
        # settled here sends its declarer back for the return pass, which is cut off as well
        while left := self._unsettled():
            for i in left:
                if self.steps[i].status not in SETTLED:
                    self._settle(i, "SKIPPED" if self.limit else "FAILED")
        status = self._status() if self.limit or not unsettled else "FAILED"
        return Result(status, self.steps, self.step_runs, self.limit, self.order, self.detours_met)

    def _status(self) -> str:
        # rule: run status — a limit → PARTIAL; a non-optional failure → FAILED;
        # completion criteria unmet → PARTIAL; else COMPLETED (terminated or not)
        if self.limit:
            return "PARTIAL"
        if any(s.status == "FAILED" and not s.spec.optional for s in self.steps.values()):
            return "FAILED"
        if any(self.steps[i].status != "SUCCEEDED" for i in self.wf.completion.required_steps):
            return "PARTIAL"
        return "COMPLETED"

    def _readiness(self, step_id: str) -> str:
        step = self.steps[step_id]
        if step.status != "PENDING":
            return "wait"
        # rule: when a step runs — everything upstream has settled (a step whose detour is
        # under way has not, but for its target) and every loop it waits for is over
        for u in self.graph.upstream[step_id]:
            if self.steps[u].status not in SETTLED:
                return "wait"
            if self.detour is not None and u == self.detour[0] and step_id != self.detour[1]:
                return "wait"
        for router in self.graph.loop_waits(self.detour)[step_id]:
            if self.steps[router].status not in SETTLED:
                return "wait"
        statuses = [self.steps[d].status for d in self.graph.deps[step_id]]
        if step_id in self.stopped:
            return "SKIPPED"
        routers = [r for r in self.graph.routers[step_id] if self.steps[r].status == "SUCCEEDED"]
        if routers and not step.routed_by & set(routers):
            return "SKIPPED"
        outcome = _trigger(step.spec.trigger, statuses)
        return outcome

    def _scope(self, step: Step, outputs: dict[str, Any] | None = None) -> dict[str, Any]:
        return {
            "inputs": self.inputs,
            "iteration": step.iteration,
            "outputs": outputs if outputs is not None else {},
            "steps": {
                i: {"status": s.status, "outputs": s.outputs, "iteration": s.iteration}
                for i, s in self.steps.items()
            },
        }

    def _unsettled(self) -> list[str]:
        return [i for i in self.graph.order if self.steps[i].status not in SETTLED]

    def _settle(self, step_id: str, status: str, outputs: dict[str, Any] | None = None) -> None:
        step = self.steps[step_id]
        step.status = status
        step.outputs = outputs if status == "SUCCEEDED" and outputs is not None else {}
        # rule: outputs — a pass that does not succeed leaves no outputs
        self.order.append((step_id, step.iteration, status))
        if self.detour and self.detour[1] == step_id:  # rule: detour — the target returns
            declarer = self.detour[0]
            self.detour = None
            self.returned.add(declarer)
            self._reset(declarer, set())

    def _reset(self, step_id: str, routers: set[str]) -> None:
        step = self.steps[step_id]
        step.status = "PENDING"
        step.iteration += 1
        step.routed_by -= routers
        step.not_routed_by -= routers

    def _settle_next(self, step_id: str) -> None:
        readiness = self._readiness(step_id)
        if readiness != "RUN":
            self._settle(step_id, readiness)
            return
        if self.step_runs >= self.bound:  # rule: limits — nothing starts past the bound
            self.limit = True
            return
        step = self.steps[step_id]
        spec = step.spec
        if spec.when and not matches(spec.when, self._scope(step)):
            self._settle(step_id, "SKIPPED")
            return
        x = None
        if "x" in spec.inputs:
            try:
                x = evaluate(spec.inputs["x"], self._scope(step))
            except Missing:
                self._settle(step_id, "FAILED")
                return
        self.step_runs += 1
        step.runs += 1
        if spec.interrupt and spec.interrupt.before and answer_for(spec) == "reject":
            self._settle(step_id, "SKIPPED")
            return
        if probe_fails(spec.config, step.iteration, spec.retries + 1):
            self._settle(step_id, "FAILED")
            return
        seen = [d for d in spec.depends_on if self.steps[d].status == "SUCCEEDED"]
        outputs = probe_outputs(spec.config, step.iteration, seen, x)
        if spec.interrupt and spec.interrupt.after and answer_for(spec) == "reject":
            self._settle(step_id, "FAILED")
            return
        self._route(step, outputs)

    # -- routing (ADR-004 precedence) ----------------------------------------------
    def _route(self, step: Step, outputs: dict[str, Any]) -> None:
        spec = step.spec
        step_id = spec.id
        declarer = self.detour[0] if self.detour is not None and self.detour[1] == step_id else None
        in_detour = declarer is not None
        if spec.routing is None and outputs.get("terminate") is not True and not in_detour:
            self._settle(step_id, "SUCCEEDED", outputs)
            return
        routing = spec.routing
        scope = self._scope(step, outputs)
        forward = [
            t
            for t in (_targets(spec) if routing else [])
            if t != (routing.loop.target if routing and routing.loop else None)
            and t not in self.graph.ancestors(step_id)
            and t != step_id
        ]
        returning = step_id in self.returned
        self.returned.discard(step_id)
        ran = routing.detour.target if routing and routing.detour and returning else None

        def skip_all_but(chosen: str | None) -> None:
            for t in forward:
                if t != chosen and t != ran:
                    self.steps[t].not_routed_by.add(step_id)

        self._settle(step_id, "SUCCEEDED", outputs)
        if self.step_runs >= self.bound:  # rule: limits — the safety bound stops the run
            skip_all_but(None)
            self.limit = True
            return
        if (routing and routing.terminate_when and matches(routing.terminate_when, scope)) or (
            outputs.get("terminate") is True
        ):
            skip_all_but(None)  # rule: stop — what the terminating step leads to is skipped
            cut = self.graph.descendants(step_id)
            if declarer is not None:  # the detour it was the target of does not return
                cut |= {declarer} | self.graph.descendants(declarer)
            self.stopped |= cut - {step_id}
            return
        if in_detour:
            skip_all_but(declarer)
            return
        assert routing is not None

        def default() -> bool:
            if routing.next is None:
                skip_all_but(None)
            else:
                self._advance(step_id, routing.next, skip_all_but)
            return True

        def take(target: str) -> bool:
            loop, detour = routing.loop, routing.detour
            if loop and target == loop.target:
                count = self.loop_counts.get(step_id, 0)
                if count >= loop.max_iterations:
                    return default()
                self.loop_counts[step_id] = count + 1
                body = self.graph.body(step_id, target)
                for i in body:
                    self._reset(i, set(body))
                    if i != step_id:  # rule: nested loops — an inner loop counts afresh
                        self.loop_counts.pop(i, None)
                return True
            if detour and target == detour.target:
                if returning:
                    return False
                if self.detour is not None:  # rule: detour — single level
                    self.detours_met = True
                    return default()
                deps = [d for d in self.graph.deps[target] if d != step_id]
                if any(d == step_id or d in self.graph.descendants(step_id) for d in deps):
                    return default()  # rule: detour — a target that waits on its declarer
                self._advance(step_id, target, lambda _: None)
                if detour.returns:
                    self.detour = (step_id, target)
                return True
            self._advance(step_id, target, skip_all_but)
            return True

        for condition in routing.conditions:
            if matches(condition.expr, scope) and take(condition.target):
                return
        if routing.detour and routing.detour.when and matches(routing.detour.when, scope):
            if take(routing.detour.target):
                return
        if routing.kind == "linear" and routing.next and take(routing.next):
            return
        if routing.kind == "loop" and routing.loop and take(routing.loop.target):
            return
        if routing.kind == "branch":
            try:
                key = _branch_key(evaluate(routing.branch_on, scope))
            except Missing:
                key = None
            if key in routing.branches and take(routing.branches[key]):
                return
        default()

    def _advance(self, step_id: str, target: str, skip_all_but: Any) -> None:
        skip_all_but(target)
        chosen = self.steps[target]
        if chosen.status in SETTLED:
            self._reset(target, {step_id})
        chosen.routed_by.add(step_id)
        chosen.not_routed_by.discard(step_id)


def _branch_key(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def interpret(wf: WorkflowDefinition, inputs: dict[str, Any]) -> Result:
    return Interpreter(wf, inputs).run()
