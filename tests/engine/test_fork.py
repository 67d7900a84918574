"""Fork (time travel) has one meaning on both engines: keep every result not downstream
of STEP, run STEP and everything downstream again."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from engine import demo_steps  # noqa: F401 - registers the demo steps
from engine.canonical import compare
from engine.events import RunEvent, RunFinished, RunStarted, StepFailed, StepSkipped, StepStarted
from engine.graph import WorkflowGraph
from engine.kahn import KahnEngine
from engine.langgraph_engine import LangGraphEngine
from engine.loader import load_workflow, load_workflow_text
from engine.protocol import RunContext
from engine.spec import WorkflowDefinition
from engine.sqlite_file import StoreWriteError
from engine.states import RunStatus
from engine.store import InMemoryRunStore, RunStore
from engine.time_travel import ForkError, ForkPoint
from tests.engine.kahn_helpers import TEST_REGISTRY
from tests.engine.langgraph_cases import WORKFLOWS, canonical_of
from tests.engine.reference.differential import fork_differences, respond
from tui.launch.fork_options import fork_edits

ENGINES = {"kahn": KahnEngine, "langgraph": LangGraphEngine}
CASES = [
    ("fan_out", "search_code"),
    ("fan_out", "plan"),
    ("microloop", "critic"),
    ("value_branch", "escalate"),
    ("detour", "review"),
]


@pytest.mark.parametrize("original", ["kahn", "langgraph"])
@pytest.mark.parametrize(("name", "at"), CASES, ids=[f"{n}@{a}" for n, a in CASES])
def test_fork_on_both_engines_gives_the_same_results(name: str, at: str, original: str) -> None:
    wf = load_workflow(WORKFLOWS / f"{name}.yaml")
    store = InMemoryRunStore()

    async def go() -> tuple[str, dict[str, str]]:
        parent = await ENGINES[original]().execute(wf, RunContext(store=store))
        assert parent.status == RunStatus.COMPLETED
        forks = {}
        for engine_name, engine_class in ENGINES.items():
            forks[engine_name] = (
                await engine_class().fork(parent.run_id, at, RunContext(store=store))
            ).run_id
        return parent.run_id, forks

    parent_id, forks = asyncio.run(go())
    kahn = canonical_of(wf, store, forks["kahn"])
    graph = canonical_of(wf, store, forks["langgraph"])
    assert compare(kahn, graph) == []
    assert kahn.status == "COMPLETED"
    graph_of = WorkflowGraph(wf)
    rerun = {at} | graph_of.descendants(at)
    # A re-run loop router may go back again: its loop body runs again too.
    again = {
        s
        for e in graph_of.loop_edges
        if e.source in rerun
        for s in graph_of.between(e.target, e.source)
    }
    parent_results = store.step_results(parent_id)
    for engine_name, fork_id in forks.items():
        events = store.events(fork_id)
        started = {e.step_id for e in events if isinstance(e, StepStarted)}
        assert started <= rerun | again, (
            f"{engine_name} re-ran a step not downstream of {at}: {started - rerun}"
        )
        assert at in started or store.step_results(fork_id)[at].status.value == "SKIPPED"
        kept = store.step_results(fork_id)
        for step_id in set(wf.step_ids) - rerun - again:
            assert kept[step_id].outputs == parent_results[step_id].outputs
        started_event = next(e for e in events if isinstance(e, RunStarted))
        assert started_event.forked_from == parent_id and started_event.engine == engine_name
        assert store.get_run(fork_id).parent_run_id == parent_id


def test_cli_fork_and_history(tmp_path: Path) -> None:
    from tui.cli import cli

    runner = CliRunner()
    ran = runner.invoke(
        cli,
        [
            "--workspace",
            str(tmp_path),
            "run",
            str(WORKFLOWS / "fan_out.yaml"),
            "--engine",
            "langgraph",
            "--headless",
        ],
    )
    assert ran.exit_code == 0, ran.output
    with RunStore(tmp_path / "runs.sqlite") as store:
        (parent,) = store.list_runs()
    history = runner.invoke(cli, ["--workspace", str(tmp_path), "runs", "history", parent.run_id])
    assert history.exit_code == 0, history.output
    assert "merge=SUCCEEDED" in history.output and "langgraph" in history.output

    forked = runner.invoke(
        cli,
        [
            "--workspace",
            str(tmp_path),
            "runs",
            "fork",
            parent.run_id,
            "--at",
            "summarise_code",
            "--engine",
            "kahn",
        ],
    )
    assert forked.exit_code == 0, forked.output
    with RunStore(tmp_path / "runs.sqlite") as store:
        fork = next(run for run in store.list_runs() if run.parent_run_id == parent.run_id)
        started = Counter(
            e.step_id for e in store.events(fork.run_id) if isinstance(e, StepStarted)
        )
    assert fork.engine == "kahn" and fork.forked_at == "summarise_code"
    assert started == Counter({"summarise_code": 1, "merge": 1})

    unknown = runner.invoke(
        cli, ["--workspace", str(tmp_path), "runs", "fork", parent.run_id, "--at", "nope"]
    )
    assert unknown.exit_code == 2 and "no step 'nope'" in unknown.output


@pytest.mark.parametrize("engine", ["kahn", "langgraph"])
def test_a_fork_inside_a_loop_restores_that_pass_with_its_history_and_count(engine: str) -> None:
    """The issue's case: a fork at the critic's second pass kept iteration-2 outputs and
    restarted the loop count. Now: the author's pass 1 result, the critic's pass 0 in its
    history, one loop taken — and with the author's draft edited, the critic reads the edit."""
    wf = load_workflow(WORKFLOWS / "microloop.yaml")
    store = InMemoryRunStore()
    parent = asyncio.run(ENGINES[engine]().execute(wf, RunContext(store=store)))
    assert parent.status == RunStatus.COMPLETED
    edits = fork_edits(["author.draft=edited by hand"])
    fork = asyncio.run(
        ENGINES[engine]().fork(parent.run_id, "critic@1", RunContext(store=store), edits)
    )
    assert fork.status == RunStatus.COMPLETED
    started = [
        (e.step_id, e.iteration) for e in store.events(fork.run_id) if isinstance(e, StepStarted)
    ]
    assert started == [("critic", 1), ("author", 2), ("critic", 2), ("publish", 0)]
    first = next(
        e for e in store.events(fork.run_id) if isinstance(e, StepStarted) and e.step_id == "critic"
    )
    assert first.inputs == {"draft": "edited by hand"}
    parent_results, fork_results = (
        store.step_results(parent.run_id),
        store.step_results(fork.run_id),
    )
    assert fork_results["publish"].outputs == parent_results["publish"].outputs
    assert store.get_run(fork.run_id).forked_at == "critic@1"


