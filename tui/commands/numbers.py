"""Number options of the command line."""

from __future__ import annotations

import math
from typing import Any

import click


class FiniteFloat(click.FloatRange):
    """A float option within its range, and finite: click's ``FloatRange`` lets ``nan`` through
    any bound (every comparison with it is false) and ``inf`` through an open top, and a
    scale, a delay or a period of either ends deep inside the command, not at its line."""

    name = "finite float range"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        number = super().convert(value, param, ctx)
        if not math.isfinite(number):
            self.fail(f"{value!r} is not a finite number", param, ctx)
        return number
