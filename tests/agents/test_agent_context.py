"""Context compilation (ADR-002 §10): under the budget, requirements first, cuts recorded."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agents.context_compile import compile_context, estimate_tokens
from agents.port import ModelCall
from agents.registry_loader import load_registry_text
from agents.tools import TOOL_IMPLEMENTATIONS
from engine.store import RunStore
from tests.agents.agent_helpers import (
    REGISTRY_YAML,
    ScriptedModel,
    builtin_answer,
    domain,
    load,
    run_workflow,
    steps_for,
)


def test_everything_fits_whole_under_a_generous_budget() -> None:
    compiled = compile_context(
        task={"question": "why?"},
        prior={"far": {"a": 1}, "near": {"b": 2}},
        requires=[],
        observations=[{"tool": "t", "result": "r"}],
        max_tokens=1000,
    )
    assert compiled.included == ["task.question", "near", "far", "observation 1"]
    assert compiled.truncated == [] and compiled.dropped == []
    assert compiled.text.index("### near") < compiled.text.index("### far"), "nearest first"


def test_a_tight_budget_cuts_and_says_what_it_cut() -> None:
    prior = {"other": {"x": "o" * 4000}, "needed": {"summary": "n" * 4000, "id": 7}}
    observations = [{"result": "old " * 300}, {"result": "new " * 50}]
    compiled = compile_context(
        task={"question": "q" * 100},
        prior=prior,
        requires=["needed.summary"],
        observations=observations,
        max_tokens=500,
    )
    assert compiled.tokens <= compiled.budget == 500
    assert estimate_tokens(compiled.text) == compiled.tokens
    assert compiled.included[:2] == ["task.question", "needed.summary"], "requirements first"
    cut = {c.ref: c for c in compiled.truncated}
    assert cut["needed.summary"].original_tokens > cut["needed.summary"].kept_tokens
    assert "other" in compiled.dropped, "what did not fit at all is named"
    assert "observation 2" in compiled.included, "the newest observation is kept first"
    assert compiled.summary()["truncated"][0]["ref"] == "needed.summary"


async def test_the_thought_event_records_what_the_context_cut(tmp_path: Path) -> None:
    extra = (
        "  small:\n    role: Reads a lot through a small window.\n    model: builtin\n"
        "    context: {requires: [first], max_tokens: 60}\n    output: {topic: {type: string}}\n"
    )
    workflow = (
        "name: ctx\nsteps:\n  - {id: first, uses: agent.gamma}\n"
        "  - {id: second, uses: agent.small, depends_on: [first]}\n"
    )
    text = REGISTRY_YAML.replace("  boss:\n", extra + "  boss:\n")
    registry = load_registry_text(text, "reg.yaml", TOOL_IMPLEMENTATIONS.names()).registry

    def long_note(call: ModelCall) -> Any:
        if call.inputs.get("agent") == "gamma":
            return {"action": "final", "output": {"note": "word " * 200}}
        return builtin_answer(call)

    steps = steps_for(registry)
    with RunStore(tmp_path / "runs.sqlite") as store:
        model = ScriptedModel(long_note)
        _, events = await run_workflow(load(workflow, steps), steps, store, model)
    thought = next(t for t in domain(events, "agent.thought") if t["agent"] == "small")
    assert thought["context"]["budget"] == 60
    assert thought["context"]["tokens"] <= 60
    assert [c["ref"] for c in thought["context"]["truncated"]] == ["first"]
    call = next(c for c in model.calls if c.inputs["agent"] == "small")
    carried = call.inputs["context"]["first"]
    assert isinstance(carried, str) and carried.endswith("…[truncated]"), (
        "the request's structured form is cut like its text"
    )
    assert len(carried) < 60 * 4
