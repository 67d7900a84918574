"""A scripted deep-research run, built from the real event models into a real run store.

Screenshots (``make screenshots``) and the snapshot tests need runs that look
the same every time: this module writes one, event by event, through
``RunStore.append`` — the same path a live run takes — with the store's
clock frozen by the caller when byte-identical output matters.
"""

from __future__ import annotations

from typing import Any

from engine.context import InterruptRequest, JournalEntry
from engine.events import (
    Budget,
    Domain,
    GraphEdge,
    GraphNode,
    InterruptRaised,
    InterruptResolved,
    Log,
    ProviderState,
    RouteDecided,
    RunEvent,
    RunFinished,
    RunStarted,
    StepFinished,
    StepSkipped,
    StepStarted,
)
from engine.routing import TieBreakPayload
from engine.spec import StepSpec, WorkflowDefinition
from engine.states import EvaluatedCondition, RoutingSignal, RunStatus
from engine.store import BaseRunStore, InterruptRecord
from research.events import COALESCED, ROUND_SCORED, validated
from research.matrix import DIMENSIONS
from router.models import ChatMessage, ChatResponse, Usage
from tui.launch.journal import SENT_KEY

ROUND_STEPS = (
    "hypothesis_tree_tot",
    "retrieval_react",
    "analyst_ai",
    "analyst_swe",
    "cove_verify",
    "coverage_confidence_audit",
    "supervisor",
)


def research_graph(rounds: int = 4) -> tuple[list[GraphNode], list[GraphEdge]]:
    nodes = [
        GraphNode(id="intake_scope", uses="research.intake_scope", has_interrupt=True),
        GraphNode(id="source_policy", uses="research.source_policy"),
    ]
    edges = [GraphEdge(source="intake_scope", target="source_policy")]
    previous = "source_policy"
    for n in range(1, rounds + 1):
        group = f"research_round:{n}"
        ids = {name: f"{name}_r{n}" for name in ROUND_STEPS}
        nodes += [
            GraphNode(id=ids[name], uses=f"research.{name}", group=group) for name in ROUND_STEPS
        ]
        edges += [
            GraphEdge(source=previous, target=ids["hypothesis_tree_tot"]),
            GraphEdge(source=ids["hypothesis_tree_tot"], target=ids["retrieval_react"]),
            GraphEdge(source=ids["retrieval_react"], target=ids["analyst_ai"]),
            GraphEdge(source=ids["retrieval_react"], target=ids["analyst_swe"]),
            GraphEdge(source=ids["analyst_ai"], target=ids["cove_verify"]),
            GraphEdge(source=ids["analyst_swe"], target=ids["cove_verify"]),
            GraphEdge(source=ids["cove_verify"], target=ids["coverage_confidence_audit"]),
            GraphEdge(source=ids["coverage_confidence_audit"], target=ids["supervisor"]),
            GraphEdge(source=ids["retrieval_react"], target=ids["cove_verify"]),
        ]
        if n > 1:
            # as in workflows/deep_research.yaml: a later round's steps also wait for the previous
            # supervisor, and the audit reads the retrieval directly (long edges across layers)
            edges += [
                GraphEdge(source=previous, target=ids[name])
                for name in ("retrieval_react", "cove_verify", "coverage_confidence_audit")
            ]
            edges.append(
                GraphEdge(source=ids["retrieval_react"], target=ids["coverage_confidence_audit"])
            )
        previous = ids["supervisor"]
    nodes += [
        GraphNode(id="final_synthesis", uses="research.final_synthesis"),
        GraphNode(id="rag_package", uses="research.rag_package"),
    ]
    edges += [
        GraphEdge(source=f"supervisor_r{n}", target="final_synthesis", kind="route")
        for n in range(1, rounds + 1)
    ]
    edges.append(GraphEdge(source="final_synthesis", target="rag_package"))
    return nodes, edges


