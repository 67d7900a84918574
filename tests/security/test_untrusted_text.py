"""The sanitiser itself (plumbing/untrusted_text.py), against the Unicode database and ECMA-48
rather than against a copy of its own lists."""

from __future__ import annotations

import json
import sys

from hypothesis import given
from hypothesis import strategies as st
from markdown_it import MarkdownIt
from markdown_it.token import Token

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


CODE = {
    "Call `os.path.join(a, b)` or `__init__`.": (
        ["os.path.join(a, b)", "__init__"],
        "Call os.path.join(a, b) or __init__.",
    ),
    "A `List<int>` is `<br>`, `[a](b)` or `![i](p.png)`, not <br> or [a](b).": (
        ["List<int>", "<br>", "[a](b)", "![i](p.png)"],
        "A List<int> is <br>, [a](b) or ![i](p.png), not <br> or [a](b).",
    ),
    "`<https://e/>` is code, ``a ` [b](c)`` too": (
        ["<https://e/>", "a ` [b](c)"],
        "<https://e/> is code, a ` [b](c) too",
    ),
    "```[x](y)``` opens no fence": (["[x](y)"], "[x](y) opens no fence"),
    "`int | None`, `\\` and a stray ` [a](b)": (
        ["int | None", "\\"],
        "int | None, \\ and a stray ` [a](b)",
    ),
}
"""Text with code spans: what each span holds, and the words shown."""
TABLE = "|h|h|h|\n|-|-|-|\n"
"""A table's head: each line after it is a row, cut into cells at every ``|``."""
PARSER = MarkdownIt("commonmark").enable("table")
"""CommonMark with tables, as the app's Markdown widget reads a report (gfm-like)."""


def _inline(document: str) -> list[Token]:
    """Every token of ``document``, each block's inline ones included."""
    return [child for token in PARSER.parse(document) for child in [token, *(token.children or [])]]


def _acting(document: str) -> list[str]:
    """The links, images and raw HTML of ``document`` (with a ``[1]`` a definition would make a
    link)."""
    kinds = [token.type for token in _inline(f"{document}\n\n[1] [`x]\n")]
    return [kind for kind in kinds if kind.startswith(("link", "image", "html"))]


def test_a_code_span_shows_its_text_as_written() -> None:
    """CommonMark reads no escape in a code span (it shows the backslash) and no link, HTML or
    autolink either: its text is left as written, and the rest of the line renders as before."""
    for text, (code, words) in CODE.items():
        for cleaned in (for_document(text), for_document(text, one_line=True)):
            tokens = _inline(cleaned)
            assert [t.content for t in tokens if t.type == "code_inline"] == code, cleaned
            shown = "".join(t.content for t in tokens if t.type in ("text", "code_inline"))
            assert shown == words, cleaned
            assert not _acting(cleaned), cleaned


HOSTILE_BACKTICKS = [
    "`a\nb` [x](javascript:y) `",  # a pair across lines: a block may part them
    "`a\n\nb` [x](javascript:y) `",  # across paragraphs
    "x `\n`[x](javascript:y)`",  # an unmatched run, which the next line's span could close
    "```[x](javascript:y)",  # a fence's run that no run closes
    "``` `[x](javascript:y)`",
    "`a | b` `[x](javascript:y)`",  # a table row cuts code at each |
    "[`x]: javascript:y`",  # a link definition is read before any span
    "<a title='`'>`[x](javascript:y)`",  # a tag before the span comes first
    "\\``[x](javascript:y)`` `",
]


def test_a_backtick_opens_no_span_that_would_leave_markdown_unescaped() -> None:
    """Where a span keeps its text, a run this code pairs otherwise than CommonMark might (across
    lines, unmatched, cut by a table's cell) is escaped: no line of a report made of such text,
    passed whole as report.py does, holds a link, an image or raw HTML."""
    for text in HOSTILE_BACKTICKS:
        line = for_document(text, one_line=True)
        whole = for_document(text)
        for document in (
            whole,
            line,
            f"- {line}",
            f"> {line}",
            f"{TABLE}{line}",
            f"{TABLE}{whole}",
            for_document(f"{line}\n{line}"),
            for_document(f"{TABLE}{line}\n{line}"),
        ):
            assert not _acting(document), (text, document)


