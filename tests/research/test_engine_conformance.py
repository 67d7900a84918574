"""Conformance of the two engines on ``workflows/deep_research.yaml`` (issue 4 part 5, DESIGN §5).

tests/engine/test_conformance.py covers every demo workflow; deep research
needs the research wiring (extractive model, corpus retriever, run folder),
so it is covered here. Each trajectory of tests/research/test_trajectories.py
runs offline on the PEP corpus with a fixed ``as_of`` on Kahn and on LangGraph
(forced through the engine override, as ``--engine kahn|langgraph`` does),
prompts answered as ``--on-interrupt default`` answers them. Both runs share
one workspace and one run store, so the run folder differs only by the run id,
which the canonical form scrubs.

The two runs must agree canonically (engine/canonical.py: per-step events and
results, step statuses, outputs, route decisions, dependency order), write
byte-identical report.md / quality.yaml / rag_package.jsonl, and score the
same rounds; and a shadow run (engine/shadow.py) of deep research must report
no difference.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from engine.canonical import CanonicalRun, Difference, compare
from engine.events import Domain, InterruptRaised, InterruptResolved, RunEvent, StepFinished
from engine.protocol import ExecutionResult, RunContext
from engine.selector import ENGINES, create_engine, select_engine
from engine.shadow import ShadowResult, run_shadow
from engine.spec import WorkflowDefinition
from engine.store import RunStore
from research.corpus import Corpus
from tests.engine.langgraph_cases import canonical_of
from tests.research.conftest import AS_OF, approve_by_default
from tests.research.test_trajectories import (
    GATE_QUERY,
    PLATEAU_QUERY,
    REMEDIATION_QUERY,
    VETO_QUERY,
)
from tui.launch.parts import RunParts
from tui.launch.run import open_run
from tui.launch.workspace import Workspace

TRAJECTORIES: dict[str, tuple[str, dict[str, Any]]] = {
    "gate": GATE_QUERY,
    "remediation": REMEDIATION_QUERY,
    "plateau": PLATEAU_QUERY,
    "veto": VETO_QUERY,
}
ARTIFACTS = ("report.md", "quality.yaml", "rag_package.jsonl")
COMPARED_DOMAIN_EVENTS = ("research.round_scored", "research.coalesced")
"""Domain events whose payloads are pure functions of the evidence (``research.stage``
events carry latencies, so they are left to the per-step canonical comparison)."""


@dataclass(frozen=True)
class EngineRun:
    """One engine's run of deep research, reduced to what the engines must agree on."""

    result: ExecutionResult
    canonical: CanonicalRun
    events: list[RunEvent]
    artifacts: dict[str, str]

    def domain(self, name: str) -> list[tuple[str | None, dict[str, Any]]]:
        return [
            (e.step_id, e.payload) for e in self.events if isinstance(e, Domain) and e.name == name
        ]


@asynccontextmanager
async def research_context(
    workflow: WorkflowDefinition,
    workspace: Path,
    store: RunStore,
    corpus_path: Path,
    query: str,
    **inputs: Any,
) -> AsyncIterator[RunContext]:
    """The CLI's launcher (tui/launch/run.py) on the PEP collection, prompts answered by default."""
    with Corpus(corpus_path) as corpus:
        async with open_run(
            Workspace(workspace),
            workflow,
            inputs={"query": query, "as_of": AS_OF, "collections": ["peps"], **inputs},
            responder=approve_by_default,
            store=store,
            parts=RunParts(corpus=corpus, environ={}),
        ) as run:
            yield run.context


async def run_on(
    engine_name: str,
    workflow: WorkflowDefinition,
    workspace: Path,
    store: RunStore,
    corpus_path: Path,
    query: str,
    **inputs: Any,
) -> EngineRun:
    """Run deep research on ``engine_name``, chosen through the user override as ``--engine`` does."""
    selection = select_engine(workflow, engine_name)
    assert selection.name == engine_name, selection.reason
    async with research_context(
        workflow, workspace, store, corpus_path, query, **inputs
    ) as context:
        context.engine_reason = selection.reason
        result = await create_engine(selection.name).execute(workflow, context)
    folder = workspace / "runs" / result.run_id
    artifacts = {
        name: (folder / name).read_text(encoding="utf-8")
        for name in ARTIFACTS
        if (folder / name).exists()
    }
    return EngineRun(
        result=result,
        canonical=canonical_of(workflow, store, result.run_id),
        events=store.events(result.run_id),
        artifacts=artifacts,
    )


@pytest.fixture(scope="module")
def engine_runs(
    tmp_path_factory: pytest.TempPathFactory, pep_corpus_path: Path, workflow: WorkflowDefinition
) -> dict[str, dict[str, EngineRun]]:
    """Per trajectory, its run on each engine — run once per module, on first use."""

    async def pair(name: str) -> dict[str, EngineRun]:
        query, extra = TRAJECTORIES[name]
        workspace = tmp_path_factory.mktemp(f"conformance-{name}")
        with RunStore(workspace / "runs.sqlite") as store:
            return {
                engine: await run_on(
                    engine, workflow, workspace, store, pep_corpus_path, query, **extra
                )
                for engine in ENGINES
            }

    class Lazy(dict[str, dict[str, EngineRun]]):
        def __missing__(self, name: str) -> dict[str, EngineRun]:
            self[name] = asyncio.run(pair(name))
            return self[name]

    return Lazy()


def replayed_calls(events: list[RunEvent]) -> int:
    return sum(e.replayed_calls for e in events if isinstance(e, StepFinished))