def test_fork_refuses_a_pass_that_never_started_and_a_bad_edit() -> None:
    wf = load_workflow(WORKFLOWS / "microloop.yaml")
    store = InMemoryRunStore()
    parent = asyncio.run(KahnEngine().execute(wf, RunContext(store=store)))
    with pytest.raises(ForkError, match=r"no pass 7 .*passes that started: 0, 1, 2"):
        asyncio.run(KahnEngine().fork(parent.run_id, "critic@7", RunContext(store=store)))
    bad = fork_edits(["critic.score=high"])
    with pytest.raises(ForkError, match="critic: score: .*give a value demo.critic accepts"):
        asyncio.run(KahnEngine().fork(parent.run_id, "publish", RunContext(store=store), bad))
    with pytest.raises(ForkError, match="not STEP or STEP@ITERATION"):
        ForkPoint.parse("critic@x")


# -- a fork without edits ends as its parent: the shrunk counterexamples ------------------------


def _probe_workflow(*steps: dict[str, Any], **fields: Any) -> WorkflowDefinition:
    data = {"name": "fork_regression", "steps": [{"uses": "ref.probe", **s} for s in steps]}
    return load_workflow_text(
        json.dumps({**data, **fields}), source="fork_regression.yaml", registry=TEST_REGISTRY
    )


def _forks_of_runs_on_both_engines(wf: WorkflowDefinition, at: str) -> dict[str, Any]:
    """Run ``wf`` on each engine, fork each run at ``at`` on each engine; what differed."""
    store = InMemoryRunStore()

    async def go() -> dict[str, Any]:
        found = {}
        for name, engine in ENGINES.items():
            parent = await engine(registry=TEST_REGISTRY).execute(
                wf, RunContext(store=store, responder=respond)
            )
            found[name] = await fork_differences(store, parent.run_id, at)
        return found

    return asyncio.run(go())


NO_DIFFERENCES = {parent: {"kahn": [], "langgraph": []} for parent in ("kahn", "langgraph")}


