"""Shared fixtures: the PEP corpus indexed once per session, and a helper that runs deep research."""

from __future__ import annotations

import asyncio
import socket
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import research.steps  # noqa: F401 - registers the research steps the workflow uses
from engine.context import InterruptAnswer, InterruptRequest
from engine.events import Domain, InterruptRaised, RunEvent
from engine.kahn import KahnEngine
from engine.loader import load_workflow
from engine.protocol import ExecutionResult
from engine.spec import WorkflowDefinition
from engine.store import RunStore, StepResult
from research.corpus import Corpus
from research.default_corpus import DEFAULT_COLLECTION, build_default_corpus
from research.text import normalize_space
from tests.pep_corpus import PEPS, skip_without_peps
from tests.research.eval.evaluate import stranded_sentences, uncited_sentences
from tui.launch.parts import RunParts
from tui.launch.run import open_run
from tui.launch.workspace import Workspace

PROJECT = Path(__file__).resolve().parents[2]
WORKFLOW = PROJECT / "workflows" / "deep_research.yaml"
AS_OF = "2025-06-30"


@pytest.fixture(scope="session")
def pep_corpus_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    skip_without_peps()
    path = tmp_path_factory.mktemp("corpus") / "corpus.sqlite"
    with Corpus(path) as corpus:
        report = corpus.add_folder(PEPS, "peps")
    assert report.added == len(list(PEPS.glob("*.rst")))
    return path


@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    """Any connection the test makes fails it (the embedded models must never reach out)."""

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError(f"tried the network: {args}")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)


@pytest.fixture(scope="session")
def workflow() -> WorkflowDefinition:
    return load_workflow(WORKFLOW)


async def approve_by_default(event: InterruptRaised, request: InterruptRequest) -> InterruptAnswer:
    answer = request.default or InterruptAnswer(action="approve")
    return answer.model_copy(update={"automatic": True})


@dataclass
class ResearchRun:
    result: ExecutionResult
    events: list[RunEvent]
    steps: dict[str, StepResult]
    workspace: Path

    def domain(self, name: str) -> list[dict[str, Any]]:
        return [e.payload for e in self.events if isinstance(e, Domain) and e.name == name]

    @property
    def rounds(self) -> list[dict[str, Any]]:
        return self.domain("research.round_scored")

    def outputs(self, step_id: str) -> dict[str, Any]:
        return self.steps[step_id].outputs

    def status(self, step_id: str) -> str:
        return self.steps[step_id].status.value


async def run_research(
    workflow: WorkflowDefinition,
    workspace: Path,
    corpus_path: Path,
    query: str,
    *,
    responder: Any = approve_by_default,
    wiring: dict[str, Any] | None = None,
    **inputs: Any,
) -> ResearchRun:
    workspace.mkdir(parents=True, exist_ok=True)
    store = RunStore(workspace / "runs.sqlite")
    with Corpus(corpus_path) as corpus:
        async with open_run(
            Workspace(workspace),
            workflow,
            inputs={"query": query, "as_of": AS_OF, "collections": ["peps"], **inputs},
            responder=responder,
            store=store,
            parts=RunParts(corpus=corpus, environ={}, **(wiring or {})),
        ) as run:
            result = await KahnEngine().execute(workflow, run.context)
    events = store.events(result.run_id)
    steps = store.step_results(result.run_id)
    store.close()
    return ResearchRun(result=result, events=events, steps=steps, workspace=workspace)


def research_one_module(
    workflow: WorkflowDefinition, tmp_path: Path, module: str, source: str, question: str
) -> tuple[ResearchRun, str]:
    """``question`` researched on a default corpus built from one standard-library module
    (``module``.py holding ``source``): the run and its report, every quote checked to be its
    passage's text verbatim and every sentence cited."""
    stdlib = tmp_path / "stdlib"
    stdlib.mkdir()
    (stdlib / f"{module}.py").write_text(source)
    corpus_path = tmp_path / "corpus.sqlite"
    with Corpus(corpus_path) as corpus:
        build_default_corpus(corpus, stdlib=stdlib)
    run = asyncio.run(
        run_research(
            workflow, tmp_path / "ws", corpus_path, question, collections=[DEFAULT_COLLECTION]
        )
    )
    report = (tmp_path / "ws" / "runs" / run.result.run_id / "report.md").read_text()
    with Corpus(corpus_path) as corpus:
        for quote in run.outputs("final_synthesis")["citations"]:
            passage = normalize_space(corpus.passage_text(quote["passage_id"]) or "")
            assert normalize_space(quote["quote"]) in passage  # quoted verbatim
    assert uncited_sentences(report) == 0 and stranded_sentences(report) == 0
    return run, report
