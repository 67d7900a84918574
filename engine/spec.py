"""The workflow model (DESIGN §3): what a loaded, template-expanded definition is.

These models are the boundary between YAML and the engines, so they are frozen
and reject unknown keys. The loader (engine/loader.py) turns YAML into them and
does every check that needs more than one field; the models themselves only
check what one field can know.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, ConfigDict, Field, StringConstraints, model_validator
from pydantic_core import PydanticCustomError

from plumbing.frozen import Frozen

IDENTIFIER_PATTERN = r"^[a-z][a-z0-9_]*$"
Identifier = Annotated[str, StringConstraints(pattern=IDENTIFIER_PATTERN)]

BOOLEAN_FOR_NUMBER = "boolean_for_number"
"""The error type of a boolean where a number belongs (engine/loader/validation.py words it)."""


def _not_a_boolean(value: Any) -> Any:
    """Refuse a boolean where a number belongs: YAML reads ``yes``, ``no``, ``on`` and ``off``
    as booleans too, and pydantic would take one as 1 or 0 (``max_step_runs: yes``, one step
    run; ``retries: off``, none)."""
    if isinstance(value, bool):
        raise PydanticCustomError(
            BOOLEAN_FOR_NUMBER,
            "YAML reads this value as a boolean, not a number (yes, no, on and off are booleans"
            " too); write a number",
        )
    return value


NOT_A_BOOLEAN = BeforeValidator(_not_a_boolean)
Count = Annotated[int, NOT_A_BOOLEAN]
"""A whole number of a workflow: never a boolean."""
Amount = Annotated[float, NOT_A_BOOLEAN]
"""A number of a workflow (seconds, dollars, a threshold): never a boolean. An optional number
with bounds is written ``Annotated[float, Field(gt=0), NOT_A_BOOLEAN] | None``, the bounds before
the check: given after it (``Amount | None = Field(gt=0)``) pydantic still enforces them but can
no longer say them in the JSON schema (docs/api/openapi.json)."""

TriggerRule = Literal[
    "all_success",
    "all_done",
    "none_failed",
    "none_failed_min_one_success",
    "one_success",
    "one_failed",
]
DEFAULT_TRIGGER: TriggerRule = "none_failed_min_one_success"

InputType = Literal["string", "int", "float", "bool", "date", "list", "dict"]
EngineChoice = Literal["auto", "kahn", "langgraph"]


class Spec(Frozen):
    """The base of the workflow models: a number typed ``float`` refuses infinity and NaN.

    YAML reads ``.inf`` and ``.nan`` as floats and pydantic reads the text ``1e400`` or ``inf``
    as one; a run stores its definition as JSON, which has none, so such a run could never be
    read back. The values typed ``Any`` (an input's default and choices, a step's config) are
    kept as written: the loader checks those itself (engine/loader/finite.py).
    """

    model_config = ConfigDict(allow_inf_nan=False)


class InputSpec(Spec):
    type: InputType = "string"
    required: bool = False
    default: Any = None
    description: str = ""
    choices: list[Any] | None = None
    min: Amount | None = None
    """The smallest value an int or float input takes (inclusive)."""
    max: Amount | None = None
    """The largest value an int or float input takes (inclusive)."""
    max_length: Annotated[int, Field(ge=1), NOT_A_BOOLEAN] | None = None
    """The most characters a string input holds (a research question, not a document)."""


class Limits(Spec):
    """Bounded execution (AgentMesh): hitting any limit ends the run PARTIAL."""

    max_step_runs: Count | Literal["auto"] = "auto"
    max_llm_calls: Count = Field(default=300, ge=1)
    token_budget: Count = Field(default=500_000, ge=1)
    timeout_s: Amount = Field(default=3600, gt=0)
    max_cost_usd: Annotated[float, Field(gt=0), NOT_A_BOOLEAN] | None = None
    """Spend cap in USD over the run's model calls (as priced by the model caller); none if unset."""

    def step_run_bound(self, step_count: int) -> int:
        """The safety bound on step executions: 10 x steps unless set lower."""
        safety = 10 * max(step_count, 1)
        if self.max_step_runs == "auto":
            return safety
        return min(self.max_step_runs, safety)


class InterruptSpec(Spec):
    """Ask a person before a step runs, or to approve/reject/edit its outputs after."""

    before: bool = False
    after: bool = False
    kind: Literal["approval", "input"] = "approval"
    prompt: str = "Approve?"

    @model_validator(mode="after")
    def _one_side(self) -> InterruptSpec:
        if not (self.before or self.after):
            raise ValueError("interrupt needs before: true or after: true")
        return self


