"""The two analysts: the same evidence read through different lenses (DESIGN §8).

analyst_ai — concepts, definitions, rationale, trade-offs; analyst_swe —
implementation, usage, versions, compatibility. Each proposes claims quoted
from this round's passages; a claim whose quote is not in the passage it
cites is refused (NO_PROVENANCE) at the validated-result stage.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from engine.context import StepContext
from engine.steps import step
from plumbing.frozen import Frozen
from research.evidence import Claim, quote_in
from research.state import latest_state, round_of
from research.steps.common import RoundInput, passage_inputs
from research.text import normalize_space

if TYPE_CHECKING:
    from research.tasks import Answer

CLAIMS_PER_SUB_QUESTION = 2


class AnalysisOutput(Frozen):
    round: int
    lens: Literal["ai", "swe"]
    new_claims: list[Claim]
    refused: int
    refusal: str = ""


async def analyse(ctx: StepContext, lens: Literal["ai", "swe"]) -> AnalysisOutput:
    from research.pipeline import ModelPipeline, ModelStage
    from research.tasks import AnalysisAnswer

    state = latest_state(ctx)
    round_number = round_of(ctx)
    evidence = state.evidence
    passages = [p for p in evidence.passages.values() if p.round == round_number]
    given = {p.id: p for p in passages}
    questions = {q.id for q in evidence.sub_questions}
    refused: list[str] = []

    def build(_claims: list[Any], _retrieved: Any) -> dict[str, Any]:
        return {
            "lens": lens,
            "query": evidence.query,
            "subject": state.subject,
            "sub_questions": [q.model_dump() for q in evidence.sub_questions],
            "passages": passage_inputs(evidence, passages),
            "known_claims": [c.text for c in evidence.claims],
            "max_claims_per_sub_question": CLAIMS_PER_SUB_QUESTION,
        }

    def check(answer: Answer) -> tuple[Answer, list[str]]:
        assert isinstance(answer, AnalysisAnswer)
        kept, problems = [], []
        for index, claim in enumerate(answer.claims):
            cited = [given[p] for p in claim.passage_ids if p in given]
            if not claim.passage_ids or len(cited) != len(claim.passage_ids):
                problems.append(f"claim {index + 1} cites a passage this round did not read")
            elif not quote_in(claim.quote, cited):
                problems.append(f"claim {index + 1}: quote not found in its passage")
            elif claim.sub_question not in questions:
                problems.append(f"claim {index + 1}: unknown sub-question {claim.sub_question}")
            else:
                kept.append(claim)
        refused.extend(problems)
        return answer.model_copy(update={"claims": kept}), problems

    result = await ModelPipeline(ctx).run(
        ModelStage(
            task="research.analyze",
            schema=AnalysisAnswer,
            build_inputs=build,
            trim="passages",
            output_tokens=1500,
            check_output=check,
        )
    )
    claims: list[Claim] = []
    proposed = result.answer.claims if isinstance(result.answer, AnalysisAnswer) else []
    for index, claim in enumerate(proposed, start=1):
        source_ids = sorted({given[p].source_id for p in claim.passage_ids})
        claims.append(
            Claim(
                id=f"r{round_number}-{lens}-{index}",
                text=claim.text,
                quote=normalize_space(claim.quote),
                sub_question=claim.sub_question,
                passage_ids=claim.passage_ids,
                source_ids=source_ids,
                lens=lens,
                round=round_number,
            )
        )
    return AnalysisOutput(
        round=round_number,
        lens=lens,
        new_claims=claims,
        refused=len(refused),
        refusal=result.note(),
    )


@step("research.analyst_ai")
async def analyst_ai(ctx: StepContext, inp: RoundInput) -> AnalysisOutput:
    """Concepts, definitions, rationale, trade-offs."""
    return await analyse(ctx, "ai")


@step("research.analyst_swe")
async def analyst_swe(ctx: StepContext, inp: RoundInput) -> AnalysisOutput:
    """Implementation, usage, versions, compatibility."""
    return await analyse(ctx, "swe")
