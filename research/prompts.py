"""Prompt templates shipped under ``workflows/prompts/`` (one per model task).

Templates use ``string.Template`` placeholders — ``$task``, ``$inputs``,
``$context``, ``$schema`` — so JSON braces in them need no escaping. A real
provider reads the rendered prompt; the built-in extractive model reads the
structured inputs the same request carries.
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from string import Template
from typing import Any

SYSTEM_PROMPT = (
    "You are a careful research assistant working only from the passages you are given. "
    "Answer with a single JSON object that matches the schema. Every claim must quote, verbatim, "
    "a sentence of a passage it cites by id; never state what no passage supports."
)


@cache
def template(task: str) -> Template:
    name = task.removeprefix("research.") + ".md"
    path = resources.files("workflows").joinpath("prompts", name)
    return Template(path.read_text(encoding="utf-8"))


def render(task: str, inputs: dict[str, Any], context: str, schema: dict[str, Any]) -> str:
    return template(task).safe_substitute(
        task=task,
        inputs=json.dumps(inputs, ensure_ascii=False, sort_keys=True, indent=1),
        context=context or "(none)",
        schema=json.dumps(schema, separators=(",", ":")),
    )


def estimate_tokens(text: str) -> int:
    """The offline estimate: four characters a token (reconciled later with reported usage)."""
    return max(1, len(text) // 4)
