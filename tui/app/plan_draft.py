"""A plan being edited: the sub-questions of a step's outputs, changed one at a time.

Plain Python, no Textual: the approval prompt's list editor (widgets/plan_editor.py)
drives it, and its answer is what the step's output model expects back — the same
items with the same fields, in the person's order. Ids stay with their question (later
steps cite them); a new question gets the next free id; a question whose text a person
rewrites loses its ``key_terms`` (they described the old text, and retrieval falls back
to the text when there are none).
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

PLAN_FIELD = "sub_questions"
"""The output field a plan lives in (research.intake_scope's ``IntakeOutput``)."""
DERIVED_FIELDS = ("key_terms",)
"""Fields worked out from a question's text: cleared when the text changes."""
_TRAILING_NUMBER = re.compile(r"^(.*?)(\d+)$")


class PlanEditRefused(ValueError):
    """An edit that would leave the plan unusable; the message says what to do instead."""


@dataclass
class PlanDraft:
    questions: list[dict[str, Any]]
    original: list[dict[str, Any]] = field(default_factory=list)

    @classmethod
    def from_outputs(cls, outputs: Mapping[str, Any]) -> PlanDraft | None:
        """The plan in ``outputs``, or None when they hold none (a list of items with a text)."""
        items = outputs.get(PLAN_FIELD)
        if not isinstance(items, list) or not items:
            return None
        if not all(
            isinstance(item, Mapping) and isinstance(item.get("text"), str) for item in items
        ):
            return None
        questions = [dict(item) for item in items]
        return cls(questions=questions, original=copy.deepcopy(questions))

    @property
    def changed(self) -> bool:
        return self.questions != self.original

    def texts(self) -> list[str]:
        return [str(q["text"]) for q in self.questions]

    def edit(self, index: int, text: str) -> None:
        text = _checked_text(text)
        question = self.questions[index]
        if question["text"] == text:
            return
        question["text"] = text
        for name in DERIVED_FIELDS:
            if isinstance(question.get(name), list):
                question[name] = []

    def add(self, after: int, text: str) -> int:
        """Insert a new question after ``after`` (-1: first); returns its index."""
        # the fields the other questions have, empty (a facet "", key terms [])
        question: dict[str, Any] = {
            name: type(value)()
            for name, value in self.questions[0].items()
            if isinstance(value, list | str)
        }
        question.update(id=self._next_id(), text=_checked_text(text))
        index = after + 1
        self.questions.insert(index, question)
        return index

    def delete(self, index: int) -> None:
        if len(self.questions) == 1:
            raise PlanEditRefused(
                "the plan needs at least one sub-question; edit this one, or reject the step"
            )
        del self.questions[index]

    def move(self, index: int, delta: int) -> int:
        """Move a question up (-1) or down (+1); returns where it is now."""
        target = max(0, min(len(self.questions) - 1, index + delta))
        self.questions.insert(target, self.questions.pop(index))
        return target

    def answer(self) -> dict[str, Any]:
        """The outputs field to send back: the questions in the person's order."""
        return {PLAN_FIELD: copy.deepcopy(self.questions)}

    def _next_id(self) -> str:
        prefix, highest = "q", 0
        for question in self.questions + self.original:
            match = _TRAILING_NUMBER.match(str(question.get("id", "")))
            if match:
                prefix, highest = match.group(1), max(highest, int(match.group(2)))
        taken = {str(q.get("id")) for q in self.questions}
        number = highest + 1
        while f"{prefix}{number}" in taken:
            number += 1
        return f"{prefix}{number}"


def _checked_text(text: str) -> str:
    text = " ".join(text.split())
    if not text:
        raise PlanEditRefused("a sub-question cannot be empty; type it, or delete it with d")
    return text