def test_a_fork_keeps_a_termination_by_a_step_it_does_not_run_again() -> None:
    """s1 terminated the run after s2 began, so the fork at s2 keeps s1's result: the join
    it cut off was run in the fork (the termination was lost) and the reason was empty."""
    wf = _probe_workflow(
        {"id": "s0"},
        {"id": "s1", "depends_on": ["s0"], "config": {"terminate_at": 0}},
        {"id": "s2"},
        {"id": "join", "depends_on": ["s1", "s2"]},
    )
    assert _forks_of_runs_on_both_engines(wf, "s2") == NO_DIFFERENCES


def test_a_fork_keeps_a_termination_that_held_a_limit_off() -> None:
    """The fuzz's case: with the kept termination lost the fork ran on into
    max_step_runs and ended PARTIAL where its parent was COMPLETED."""
    wf = _probe_workflow(
        {"id": "s0", "optional": True, "interrupt": {"before": True, "prompt": "approve?"}},
        {"id": "s1", "interrupt": {"before": True, "prompt": "approve?"}},
        {"id": "s2", "depends_on": ["s1"], "config": {"terminate_at": 0}},
        {"id": "s3", "depends_on": ["s0", "s2"]},
        {"id": "s4", "depends_on": ["s3"]},
        {"id": "s5", "depends_on": ["s4"]},
        limits={"max_step_runs": 4},
    )
    assert _forks_of_runs_on_both_engines(wf, "s0") == NO_DIFFERENCES


# -- every pass of a run with loops, a detour, skips, retries and failures ------------------------


def _every_construct() -> WorkflowDefinition:
    """The steps that start one at a time read ``run.step_runs`` into their outputs, so a fork
    that restores the run's counters wrongly ends with other outputs than its parent (steps
    that run side by side would read a count that depends on which started first)."""
    counted = {"inputs": {"x": "run.step_runs"}}
    return _probe_workflow(
        {"id": "start", **counted},
        {"id": "maybe", "depends_on": ["start"], "when": "iteration == 0"},
        {
            "id": "work",
            "depends_on": ["start"],
            "retries": 1,
            "config": {"fail_from": 1, "fail_times": 1},
        },
        {"id": "broken", "depends_on": ["start"], "optional": True, "config": {"fail_times": 1}},
        {"id": "behind", "depends_on": ["broken"], "optional": True},
        {
            "id": "check",
            "depends_on": ["maybe", "work", "behind"],
            "trigger": "all_done",
            "routing": {
                "kind": "loop",
                "next": "decide",
                "loop": {"target": "start", "max_iterations": 2},
            },
            **counted,
        },
        {
            "id": "decide",
            "depends_on": ["check"],
            "routing": {
                "kind": "linear",
                "next": "after",
                "detour": {"target": "context", "when": "outputs.n == 0"},
            },
            **counted,
        },
        {"id": "context", **counted},
        {"id": "never", "when": "false"},
        {"id": "after", "depends_on": ["decide"], **counted},
    )


@pytest.mark.parametrize("original", ["kahn", "langgraph"])
def test_a_fork_at_every_pass_of_every_step_ends_as_its_parent(original: str) -> None:
    wf = _every_construct()
    store = InMemoryRunStore()

    async def go() -> dict[str, Any]:
        parent = await ENGINES[original](registry=TEST_REGISTRY).execute(
            wf, RunContext(store=store, responder=respond)
        )
        assert parent.status == RunStatus.COMPLETED
        passes = sorted(
            {
                f"{e.step_id}@{e.iteration}"
                for e in store.events(parent.run_id)
                if isinstance(e, (StepStarted, StepSkipped, StepFailed))
            }
        )
        assert len(passes) == 23, passes
        found: dict[str, Any] = {
            at: await fork_differences(store, parent.run_id, at) for at in passes
        }
        reasons = {s: r.reason for s, r in store.step_results(parent.run_id).items()}
        for fork in store.list_runs(limit=100):
            got = {s: r.reason for s, r in store.step_results(fork.run_id).items()}
            if got != reasons:
                found[f"step reasons in the fork at {fork.forked_at}"] = got
        return found

    assert {
        at: d for at, d in asyncio.run(go()).items() if d != {"kahn": [], "langgraph": []}
    } == {}


