"""``workbench runs fork``'s edits as written on the command line (and sent so to the run
API's fork): ``--set step.field=value`` and ``--input name=value``, read into the engine's
:class:`~engine.protocol.ForkEdits`."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from engine.protocol import ForkEdits
from engine.run_inputs import InputError, check_input_text
from engine.time_travel import ForkError


def fork_edits(sets: Sequence[str] = (), inputs: Sequence[str] = ()) -> ForkEdits:
    """From ``--set step.field=value`` and ``--input k=v`` (values read as JSON when
    they are JSON, else as text)."""
    outputs: dict[str, dict[str, Any]] = {}
    for item in sets:
        target, value = _assignment(item, "--set", "step.field=value")
        step_id, dot, name = target.partition(".")
        if not dot or not step_id or not name:
            raise ForkError(f"--set {item!r}: name a step and a field, e.g. --set critic.score=0.9")
        outputs.setdefault(step_id, {})[name] = value
    given = dict(_assignment(item, "--input", "name=value") for item in inputs)
    return ForkEdits(outputs=outputs, inputs=given)


def _assignment(item: str, option: str, shape: str) -> tuple[str, Any]:
    name, equals, text = item.partition("=")
    if not equals or not name.strip():
        raise ForkError(f"{option} {item!r} is not {shape}")
    try:
        check_input_text(name.strip(), text, json_text=True)
    except InputError as error:
        raise ForkError(f"{option}: {error}") from None
    try:
        value: Any = json.loads(text)
    except json.JSONDecodeError:
        value = text
    return name.strip(), value
