"""The built-in provider's registry, the wire block for task and inputs, the manual clock, import direction."""

from __future__ import annotations

import ast
import asyncio
from pathlib import Path

import pytest
from pydantic import BaseModel

from router.clock import ManualClock, SystemClock
from router.errors import BuiltinHandlerError, ErrorClass, ProviderCallError
from router.local import BuiltinProvider, TaskHandlerRegistry
from router.models import ChatMessage, ChatRequest
from router.wire import extract_inputs, is_strict_compatible, parse_structured, wire_messages

from .conftest import Verdict


def req(task: str = "t", schema: type[BaseModel] | None = None, **inputs: object) -> ChatRequest:
    return ChatRequest(
        task=task,
        messages=[ChatMessage(role="user", content="q")],
        inputs=inputs,
        response_schema=schema,
    )


def test_registry() -> None:
    registry = TaskHandlerRegistry()
    registry.register("a", lambda r: "x")
    assert "a" in registry and registry.tasks() == ["a"]
    with pytest.raises(ValueError, match="already has a handler"):
        registry.register("a", lambda r: "y")
    registry.register("a", lambda r: "y", replace=True)
    with pytest.raises(TypeError):
        registry.register("b", "not callable")  # type: ignore[arg-type]


@pytest.mark.parametrize("in_thread", [True, False])
async def test_builtin_encodes_and_validates(in_thread: bool) -> None:
    registry = TaskHandlerRegistry()
    registry.register("model", lambda r: Verdict(verdict="v", score=1))
    registry.register("dict", lambda r: {"verdict": "d", "score": 0.5})
    registry.register("text", lambda r: '```json\n{"verdict": "t", "score": 0}\n```')
    registry.register("wrong", lambda r: {"nope": 1})
    registry.register("boom", lambda r: 1 / 0)
    registry.register("bad_type", lambda r: 42)  # type: ignore[arg-type,return-value]
    builtin = BuiltinProvider(registry, in_thread=in_thread)
    content, parsed = await builtin.answer(req("model", Verdict))
    assert parsed == Verdict(verdict="v", score=1) and '"verdict":"v"' in content
    assert (await builtin.answer(req("dict", Verdict)))[1].verdict == "d"
    assert (await builtin.answer(req("text", Verdict)))[1].verdict == "t"
    assert (await builtin.answer(req("dict")))[1] is None
    with pytest.raises(BuiltinHandlerError, match="does not match Verdict"):
        await builtin.answer(req("wrong", Verdict))
    with pytest.raises(BuiltinHandlerError, match="ZeroDivisionError"):
        await builtin.answer(req("boom"))
    with pytest.raises(BuiltinHandlerError, match="return str, dict or a pydantic model"):
        await builtin.answer(req("bad_type"))


def test_responder_adapter() -> None:
    registry = TaskHandlerRegistry()
    registry.register("t", lambda r: Verdict(verdict=str(r.inputs["x"]), score=1))
    respond = registry.as_responder()
    assert respond("t", {"x": 5}, {}) == {"verdict": "5", "score": 1.0}
    assert "no built-in handler" in str(respond("other", {}, {}))


def test_inputs_travel_in_the_last_message() -> None:
    messages = wire_messages(req(claim="c", n=[1, 2]))
    assert messages[-1].content.startswith("q\n\n```workbench-inputs\n")
    assert extract_inputs(messages[-1].content) == {"claim": "c", "n": [1, 2]}
    assert wire_messages(req())[-1].content == "q"
    assert extract_inputs("no block") == {}
    assert extract_inputs("```workbench-inputs\n[1]\n```") == {}
    assert extract_inputs("```workbench-inputs\n{broken\n```") == {}


def test_structured_output_parsing() -> None:
    assert parse_structured('{"verdict": "a", "score": 1}', Verdict) == Verdict(
        verdict="a", score=1
    )
    assert parse_structured('```json\n{"verdict": "a", "score": 1}\n```', Verdict).verdict == "a"
    with pytest.raises(ProviderCallError) as caught:
        parse_structured("not json", Verdict)
    assert caught.value.error_class is ErrorClass.INVALID_OUTPUT


def test_strict_compatibility() -> None:
    assert not is_strict_compatible(Verdict.model_json_schema())
    closed = {
        "type": "object",
        "properties": {"a": {"type": "string"}},
        "required": ["a"],
        "additionalProperties": False,
    }
    assert is_strict_compatible(closed)
    assert not is_strict_compatible({**closed, "required": []})


async def test_manual_clock_sleepers() -> None:
    clock = ManualClock()
    woken: list[str] = []

    async def sleeper(name: str, seconds: float) -> None:
        await clock.sleep(seconds)
        woken.append(name)

    tasks = [asyncio.ensure_future(sleeper("late", 10)), asyncio.ensure_future(sleeper("early", 2))]
    await asyncio.sleep(0)
    assert clock.pending_sleepers == 2
    clock.advance(5)
    await asyncio.sleep(0)
    assert woken == ["early"]
    clock.advance(5)
    await asyncio.gather(*tasks)
    assert woken == ["early", "late"]
    with pytest.raises(ValueError):
        clock.advance(-1)
    await SystemClock().sleep(0)
    assert SystemClock().monotonic() > 0


def test_router_imports_nothing_from_engine_research_or_tui() -> None:
    root = Path(__file__).parents[2] / "router"
    for path in root.rglob("*.py"):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else []
            )
            for name in names:
                assert name.split(".")[0] not in ("engine", "research", "tui"), (
                    f"{path} imports {name}"
                )
