"""Context compilation (ADR-002 §10): what one agent call sees, under its token budget.

The budget is shared the way the ADR allocates it — 30 % for the task, 50 %
for prior outputs (the agent's declared ``requires`` first and whole where
they fit, then the other visible outputs, nearest first), 20 % for the loop's
observations (most recent first) — and what a section leaves unused passes on
to the next. Anything cut is named in the result, which the thought event
carries, so a reader sees exactly what the model did not.

Tokens are estimated at four characters each (the usual offline estimate).
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import Field

from plumbing.frozen import Frozen

CHARS_PER_TOKEN = 4
SHARES = (0.3, 0.5, 0.2)
TRUNCATION_MARK = " …[truncated]"


class Cut(Frozen):
    ref: str
    kept_tokens: int
    original_tokens: int


class CompiledContext(Frozen):
    text: str
    tokens: int
    budget: int
    included: list[str] = Field(default_factory=list)
    truncated: list[Cut] = Field(default_factory=list)
    dropped: list[str] = Field(default_factory=list)
    values: dict[str, Any] = Field(default_factory=dict)
    """What the text holds, by reference: each value whole, or its cut text where it was cut
    (the structured form a request carries for the built-in model, within the same budget)."""

    def summary(self) -> dict[str, Any]:
        """The part the thought event records."""
        return {
            "tokens": self.tokens,
            "budget": self.budget,
            "included": self.included,
            "truncated": [cut.model_dump() for cut in self.truncated],
            "dropped": self.dropped,
        }


def estimate_tokens(text: str) -> int:
    return -(-len(text) // CHARS_PER_TOKEN)


def _dump(value: Any) -> str:
    return json.dumps(value, default=str, ensure_ascii=False, sort_keys=True)


class _Section:
    def __init__(self, title: str, chars: int) -> None:
        self.title = title
        self.chars = chars
        self.blocks: list[tuple[int, str]] = []

    def offer(self, ref: str, value: Any, order: int, result: dict[str, list[Any]]) -> None:
        text = _dump(value)
        block = f"### {ref}\n{text}\n"
        if len(block) <= self.chars:
            self.blocks.append((order, block))
            self.chars -= len(block)
            result["included"].append(ref)
            result["values"].append((ref, value))
            return
        room = self.chars - len(f"### {ref}\n") - len(TRUNCATION_MARK) - 1
        if room < 40:
            result["dropped"].append(ref)
            return
        self.blocks.append((order, f"### {ref}\n{text[:room]}{TRUNCATION_MARK}\n"))
        self.chars = 0
        result["included"].append(ref)
        result["values"].append((ref, text[:room] + TRUNCATION_MARK))
        result["truncated"].append(
            Cut(ref=ref, kept_tokens=room // CHARS_PER_TOKEN, original_tokens=estimate_tokens(text))
        )

    def render(self) -> str:
        if not self.blocks:
            return ""
        return f"## {self.title}\n" + "".join(block for _, block in sorted(self.blocks))


def compile_context(
    *,
    task: dict[str, Any],
    prior: dict[str, dict[str, Any]],
    requires: list[str],
    observations: list[dict[str, Any]],
    max_tokens: int,
) -> CompiledContext:
    """``prior``: outputs visible to the agent by producer (step id or agent name), farthest
    first; ``requires``: ``name`` or ``name.field`` references read first."""
    total = max_tokens * CHARS_PER_TOKEN - len("## Prior outputs\n## Observations\n## Task\n")
    result: dict[str, list[Any]] = {"included": [], "truncated": [], "dropped": [], "values": []}
    task_section = _Section("Task", int(total * SHARES[0]))
    for order, (key, value) in enumerate(task.items()):
        task_section.offer(f"task.{key}", value, order, result)

    prior_section = _Section("Prior outputs", int(total * SHARES[1]) + task_section.chars)
    required_names = {ref.partition(".")[0] for ref in requires}
    refs = [ref for ref in requires if ref.partition(".")[0] in prior]
    refs += [name for name in reversed(list(prior)) if name not in required_names]
    for order, ref in enumerate(refs):
        name, _, field_name = ref.partition(".")
        value = prior[name].get(field_name) if field_name else prior[name]
        prior_section.offer(ref, value, order, result)

    used = sum(len(block) for s in (task_section, prior_section) for _, block in s.blocks)
    obs_section = _Section("Observations", total - used)
    for order in range(len(observations) - 1, -1, -1):
        obs_section.offer(f"observation {order + 1}", observations[order], order, result)
    text = "".join(s.render() for s in (task_section, prior_section, obs_section))
    return CompiledContext(
        text=text,
        tokens=estimate_tokens(text),
        budget=max_tokens,
        included=result["included"],
        truncated=result["truncated"],
        dropped=result["dropped"],
        values=dict(result["values"]),
    )