HTML_BLOCKS = [
    "<script src=x",  # 1: script, pre, style, textarea, whole tag or not
    "<pre",
    "<STYLE>b{}",
    "<textarea x",
    "<!-- c",  # 2: a comment
    "<? x",  # 3: a processing instruction
    "<!DOCTYPE x",  # 4: a declaration
    "<![CDATA[ x",  # 5: CDATA
    "<div onmouseover=alert(1) x",  # 6: a block tag's name, open or closing
    "</Div",
    "<p/>",
    "<a href='javascript:x'>",  # 7: any whole tag alone on its line
    "</span >",
]
"""A line opening with each of CommonMark's seven kinds of HTML block (4.6), most incomplete: a
block's start reads the line, and those after it, as raw HTML up to a blank line."""


def _shown(document: str) -> str:
    """The words ``document`` shows, its lines' breaks as ``\\n``."""
    kinds = ("text", "code_inline", "softbreak", "hardbreak")
    breaks = {"softbreak": "\n", "hardbreak": "\n"}
    return "".join(breaks.get(t.type, t.content) for t in _inline(document) if t.type in kinds)


def test_a_line_opening_an_html_block_is_text() -> None:
    """Wherever a block may start — the text's start, as a report's line or item puts it, a
    line of multi-line text, past a list's or a quote's markers or indentation — a ``<`` that
    could open an HTML block is escaped: no raw HTML, the same words."""
    for html in HTML_BLOCKS:
        line = for_document(html, one_line=True)
        documents = {
            line: html,
            f"- {line}": html,
            f"> {line}": html,
            f"1. {line}": html,
            for_document(f"- {line}\n- {line}"): f"{html}{html}",
            for_document(html): html,
            for_document(f"Before it\n{html}\nafter it"): f"Before it\n{html}\nafter it",
            for_document(f"- an item\n\n  {html}\nafter it"): f"an item{html}\nafter it",
            for_document(f"> a quote\n> {html}"): f"a quote\n{html}",
            for_document(f"- > 2) {html}"): html,
            for_document(f"   {html}"): html,
            for_document(f"  >\t{html}"): html,
        }
        for document, words in documents.items():
            kinds = [t.type for t in _inline(document)]
            assert not [k for k in kinds if k.startswith("html")], (html, document)
            assert _shown(document) == words, (html, document)
        assert for_document(line, one_line=True) == line
        assert for_document(for_document(html)) == for_document(html)


def test_a_tag_s_less_than_sign_is_escaped_once() -> None:
    """A ``<`` both a whole tag's and a block's start gets one backslash (two would show one and
    leave the tag raw), and a ``<`` within a line that opens nothing is left as it is."""
    assert for_document("<div>", one_line=True) == "\\<div>"
    assert for_document("a\n<b>x</b>") == "a\n\\<b>x\\</b>"
    assert for_document("x<div y and <class 'int'>") == "x<div y and <class 'int'>"


HTML_NAMES = ["<div", "</p", "<script", "<PRE", "<!--", "<?", "<!x", "<![CDATA[", "<a"]
"""What opens an HTML block where a block may start (HTML_BLOCKS), for the properties' alphabets."""

CODE_MARKDOWN = st.lists(
    st.text(alphabet="[]()<>!:/\\-|`. 1aj\n", max_size=20)
    | st.sampled_from(
        ["`", "``", "```", "\n", "|", "-|-", "`[a](j:x)`", "`<b>`", "`a|b`"] + HTML_NAMES
    ),
    max_size=6,
).map("".join)


@given(CODE_MARKDOWN, CODE_MARKDOWN)
def test_a_report_made_of_texts_with_code_never_acts(first: str, second: str) -> None:
    """Whatever two texts hold, a report of them — lines of a paragraph, items, a table's rows,
    each text cleaned and the whole passed again as report.py does — holds no link, image or
    raw HTML; cleaning stays idempotent."""
    one, two = for_document(first, one_line=True), for_document(second, one_line=True)
    for document in (
        for_document(first),
        f"{TABLE}{for_document(first)}",
        for_document(f"{one}\n{two}"),
        for_document(f"- {one}\n- {two}"),
        for_document(f"{TABLE}{one}\n{two}"),
        for_document(f"{one} {two}\n-|-|-|-"),
    ):
        assert not _acting(document), document
    assert for_document(one, one_line=True) == one
    assert for_document(for_document(first)) == for_document(first)


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
        *HTML_NAMES,
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
