"""A statement that introduces the code after it is quoted with it (issue 22).

Reference text often says how to do a thing in a paragraph that ends unfinished — "Tip: to use
the tab key as the completion key, call" — and gives the call in the next, which is no sentence
(``readline.parse_and_bind("tab: complete")``). Neither was a claim candidate alone, so the API a
how-to question asks for was read and never quoted (rlcompleter, colorsys in the default corpus).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.spec import WorkflowDefinition
from research.corpus import Corpus
from research.default_corpus import build_default_corpus
from research.extractive import (
    MAX_INTRODUCED_CODE_LINES,
    claim_candidates,
    introduced_code,
    opens_with_code,
)
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
    # a summary line without its period, then prose without its final period: no sentence either
    assert introduced_code("Find the lamps for a garden\n\nThe controller keeps times") == []


@pytest.mark.parametrize(
    "paragraph",
    [
        'lamps.schedule(lamp, "dusk")',  # a call
        "schedule(lamp, at) --> switch time",  # an API's signature
        "lamp = lamps.Lamp(pin=4)",  # an assignment
        "from lamps import schedule",  # an import
        "with lamps.controller() as c:\n    c.switch(lamp)",  # a compound statement's header
        "# switch every lamp off\nlamps.all_off()",  # a comment
        ">>> lamps.count()\n4",  # a doctest
        "$ lamps --off",  # a shell session
        "```python\nlamps.all_off()\n```",  # a Markdown code fence
        'time_spec ::= "dusk" | "dawn" | clock_time',  # a grammar production
        "- schedule(lamp, at)\n- cancel(lamp)",  # a list of calls
        "@lamps.on_dusk\ndef greet(): pass",  # a decorator
    ],
)
def test_code_of_every_common_shape_opens_with_code(paragraph: str) -> None:
    assert opens_with_code(paragraph)
    assert introduced_code(f"To switch the lamps, write\n\n{paragraph}")


@pytest.mark.parametrize(
    "paragraph",
    [
        "This is a backwards compatibility wrapper around\nlamps.find that converts failures",
        "Retrieve a finder for the given path item",
        "Examples",  # a word parses as Python, yet is no code
        "Lamp.switch: Switch the lamp on or off",  # a member entry: prose after a name
        "- dusk\n- dawn",  # a list of words
        "(" * 300,  # nested past what the parser takes: hostile text is prose, not an error
    ],
)
def test_prose_and_words_do_not_open_with_code(paragraph: str) -> None:
    assert not opens_with_code(paragraph)


def test_a_literal_block_after_a_double_colon_is_code_whatever_it_looks_like() -> None:
    block = "dusk   18:04\ndawn   06:51"
    assert not opens_with_code(block)
    assert introduced_code(f"The times are kept in this form::\n\n{block}")
    assert not introduced_code(f"The times are kept in this form:\n\n{block}")


def test_code_longer_than_its_bound_is_not_joined() -> None:
    lines = [f"lamps.switch({n})" for n in range(MAX_INTRODUCED_CODE_LINES + 1)]
    lead = "To switch every lamp, call"
    assert introduced_code(f"{lead}\n\n" + "\n".join(lines[:-1]))
    assert introduced_code(f"{lead}\n\n" + "\n".join(lines)) == []


FINDER = '''"""Lamps: find and extend the controllers of garden lamps.

A lamp is switched by the controller it is wired to; these helpers find that controller and
extend the list of places a garden looks for its lamps in.
"""


def find_controller(name):
    """Find a "controller" object for name

    This is a backwards compatibility wrapper around
    lamps.wiring.lookup that converts most failures to LookupError
    and only returns the controller rather than the full wiring
    """


def extend_path(path, name):
    """Extend a garden's path of lamp folders.

    Intended use is to place the following code in a garden's lamps.py:

        from lamps import extend_path
        __path__ = extend_path(__path__, __name__)
    """
'''


def test_a_docstring_summary_is_not_joined_to_the_prose_after_it(tmp_path: Path) -> None:
    """The default corpus's ``pkgutil`` (find_loader's docstring): its summary line and the
    paragraph after it have no period, and were quoted as one statement introducing code."""
    stdlib = tmp_path / "stdlib"
    stdlib.mkdir()
    (stdlib / "lamps.py").write_text(FINDER)
    with Corpus(tmp_path / "corpus.sqlite") as corpus:
        build_default_corpus(corpus, stdlib=stdlib)
        passages = [
            row[0]
            for row in corpus._db.execute(
                "SELECT f.text FROM passages p JOIN passage_fts f ON f.rowid = p.rowid "
                "WHERE p.source_id LIKE '%/stdlib/lamps'"
            )
        ]
    found = [joined for text in passages for joined in introduced_code(text)]
    assert found == [
        "Intended use is to place the following code in a garden's lamps.py: "
        "from lamps import extend_path __path__ = extend_path(__path__, __name__)"
    ]


def test_a_how_to_questions_brief_quotes_the_call_its_document_introduces(
    workflow: WorkflowDefinition, tmp_path: Path
) -> None:
    _, report = research_one_module(
        workflow, tmp_path, "lamps", LAMPS, "How do I turn a garden lamp on at dusk?"
    )
    answer = report.split("## Sources", 1)[0]
    assert CALL in answer