def replayed_steps(events: list[RunEvent]) -> set[str]:
    return {e.step_id for e in events if isinstance(e, StepFinished) and e.replayed_calls}


def model_calls(events: list[RunEvent]) -> int:
    return sum(e.llm_calls for e in events if isinstance(e, StepFinished))


def explain(differences: list[Difference]) -> str:
    return "\n".join(
        f"{d.where}:\n  kahn:      {d.left!r:.600}\n  langgraph: {d.right!r:.600}"
        for d in differences
    )


@pytest.mark.parametrize("trajectory", list(TRAJECTORIES))
def test_deep_research_gives_the_same_canonical_results_on_both_engines(
    engine_runs: dict[str, dict[str, EngineRun]], workflow: WorkflowDefinition, trajectory: str
) -> None:
    kahn, graph = engine_runs[trajectory]["kahn"], engine_runs[trajectory]["langgraph"]
    assert (kahn.result.engine, graph.result.engine) == ("kahn", "langgraph")
    assert kahn.result.status.value == graph.result.status.value == "COMPLETED"
    differences = compare(kahn.canonical, graph.canonical)
    assert differences == [], explain(differences)
    assert kahn.canonical.order_violations == [] and graph.canonical.order_violations == []
    assert set(graph.canonical.step_statuses) == set(workflow.step_ids)
    assert set(graph.canonical.steps) == set(
        workflow.step_ids
    )  # every step's own events were compared
    assert graph.canonical.routes == kahn.canonical.routes
    # Each engine called the model and the corpus itself: agreement is not borrowed from a journal.
    # The one exception is LangGraph's re-run of a node after its interrupt was answered (the
    # node runs again from its first line), whose calls the journal answers — never called twice.
    assert model_calls(kahn.events) == model_calls(graph.events) > 0
    assert replayed_steps(kahn.events) == set()
    assert replayed_steps(graph.events) <= {
        e.step_id for e in graph.events if isinstance(e, InterruptRaised)
    }
    # The plan approval was asked — and answered automatically — on both engines.
    for run in (kahn, graph):
        raised = [e for e in run.events if isinstance(e, InterruptRaised)]
        resolved = [e for e in run.events if isinstance(e, InterruptResolved)]
        assert [e.step_id for e in raised][:1] == ["intake_scope"]
        assert len(resolved) == len(raised) and all(e.automatic for e in resolved)


@pytest.mark.parametrize("trajectory", list(TRAJECTORIES))
def test_deep_research_writes_the_same_report_and_quality_on_both_engines(
    engine_runs: dict[str, dict[str, EngineRun]], trajectory: str
) -> None:
    kahn, graph = engine_runs[trajectory]["kahn"], engine_runs[trajectory]["langgraph"]
    assert set(kahn.artifacts) == set(ARTIFACTS)
    for name in ARTIFACTS:
        assert graph.artifacts.get(name) == kahn.artifacts[name], (
            f"{name} differs between the engines"
        )
    for name in COMPARED_DOMAIN_EVENTS:
        assert graph.domain(name) == kahn.domain(name), name


def test_the_trajectories_take_different_paths_through_the_rounds(
    engine_runs: dict[str, dict[str, EngineRun]],
) -> None:
    """The comparison above covers skipped rounds and remediation rounds, not one path four times."""
    rounds = {
        name: [
            p["round"] for _, p in engine_runs[name]["langgraph"].domain("research.round_scored")
        ]
        for name in TRAJECTORIES
    }
    assert rounds["gate"] == [1]
    assert len(rounds["remediation"]) >= 2 and len(rounds["plateau"]) >= 2
    remediation = engine_runs["remediation"]["langgraph"].canonical.step_statuses
    assert (
        remediation["hypothesis_tree_tot_r2"] == "SKIPPED"
        and remediation["cove_verify_r2"] == "SUCCEEDED"
    )


def test_a_shadow_run_of_deep_research_reports_no_difference(
    tmp_path: Path, pep_corpus_path: Path, workflow: WorkflowDefinition
) -> None:
    """``--engine shadow``: Kahn (what auto picks for this acyclic workflow) first, LangGraph replaying its journal."""
    query, extra = REMEDIATION_QUERY
    first = select_engine(workflow).name
    assert first == "kahn"

    async def go() -> tuple[ShadowResult, list[RunEvent], list[RunEvent]]:
        store = RunStore(tmp_path / "runs.sqlite")
        try:
            async with research_context(
                workflow, tmp_path, store, pep_corpus_path, query, **extra
            ) as context:
                result = await run_shadow(workflow, context, first)
            second = store.events(result.second.run_id) if result.second is not None else []
            return result, store.events(result.first.run_id), second
        finally:
            store.close()

    shadow, first_events, second_events = asyncio.run(go())
    assert shadow.second is not None, shadow.note
    assert (shadow.first.engine, shadow.second.engine) == ("kahn", "langgraph")
    assert shadow.first.status.value == shadow.second.status.value == "COMPLETED"
    assert shadow.report.differences == [], shadow.report.render()
    assert shadow.conforms and shadow.report.render().endswith(": identical")
    # The second engine was answered from the first one's journal, as shadow mode promises.
    assert replayed_calls(first_events) == 0 and replayed_calls(second_events) > 0
    for name in ARTIFACTS:
        kahn_file = tmp_path / "runs" / shadow.first.run_id / name
        graph_file = tmp_path / "runs" / shadow.second.run_id / name
        assert graph_file.read_text(encoding="utf-8") == kahn_file.read_text(encoding="utf-8"), name
