"""The Kahn engine: trigger rules, ordering, wavefront, limits, completion, retries, cancellation."""

from __future__ import annotations

import asyncio

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.context import InterruptAnswer
from engine.events import RunEvent, StepFinished, StepStarted
from engine.kahn import KahnEngine
from engine.protocol import RunContext
from engine.readiness import trigger_readiness
from engine.spec import CompletionSpec, Limits
from engine.states import RunStatus, StepStatus
from engine.store import InMemoryRunStore
from tests.engine.kahn_helpers import (
    TEST_REGISTRY,
    FakeModel,
    first_seq,
    fresh_gates,
    kinds_of,
    run,
    step,
    workflow,
)

S, F, U, K = StepStatus.SUCCEEDED, StepStatus.FAILED, StepStatus.UPSTREAM_FAILED, StepStatus.SKIPPED

TRIGGER_TABLE = [
    # rule, dependency outcomes, expected action
    ("all_success", [S, S], "run"),
    ("all_success", [S, K], "skip"),
    ("all_success", [S, F], "upstream_failed"),
    ("all_success", [S, U], "upstream_failed"),
    ("all_done", [S, F, K], "run"),
    ("all_done", [U], "run"),
    ("none_failed", [S, K], "run"),
    ("none_failed", [K, K], "run"),
    ("none_failed", [S, F], "upstream_failed"),
    ("none_failed_min_one_success", [S, K], "run"),
    ("none_failed_min_one_success", [K, K], "skip"),
    ("none_failed_min_one_success", [S, F], "upstream_failed"),
    ("none_failed_min_one_success", [K, U], "upstream_failed"),
    ("one_success", [S, F], "run"),
    ("one_success", [F, F], "upstream_failed"),
    ("one_success", [K, K], "skip"),
    ("one_failed", [S, F], "run"),
    ("one_failed", [S, U], "run"),
    ("one_failed", [S, K], "skip"),
]


@pytest.mark.parametrize(("rule", "statuses", "expected"), TRIGGER_TABLE)
def test_trigger_rule_table(rule: str, statuses: list[StepStatus], expected: str) -> None:
    assert trigger_readiness(rule, statuses).action == expected


async def test_all_six_trigger_rules_through_the_engine() -> None:
    """ok succeeds, bad fails, off is skipped; each rule's step depends on a mix of them."""
    wf = workflow(
        step("ok"),
        step("bad", "demo.fail", optional=True),
        step("off", when="false"),
        step("r_all_success", depends_on=["ok", "off"], trigger="all_success"),
        step("r_all_done", depends_on=["ok", "bad", "off"], trigger="all_done"),
        step("r_none_failed", depends_on=["ok", "off"], trigger="none_failed"),
        step("r_default", depends_on=["ok", "bad"]),
        step("r_default_skipped", depends_on=["off"]),
        step("r_one_success", depends_on=["ok", "bad"], trigger="one_success"),
        step("r_one_failed", depends_on=["ok", "bad"], trigger="one_failed"),
        step("r_one_failed_none", depends_on=["ok", "off"], trigger="one_failed"),
        step("after_upstream_failed", depends_on=["r_default"], trigger="all_done"),
    )
    result, events = await run(wf)
    statuses = {k: v.value for k, v in result.step_statuses.items()}
    assert statuses == {
        "ok": "SUCCEEDED",
        "bad": "FAILED",
        "off": "SKIPPED",
        "r_all_success": "SKIPPED",
        "r_all_done": "SUCCEEDED",
        "r_none_failed": "SUCCEEDED",
        "r_default": "UPSTREAM_FAILED",
        "r_default_skipped": "SKIPPED",
        "r_one_success": "SUCCEEDED",
        "r_one_failed": "SUCCEEDED",
        "r_one_failed_none": "SKIPPED",
        "after_upstream_failed": "SUCCEEDED",
    }
    assert result.status == RunStatus.COMPLETED, "the only FAILED step is optional"
    skipped = next(e for e in events if e.kind == "step_skipped" and e.step_id == "off")
    assert skipped.reason.startswith("when is false")


@st.composite
def random_dags(draw: st.DrawFn) -> dict[int, list[int]]:
    size = draw(st.integers(min_value=1, max_value=14))
    return {
        node: sorted(draw(st.sets(st.integers(0, node - 1), max_size=3))) if node else []
        for node in range(size)
    }


