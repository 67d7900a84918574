"""The run API's request and response bodies (what /openapi.json documents).

Runs, events, step results, interrupts and provider snapshots are sent as the store and the
router's own models (``RunRecord``, the ``RunEvent`` union, ``StepResult``,
``InterruptRecord``, ``ProviderSnapshot``), so a client reads them back into the same types.
What only the API has is here: frozen, unknown keys refused, sizes bounded.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, model_validator

from engine.context import InterruptAnswer, JournalEntry
from engine.events import RunEvent
from engine.loader import MAX_BYTES
from engine.spec import InputSpec

RunId = Annotated[
    str, StringConstraints(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$", max_length=64)
]
"""A run id a client may choose (so it knows the id before the first event)."""


class ApiModel(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Answer(InterruptAnswer):
    """An answer to a prompt: approve, reject, edit (``value``: the edited outputs), choose
    (``value``: a tie-breaker's target) or answer (``value``: text)."""

    # The engine's models build their validators when first used; a request body's must be
    # built when the API is (FastAPI reads it then).
    model_config = {**InterruptAnswer.model_config, "defer_build": False}


class StartRun(ApiModel):
    """A run of a shipped workflow (``workflow``) or of a definition sent along
    (``definition``: the YAML text, named ``filename`` in its problems)."""

    workflow: str | None = Field(
        default=None, max_length=200, description="A shipped workflow's name (GET /v1/workflows)."
    )
    definition: str | None = Field(
        default=None,
        max_length=MAX_BYTES,
        description="A workflow file's YAML text, checked by the same loader as"
        " `workbench validate`.",
    )
    filename: str = Field(
        default="uploaded.yaml",
        max_length=200,
        pattern=r"^[^/\\\x00-\x1f]+$",
        description="The name the definition's problems give it (no folders).",
    )
    inputs: dict[str, Any] = Field(default_factory=dict)
    engine: Literal["auto", "kahn", "langgraph"] = "auto"
    run_id: RunId | None = None

    @model_validator(mode="after")
    def _one_workflow(self) -> StartRun:
        if (self.workflow is None) == (self.definition is None):
            raise ValueError("give either workflow (a shipped workflow's name) or definition")
        return self


class RunAccepted(ApiModel):
    """A run started or resumed: queued for a worker."""

    run_id: str
    workflow: str
    engine: str
    status: str = "queued"


class ResumeRun(ApiModel):
    """Continue a stopped or WAITING run; ``answers`` go to its pending interrupts (addressed
    by interrupt id or step id, as `workbench resume --answer STEP=ANSWER`; an unaddressed
    answer, key ``""``, goes to the one pending interrupt)."""

    answers: dict[str, Answer] = Field(default_factory=dict, max_length=1000)


class ForkRun(ApiModel):
    """A new run from this one as it was just before ``at``'s pass, as `workbench runs fork
    RUN --at STEP [--set …] [--input …]` makes it (the edits written as on that command line)."""

    at: str = Field(max_length=200, description="STEP or STEP@ITERATION.")
    sets: list[Annotated[str, StringConstraints(max_length=100_000)]] = Field(
        default_factory=list,
        max_length=1000,
        description="Restored outputs changed, each STEP.FIELD=VALUE (VALUE as JSON, else text).",
    )
    inputs: list[Annotated[str, StringConstraints(max_length=100_000)]] = Field(
        default_factory=list, max_length=1000, description="Run inputs changed, each NAME=VALUE."
    )
    engine: Literal["same", "kahn", "langgraph"] = "same"
    run_id: RunId | None = None


class RunCancelled(ApiModel):
    run_id: str
    outcome: Literal["dequeued", "stopping", "cancelled"]
    """``dequeued``: it was still queued, now CANCELLED; ``stopping``: its worker is asked to
    stop it (it ends CANCELLED); ``cancelled``: no worker held it, now CANCELLED."""


class WorkflowInfo(ApiModel):
    name: str
    description: str = ""
    inputs: dict[str, InputSpec] = Field(default_factory=dict)


class EventsPage(ApiModel):
    events: list[RunEvent]
    more: bool
    """True when events after the last one were left for the next page (``?after=``)."""


class JournalCall(ApiModel):
    index: int
    entry: JournalEntry


class Health(ApiModel):
    status: Literal["ok"] = "ok"
    listening: bool
    """Whether live events arrive by notification now (otherwise by polling, slower)."""


class ErrorBody(ApiModel):
    error: str
    """One line, as the CLI prints it."""
    problems: list[str] = Field(default_factory=list)
    """A workflow that does not load: every problem as file:line:col: message."""
