"""No number of a loaded workflow is infinite or NaN.

YAML reads ``.inf`` and ``.nan`` as floats, and pydantic turns the text ``1e400`` or ``inf``
into one where a field takes a number. A run stores its definition as JSON, which has no
infinity: the value would be stored as ``null`` and the run could never be read back
(``workbench runs show``, ``resume``, ``runs copy``). The loader refuses the value instead,
where it was written.

A field typed as a number is refused by the models themselves (``allow_inf_nan=False`` on
:class:`engine.spec.Spec`; validation.py words the refusal with :func:`not_finite`). What the
models keep as written — an input's ``default`` and ``choices``, a step's ``config`` — is walked
here, in the YAML as read: a cost per step of its own config, not of the whole definition.
"""

from __future__ import annotations

import math
from typing import Any

from engine.loader.located_yaml import Node
from engine.loader.problems import Problems

FREE_FORM_INPUT_KEYS = ("default", "choices")
"""The keys of an input whose values the model keeps as written (typed ``Any``)."""


def not_finite(name: str, value: Any) -> str:
    """The refusal of ``value`` (a float, or the text pydantic read as one) written at ``name``."""
    return f"{name}: {finite_refusal(value)}"


def finite_refusal(value: Any) -> str:
    """:func:`not_finite` without the place, for a check that names it itself (a mode's)."""
    return f"{float(value)} is not a finite number, and a run stores none; write a finite number"


def check_finite(
    problems: Problems, node: Node | None, path: str, prefix: str = "", suffix: str = ""
) -> None:
    """Add a problem for every infinite or NaN number at or under ``node`` (written at the dotted
    ``path``); ``prefix`` and ``suffix`` frame the message as the step's others are."""
    if node is None or not _holds_one(node):
        return
    for where, child in node.walk(path):
        value = child.value
        if isinstance(value, float) and not math.isfinite(value):
            problems.add(child, f"{prefix}{not_finite(where, value)}{suffix}")


def _holds_one(node: Node) -> bool:
    """Whether a number under ``node`` is infinite or NaN: the walk without the paths that only a
    problem needs (several times cheaper than :meth:`Node.walk`; most configs hold none)."""
    stack = [node]
    while stack:
        value = stack.pop().value
        if isinstance(value, dict):
            stack.extend(value.values())
        elif isinstance(value, list):
            stack.extend(value)
        elif isinstance(value, float) and not math.isfinite(value):
            return True
    return False


def check_finite_inputs(problems: Problems, inputs: Node | None) -> None:
    """The free-form values of the workflow's ``inputs:`` section (each input's default and
    choices)."""
    if inputs is None or not inputs.is_map:
        return
    for name, spec in inputs.value.items():
        for key in FREE_FORM_INPUT_KEYS:
            value = spec.get(key)
            if key == "choices" and value is not None and not value.is_seq:
                continue  # not a list: the model refuses it, and one problem says so
            check_finite(problems, value, f"inputs.{name}.{key}")