@settings(max_examples=30)
@given(dag=random_dags(), delays=st.lists(st.sampled_from([0, 0, 1, 2]), min_size=14, max_size=14))
def test_every_dependency_finishes_before_its_dependent_starts(
    dag: dict[int, list[int]], delays: list[int]
) -> None:
    """Random DAGs whose steps yield to the loop a random number of times: dependencies
    settle before dependents start, and every step runs exactly once."""
    wf = workflow(
        *[
            step(
                f"s{n}",
                "test.yield",
                depends_on=[f"s{d}" for d in deps],
                config={"yields": delays[n]},
            )
            for n, deps in dag.items()
        ]
    )
    result, events = asyncio.run(run(wf))
    assert result.status == RunStatus.COMPLETED
    started = [e.step_id for e in events if isinstance(e, StepStarted)]
    assert sorted(started) == sorted(f"s{n}" for n in dag)
    for n, deps in dag.items():
        start = first_seq(events, "step_started", f"s{n}")
        for d in deps:
            assert first_seq(events, "step_finished", f"s{d}") < start


async def test_a_step_never_waits_for_an_unrelated_slow_sibling() -> None:
    """slow waits until fast_child has run; if the scheduler held fast_child back for
    slow (a superstep), the run could not finish."""
    fresh_gates("slow_may_finish")
    wf = workflow(
        step("root"),
        step("slow", "test.gate", depends_on=["root"], config={"wait": "slow_may_finish"}),
        step("fast", depends_on=["root"]),
        step("fast_child", "test.gate", depends_on=["fast"], config={"open": "slow_may_finish"}),
        step("join", depends_on=["slow", "fast_child"]),
    )
    result, events = await asyncio.wait_for(run(wf), timeout=30)
    assert result.status == RunStatus.COMPLETED
    assert first_seq(events, "step_finished", "fast_child") < first_seq(
        events, "step_finished", "slow"
    )
    assert first_seq(events, "step_started", "join") > first_seq(events, "step_finished", "slow")


async def test_an_interrupt_holds_only_its_own_step() -> None:
    """The person answers only after the unrelated chain has finished."""
    gates = fresh_gates("chain_done")

    async def person(raised, request):  # type: ignore[no-untyped-def]
        await gates["chain_done"].wait()
        return InterruptAnswer(action="approve")

    wf = workflow(
        step("ask", "demo.ask"),
        step("work", depends_on=[]),
        step("more_work", "test.gate", depends_on=["work"], config={"open": "chain_done"}),
        step("after_ask", depends_on=["ask"]),
    )
    result, events = await asyncio.wait_for(run(wf, responder=person), timeout=30)
    assert result.status == RunStatus.COMPLETED
    raised = next(e for e in events if e.kind == "interrupt_raised")
    assert raised.held_steps == ["ask"]
    assert first_seq(events, "step_finished", "more_work") < first_seq(
        events, "interrupt_resolved", "ask"
    )


async def test_retries_emit_step_retrying_and_then_succeed() -> None:
    wf = workflow(step("flaky", "demo.fail", config={"fail_times": 2}, retries=2))
    result, events = await run(wf)
    assert result.status == RunStatus.COMPLETED
    assert kinds_of(events, "flaky") == [
        "step_started",
        "step_retrying",
        "step_started",
        "step_retrying",
        "step_started",
        "step_finished",
    ]
    finished = next(e for e in events if isinstance(e, StepFinished))
    assert finished.outputs == {"recovered_on_attempt": 3}


async def test_a_step_timeout_fails_the_step_after_its_retries() -> None:
    fresh_gates("never")
    wf = workflow(step("stuck", "test.gate", config={"wait": "never"}, timeout_s=0.01, retries=1))
    result, events = await run(wf)
    assert result.status == RunStatus.FAILED
    failed = next(e for e in events if e.kind == "step_failed")
    assert failed.error == "timed out after 0.01 s"
    assert kinds_of(events, "stuck").count("step_retrying") == 1


async def test_the_step_run_bound_ends_the_run_partial() -> None:
    wf = workflow(
        step("author", "demo.author"),
        step(
            "critic",
            "demo.critic",
            depends_on=["author"],
            config={"converge_at": 99},
            routing={
                "kind": "loop",
                "next": "done",
                "loop": {"target": "author", "max_iterations": 50},
            },
        ),
        step("done"),
        limits=Limits(max_step_runs=5),
    )
    result, _ = await run(wf)
    assert result.status == RunStatus.PARTIAL
    assert result.reason == "max_step_runs 5 reached"
    assert result.step_statuses["done"] == StepStatus.SKIPPED


