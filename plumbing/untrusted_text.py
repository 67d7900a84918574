"""Text from outside made safe to show or to write into a document.

Document text, model answers, workflow strings, server error messages and file names are
hostile (DESIGN §12): a terminal acts on the control characters and escape sequences in them
(OSC 52 writes the clipboard, OSC 0 the window title, ``ESC[2J`` clears the screen, the 8-bit
C1 byte U+009B starts a sequence like ``ESC[``), and bidi overrides or invisible format
characters make text read as something else (``U+202E`` shows a name reversed). Every
surface passes such text through one of two policies here:

- :func:`for_terminal` (the console, the app): each such character is *shown* —
  ``ESC`` as ``␛``, ``BEL`` as ``␇`` (the Unicode control pictures), C1 and format
  characters as ``<U+009B>`` — so a person sees that something was there, and the rest of an
  escape sequence stays as plain text (``␛]52;c;…␇``);
- :func:`for_document` (Markdown reports): whole escape sequences are *removed*, then any
  character left of that kind, so a report keeps no raw control character; and the Markdown
  that would act is escaped so that it reads as the text it is — a link or an image
  (``[x](javascript:…)``, ``![x](https://tracker/…)``), a link definition, raw HTML or an
  autolink, a ``<`` that could open an HTML block where a line starts (``<div x``, tag or
  not), and (``one_line``) a block's marker opening the text (``## Sources``) — not in a
  code span, which CommonMark shows as written;
- :func:`json_for_terminal` (JSON printed by a command): each such character is written as its
  JSON escape, so the document stays exact;
- :func:`without_unsafe_characters` (text already laid out, the app's last line of defence):
  each such character alone is removed. None of them takes a cell on screen, so what was
  measured keeps its width.

Newline and tab stay (multi-line text) unless ``one_line`` folds every run of whitespace with
a line break or tab in it to one space (headings, titles, table cells). ``\\r\\n`` is a line
break. The zero-width joiners U+200C/U+200D stay: scripts and emoji need them.

Hand-written rather than a library's: rich keeps ESC, Textual keeps everything, and what must
go (or show) is a short list fixed by the standards — ECMA-48 for the controls, Unicode's
format characters (category Cf, listed below and checked against the Unicode database by
tests/security/test_untrusted_text.py).
"""

from __future__ import annotations

import re
from bisect import bisect, bisect_left

__all__ = ["for_document", "for_terminal", "json_for_terminal", "without_unsafe_characters"]

_CONTROLS = "\x00-\x08\x0b-\x1f\x7f-\x9f"
"""C0 but tab and newline, DEL, and C1."""
_FORMAT = (
    "\u00ad\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2\u180e"
    "\u200b\u200e\u200f\u202a-\u202e\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb"
    "\U000110bd\U000110cd\U00013430-\U00013438\U0001bca0-\U0001bca3\U0001d173-\U0001d17a"
    "\U000e0001\U000e0020-\U000e007f"
)
"""Unicode's format characters (Cf) but the joiners U+200C and U+200D: bidi embeddings,
overrides and isolates, marks, zero-width spaces, the byte order mark, tag characters."""
_OTHER = "\u2028\u2029\ud800-\udfff"
"""Line and paragraph separators (a terminal may break lines on them) and lone surrogates (a
file name that is not UTF-8, decoded with surrogateescape; no terminal can be sent one)."""

