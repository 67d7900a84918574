"""The base of research's boundary models: the research state, its evidence, the round
records, the event payloads, the task schemas and the steps' inputs and outputs."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class Frozen(BaseModel):
    """Immutable, unknown keys refused.

    Each builds its validator when first used, not at import (``defer_build``): checking a
    workflow reads the step models' fields and validates none of them, so `workbench validate`
    does not pay for building the research state's validators. pydantic >= 2.14 builds a
    deferred model thread-safely (the engine's thread and the app may first use one together).
    """

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)
