"""Number options of the command line."""

from __future__ import annotations

import math
from typing import Any

import click
from pydantic import BaseModel


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


def field_range(model: type[BaseModel], field: str) -> FiniteFloat:
    """The option for a model's float field, bounded as the field is (``gt``/``ge``, ``lt``/``le``):
    the bounds are written once, where the settings are, and the command line says them first."""
    low: float | None = None
    high: float | None = None
    low_open = high_open = False
    for bound in model.model_fields[field].metadata:  # pydantic's Gt, Ge, Lt, Le
        for name, is_low, is_open in (
            ("gt", True, True),
            ("ge", True, False),
            ("lt", False, True),
            ("le", False, False),
        ):
            value = getattr(bound, name, None)
            if value is None:
                continue
            if is_low:
                low, low_open = value, is_open
            else:
                high, high_open = value, is_open
    return FiniteFloat(min=low, max=high, min_open=low_open, max_open=high_open)
