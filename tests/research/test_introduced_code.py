"""A statement that introduces the code after it is quoted with it (issue 22).

Reference text often says how to do a thing in a paragraph that ends unfinished — "Tip: to use
the tab key as the completion key, call" — and gives the call in the next, which is no sentence
(``readline.parse_and_bind("tab: complete")``). Neither was a claim candidate alone, so the API a
how-to question asks for was read and never quoted (rlcompleter, colorsys in the default corpus).
"""

from __future__ import annotations

from pathlib import Path

from engine.spec import WorkflowDefinition
from research.extractive import claim_candidates, introduced_code
from tests.research.conftest import research_one_module

TIP = "Tip: to turn the lamp on at dusk, call"
CALL = 'lamps.schedule(lamp, "dusk")'
LAMPS = f'''"""Lamps: switch garden lamps on and off at the times you choose.

A lamp is switched by the controller it is wired to, and the controller keeps the times each
lamp is to be switched on and off. A lamp can be switched by hand at any time as well.

{TIP}

{CALL}

Supported times:
dusk: when the light falls below the threshold
dawn: when the light rises above it
"""
'''


def test_a_statement_that_introduces_code_is_quoted_with_it() -> None:
    text = LAMPS.strip('"\n')
    assert f"{TIP} {CALL}" in claim_candidates({"text": text})
    assert introduced_code(text) == [f"{TIP} {CALL}"]


def test_what_follows_a_finished_sentence_or_introduces_prose_is_no_such_statement() -> None:
    assert introduced_code("Lamps are switched at dusk.\n\nlamps.schedule(lamp)") == []
    assert introduced_code("To turn the lamp on, call\n\nThe controller keeps times.") == []
    assert introduced_code("Examples:\n\nlamps.schedule(lamp)") == []  # a label, no statement
    assert introduced_code("It switches them all, call\n\nlamps.all()") == []  # leans on before


def test_a_how_to_questions_brief_quotes_the_call_its_document_introduces(
    workflow: WorkflowDefinition, tmp_path: Path
) -> None:
    _, report = research_one_module(
        workflow, tmp_path, "lamps", LAMPS, "How do I turn a garden lamp on at dusk?"
    )
    answer = report.split("## Sources", 1)[0]
    assert CALL in answer