async def test_the_llm_call_limit_ends_the_run_partial() -> None:
    wf = workflow(
        step("chatty", "test.model_calls", config={"calls": 5}),
        step("later", depends_on=["chatty"]),
        limits=Limits(max_llm_calls=3),
    )
    result, _ = await run(wf, model=FakeModel(["hi"]))
    assert (result.status, result.reason) == (RunStatus.PARTIAL, "max_llm_calls 3 reached")
    assert result.step_statuses["later"] == StepStatus.SKIPPED


async def test_the_token_budget_ends_the_run_partial() -> None:
    wf = workflow(
        step("chatty", "test.model_calls", config={"calls": 5}), limits=Limits(token_budget=25)
    )
    result, events = await run(wf, model=FakeModel(["hi"], tokens=10))
    assert (result.status, result.reason) == (RunStatus.PARTIAL, "token_budget 25 reached")
    budgets = [e for e in events if e.kind == "budget"]
    assert budgets[-1].tokens == 30


async def test_the_run_timeout_ends_the_run_partial() -> None:
    fresh_gates("never")
    wf = workflow(
        step("stuck", "test.gate", config={"wait": "never"}),
        step("after", depends_on=["stuck"]),
        limits=Limits(timeout_s=0.05),
    )
    result, _ = await run(wf)
    assert (result.status, result.reason) == (RunStatus.PARTIAL, "timeout_s 0.05 reached")
    assert result.step_statuses == {"stuck": StepStatus.SKIPPED, "after": StepStatus.SKIPPED}


async def test_completion_criteria_decide_completed_partial_or_failed() -> None:
    base = [step("a"), step("b", when="false"), step("c", depends_on=["b"])]
    met, _ = await run(
        workflow(
            *base,
            completion=CompletionSpec(required_steps=["a"]),
            outputs={"from_a": "steps.a.status"},
        )
    )
    assert met.status == RunStatus.COMPLETED
    assert met.outputs == {"from_a": "SUCCEEDED"}
    missing, _ = await run(
        workflow(
            *base,
            completion=CompletionSpec(required_steps=["c"], required_outputs=["x"]),
            outputs={"x": "steps.c.outputs.value"},
        )
    )
    assert missing.status == RunStatus.PARTIAL
    assert missing.missing == ["output x", "step c"]
    assert "missing: output x, step c" in missing.reason
    failed, _ = await run(workflow(step("a"), step("boom", "demo.fail", depends_on=["a"])))
    assert failed.status == RunStatus.FAILED
    assert failed.reason.startswith("step boom failed: DemoFailure")


async def test_invalid_inputs_fail_the_step_with_the_validation_error() -> None:
    wf = workflow(step("nap", "demo.sleep", inputs={"seconds": "'soon'"}))
    result, events = await run(wf)
    assert result.status == RunStatus.FAILED
    failed = next(e for e in events if e.kind == "step_failed")
    assert "invalid inputs for demo.sleep: seconds" in failed.error


async def test_a_model_answer_gets_one_repair_attempt() -> None:
    model = FakeModel([{"status": "OK"}, {"status": "OK", "score": 0.9}])
    result, events = await run(workflow(step("judge", "test.model_verdict")), model=model)
    assert result.status == RunStatus.COMPLETED
    finished = next(e for e in events if isinstance(e, StepFinished))
    assert finished.outputs == {"status": "OK", "score": 0.9}
    assert finished.llm_calls == 2


async def test_a_model_answer_still_invalid_after_repair_fails_the_step() -> None:
    model = FakeModel([{"status": "OK"}])
    result, events = await run(workflow(step("judge", "test.model_verdict")), model=model)
    assert result.status == RunStatus.FAILED
    failed = next(e for e in events if e.kind == "step_failed")
    assert failed.error.startswith(
        "invalid outputs from test.model_verdict after one repair attempt: score"
    )
    assert len(model.calls) == 2


async def test_cancel_stops_running_steps_and_ends_cancelled() -> None:
    fresh_gates("never")
    engine = KahnEngine(registry=TEST_REGISTRY)
    store = InMemoryRunStore()
    task = asyncio.ensure_future(
        engine.execute(
            workflow(
                step("stuck", "test.gate", config={"wait": "never"}),
                step("after", depends_on=["stuck"]),
            ),
            RunContext(store=store, run_id="to-cancel"),
        )
    )
    while not any(e.kind == "step_started" for e in store.events("to-cancel")):
        await asyncio.sleep(0)
    engine.cancel("to-cancel")
    result = await asyncio.wait_for(task, timeout=30)
    assert result.status == RunStatus.CANCELLED
    assert result.step_statuses["stuck"] == StepStatus.SKIPPED
    assert store.get_run("to-cancel").status == RunStatus.CANCELLED
    reasons = {r.step_id: r.reason for r in store.step_results("to-cancel").values()}
    assert reasons == {"stuck": "run stopped: cancelled", "after": "run stopped: cancelled"}