def test_a_fork_at_a_step_the_workflow_lacks_or_that_never_started_says_what_there_is() -> None:
    wf = _every_construct()
    store = InMemoryRunStore()
    parent = asyncio.run(KahnEngine(registry=TEST_REGISTRY).execute(wf, RunContext(store=store)))
    with pytest.raises(ForkError) as refused:
        asyncio.run(
            KahnEngine(registry=TEST_REGISTRY).fork(parent.run_id, "nope", RunContext(store=store))
        )
    assert str(refused.value) == (
        "workflow fork_regression has no step 'nope'; steps: start, maybe, work, broken, "
        "behind, check, decide, context, never, after"
    )
    with pytest.raises(ForkError) as refused:
        asyncio.run(
            KahnEngine(registry=TEST_REGISTRY).fork(
                parent.run_id, "never@1", RunContext(store=store)
            )
        )
    assert str(refused.value) == (
        "step 'never' has no pass 1 in this run (passes that started: none); fork at one of those"
    )


def test_a_fork_keeps_a_termination_that_cut_nothing_off() -> None:
    """t ends the run but leads nowhere: only the run's terminated_by names it, and a fork at
    s, which t cannot reach, still ends "terminated by t"."""
    wf = _probe_workflow(
        {"id": "t", "config": {"terminate_at": 0}},
        {"id": "s"},
        {"id": "after", "depends_on": ["s"]},
    )
    assert _forks_of_runs_on_both_engines(wf, "s") == NO_DIFFERENCES
    assert _forks_of_runs_on_both_engines(wf, "after") == NO_DIFFERENCES


# -- what a fork restores at the edges (tests/engine/MUTANTS.md, time_travel's survivors) -------


@pytest.mark.parametrize("engine", ["kahn", "langgraph"])
def test_an_edited_pass_is_the_edited_steps_history_when_a_loop_in_the_fork_brings_it_back(
    engine: str,
) -> None:
    """Fork at the router's second pass with the looped step's latest outputs edited: the
    router's third pass reads the step's history — its first pass as it was, its second as
    edited."""
    wf = WorkflowDefinition(
        name="edited_history",
        steps=[
            {"id": "x", "uses": "demo.echo", "inputs": {"text": "'original'"}},
            {
                "id": "r",
                "uses": "demo.echo",
                "depends_on": ["x"],
                "inputs": {"past": "steps.x.history"},
                "routing": {
                    "kind": "loop",
                    "next": "done",
                    "loop": {"target": "x", "max_iterations": 2},
                },
            },
            {"id": "done", "uses": "demo.echo", "depends_on": ["r"]},
        ],
    )
    store = InMemoryRunStore()

    async def go() -> str:
        parent = await ENGINES[engine]().execute(wf, RunContext(store=store))
        assert parent.status == RunStatus.COMPLETED
        edits = fork_edits(["x.text=edited"])
        fork = await ENGINES[engine]().fork(parent.run_id, "r@1", RunContext(store=store), edits)
        assert fork.status == RunStatus.COMPLETED
        return fork.run_id

    fork_id = asyncio.run(go())
    last = store.step_results(fork_id)["r"]
    assert last.iteration == 2
    assert last.outputs == {"past": [{"text": "original"}, {"text": "edited"}]}


@pytest.mark.parametrize("engine", ["kahn", "langgraph"])
def test_a_step_waiting_for_an_answer_when_the_fork_pass_began_runs_again_counted_once(
    engine: str,
) -> None:
    """The parent (Kahn: the other branch runs on) waits for an answer at ``ask``, which had
    started before ``p``; a fork at ``p`` starts ``ask`` again from the beginning."""
    wf = WorkflowDefinition(
        name="waiting_sibling",
        steps=[
            {"id": "ask", "uses": "demo.echo", "interrupt": {"before": True}},
            {"id": "p", "uses": "demo.echo"},
            {"id": "q", "uses": "demo.echo", "depends_on": ["p"]},
        ],
    )
    store = InMemoryRunStore()

    async def go() -> str:
        parent = await KahnEngine().execute(wf, RunContext(store=store))
        assert parent.status == RunStatus.WAITING
        answered = RunContext(store=store, responder=respond)
        fork = await ENGINES[engine]().fork(parent.run_id, "p", answered)
        assert fork.status == RunStatus.COMPLETED
        return fork.run_id

    fork_id = asyncio.run(go())
    asked = store.step_results(fork_id)["ask"]
    assert (asked.status.value, asked.iteration, asked.runs) == ("SUCCEEDED", 0, 1)
    assert store.get_run(fork_id).engine_state["step_runs"] == 3


