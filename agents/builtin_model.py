"""The built-in model's answers to agent tasks: deterministic, offline, from the request alone.

The application registers these as the built-in provider's handlers for
``agent.react`` and ``agent.orchestrate`` (the router never imports the
engine; the composition root joins them). They read only the structured
``inputs`` a :class:`~agents.port.ModelCall` carries.

- An agent uses each of its tools once, in the order declared, filling each
  argument by name from the latest observations, then the task, then its
  context (a required text argument with no match takes the task's first
  text); then it answers, filling each output field by name the same way —
  a text field with no match gets the text of what it observed, a list field
  the items it found.
- The orchestrator follows the suggestion it is given (the suggested
  sequence, optional agents skipped by their conditions) and completes when
  there is none.
"""

from __future__ import annotations

import json
import re
from typing import Any

from agents.react import find_key

TEXT_KEYS = ("text", "snippet", "summary", "answer", "passage", "quote")
MAX_TEXT = 1200


def orchestrate_reply(inputs: dict[str, Any]) -> dict[str, Any]:
    suggested = inputs.get("suggested")
    if suggested:
        return {
            "thought": f"Following the suggested sequence: {suggested} runs next.",
            "action": "invoke",
            "agent": suggested,
        }
    return {
        "thought": "Nothing left to run in the suggested sequence.",
        "action": "complete",
    }


def react_reply(inputs: dict[str, Any]) -> dict[str, Any]:
    observations: list[Any] = list(inputs.get("observations") or [])
    tools: dict[str, dict[str, Any]] = dict(inputs.get("tools") or {})
    used = {str(tool) for tool in inputs.get("tools_used") or []}
    sources = [*reversed(observations), inputs.get("task") or {}, inputs.get("context") or {}]
    last_turn = int(inputs.get("iteration", 1)) >= int(inputs.get("max_iterations", 1))
    for tool, fields in tools.items():
        if tool in used or last_turn:
            continue
        args: dict[str, Any] = {}
        for name, spec in fields.items():
            value = _lookup(sources, name)
            if value is None and spec.get("required") and spec.get("type") == "string":
                value = _first_text(inputs.get("task") or {})
            if value is not None:
                args[name] = _coerce(value, str(spec.get("type", "string")))
        return {"thought": f"I will use {tool}.", "action": "tool", "tool": tool, "args": args}
    output: dict[str, Any] = {}
    for name, spec in (inputs.get("output") or {}).items():
        kind = str(spec.get("type", "string"))
        value = _lookup(sources, name)
        if value is None:
            value = _gather(observations, kind) or _gather([inputs.get("context") or {}], kind)
        if value is not None:
            output[name] = _coerce(value, kind)
        elif spec.get("required"):
            output[name] = _empty(kind)
    return {"thought": "I have what I need.", "action": "final", "output": output}


def _lookup(sources: list[Any], key: str) -> Any:
    for source in sources:
        value = find_key(source, key)
        if value is not None:
            return value
    return None


def _first_text(task: dict[str, Any]) -> str | None:
    for value in task.values():
        if isinstance(value, str) and value.strip():
            return value
    return None


def _texts(value: Any) -> list[str]:
    found: list[str] = []
    if isinstance(value, dict):
        for key, child in value.items():
            if key in TEXT_KEYS and isinstance(child, str):
                found.append(child)
            else:
                found += _texts(child)
    elif isinstance(value, list):
        for child in value:
            found += _texts(child)
    return found


def _items(value: Any) -> list[Any]:
    """The longest list of mappings found (search hits, passages, checks)."""
    best: list[Any] = []
    if isinstance(value, list):
        if value and all(isinstance(v, dict) for v in value):
            best = value
        for child in value:
            candidate = _items(child)
            best = candidate if len(candidate) > len(best) else best
    elif isinstance(value, dict):
        for child in value.values():
            candidate = _items(child)
            best = candidate if len(candidate) > len(best) else best
    return best


def _gather(observations: list[Any], kind: str) -> Any:
    if kind == "string":
        seen: list[str] = []
        for text in _texts(observations):
            clean = re.sub(r"\s+", " ", text).strip()
            if clean and clean not in seen:
                seen.append(clean)
        joined = " ".join(seen)
        return joined[:MAX_TEXT] if joined else None
    if kind == "list":
        items = _items(observations)
        return items or None
    return None


def _coerce(value: Any, kind: str) -> Any:
    if kind == "string" and not isinstance(value, str):
        return json.dumps(value, default=str, ensure_ascii=False)[:MAX_TEXT]
    if kind == "list" and not isinstance(value, list):
        return [value]
    if kind == "int" and isinstance(value, str) and value.isdigit():
        return int(value)
    if kind == "bool" and not isinstance(value, bool):
        return bool(value)
    return value


def _empty(kind: str) -> Any:
    return {"string": "", "list": [], "dict": {}, "int": 0, "float": 0.0, "bool": False}.get(kind)