async def test_cancelling_the_run_task_skips_what_was_running_with_the_reason() -> None:
    fresh_gates("never")
    store = InMemoryRunStore()
    task = asyncio.ensure_future(
        KahnEngine(registry=TEST_REGISTRY).execute(
            workflow(
                step("left", "test.gate", config={"wait": "never"}),
                step("right", "test.gate", config={"wait": "never"}),
            ),
            RunContext(store=store, run_id="task-cancel"),
        )
    )
    while sum(e.kind == "step_started" for e in store.events("task-cancel")) < 2:
        await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    skipped = [e for e in store.events("task-cancel") if e.kind == "step_skipped"]
    assert [(e.step_id, e.reason) for e in skipped] == [
        ("left", "run stopped: cancelled"),
        ("right", "run stopped: cancelled"),
    ]
    assert store.get_run("task-cancel").status == RunStatus.CANCELLED


async def test_run_started_carries_the_graph_and_a_budget_event_follows_each_step() -> None:
    result, events = await run(workflow(step("a"), step("b", depends_on=["a"])))
    started = events[0]
    assert started.kind == "run_started"
    assert [n.id for n in started.nodes] == ["a", "b"]
    assert [(e.source, e.target) for e in started.edges] == [("a", "b")]
    seqs = [e.kind for e in events]
    assert seqs == [
        "run_started",
        "step_started",
        "step_finished",
        "budget",
        "step_started",
        "step_finished",
        "budget",
        "run_finished",
    ]
    assert [e.seq for e in events] == list(range(1, len(events) + 1))


async def test_the_run_timeout_skips_what_was_running_with_its_reason_in_declared_order() -> None:
    fresh_gates("never")
    store = InMemoryRunStore()
    result = await KahnEngine(registry=TEST_REGISTRY).execute(
        workflow(
            step("zeta", "test.gate", config={"wait": "never"}),
            step("alpha", "test.gate", config={"wait": "never"}),
            limits=Limits(timeout_s=0.05),
        ),
        RunContext(store=store, run_id="timed-out"),
    )
    assert result.status == RunStatus.PARTIAL
    skipped = [e for e in store.events("timed-out") if e.kind == "step_skipped"]
    assert [(e.step_id, e.reason) for e in skipped] == [
        ("zeta", "run stopped: timeout_s 0.05 reached"),
        ("alpha", "run stopped: timeout_s 0.05 reached"),
    ]


@pytest.mark.parametrize("collector_on", [True, False])
async def test_a_run_start_collects_no_cycles_and_leaves_the_collector_as_it_found_it(
    collector_on: bool,
) -> None:
    """The start of a run (its graph in ``run_started``: two models a node and an edge) is
    stored with the cycle collector held off, then the collector is as it was: on again in a
    process where it runs, still off in one that turned it off."""
    import gc

    started: list[bool] = []

    class Watching(InMemoryRunStore):
        def _write_event(self, event: RunEvent) -> None:
            if event.kind == "run_started":
                started.append(gc.isenabled())
            super()._write_event(event)

    was = gc.isenabled()
    (gc.enable if collector_on else gc.disable)()
    try:
        result, _ = await run(workflow(step("a"), step("b", depends_on=["a"])), store=Watching())
        assert gc.isenabled() is collector_on
    finally:
        (gc.enable if was else gc.disable)()
    assert result.status == RunStatus.COMPLETED
    assert started == [False]


async def test_expressions_read_the_run_counters_as_they_stand() -> None:
    """``run.step_runs``, ``run.llm_calls`` and ``run.tokens`` in a step's inputs are the run's
    counters when the step starts: after two model calls of 10 tokens, in its third start."""
    wf = workflow(
        step("chatty", "test.model_calls", config={"calls": 2}),
        step(
            "reads",
            depends_on=["chatty"],
            inputs={
                "runs": "run.step_runs",
                "calls": "run.llm_calls",
                "tokens": "run.tokens",
                "bound": "run.max_step_runs",
            },
        ),
    )
    result, events = await run(wf, model=FakeModel(["hi"], tokens=10))
    assert result.status == RunStatus.COMPLETED
    finished = {e.step_id: e for e in events if isinstance(e, StepFinished)}
    bound = wf.limits.step_run_bound(2)
    assert finished["reads"].outputs == {"runs": 1, "calls": 2, "tokens": 20, "bound": bound}