def definition_for(
    nodes: list[GraphNode], edges: list[GraphEdge], name: str = "deep_research"
) -> WorkflowDefinition:
    """A definition whose steps match ``nodes`` (the store keeps one per run)."""
    upstream: dict[str, list[str]] = {node.id: [] for node in nodes}
    for edge in edges:
        if edge.kind == "depends_on":
            upstream[edge.target].append(edge.source)
    steps = [
        StepSpec(id=node.id, uses="demo.echo", depends_on=upstream[node.id], group=node.group)
        for node in nodes
    ]
    return WorkflowDefinition(name=name, steps=steps, inputs={})


def snapshot(name: str, state: str, **extra: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "name": name,
        "kind": "openai",
        "state": state,
        "success_rate": 0.97,
        "p50_latency_s": 0.42,
        "p95_latency_s": 1.1,
        "recent_latencies_s": [0.3, 0.5, 0.4, 0.9, 0.45, 0.38, 1.1, 0.41],
        "rpm_remaining": 450,
        "rpm_limit": 500,
        "tpm_remaining": 80_000,
        "tpm_limit": 100_000,
        "in_flight": 1,
        "bulkhead_size": 4,
        "degraded": state != "CLOSED",
    }
    base.update(extra)
    return base


def round_payload(n: int, tiers: tuple[str, ...], ci: float, decision: str) -> dict[str, Any]:
    """A ``research.round_scored`` payload, built through research's own type as a step's is."""
    scores = {"Elite": 0.93, "High": 0.81, "Medium": 0.66, "Low": 0.42}
    return validated(
        ROUND_SCORED,
        round=n,
        dimensions={
            d: {"score": scores[t] - 0.01 * i, "tier": t}
            for i, (d, t) in enumerate(zip(DIMENSIONS, tiers))
        },
        ci=ci,
        recent_sources=4 + 3 * n,
        recent_floor=10,
        critical_contradictions=1 if n == 2 else 0,
        gate_passed=all(t in ("Elite", "High") for t in tiers),
        decision=decision,
        stop_reason="gate_passed" if decision == "stop" else None,
        remediation=None if decision == "stop" else "full",
    )


def _step(
    run_id: str,
    step_id: str,
    outputs: dict[str, Any],
    tokens: int = 0,
    providers: list[str] | None = None,
) -> list[RunEvent]:
    return [
        StepStarted(
            run_id=run_id,
            step_id=step_id,
            inputs={"query": "How do CPython's asyncio tasks get scheduled?"},
        ),
        StepFinished(
            run_id=run_id,
            step_id=step_id,
            outputs=outputs,
            duration_s=0.8,
            llm_calls=1 if tokens else 0,
            tokens=tokens,
            providers=providers or [],
        ),
    ]


ROUND_SOURCES = {
    1: {
        "pep-3156": "PEP 3156 – Asynchronous IO Support Rebooted",
        "pep-3148": "PEP 3148 – futures",
    },
    2: {"pep-492": "PEP 492 – Coroutines with async and await syntax"},
    3: {"pep-525": "PEP 525 – Asynchronous Generators"},
    4: {"pep-530": "PEP 530 – Asynchronous Comprehensions"},
}
ROUND_CLAIMS = {
    1: {
        "c1": "A task wraps a coroutine and schedules its steps on the event loop.",
        "c2": "The loop runs callbacks in the order they were scheduled.",
    },
    2: {"c3": "await on a pending future suspends the task until the future is done."},
    3: {"c4": "call_soon appends a callback to the loop's ready queue."},
    4: {"c5": "An asynchronous comprehension awaits each item in turn."},
}
DROPPED_CLAIMS = {3: {"c2"}}
"""Claims a later round's audit pruned (its passages no longer supported it)."""


def round_state(number: int) -> dict[str, Any]:
    """The research state a sample round ends with (the fields the round diff reads)."""
    sources: dict[str, Any] = {}
    claims: dict[str, str] = {}
    for n in range(1, number + 1):
        for source_id, title in ROUND_SOURCES.get(n, {}).items():
            sources[source_id] = {"id": source_id, "title": title, "round": n}
        claims.update(ROUND_CLAIMS.get(n, {}))
        for dropped in DROPPED_CLAIMS.get(n, set()):
            claims.pop(dropped, None)
    return {
        "revision": number * 10 + 9,
        "round": number,
        "evidence": {
            "sources": sources,
            "passages": {f"{source_id}#1": {"source_id": source_id} for source_id in sources},
            "claims": [{"id": claim_id, "text": text} for claim_id, text in claims.items()],
        },
    }