_UNSAFE = re.compile(f"[{_CONTROLS}{_FORMAT}{_OTHER}]")
_ESCAPE_SEQUENCE = re.compile(
    # CSI (ESC [ or the C1 byte U+009B): parameters, intermediates, one final byte
    "(?:\x1b\\[|\x9b)[\x30-\x3f]*[\x20-\x2f]*[\x40-\x7e]"
    # OSC, DCS, SOS, PM, APC (7-bit or C1 introducer): a string up to BEL or ST (ESC \ or U+009C)
    "|(?:\x1b[\\]PX^_]|[\x90\x98\x9d\x9e\x9f])[^\x07\x1b\x9c]*(?:\x07|\x1b\\\\|\x9c)"
    # any other escape: ESC, intermediates, one final byte (ESC c resets the terminal)
    "|\x1b[\x20-\x2f]*[\x30-\x7e]"
)
_LINE_BREAKS = re.compile(r"\s*[\n\t]\s*")
_LINK_TARGET = re.compile(r"\](?=[(:])")
"""The ``](`` of a link or an image, the ``]:`` of a link definition (``[1]: javascript:…`` would
make every ``[1]`` of a report a link): CommonMark reads neither once the bracket's partner is
escaped."""
_TAG_NAME = "[A-Za-z][A-Za-z0-9-]*"
_ATTRIBUTE = r"""\s+[A-Za-z_:][A-Za-z0-9_.:-]*(?:\s*=\s*(?:[^\s"'=<>`]+|'[^']*'|"[^"]*"))?"""
_HTML_START = re.compile(
    # after an even run of backslashes (an odd one escapes the < already)
    r"(?<!\\)((?:\\\\)*)"
    rf"(?=<(?:{_TAG_NAME}(?:{_ATTRIBUTE})*\s*/?>|/{_TAG_NAME}\s*>|!--|\?|![A-Za-z]|!\[CDATA\["
    r"|[A-Za-z][A-Za-z0-9.+-]{1,31}:[^\s<>]*>|[^\s<>@]+@[^\s<>]+>))"
    # where a block may start: a line's start, past indentation and quote and list markers
    r"|^(?:[ \t>]|[-+*](?=[ \t])|[0-9]+[.)](?=[ \t]))*(?=<[A-Za-z/!?])",
    re.MULTILINE,
)
"""Where CommonMark reads raw HTML (a tag, a comment, a processing instruction, a declaration)
or an autolink (``<https://…>``, ``<a@b>``), and where a block may start, any ``<`` that could
open an HTML block (CommonMark 4.6's seven kinds all open with a letter, ``/``, ``!`` or ``?``
after it: ``<div``, ``<script``, ``</p``, ``<!--``, ``<?``, ``<!DOCTYPE``, ``<![CDATA[``,
a whole tag): opened, the line and those after it are raw HTML up to a blank line (or a
``-->``, a ``</script>``, …), whole tag or not. A match ends at the ``<``. Within a line, text
such as ``<class 'int'>`` or ``a < b`` is neither and stays as it is."""
_BLOCK_START = re.compile(
    r"\d{1,9}(?=[.)](?:\s|$))|(?=[#>=|]|`{3}|~{3}|[-+*](?:\s|$)|([-*_])\s*(?:\1\s*)*$)"
)
"""A marker that opens a block where a line starts: heading, quote, setext underline, table,
code fence (three backticks or tildes: one opens a code span, which is no block), list item
(``- ``, ``1. ``), thematic break (``***``, or ``--`` after a list item's ``- ``); not
``**bold**``."""
_BACKTICKS = re.compile(r"\\[\s\S]|(`+)")
"""A run of backticks (group 1) where a code span may open, or a backslash escape to step over
(CommonMark reads the character after a backslash as itself: an escaped backtick opens nothing)."""
_CONTROL_PICTURES = 0x2400
_DELETE_PICTURE = "\u2421"


def _unsafe(text: str) -> bool:
    """Whether ``text`` holds a character of :data:`_UNSAFE`. ``str.isprintable`` is false for
    every one of them (and for tab, newline and a few harmless ones, which the search then
    clears), and runs in C: most text is answered without the search, several times faster."""
    return not text.isprintable() and _UNSAFE.search(text) is not None


def _shown(match: re.Match[str]) -> str:
    code = ord(match.group())
    if code < 0x20:
        return chr(_CONTROL_PICTURES + code)
    if code == 0x7F:
        return _DELETE_PICTURE
    return f"<U+{code:04X}>"


def _fold(text: str, one_line: bool) -> str:
    text = text.replace("\r\n", "\n")
    return _LINE_BREAKS.sub(" ", text) if one_line else text


def for_terminal(text: str, *, one_line: bool = False) -> str:
    """``text`` with every control, escape-starting and format character shown visibly."""
    if one_line or _unsafe(text):
        return _UNSAFE.sub(_shown, _fold(text, one_line))
    return text


def for_document(text: str, *, one_line: bool = False) -> str:
    """``text`` with escape sequences, control and format characters removed, and the Markdown
    in it that would act escaped (links, images, link definitions, raw HTML and HTML blocks,
    autolinks): the same words once rendered, a code span's too (:func:`_around_code`).
    ``one_line``: also a block's marker opening it, as a line of the report (a heading, a list
    item, a quote, a paragraph) starts with it. A document made of several such texts is passed
    whole once more: a backtick one leaves could pair with one of another."""
    if one_line or _unsafe(text):
        text = _UNSAFE.sub("", _ESCAPE_SEQUENCE.sub("", _fold(text, one_line)))
    if one_line:
        text = text.lstrip(" ")
    places: set[int] = set()  # a set: a ``<`` both a tag's and a block's is escaped once
    if "]" in text:
        places.update(found.end() for found in _LINK_TARGET.finditer(text))
    if "<" in text:
        places.update(found.end() for found in _HTML_START.finditer(text))
    if one_line and (marker := _BLOCK_START.match(text)) is not None:
        places.add(marker.end())
    if places and "`" in text:
        places = _around_code(text, places)
    return _with_backslashes(text, places)


