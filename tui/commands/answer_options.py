"""``workbench resume --answer``'s answers as written on the command line, each addressed to
the prompt it is for: ``--answer STEP=ANSWER`` or ``--answer INTERRUPT_ID=ANSWER``, or a bare
``--answer ANSWER`` for the one prompt that waits (engine/interrupt_answers.py decides)."""

from __future__ import annotations

import re
from collections.abc import Sequence

from engine.context import InterruptAnswer
from engine.interrupt_answers import AnswerAddressError, address_answers
from engine.store import InterruptRecord
from tui.commands.command_context import BadInput
from tui.commands.common import parse_answer

ADDRESSED = re.compile(r"([\w.:-]+)=(.*)", re.DOTALL)
"""``ADDRESS=ANSWER``: a step id or an interrupt id (``RUN:STEP:ITERATION:N``), no spaces, then
the answer. Anything else — JSON, free text with spaces around '=' — is a bare answer."""


def read_answer(text: str) -> tuple[str | None, InterruptAnswer]:
    """(the address or None, the answer) of one ``--answer``."""
    addressed = ADDRESSED.fullmatch(text.strip())
    if addressed is None:
        return None, parse_answer(text)
    return addressed[1], parse_answer(addressed[2])


def answers_for(
    pending: Sequence[InterruptRecord], texts: Sequence[str]
) -> dict[str, InterruptAnswer]:
    """Interrupt id -> its answer; :class:`BadInput` listing what waits when an answer is not
    addressed to exactly the prompts it can be for."""
    try:
        return address_answers(pending, [read_answer(text) for text in texts])
    except AnswerAddressError as error:
        raise BadInput(str(error)) from None