PLAN_OUTPUTS: dict[str, Any] = {
    "query": "How do CPython's asyncio tasks get scheduled?",
    "kind": "how_to",
    "subject": "asyncio task scheduling",
    "subject_terms": ["asyncio", "task", "event loop"],
    "sub_questions": [
        {"id": "q1", "text": "What is a task?", "facet": "definition", "key_terms": ["task"]},
        {
            "id": "q2",
            "text": "How does the loop pick the next one?",
            "facet": "mechanism",
            "key_terms": ["ready queue", "call_soon"],
        },
        {
            "id": "q3",
            "text": "What suspends a running task?",
            "facet": "mechanism",
            "key_terms": ["await", "future"],
        },
    ],
    "domain": "software",
    "as_of": "2024-05-01",
    "max_rounds": 4,
    "min_recent_sources": 10,
    "patience": 1,
    "tiebreaker_weights": "proposed",
    "collections": [],
    "refusal": "",
}
"""A research plan as research.intake_scope proposes it (IntakeOutput's fields)."""


def research_events(
    run_id: str, *, upto_round: int = 3, approval_pending: bool = False, finished: bool = True
) -> list[RunEvent]:
    """A run through ``upto_round`` rounds with mixed tiers; optionally paused on the plan approval."""
    nodes, edges = research_graph()
    out: list[RunEvent] = [
        RunStarted(
            run_id=run_id,
            workflow="deep_research",
            source="workflows/deep_research.yaml",
            engine="kahn",
            engine_reason="acyclic: interrupts wait per step",
            inputs={"query": "How do CPython's asyncio tasks get scheduled?"},
            nodes=nodes,
            edges=edges,
        )
    ]
    out += [
        ProviderState(
            run_id=run_id, provider="local", snapshot=snapshot("local", "CLOSED", kind="local")
        ),
        StepStarted(run_id=run_id, step_id="intake_scope", inputs={"query": "asyncio scheduling"}),
    ]
    raised = InterruptRaised(
        run_id=run_id,
        interrupt_id=f"{run_id}:intake_scope:0:0",
        step_id="intake_scope",
        interrupt_kind="approval",
        prompt="Approve the research plan?",
        payload={"outputs": PLAN_OUTPUTS, "when": "after"},
        options=["approve", "reject"],
    )
    out.append(raised)
    if approval_pending:
        return out
    out.append(
        InterruptResolved(
            run_id=run_id,
            interrupt_id=raised.interrupt_id,
            step_id="intake_scope",
            answer={"action": "approve"},
        )
    )
    out += [
        StepFinished(
            run_id=run_id, step_id="intake_scope", outputs={"sub_questions": 2}, duration_s=3.2
        )
    ]
    out += _step(run_id, "source_policy", {"window_days": 730})
    tier_rows = {
        1: ("Medium", "High", "Low", "Medium", "High"),
        2: ("High", "Elite", "Medium", "High", "Low"),
        3: ("Elite", "High", "High", "Elite", "High"),
        4: ("Elite", "Elite", "High", "Elite", "Medium"),
    }
    for n in range(1, upto_round + 1):
        for name in ROUND_STEPS:
            provider = "openai" if n % 2 else "anthropic"
            outputs = (
                {"round": n, "state": round_state(n)} if name == "supervisor" else {"round": n}
            )
            out += _step(run_id, f"{name}_r{n}", outputs, tokens=900 + 10 * n, providers=[provider])
        if n == 2:
            out += [
                ProviderState(
                    run_id=run_id,
                    provider="openai",
                    snapshot=snapshot(
                        "openai",
                        "OPEN",
                        cooldown_remaining_s=28.0,
                        cooldown_ceiling_s=30.0,
                        consecutive_trips=2,
                        success_rate=0.41,
                        last_error="rate_limit",
                        last_error_status=429,
                        models={1: "gpt-4o-mini", 2: "gpt-4o"},
                        cost_usd_total=0.0123,
                        requests_total=17,
                        successes_total=7,
                        failures_total=10,
                    ),
                ),
                ProviderState(
                    run_id=run_id,
                    provider="anthropic",
                    snapshot=snapshot(
                        "anthropic",
                        "HALF_OPEN",
                        kind="anthropic",
                        success_rate=0.62,
                        cooldown_remaining_s=0.0,
                        in_flight=1,
                        bulkhead_size=1,
                    ),
                ),
                Log(
                    run_id=run_id,
                    level="warning",
                    message="openai tripped OPEN after a 429 (Retry-After 28 s)",
                ),
            ]
        decision = "stop" if n == upto_round >= 3 else "continue"
        out.append(
            Domain(
                run_id=run_id,
                name=ROUND_SCORED,
                step_id=f"coverage_confidence_audit_r{n}",
                payload=round_payload(n, tier_rows[n], 0.55 + 0.1 * n, decision),
            )
        )
        signal = RoutingSignal(
            decision="advance",
            next_step_id="final_synthesis"
            if decision == "stop"
            else f"hypothesis_tree_tot_r{n + 1}",
            route="condition" if decision == "stop" else "next",
            reason="every dimension at High or better"
            if decision == "stop"
            else "gate not passed yet",
            evaluated_conditions=[
                EvaluatedCondition(
                    expr="outputs.decision == 'stop'",
                    target="final_synthesis",
                    matched=decision == "stop",
                )
            ],
            skipped_targets=[f"hypothesis_tree_tot_r{n + 1}"] if decision == "stop" else [],
        )
        out.append(RouteDecided(run_id=run_id, step_id=f"supervisor_r{n}", signal=signal))
        out.append(
            Budget(
                run_id=run_id,
                step_runs=2 + 7 * n,
                llm_calls=7 * n,
                tokens=6500 * n,
                max_step_runs=320,
                max_llm_calls=300,
                token_budget=500_000,
            )
        )
    if upto_round < 3 or not finished:
        return out
    out += [
        StepSkipped(run_id=run_id, step_id=f"{name}_r4", reason="not routed")
        for name in ROUND_STEPS
    ]
    out.append(
        Domain(
            run_id=run_id,
            name=COALESCED,
            payload=validated(
                COALESCED,
                selected_round=3,
                confidence_level="full",
                best_ci=0.85,
                weights="proposed",
                stop_reason="gate passed at R3",
            ),
        )
    )
    out += _step(
        run_id,
        "final_synthesis",
        {"report": "# asyncio scheduling\n\nTasks are scheduled ..."},
        tokens=2400,
        providers=["openai"],
    )
    out += _step(run_id, "rag_package", {"chunks": 12})
    out.append(
        RunFinished(
            run_id=run_id,
            status=RunStatus.COMPLETED,
            reason="gate passed at R3",
            outputs={"report": "# asyncio scheduling"},
        )
    )
    return out


