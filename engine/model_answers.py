"""Who answered a run's model calls: the configured providers, or the built-in fallback.

The one place that counts it, from each step iteration's latest ``step_finished`` event
(a resumed run's replayed calls carry their recorded fallback flag, so each is counted
once). The headless summary, the app's run header and the research report's quality
metadata all show :func:`disclosure` of this tally, so a person never mistakes the offline
model's work for the configured provider's.
"""

from __future__ import annotations

from collections.abc import Iterable

from pydantic import BaseModel, ConfigDict, Field

from engine.events import RunEvent, StepFinished


class ModelAnswers(BaseModel):
    """How many model answers a run got, and how many of those the built-in fallback gave."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    answers: int = 0
    fallback: int = 0
    fallback_steps: list[str] = Field(default_factory=list)
    """The steps (first-finished first, each once) with at least one fallback answer."""

    def plus(self, step_id: str, answers: int, fallback: int) -> ModelAnswers:
        """This tally with one more step's calls (a step still running, not yet in the events)."""
        steps = self.fallback_steps
        if fallback and step_id not in steps:
            steps = [*steps, step_id]
        return ModelAnswers(
            answers=self.answers + answers, fallback=self.fallback + fallback, fallback_steps=steps
        )


def tally(events: Iterable[RunEvent]) -> ModelAnswers:
    """The run's model answers, from its events (any order of kinds; seq order assumed)."""
    latest: dict[tuple[str, int], StepFinished] = {}
    for event in events:
        if isinstance(event, StepFinished):
            latest[(event.step_id, event.iteration)] = event
    result = ModelAnswers()
    for event in latest.values():
        result = result.plus(event.step_id, event.llm_calls, event.fallback_calls)
    return result


def disclosure(answers: ModelAnswers) -> str | None:
    """One sentence naming how many answers came from the built-in fallback and in which
    steps; None when every answer came from the configured providers."""
    if not answers.fallback:
        return None
    total = max(answers.answers, answers.fallback)
    return (
        f"{answers.fallback} of {total} model answers came from the built-in fallback"
        f" (steps: {', '.join(answers.fallback_steps)})"
    )
