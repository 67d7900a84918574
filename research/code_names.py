"""The code a statement names: literals, roles, dotted names, calls and compound identifiers.

A how-to question ("How do I turn a date string into a datetime object?") is answered by an
API — ``datetime.fromisoformat`` — and the statement worth quoting is the one that names it.
Reference text names its APIs in a few shapes: reStructuredText literals and roles
(````json.loads````, ``:func:`open```), a member entry that opens a line
(``datetime.strptime: string, format -> …``), a call (``urlopen(url, data=None)``) and compound
identifiers in running prose (``FileHandler``, ``lru_cache``). The words inside such a name
(``file``, ``handler``; ``lru``, ``cache``) are what a question's words can match.
"""

from __future__ import annotations

import re
from collections import Counter

from research.text import terms

RST_ROLE = re.compile(r":([a-z]+):`([^`<]*?)(?:\s*<[^>]*>)?`")
LITERAL = re.compile(r"``([^`]+)``")
_API_ENTRY = re.compile(r"[A-Za-z_]\w*(?:(?:\.\w+)+:\s|\()")
"""A statement that opens with an API's name: a dotted member entry (``date.today: …``) or a
call (``urlopen(url) -- …``). It starts in lower case yet is no fragment of a cut sentence."""
_NAME = re.compile(
    r"(?<![\w.])(?:[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+"  # a dotted name: json.loads
    r"|[A-Za-z_]\w*(?=\()"  # a call: urlopen(
    r"|[a-z]+_\w+|_\w+"  # snake case: lru_cache
    r"|[A-Z][a-z0-9]+[A-Z]\w*"  # camel case: FileHandler, DictReader
    r"|[a-z]+[A-Z]\w*)"  # lower camel case: basicConfig
)
_HEADING_API = re.compile(r"(?=.{1,80}$)(?![A-Z][a-z]*$)[A-Za-z_][\w]*(?:\.[A-Za-z_]\w*)*")
"""A section heading that is an API's name (``loads``, ``FileHandler``, ``Logger.info``), not a
capitalised word of prose (``Rationale``)."""
_CAMEL_PART = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z0-9]+")


def code_names(text: str) -> list[str]:
    """The code a text marks up as code: its inline literals and roles' targets."""
    return [m.group(1).strip() for m in LITERAL.finditer(text)] + [
        m.group(2).strip() for m in RST_ROLE.finditer(text)
    ]


def code_salience(texts: list[str]) -> list[float]:
    """How much each text names the code its fellow texts keep naming (0 to 1).

    The names the sources use most (``start_response`` across a specification) are the
    ones an answer should carry; a sentence scores by its most used name.
    """
    named = [set(code_names(t)) for t in texts]
    counts = Counter(name for names in named for name in names)
    top = max(counts.values(), default=0)
    if top < 2:
        return [0.0] * len(texts)
    return [max((counts[n] for n in names), default=0) / top for names in named]


def opens_with_api(sentence: str) -> bool:
    """Whether a statement opens with an API's name (``date.today: Construct a date …``)."""
    return bool(_API_ENTRY.match(sentence))


def api_names(text: str) -> set[str]:
    """The API names a statement holds: marked-up code and identifier-shaped words."""
    return {*code_names(text), *(m.group(0) for m in _NAME.finditer(text))}


def heading_api(section: str) -> str:
    """The API a passage's section heading names (a docstring's entry: its statements are about
    it), or "" when the heading is prose."""
    heading = section.strip()
    return heading if _HEADING_API.fullmatch(heading) else ""


def name_terms(name: str) -> set[str]:
    """The words inside a name, as ``terms`` counts them (``FileHandler.emit`` → file, handler,
    emit; ``lru_cache`` → lru, cache)."""
    parts = [p for piece in re.split(r"[^A-Za-z0-9]+", name) for p in _CAMEL_PART.findall(piece)]
    return set(terms(" ".join(parts))) | set(terms(name))


def api_match(text: str, query_terms: list[str], section: str = "") -> float:
    """The share of the question's terms that an API named in the statement carries (0 to 1):
    a statement naming ``datetime.fromisoformat`` matches "datetime" of a question about turning
    a date string into a datetime object, and so does every statement of a passage whose
    ``section`` heading names an API; a statement naming no API matches nothing."""
    wanted = set(query_terms)
    if not wanted:
        return 0.0
    named: set[str] = set()
    for name in api_names(text) | {heading_api(section)} - {""}:
        named |= name_terms(name)
    return len(named & wanted) / len(wanted)