def tie_break_events(run_id: str) -> list[RunEvent]:
    """A short run whose reviewer could not decide where to go next."""
    nodes = [
        GraphNode(id="draft", uses="demo.author"),
        GraphNode(id="review", uses="demo.critic"),
        GraphNode(id="publish", uses="demo.echo"),
        GraphNode(id="revise", uses="demo.author"),
        GraphNode(id="gather_context", uses="demo.gather"),
    ]
    edges = [
        GraphEdge(source="draft", target="review"),
        GraphEdge(source="review", target="publish", kind="route"),
        GraphEdge(source="review", target="revise", kind="route"),
        GraphEdge(source="review", target="gather_context", kind="detour"),
    ]
    return [
        RunStarted(
            run_id=run_id,
            workflow="demo_tiebreak",
            source="workflows/demo_tiebreak.yaml",
            engine="kahn",
            engine_reason="acyclic",
            nodes=nodes,
            edges=edges,
        ),
        *_step(run_id, "draft", {"text": "first draft"}, tokens=300, providers=["local"]),
        StepStarted(run_id=run_id, step_id="review"),
        InterruptRaised(
            run_id=run_id,
            interrupt_id=f"{run_id}:review:0:1",
            step_id="review",
            interrupt_kind="tie_breaker",
            prompt="The reviewer is unsure: where next?",
            payload=TieBreakPayload(
                valid_targets=["publish", "revise"],
                default_target="publish",
                suggestion="revise",
                confidence=0.55,
                confidence_threshold=0.7,
                reasoning="Two claims lack a second source; one more pass may fix them.",
                hint="",
                unsure_because="its confidence 0.55 is below the threshold 0.70",
                outputs={"score": 0.62, "verdict": "UNSURE", "unsupported_claims": 2},
                evaluated_conditions=[
                    EvaluatedCondition(
                        expr="outputs.verdict == 'PASS'", target="publish", matched=False
                    ),
                    EvaluatedCondition(expr="outputs.score < 0.3", target="revise", matched=False),
                ],
            ).model_dump(mode="json"),
            options=["publish", "revise"],
        ),
    ]