class ConditionSpec(Spec):
    expr: str
    target: Identifier


class LoopSpec(Spec):
    target: Identifier
    max_iterations: Count = Field(ge=1)


class DetourSpec(Spec):
    target: Identifier
    returns: bool = True
    when: str | None = None


class TieBreakerSpec(Spec):
    enabled: bool = True
    valid_targets: list[Identifier] = Field(default_factory=list)
    prompt_hint: str = ""
    confidence_threshold: Amount = Field(default=0.7, ge=0.0, le=1.0)
    timeout_s: Amount = Field(default=30.0, gt=0)


class RoutingSpec(Spec):
    """ADR-004 graph-constrained routing for one step (see DESIGN §5)."""

    kind: Literal["linear", "conditional", "loop", "branch"] = "linear"
    next: Identifier | None = None
    conditions: list[ConditionSpec] = Field(default_factory=list)
    branches: dict[str, Identifier] = Field(default_factory=dict)
    branch_on: str = "outputs.status"
    loop: LoopSpec | None = None
    detour: DetourSpec | None = None
    tie_breaker: TieBreakerSpec | None = None
    terminate_when: str | None = None

    def targets(self) -> list[str]:
        """Every step this routing can choose, default edge first, without duplicates."""
        seen: list[str] = []
        candidates: list[str | None] = [self.next]
        candidates += [c.target for c in self.conditions]
        candidates += list(self.branches.values())
        candidates += [self.loop.target if self.loop else None]
        candidates += [self.detour.target if self.detour else None]
        for target in candidates:
            if target is not None and target not in seen:
                seen.append(target)
        return seen


class ModelSpec(Spec):
    tier: Annotated[int, Field(ge=1, le=5), NOT_A_BOOLEAN] | None = None
    profile: str | None = None


class ContextSpec(Spec):
    """AgentMesh context compilation: which upstream outputs, under what budget."""

    requires: list[str] = Field(default_factory=list)
    max_tokens: Count = Field(default=6000, ge=1)


class StepSpec(Spec):
    id: Identifier
    uses: str
    description: str = ""
    depends_on: list[Identifier] = Field(default_factory=list)
    when: str | None = None
    inputs: dict[str, str] = Field(default_factory=dict)
    """Input name -> CEL expression over the run context."""
    config: dict[str, Any] = Field(default_factory=dict)
    """Static parameters handed to the step implementation as they are."""
    trigger: TriggerRule = DEFAULT_TRIGGER
    timeout_s: Annotated[float, Field(gt=0), NOT_A_BOOLEAN] | None = None
    retries: Count = Field(default=0, ge=0, le=10)
    retry_delay_s: Amount = Field(default=0.0, ge=0)
    interrupt: InterruptSpec | None = None
    routing: RoutingSpec | None = None
    model: ModelSpec | None = None
    context: ContextSpec | None = None
    optional: bool = False
    group: str | None = None
    """Template instance this step came from, e.g. ``research_round:2`` (for display)."""


class CompletionSpec(Spec):
    required_outputs: list[str] = Field(default_factory=list)
    required_steps: list[Identifier] = Field(default_factory=list)


class SourceLocation(Spec):
    file: str
    line: int
    column: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.column}"


class WorkflowDefinition(Spec):
    """A loaded, template-expanded, validated workflow.

    ``steps`` are in declaration order after expansion. ``locations`` maps a
    dotted path (``steps.review.routing.next``) to where it was written, so
    errors found after loading can still point at the YAML.
    """

    name: Identifier
    version: Count = 1
    description: str = ""
    engine: EngineChoice = "auto"
    inputs: dict[Identifier, InputSpec] = Field(default_factory=dict)
    limits: Limits = Field(default_factory=Limits)
    steps: list[StepSpec]
    completion: CompletionSpec = Field(default_factory=CompletionSpec)
    outputs: dict[str, str] = Field(default_factory=dict)
    source: str = "<memory>"
    locations: dict[str, SourceLocation] = Field(default_factory=dict)

    def step(self, step_id: str) -> StepSpec:
        for candidate in self.steps:
            if candidate.id == step_id:
                return candidate
        raise KeyError(step_id)

    @property
    def step_ids(self) -> list[str]:
        return [s.id for s in self.steps]
