"""How documents name each other: the keys a document is known by, and the references it makes.

A key is a normalized name: ``pep-0634``, ``PEP 634``, ``:pep:`634``` and a ``Superseded-By: 634``
header of a PEP all become ``pep 634``; any other name becomes its lowercase file stem, so a
Markdown link ``[see](../guides/setup.md)`` resolves to the document whose relative id ends in
``setup``. References come from three places: header fields that name other documents
(Superseded-By, Replaces, Requires, See-Also …), explicit links, and mentions in the prose
("PEP 3156", ``:rfc:`2616```). The corpus stores both and resolves a reference by joining its
key to the keys of the documents in the corpus; a key nothing resolves to costs nothing.

Hand-written: no library extracts cross-references from a mixed md/rst/txt/html corpus, and the
rules are a few regular expressions.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping

REFERENCE_FIELDS = frozenset(
    {
        "superseded-by",
        "supersedes",
        "replaces",
        "replaced-by",
        "requires",
        "see-also",
        "related",
        "obsoletes",
        "obsoleted-by",
        "updates",
        "updated-by",
    }
)
"""Header fields whose values name other documents (lowercase)."""

_NUMBERED = re.compile(r"^([a-z]{2,8})[\s_-]*0*(\d{1,6})$")
_MENTION = re.compile(r"([A-Z](?<!\w[A-Z])[A-Z]{1,5})[ \u00a0-]?0*(\d{1,5})\b", re.ASCII)
"""A mention such as ``PEP 634``: ASCII word boundaries and digits, which the scan checks nearly
twice as fast (the same mentions on both corpora); the pattern starts with its capital letter (no
word character before it is checked once that letter is found), so the scan skips to capitals
instead of trying the pattern at every word boundary — the matches ``\b([A-Z]{2,6})…`` finds."""
_ROLE = re.compile(r":([a-z]{2,6}):`(?:[^`<]*<)?\s*0*(\d{1,6})[^`]*`")
_LINK = re.compile(r"(?:\]\(|<|href=[\"'])([^)\s>\"']+)[)>\"']")
_LINK_OPENERS = ("](", "<", "href=")
"""What every link starts with: the link's pattern is tried only there (the pattern's scan tries
it at every ``h`` of a text, most of its time)."""
_BARE_LINK = re.compile(
    r"(?<![\w-])([a-z]{2,8}-\d{1,6})(?:\.(?:rst|txt|md|html?))?(?=[/#)>\s\"',.]|$)"
)
_DASH_DIGIT = re.compile(r"-\d")
"""Where a bare link can end its letters: the link's pattern is tried only there (searching for a
literal is fast; trying the pattern at every letter of a text was half the reference scan)."""
_OWN_ID_FIELD = re.compile(r"^[a-z]{2,6}$")


def normalize_key(name: str) -> str:
    """``PEP 0634`` / ``pep-634`` → ``pep 634``; anything else lowercased and trimmed."""
    lowered = " ".join(name.strip().lower().split())
    match = _NUMBERED.match(lowered)
    if match:
        return f"{match.group(1)} {int(match.group(2))}"
    return lowered


def link_key(target: str) -> str:
    """The key of a link target: its last path component without suffix or fragment."""
    path = target.split("#", 1)[0].split("?", 1)[0].rstrip("/")
    stem = path.rsplit("/", 1)[-1]
    if "." in stem:
        stem = stem.rsplit(".", 1)[0]
    return normalize_key(stem) if stem else ""


def own_keys(relative_id: str, fields: Mapping[str, str]) -> set[str]:
    """Keys a document is known by: its file stem, and a short id field (``PEP: 634``)."""
    keys = {link_key(relative_id)}
    for name, value in fields.items():
        lowered = name.strip().lower()
        if _OWN_ID_FIELD.match(lowered) and value.strip().isdigit():
            keys.add(f"{lowered} {int(value.strip())}")
    return {k for k in keys if k}


def _prefix(keys: set[str]) -> str:
    numbered = sorted(k.split(" ", 1)[0] for k in keys if _NUMBERED.match(k))
    return numbered[0] if numbered else ""


def references(relative_id: str, text: str, fields: Mapping[str, str]) -> set[tuple[str, str]]:
    """(key, via) pairs a document refers to; via is the header field, ``link`` or ``mention``."""
    mine = own_keys(relative_id, fields)
    prefix = _prefix(mine)
    found: set[tuple[str, str]] = set()
    for name, value in fields.items():
        via = name.strip().lower()
        if via not in REFERENCE_FIELDS:
            continue
        for token in re.split(r"[,;]\s*|\s+and\s+", value):
            token = token.strip()
            if not token:
                continue
            key = f"{prefix} {int(token)}" if token.isdigit() and prefix else normalize_key(token)
            found.add((key, via))
    for match in _ROLE.finditer(text):
        found.add((f"{match.group(1)} {int(match.group(2))}", "mention"))
    for match in _MENTION.finditer(text):
        found.add((f"{match.group(1).lower()} {int(match.group(2))}", "mention"))
    for match in _links(text):
        key = link_key(match.group(1))
        if key:
            found.add((key, "link"))
    for match in _bare_links(text):
        found.add((normalize_key(match.group(1)), "link"))
    return {(key, via) for key, via in found if key and key not in mine}


def _links(text: str) -> Iterator[re.Match[str]]:
    """The matches ``_LINK.finditer(text)`` gives, the pattern tried only where one of
    :data:`_LINK_OPENERS` is (found by ``str.find``), never inside the previous match."""
    starts = sorted(at for opener in _LINK_OPENERS for at in _occurrences(text, opener))
    end = 0
    for start in starts:
        if start >= end:
            match = _LINK.match(text, start)
            if match:
                end = match.end()
                yield match


def _occurrences(text: str, literal: str) -> Iterator[int]:
    at = text.find(literal)
    while at >= 0:
        yield at
        at = text.find(literal, at + 1)


def _bare_links(text: str) -> Iterator[re.Match[str]]:
    """The matches ``_BARE_LINK.finditer(text)`` gives, the pattern tried only at the start of
    the 2 to 8 lowercase letters before each ``-`` and digit (where every match starts: its
    lookbehind allows no letter before them), and never inside the previous match."""
    end = 0
    for dash in _DASH_DIGIT.finditer(text):
        start = at = dash.start()
        while start > max(at - 9, 0) and "a" <= text[start - 1] <= "z":
            start -= 1
        if start >= end and 2 <= at - start <= 8:
            match = _BARE_LINK.match(text, start)
            if match:
                end = match.end()
                yield match


def relation_rank(via: str) -> int:
    """Header relations first (they name a document on purpose), then links, mentions, citers."""
    return {"link": 1, "mention": 2, "cited-by": 3}.get(via, 0)
