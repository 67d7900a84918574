"""The sanitiser itself (plumbing/untrusted_text.py), against the Unicode database and ECMA-48
rather than against a copy of its own lists."""

from __future__ import annotations

import json
import sys

from hypothesis import given
from hypothesis import strategies as st
from markdown_it import MarkdownIt

from plumbing.untrusted_text import (
    for_document,
    for_terminal,
    json_for_terminal,
    without_unsafe_characters,
)
from tests.security.conftest import ATTACKS, PAYLOAD, SHOWN, acted_on


def test_every_character_the_unicode_database_calls_a_control_or_format_is_handled() -> None:
    missed = [
        f"U+{code:04X}"
        for code in range(sys.maxunicode + 1)
        if acted_on(chr(code)) and for_document(chr(code)) != ""
    ]
    assert not missed, f"left in a document: {missed[:20]}"
    kept = [
        f"U+{code:04X}"
        for code in range(sys.maxunicode + 1)
        if acted_on(chr(code)) and without_unsafe_characters(chr(code)) != ""
    ]
    assert not kept, f"left in a rendered line: {kept[:20]}"


def test_a_rendered_line_loses_only_the_characters_that_take_no_cell() -> None:
    assert without_unsafe_characters(PAYLOAD) == (
        "SEC-CLIP]52;c;U0VDLUNMSVBCT0FSRA== SEC-TITLE]0;SEC-TITLE SEC-CLEAR[2J SEC-BELL"
        " SEC-C131m SEC-RTL"
    )
    plain = "naïve café, 漢字 and a joiner: 👩\u200d💻"
    assert without_unsafe_characters(plain) is plain


def test_each_attack_is_shown_to_a_person_and_removed_from_a_document() -> None:
    for attack, text in ATTACKS.items():
        assert for_terminal(text) == SHOWN[attack], attack
    assert for_document(PAYLOAD) == "SEC-CLIP SEC-TITLE SEC-CLEAR SEC-BELL SEC-C1 SEC-RTL"


def test_whole_escape_sequences_leave_a_document_and_their_introducer_shows_on_a_terminal() -> None:
    sequences = {
        "\x1b[38;5;196m": "CSI with parameters",
        "\x9b2J": "8-bit CSI",
        "\x1b]8;;https://evil.example\x1b\\": "OSC 8 hyperlink ended by ST",
        "\x9d0;title\x9c": "8-bit OSC and ST",
        "\x1bP+q544e\x1b\\": "DCS (a terminfo query)",
        "\x1b_APC payload\x07": "APC",
        "\x1bc": "RIS: reset the terminal",
        "\x1b(B": "designate a character set",
    }
    for sequence, what in sequences.items():
        assert for_document(f"a{sequence}b") == "ab", what
        shown = for_terminal(f"a{sequence}b")
        assert shown.startswith("a") and shown.endswith("b"), what
        assert not any(acted_on(char) for char in shown), what


def test_lines_and_tabs_stay_unless_one_line_is_asked() -> None:
    text = "first\r\nsecond\tcolumn\n\nthird"
    assert for_terminal(text) == "first\nsecond\tcolumn\n\nthird"
    assert for_document(text) == "first\nsecond\tcolumn\n\nthird"
    assert for_document("# heading\n\n## injected\t here", one_line=True) == (
        "\\# heading ## injected here"  # its marker escaped: the line it starts is no heading
    )
    assert for_terminal("a\rb") == "a␍b"  # a lone carriage return would overwrite the line


def test_clean_text_comes_back_itself() -> None:
    text = "Schrödinger’s 🐈 — ok\tand\nmore; emoji joiners: 👩\u200d💻"
    assert for_terminal(text) is text
    assert for_document(text) is text


def test_a_report_line_opening_with_a_code_span_keeps_it() -> None:
    """One backtick opens a code span, not a block: a quote or a model's sentence that starts with
    code is written as it is; three open a fence, and are escaped."""
    line = "`asyncio.run()` starts the event loop."
    assert for_document(line, one_line=True) == line
    assert for_document("```python", one_line=True) == "\\```python"


def test_json_keeps_its_document_and_loses_every_raw_control() -> None:
    data = {"title": PAYLOAD, "tag": "\U000e0041", "name\u202e": [1, "\x9b"]}
    text = json_for_terminal(json.dumps(data, ensure_ascii=False))
    assert json.loads(text) == data
    assert not any(acted_on(char) for char in text)


@given(st.text())
def test_nothing_acted_on_survives_either_policy(text: str) -> None:
    for cleaned in (for_terminal(text), for_document(text), for_document(text, one_line=True)):
        assert not any(acted_on(char) for char in cleaned)
    assert for_terminal(for_terminal(text)) == for_terminal(text)
    assert "\n" not in for_document(text, one_line=True)


@given(
    st.text(
        alphabet=st.characters(
            blacklist_categories=("Cc", "Cf", "Zl", "Zp", "Cs"), blacklist_characters="]<"
        )
    )
)
def test_text_without_controls_is_unchanged(text: str) -> None:
    assert for_terminal(text) == text
    assert for_document(text) == text  # and without Markdown that acts (``](``, ``<tag>``)


MARKDOWN = st.text(alphabet="[]()<>!:/\\#-*_+`=|~. 1aj\n", max_size=40) | st.sampled_from(
    [
        "[a](javascript:x)",
        "![i](https://t/p.png)",
        "<img src=x>",
        "</a >",
        "<https://e/>",
        "<a@b.c>",
        "<!-- c -->",
        "<?php ?>",
        "<!DOCTYPE x>",
        "\\\\<b>",
        "[1]: https://e/",
        "## S",
    ]
)


@given(st.lists(MARKDOWN, max_size=6).map("".join))
def test_a_document_s_markdown_never_acts_in_a_report_line(text: str) -> None:
    """Whatever the text, a line of the report made of it (a list item, a quote, a paragraph)
    holds no link, image or raw HTML, and starts no block but its own; cleaning is idempotent."""
    cleaned = for_document(text, one_line=True)
    for line in (f"- {cleaned}", f"> {cleaned}", cleaned):
        tokens = MarkdownIt("commonmark").parse(f"{line}\n\n[1]\n")
        kinds = [t.type for t in tokens]
        inline = [child.type for t in tokens for child in t.children or []]
        assert not [k for k in kinds + inline if k.startswith(("link", "image", "html"))], line
        assert not [k for k in kinds if k.startswith(("heading", "hr", "fence", "code"))], line
    assert for_document(cleaned, one_line=True) == cleaned
    assert for_document(for_document(text)) == for_document(text)