def store_events(
    store: BaseRunStore, run_id: str, events: list[RunEvent], *, status: RunStatus | None = None
) -> None:
    """Create the run and append ``events`` in order through the store (seq, ts stamped there)."""
    first = events[0]
    assert isinstance(first, RunStarted)
    definition = definition_for(first.nodes, first.edges, first.workflow)
    store.create_run(
        definition, dict(first.inputs), first.engine, first.engine_reason, run_id=run_id
    )
    for event in events:
        store.append(event)
    resolved = {e.interrupt_id for e in events if isinstance(e, InterruptResolved)}
    for event in events:
        if isinstance(event, InterruptRaised) and event.interrupt_id not in resolved:
            request = InterruptRequest(
                kind=event.interrupt_kind,
                prompt=event.prompt,
                payload=event.payload,
                options=event.options,
            )
            store.add_interrupt(
                InterruptRecord(
                    interrupt_id=event.interrupt_id,
                    run_id=run_id,
                    step_id=event.step_id,
                    request=request,
                )
            )
    final = next((e for e in reversed(events) if isinstance(e, RunFinished)), None)
    if final is not None:
        store.set_status(run_id, final.status, final.reason, dict(final.outputs))
    elif status is not None:
        store.set_status(run_id, status)


SAMPLE_CALL_STEP = "hypothesis_tree_tot_r2"
"""The sample research run's step whose model call is journaled (its round-2 provider's)."""


def journal_sample_call(store: BaseRunStore, run_id: str) -> None:
    """Journal :data:`SAMPLE_CALL_STEP`'s model call as the app's model caller does: the router's
    answer with the messages that were sent (tui/app/model_calls.py reads it back)."""
    sent = [
        ChatMessage(
            role="system",
            content="You branch a research question into hypotheses a search can test. "
            "Answer as JSON: {hypotheses: [{id, claim, test}]}.",
        ),
        ChatMessage(
            role="user",
            content='{"query":"How do CPython\'s asyncio tasks get scheduled?","round":2,'
            '"open_gaps":["when a done future runs its callbacks"]}',
        ),
    ]
    answer = ChatResponse(
        content='{"hypotheses":[{"id":"h1","claim":"A done future schedules its callbacks '
        'with call_soon","test":"search: Future.set_result call_soon"},{"id":"h2","claim":'
        '"Task.__step runs one step per loop iteration","test":"search: Task __step"}]}',
        provider="anthropic",
        model="claude-3-5-haiku",
        tier=1,
        usage=Usage(input_tokens=640, output_tokens=280),
        latency_s=1.84,
        cost_usd=0.0019,
    )
    payload = answer.model_dump(mode="json") | {
        SENT_KEY: [message.model_dump(mode="json") for message in sent]
    }
    store.journal_put(run_id, SAMPLE_CALL_STEP, 0, 0, JournalEntry(kind="llm", payload=payload))
