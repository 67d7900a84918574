"""The base of every boundary model: the engine's workflow and event models, research's state,
evidence and step payloads, the agents' definitions."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class Frozen(BaseModel):
    """Immutable, unknown keys refused.

    Each builds its validator when first used, not at import (``defer_build``): a command
    builds only the models it touches (`workbench validate` none of the run events or of the
    research state, the app's first frame none of the workflow models). pydantic >= 2.14 builds
    a deferred model thread-safely, so the engine's thread and the UI may first use one at the
    same time.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)
