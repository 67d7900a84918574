"""Shadow mode (ADR-001 §5, DESIGN §5): one definition through both engines, compared.

The first engine runs as usual (asking the model, the retriever and people).
The second runs the same definition on the same inputs with
``RunContext.replay_from`` set to the first run, so every journaled call —
model answers, retrievals, interrupt answers, tie-breaker choices — is answered
from the first run's journal: both engines see identical answers, and nobody is
asked twice. An answer is taken as about the second run (the first run's id in it
becomes the second's), and a call that acts on its own run's things — a note saved
into the run's folder (``engine.journal.RUN_EFFECT``) — the second run makes
itself, so each run's folder holds its own files. The two event logs are then compared canonically
(engine/canonical.py); any difference is a conformance failure.

Because the second engine is answered from the journal, it never asks a person:
interrupt events are left out of the comparison (they are compared between
engines by the conformance suite, where both ask).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from engine.canonical import DifferenceReport, canonical_run, compare
from engine.graph import WorkflowGraph
from engine.protocol import ExecutionEngine, ExecutionResult, RunContext
from engine.selector import ENGINES, create_engine
from engine.spec import WorkflowDefinition


@dataclass(frozen=True)
class ShadowResult:
    first: ExecutionResult
    second: ExecutionResult | None
    report: DifferenceReport
    note: str = ""
    """Why the second engine did not run, when it did not."""

    @property
    def conforms(self) -> bool:
        return self.second is not None and self.report.identical


def other_engine(name: str) -> str:
    return next(engine for engine in ENGINES if engine != name)


async def run_shadow(
    wf: WorkflowDefinition,
    run: RunContext,
    first: str,
    engines: dict[str, ExecutionEngine] | None = None,
) -> ShadowResult:
    """Run ``wf`` on ``first`` and then on the other engine replaying the first's journal."""
    second = other_engine(first)
    chosen = engines or {}
    first_engine = chosen.get(first) or create_engine(first)
    second_engine = chosen.get(second) or create_engine(second)
    reason = run.engine_reason or "shadow"
    first_result = await first_engine.execute(
        wf, replace(run, engine_reason=f"{reason} (shadow: first)")
    )
    if not first_result.status.final:
        report = DifferenceReport(
            left_engine=first, right_engine=second, left_run=first_result.run_id, right_run=""
        )
        note = f"the {first} run is {first_result.status.value}; shadow compares finished runs only"
        return ShadowResult(first=first_result, second=None, report=report, note=note)
    second_run = replace(
        run,
        run_id=None,
        replay_from=first_result.run_id,
        engine_reason=f"{reason} (shadow: replays {first_result.run_id})",
    )
    second_result = await second_engine.execute(wf, second_run)
    report = compare_runs(wf, run.store, first_result, second_result)
    return ShadowResult(first=first_result, second=second_result, report=report)


def compare_runs(
    wf: WorkflowDefinition,
    store: object,
    left: ExecutionResult,
    right: ExecutionResult,
    *,
    interrupts: bool = False,
) -> DifferenceReport:
    """The canonical difference between two stored runs of ``wf``."""
    graph = WorkflowGraph.of(wf)
    dependencies = {step_id: graph.dependencies(step_id) for step_id in wf.step_ids}
    events = store.events  # type: ignore[attr-defined]
    left_canonical = canonical_run(events(left.run_id), dependencies, interrupts=interrupts)
    right_canonical = canonical_run(events(right.run_id), dependencies, interrupts=interrupts)
    return DifferenceReport(
        left_engine=left.engine,
        right_engine=right.engine,
        left_run=left.run_id,
        right_run=right.run_id,
        differences=compare(left_canonical, right_canonical),
    )