def test_a_fork_with_an_input_the_workflow_lacks_says_which_inputs_there_are() -> None:
    wf = load_workflow(WORKFLOWS / "microloop.yaml")
    store = InMemoryRunStore()
    parent = asyncio.run(KahnEngine().execute(wf, RunContext(store=store)))
    edits = fork_edits(inputs=["nope=1"])
    with pytest.raises(ForkError) as refused:
        asyncio.run(KahnEngine().fork(parent.run_id, "critic", RunContext(store=store), edits))
    assert str(refused.value) == (
        "--input: workflow 'microloop' has no input 'nope' (declared: topic)"
    )


class DiskFullAtTheEnd(RunStore):
    """The run store (a real SQLite file) on a disk that is full when the run's end is
    written: the run's log ends on its last step's settling, as after a kill mid-run."""

    def _write_event(self, event: RunEvent) -> None:
        if isinstance(event, RunFinished):
            raise sqlite3.OperationalError("database or disk is full")
        super()._write_event(event)


@pytest.mark.parametrize("engine", ["kahn", "langgraph"])
def test_a_fork_at_a_missing_pass_of_a_run_whose_log_ends_on_a_skip_says_which_passes_there_are(
    engine: str, tmp_path: Path
) -> None:
    wf = WorkflowDefinition(
        name="cut_short",
        steps=[
            {"id": "a", "uses": "demo.echo"},
            {"id": "b", "uses": "demo.echo", "depends_on": ["a"], "when": "1 == 2"},
        ],
    )
    store = DiskFullAtTheEnd(tmp_path / "runs.sqlite")
    with pytest.raises(StoreWriteError):
        asyncio.run(ENGINES[engine]().execute(wf, RunContext(store=store, run_id="r1")))
    assert isinstance(store.events("r1")[-1], StepSkipped)
    with pytest.raises(ForkError) as refused:
        asyncio.run(ENGINES[engine]().fork("r1", "a@3", RunContext(store=store)))
    assert str(refused.value) == (
        "step 'a' has no pass 3 in this run (passes that started: 0); fork at one of those"
    )
    store.close()


def test_a_fork_after_a_detour_began_keeps_the_detour_returned_when_it_keeps_its_steps() -> None:
    """make fuzz's case: on LangGraph s4 (asking first) starts after s2 chose its detour to
    s3, so the state before s4 had the detour active; the fork kept s2 and s3 as they ended
    but left the detour active, and s5 (after the declarer) waited for a return that never
    came: "the scheduler ended with s5, s6 never settled". (The names are the ones found:
    LangGraph orders a superstep's steps by them.)"""
    both = ["s0", "s1"]
    last_x = {"x": "inputs.xs[size(inputs.xs) - 1]"}
    wf = _probe_workflow(
        {"id": "s0", "optional": True},
        {"id": "s1", "config": {"statuses": ["A", "B"]}, "optional": True, "inputs": last_x},
        {
            "id": "s2",
            "depends_on": both,
            "trigger": "all_success",
            "optional": True,
            "routing": {
                "kind": "conditional",
                "conditions": [{"expr": "true", "target": "s3"}],
                "detour": {"target": "s3", "when": "true && true"},
            },
        },
        {
            "id": "s3",
            "depends_on": [*both, "s2"],
            "config": {"terminate_at": 1},
            "optional": True,
        },
        {
            "id": "s4",
            "depends_on": both,
            "optional": True,
            "inputs": last_x,
            "interrupt": {"before": True, "prompt": "approve?"},
            "routing": {"kind": "conditional", "conditions": [{"expr": "true", "target": "s5"}]},
        },
        {
            "id": "s5",
            "depends_on": [*both, "s2", "s3", "s4"],
            "config": {"statuses": ["A", "B"]},
            "optional": True,
        },
        {
            "id": "s6",
            "depends_on": [*both, "s2", "s3", "s4", "s5"],
            "config": {"terminate_at": 0, "statuses": ["A", "B"]},
            "optional": True,
        },
        inputs={
            "n": {"type": "int", "default": 3},
            "xs": {"type": "list", "default": [4, 5, 6]},
        },
    )
    assert _forks_of_runs_on_both_engines(wf, "s4") == NO_DIFFERENCES
