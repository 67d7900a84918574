"""The cost limit of one CEL evaluation: hostile workflow files stop in bounded work.

Part of the CEL layer (engine/conditions.py is its API). cel-python evaluates a tree node
by node with no bound of its own: ``size([0,1,2,3,4,5,6,7,8,9].map(a, [0,...,9].map(b,
...)))`` nested six deep is a million evaluations of the innermost expression — minutes of
one core from a 250-byte file, and ``workbench validate`` evaluates an input that reads
nothing. So every evaluation counts the tree nodes it visits (a macro's body once per
element) and stops at :data:`MAX_EVALUATION_STEPS`; and a value an expression builds by
joining (``+``) stops at :data:`MAX_LIST_LENGTH` items or :data:`MAX_TEXT_LENGTH`
characters or bytes — ``[s].map(t, [t + t].map(...))`` doubles a text at every level in a
handful of steps. The limit is counted, not timed: an expression stops at the same point
on every machine, and a test can say where.
"""

from __future__ import annotations

from typing import Any

import celpy
import lark
from celpy.evaluation import Activation, Context, Evaluator

MAX_EVALUATION_STEPS = 100_000
"""Tree nodes one evaluation may visit: a condition over a list of a thousand items with a
twenty-node test spends a fifth of it, in well under a second."""
MAX_LIST_LENGTH = 100_000
"""Items in a list an expression builds by joining (CEL joins no maps)."""
MAX_TEXT_LENGTH = 1_000_000
"""Characters or bytes in a text an expression builds by joining."""


class CostLimitExceeded(Exception):
    """An evaluation went past a limit. Not one of the errors cel-python turns into a CEL
    error value (those feed ``||``, ``&&`` and the macros), so nothing inside swallows it."""

    def __init__(self, message: str, *, steps: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.steps = steps
        """Tree nodes visited when it stopped (None: a value's length stopped it)."""


class _Budget:
    __slots__ = ("spent",)

    def __init__(self) -> None:
        self.spent = 0

    def spend(self) -> None:
        self.spent += 1
        if self.spent > MAX_EVALUATION_STEPS:
            raise CostLimitExceeded(
                f"stopped after {MAX_EVALUATION_STEPS:,} evaluation steps, the limit for one"
                " expression",
                steps=self.spent - 1,
            )


class _BoundedEvaluator(Evaluator):
    """cel-python's evaluator, charging every node it visits to one budget — the nested
    evaluators of macro bodies included."""

    def __init__(self, ast: lark.Tree[Any], activation: Activation, budget: _Budget) -> None:
        super().__init__(ast, activation)
        self.budget = budget

    def sub_evaluator(self, ast: lark.Tree[Any]) -> Evaluator:
        return _BoundedEvaluator(ast, self.activation, self.budget)

    def _visit_tree(self, tree: lark.Tree[Any]) -> Any:
        # lark's Interpreter visits every node through here (visit and visit_children both)
        self.budget.spend()
        return super()._visit_tree(tree)


class BoundedRunner(celpy.InterpretedRunner):
    """cel-python's interpreter with a fresh budget for every evaluation.

    Its base activation (the environment's type annotations and the functions) is built
    once: cel-python builds it anew for every evaluation — a quarter of a short one's cost —
    and an evaluation only reads it (variables go into a clone of it)."""

    _base: Activation | None = None

    def evaluate(self, context: Context) -> celpy.celtypes.Value:
        if self._base is None:
            self._base = self.new_activation()
        return _BoundedEvaluator(self.ast, self._base, _Budget()).evaluate(context)


def check_length(value: Any) -> Any:
    """``value`` (what a join, ``_+_``, built), refused when longer than the limits."""
    if isinstance(value, list) and len(value) > MAX_LIST_LENGTH:
        raise CostLimitExceeded(
            f"built a list of {len(value):,} items; the limit for one expression"
            f" is {MAX_LIST_LENGTH:,}"
        )
    if isinstance(value, (str, bytes)) and len(value) > MAX_TEXT_LENGTH:
        raise CostLimitExceeded(
            f"built a text of {len(value):,} characters; the limit for one expression"
            f" is {MAX_TEXT_LENGTH:,}"
        )
    return value
