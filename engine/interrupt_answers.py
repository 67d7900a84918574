"""Which pending interrupt an answer given ahead is for (``workbench resume --answer``).

An answer is addressed to a pending interrupt by its id or by its step's id
(``--answer review=approve``); an answer with no address is for the one
pending interrupt, and is refused when several are pending — each must be
answered on purpose, never all with one answer.
"""

from __future__ import annotations

from collections.abc import Sequence

from engine.context import InterruptAnswer
from engine.store import InterruptRecord


class AnswerAddressError(ValueError):
    """An answer that names no pending interrupt, or names none while several are pending."""


def address_answers(
    pending: Sequence[InterruptRecord], given: Sequence[tuple[str | None, InterruptAnswer]]
) -> dict[str, InterruptAnswer]:
    """interrupt id -> its answer, for ``given`` (address or None, answer) pairs.

    Raises AnswerAddressError naming the pending interrupts when an address
    matches none of them, when an unaddressed answer meets several, or when one
    interrupt is answered twice.
    """
    described = ", ".join(f"{p.step_id} ({p.interrupt_id})" for p in pending) or "none"
    addressed: dict[str, InterruptAnswer] = {}
    for address, answer in given:
        if address is None:
            if len(pending) != 1:
                raise AnswerAddressError(
                    f"{len(pending)} interrupts are pending: {described}; address each answer "
                    "with STEP=ANSWER (e.g. --answer review=approve)"
                )
            matches = list(pending)
        else:
            matches = [p for p in pending if address in (p.interrupt_id, p.step_id)]
            if not matches:
                raise AnswerAddressError(
                    f"no pending interrupt is {address!r}; pending: {described}"
                )
        for match in matches:
            if match.interrupt_id in addressed:
                raise AnswerAddressError(
                    f"{match.step_id} ({match.interrupt_id}) is answered twice; give one answer each"
                )
            addressed[match.interrupt_id] = answer
    return addressed