def _around_code(text: str, places: set[int]) -> set[int]:
    """``places`` (where a backslash goes) with none inside a code span: CommonMark shows a
    span's text as written, a backslash too, and reads no link, HTML or autolink in it.

    A span keeps its text only as CommonMark reads it, so then every backtick opening no span
    here is escaped as well: an unmatched run, and a pair across lines (a blank line or a block
    may part them) — else one could pair with a backtick of this span, or of text around it, and
    leave the span's text outside any span. A line whose code holds a ``|`` keeps its escapes (a
    table row is cut into cells at every ``|``, in code too), and so does a ``]:`` (a link
    definition is read before any span). Text whose code needs no escape comes back as before.
    A fenced or indented code block of a text of several lines is not kept: its fence is escaped
    like any unmatched run (it reads as a paragraph, safely); report.py writes none.
    """
    spans, loose = _code_spans(text)
    breaks = [found.start() for found in re.finditer("\n", text)]
    piped = {bisect(breaks, start) for start, end in spans if "|" in text[start:end]}
    verbatim = [(start, end) for start, end in spans if bisect(breaks, start) not in piped]
    starts = [start for start, _ in verbatim]
    inside = set()
    for place in places:
        index = bisect_left(starts, place) - 1  # the last span opening before it (none nest)
        if index >= 0 and place < verbatim[index][1] and text[place - 1 : place + 1] != "]:":
            inside.add(place)
    if not inside:
        return places
    # An escape before a backtick is a fence's (one_line): a run that opens a span opens no
    # fence, and one that opens none is loose, escaped backtick by backtick.
    return {place for place in places if place not in inside and text[place] != "`"}.union(loose)


def _code_spans(text: str) -> tuple[list[tuple[int, int]], list[int]]:
    """The code spans of ``text`` as CommonMark reads them, those that open and close on one line
    (start and end, backticks included), and where every other backtick outside them is."""
    closers: dict[int, list[int]] = {}  # a span closes at a whole run of its opener's length
    for whole in re.finditer("`+", text):
        closers.setdefault(whole.end() - whole.start(), []).append(whole.start())
    breaks = [found.start() for found in re.finditer("\n", text)]
    spans: list[tuple[int, int]] = []
    loose: list[int] = []
    at = 0
    while (run := _BACKTICKS.search(text, at)) is not None:
        at = run.end()
        if run.group(1) is None:  # a backslash escape: its character opens nothing
            continue
        length = run.end() - run.start()
        line = bisect_left(breaks, at)  # the line's end and the next closer are looked up, not
        line_end = breaks[line] if line < len(breaks) else len(text)  # scanned for: linear
        same = closers.get(length, [])
        index = bisect_left(same, at)
        closer = same[index] if index < len(same) else -1
        if closer < 0 or closer > line_end:
            loose += range(run.start(), run.end())
        else:
            spans.append((run.start(), closer + length))
            at = closer + length
    return spans, loose


def _with_backslashes(text: str, places: set[int]) -> str:
    """``text`` with a backslash before each of ``places``."""
    if not places:
        return text
    parts: list[str] = []
    last = 0
    for place in sorted(places):
        parts += [text[last:place], "\\"]
        last = place
    parts.append(text[last:])
    return "".join(parts)


def without_unsafe_characters(text: str) -> str:
    """``text`` with every control, escape-starting and format character removed, nothing else:
    the rest of a sequence stays as plain text, and the width of the text is unchanged."""
    return _UNSAFE.sub("", text) if _unsafe(text) else text


def _json_escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    if code > 0xFFFF:  # JSON writes a character beyond the BMP as its UTF-16 surrogate pair
        code -= 0x10000
        return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"
    return f"\\u{code:04x}"


def json_for_terminal(text: str) -> str:
    """Serialised JSON with every such character written as its JSON escape: the same document,
    exactly, that a terminal shows as text (outside its strings JSON holds none of them)."""
    return _UNSAFE.sub(_json_escape, text)
