"""``limits.max_cost_usd``: the spend the model caller reports ends a run PARTIAL, with the reason."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from engine.context import CallUsage, RunBudget
from engine.events import Budget
from engine.spec import Limits
from engine.states import RunStatus
from tests.engine.kahn_helpers import FakeModel, run, step, workflow


class PricedModel(FakeModel):
    """The fake model, each call costing ``cost_usd``."""

    def __init__(self, answers: list[Any], cost_usd: float) -> None:
        super().__init__(answers)
        self.cost_usd = cost_usd

    def usage(self, response: Any) -> CallUsage:
        return CallUsage(tokens=response.tokens, provider="fake", cost_usd=self.cost_usd)


async def test_the_cost_limit_ends_the_run_partial_with_the_reason() -> None:
    wf = workflow(
        step("chatty", "test.model_calls", config={"calls": 10}),
        limits=Limits(max_cost_usd=0.05),
    )
    model = PricedModel(["hi"], cost_usd=0.02)
    result, events = await run(wf, model=model)
    assert result.status is RunStatus.PARTIAL
    assert result.reason.startswith("max_cost_usd 0.05 reached")
    assert len(model.calls) == 3  # 0.02, 0.04, 0.06: the third call crossed the cap
    [budget] = [e for e in events if isinstance(e, Budget)]  # what the spending is shown as
    assert (budget.cost_usd, budget.max_cost_usd) == (pytest.approx(0.06), 0.05)


async def test_no_cost_limit_by_default() -> None:
    wf = workflow(step("chatty", "test.model_calls", config={"calls": 10}))
    result, _ = await run(wf, model=PricedModel(["hi"], cost_usd=5.0))
    assert result.status is RunStatus.COMPLETED


def test_the_budget_counts_cost_and_the_limit_must_be_positive() -> None:
    budget = RunBudget(max_llm_calls=10, token_budget=1000, max_cost_usd=1.0)
    budget.charge(10, 0.4)
    budget.charge(10, 0.4)
    budget.check_call()
    budget.charge(10, 0.4)
    assert budget.cost_usd == pytest.approx(1.2)
    with pytest.raises(ValidationError):
        Limits(max_cost_usd=0)
