"""Document loaders: md, rst, txt, html, pdf → text plus the metadata a document states.

Each loader returns a :class:`LoadedDocument`; anything that cannot be read as
text raises :class:`UnreadableDocument` with a reason a person can act on, and
the indexer reports and skips it.
"""

from __future__ import annotations

import html
import logging
import re
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import date
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

from research.corpus_limits import DEFAULT_LIMITS, MIB, CorpusLimits
from research.dates import parse_date, parse_dates

SUPPORTED_SUFFIXES = (".md", ".markdown", ".rst", ".txt", ".html", ".htm", ".pdf")
MAX_HEADING_CHARS = 300
"""The longest title or section heading: both are repeated in every passage of their document
or section (its full-text row and its embedded text), so one hostile heading of megabytes would
be stored thousands of times. A longer title is cut; a longer heading line is read as a
paragraph (its text is kept). Real titles and headings are far shorter."""


def _bounded_title(text: str) -> str:
    """``text`` stripped, and cut at a word boundary with an ellipsis if longer than
    :data:`MAX_HEADING_CHARS`."""
    text = text.strip()
    if len(text) <= MAX_HEADING_CHARS:
        return text
    cut = text.rfind(" ", MAX_HEADING_CHARS // 2, MAX_HEADING_CHARS)
    return text[: cut if cut > 0 else MAX_HEADING_CHARS - 1].rstrip() + "\u2026"


class UnreadableDocument(Exception):
    """A file that is not readable text in its declared format."""


_SURROGATE = re.compile("[\ud800-\udfff]")


def well_formed(text: str) -> str:
    """``text`` with each lone surrogate (a PDF's text layer mapping a glyph to ``<D800>``, read
    by pypdf with ``surrogatepass``) as U+FFFD, and a surrogate pair as its one character: a lone
    surrogate cannot be encoded (UTF-8 for SQLite and the content hash, UTF-32 for the embedder),
    so one such character would stop a whole folder's indexing."""
    if text.isascii() or _SURROGATE.search(text) is None:
        return text
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


@dataclass(frozen=True)
class LoadedDocument:
    """A document's text and what it states of itself, every string well formed (see
    :func:`well_formed`) whichever reader built it."""

    title: str
    text: str
    published: date | None = None
    updated: date | None = None
    status: str = ""
    kind: str = "document"
    superseded_by: str = ""
    fields: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for name in ("title", "text", "status", "kind", "superseded_by"):
            object.__setattr__(self, name, well_formed(getattr(self, name)))
        fields = {well_formed(key): well_formed(value) for key, value in self.fields.items()}
        object.__setattr__(self, "fields", fields)


def _decode(raw: bytes, path: Path) -> str:
    if b"\x00" in raw[:4096]:
        raise UnreadableDocument(f"{path.name} looks binary (NUL bytes); it is not a text document")
    for encoding in ("utf-8", "utf-8-sig"):
        try:
            return raw.decode(encoding)
        except UnicodeDecodeError:
            continue
    raise UnreadableDocument(f"{path.name} is not UTF-8 text; convert it to UTF-8 and add it again")


def _kind_from(value: str) -> str:
    lowered = value.lower()
    if "process" in lowered or "informational" in lowered or "reference" in lowered:
        return "reference"
    if "standard" in lowered or "specification" in lowered:
        return "specification"
    return lowered.strip() or "document"


def _from_fields(
    title: str, text: str, fields: dict[str, str], default_kind: str
) -> LoadedDocument:
    lowered = {k.lower(): v for k, v in fields.items()}
    published = None
    for key in ("created", "date", "published", "published_at", "pubdate"):
        if key in lowered:
            published = parse_date(lowered[key])
            if published:
                break
    updates: list[date] = []
    for key in ("post-history", "updated", "last-modified", "modified", "lastmod", "resolution"):
        if key in lowered:
            updates.extend(parse_dates(lowered[key]))
    updated = max(updates) if updates else None
    if published and updated and updated < published:
        updated = None
    kind_value = lowered.get("type") or lowered.get("kind") or ""
    return LoadedDocument(
        title=_bounded_title(lowered.get("title") or title),
        text=text,
        published=published,
        updated=updated,
        status=lowered.get("status", "").strip(),
        kind=_kind_from(kind_value) if kind_value else default_kind,
        superseded_by=lowered.get("superseded-by", "").strip(),
        fields={k: v.strip() for k, v in fields.items()},
    )


_RST_FIELD = re.compile(r"^:?([A-Za-z][A-Za-z0-9_-]*):\s*(.*)$")
_LINE_BREAK = re.compile("\r\n|[\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")
"""Where ``str.splitlines`` cuts a text."""
_OTHER_LINE_BREAKS = "\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"
"""The characters other than ``\\n`` that ``str.splitlines`` cuts at."""


def _lines(text: str) -> Iterator[tuple[str, int]]:
    """Each line of ``text`` as ``str.splitlines`` cuts it, with where the next one starts: read
    one at a time, so that a header's fields are read without cutting the whole document."""
    start = 0
    while start < len(text):
        found = _LINE_BREAK.search(text, start)
        end, after = (found.start(), found.end()) if found else (len(text), len(text))
        yield text[start:end], after
        start = after


def _rejoined(text: str) -> str:
    """``"\\n".join(text.splitlines())``: every line break as ``\\n``, the last one dropped —
    without cutting the text into lines when ``\\n`` is its only line break (the PEPs')."""
    if not any(mark in text for mark in _OTHER_LINE_BREAKS):
        return text[:-1] if text.endswith("\n") else text
    return "\n".join(text.splitlines())


def _header_fields(lines: Iterable[str]) -> tuple[dict[str, str], int] | None:
    """The fields of a leading RFC-822-style field list (``Created: …`` with indented
    continuations) and how many lines it takes with the blank line that ends it — None when the
    lines do not open with one. Lines are read only up to its end."""
    fields: dict[str, str] = {}
    current: str | None = None
    consumed = 0
    for line in lines:
        consumed += 1
        if not line.strip():
            break
        match = _RST_FIELD.match(line)
        if match and not line.startswith((" ", "\t")):
            current = match.group(1)
            fields[current] = match.group(2)
        elif current and line.startswith((" ", "\t")):
            fields[current] += " " + line.strip()
        else:
            return None
    return (fields, consumed) if len(fields) >= 2 else None


def _rst_header(text: str) -> tuple[dict[str, str], str]:
    """A leading field list (:func:`_header_fields`) and the text after it, its line breaks as
    ``\\n`` (``str.splitlines`` joined again) — without cutting the whole document into lines."""
    starts = [0]  # where each line read so far ends, with its line break

    def lines() -> Iterator[str]:
        for line, after in _lines(text):
            starts.append(after)
            yield line

    found = _header_fields(lines())
    if found is None:
        return {}, text
    fields, consumed = found
    return fields, _rejoined(text[starts[consumed] :])


def _rst_title(body: str) -> str:
    lines = body.splitlines()
    for i in range(len(lines) - 1):
        line, under = lines[i].strip(), lines[i + 1].strip()
        if (
            line
            and under
            and len(set(under)) == 1
            and under[0] in "=-~*#^"
            and len(under) >= len(line)
        ):
            return line
    return ""


def load_rst(path: Path, raw: bytes, limits: CorpusLimits) -> LoadedDocument:
    text = _decode(raw, path)
    fields, body = _rst_header(text)
    title = fields.get("Title") or _rst_title(body) or path.stem
    return _from_fields(title, body, fields, "document")


def _front_matter(text: str) -> tuple[dict[str, str], str]:
    if not text.startswith("---"):
        return {}, text
    end = text.find("\n---", 3)
    if end == -1:
        return {}, text
    fields = {}
    for line in text[3:end].splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip():
            fields[key.strip()] = value.strip().strip("\"'")
    return fields, text[end + 4 :].lstrip("\n")


def load_markdown(path: Path, raw: bytes, limits: CorpusLimits) -> LoadedDocument:
    text = _decode(raw, path)
    fields, body = _front_matter(text)
    heading = re.search(r"^#\s+(.+)$", body, re.MULTILINE)
    title = fields.get("title") or (heading.group(1).strip() if heading else path.stem)
    return _from_fields(title, body, fields, "document")


def load_text(path: Path, raw: bytes, limits: CorpusLimits) -> LoadedDocument:
    text = _decode(raw, path)
    fields, body = _rst_header(text)
    first = next((line.strip() for line in body.splitlines() if line.strip()), path.stem)
    return _from_fields(fields.get("Title") or first[:120], body, fields, "document")


class _HtmlText(HTMLParser):
    _BLOCKS = {
        "p",
        "div",
        "section",
        "article",
        "li",
        "h1",
        "h2",
        "h3",
        "h4",
        "h5",
        "h6",
        "br",
        "tr",
        "pre",
    }

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.meta: dict[str, str] = {}
        self.title = ""
        self._skip = 0
        self._in_title = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attributes = {k.lower(): (v or "") for k, v in attrs}
        if tag in ("script", "style", "nav", "footer"):
            self._skip += 1
        elif tag == "title":
            self._in_title = True
        elif tag == "meta":
            name = (
                attributes.get("name")
                or attributes.get("property")
                or attributes.get("itemprop")
                or ""
            )
            if name and "content" in attributes:
                self.meta[name.lower()] = attributes["content"]
        elif tag == "time" and "datetime" in attributes:
            self.meta.setdefault("time", attributes["datetime"])
        if tag in self._BLOCKS:
            self.parts.append("\n\n")

    def handle_endtag(self, tag: str) -> None:
        if tag in ("script", "style", "nav", "footer") and self._skip:
            self._skip -= 1
        elif tag == "title":
            self._in_title = False
        if tag in self._BLOCKS:
            self.parts.append("\n\n")

    def handle_data(self, data: str) -> None:
        if self._in_title:
            self.title += data
        elif not self._skip:
            self.parts.append(data)


_HTML_PUBLISHED = (
    "article:published_time",
    "datepublished",
    "dcterms.created",
    "dc.date",
    "date",
    "pubdate",
    "publish-date",
    "time",
)
_HTML_UPDATED = (
    "article:modified_time",
    "datemodified",
    "dcterms.modified",
    "last-modified",
    "og:updated_time",
)


def load_html(path: Path, raw: bytes, limits: CorpusLimits) -> LoadedDocument:
    parser = _HtmlText()
    parser.feed(_decode(raw, path))
    text = re.sub(r"[ \t]+", " ", html.unescape("".join(parser.parts)))
    text = re.sub(r"\n\s*\n\s*", "\n\n", text).strip()
    fields: dict[str, str] = {}
    for key in _HTML_PUBLISHED:
        if key in parser.meta:
            fields["published"] = parser.meta[key]
            break
    for key in _HTML_UPDATED:
        if key in parser.meta:
            fields["updated"] = parser.meta[key]
            break
    for key in ("status", "kind"):
        if key in parser.meta:
            fields[key] = parser.meta[key]
    title = parser.meta.get("og:title") or parser.title.strip() or path.stem
    return _from_fields(title, text, fields, "document")


@contextmanager
def _pypdf_quiet() -> Iterator[None]:
    """pypdf reports recoverable oddities of a file as log records and warnings on stderr;
    a document it can still read is indexed without them (one that it cannot is skipped with a
    reason), so neither reaches the person's terminal."""
    logger = logging.getLogger("pypdf")
    propagate = logger.propagate
    handler = logging.NullHandler()
    logger.addHandler(handler)
    logger.propagate = False
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        logger.removeHandler(handler)
        logger.propagate = propagate


def _pdf_pages(reader: Any, path: Path, limits: CorpusLimits) -> list[str]:
    """The text of each page, within the page and page-content bounds (see :mod:`corpus_limits`)."""
    pages = reader.pages
    if len(pages) > limits.max_pdf_pages:
        raise UnreadableDocument(
            f"{path.name} has {len(pages):,} pages, more than {limits.max_pdf_pages:,} read; "
            "split it into smaller PDFs"
        )
    content = 0
    for page in pages:  # measured first: a bomb is refused before any page's text is parsed
        contents = page.get_contents()
        content += len(contents.get_data()) if contents is not None else 0
        if content > limits.max_pdf_content_bytes:
            raise UnreadableDocument(
                f"{path.name}: its pages' content passes {limits.max_pdf_content_bytes / MIB:g} MiB "
                "once inflated (a PDF bomb?); re-export it or add a text version"
            )
    return [page.extract_text() or "" for page in pages]


def load_pdf(path: Path, raw: bytes, limits: CorpusLimits) -> LoadedDocument:
    import io

    from pypdf import PdfReader
    from pypdf.errors import LimitReachedError, PyPdfError

    try:
        with _pypdf_quiet():
            reader = PdfReader(io.BytesIO(raw))
            pages = _pdf_pages(reader, path, limits)
            info: Mapping[str, Any] = reader.metadata or {}
    except LimitReachedError:
        raise UnreadableDocument(
            f"{path.name}: a stream inflates past pypdf's limits (a PDF bomb?); "
            "re-export it or add a text version"
        ) from None
    except PyPdfError as exc:
        raise UnreadableDocument(
            f"{path.name} is not a readable PDF ({exc.__class__.__name__}); "
            "re-export it or remove it from the folder"
        ) from None
    text = "\n\n".join(p.strip() for p in pages if p.strip())
    if not text:
        raise UnreadableDocument(
            f"{path.name} has no extractable text (a scanned PDF?); add a text version"
        )
    fields = {}
    for key, name in (("/CreationDate", "published"), ("/ModDate", "updated"), ("/Title", "title")):
        value = info.get(key)
        if value:
            fields[name] = str(value)
    return _from_fields(fields.get("title") or path.stem, text, fields, "document")


LOADERS: dict[str, Callable[[Path, bytes, CorpusLimits], LoadedDocument]] = {
    ".md": load_markdown,
    ".markdown": load_markdown,
    ".rst": load_rst,
    ".txt": load_text,
    ".html": load_html,
    ".htm": load_html,
    ".pdf": load_pdf,
}


def load_document(path: Path, raw: bytes, limits: CorpusLimits = DEFAULT_LIMITS) -> LoadedDocument:
    """``raw`` read as the document ``path`` names; :class:`UnreadableDocument` (with its reason)
    when it cannot be, whatever the parser raised."""
    loader = LOADERS.get(path.suffix.lower())
    if loader is None:
        raise UnreadableDocument(
            f"{path.name}: unsupported type (supported: {', '.join(SUPPORTED_SUFFIXES)})"
        )
    try:
        document = loader(path, raw, limits)
    except UnreadableDocument:
        raise
    except Exception as exc:  # noqa: BLE001 - a parser of hostile bytes may raise anything
        # (pypdf's RecursionError on nesting, AttributeError on odd objects...): that document is
        # skipped with its reason, the rest of the folder indexes
        raise UnreadableDocument(
            f"{path.name} could not be read ({type(exc).__name__}); "
            "re-export it or remove it from the folder"
        ) from None
    if not document.text.strip():
        raise UnreadableDocument(f"{path.name} is empty")
    text, most = document.text, limits.max_document_bytes
    # UTF-8 takes at most 4 bytes a character: a text that short is not encoded to be measured
    if len(text) * 4 > most and len(text.encode("utf-8")) > most:
        raise UnreadableDocument(limits.too_large(path.name, "its text"))
    return document


UNDERLINES = "=-~^*#"
"""The characters a section heading's underline is made of."""


def could_be_heading(paragraph: str) -> bool:
    """Whether a stripped paragraph may be a heading: one starts with ``#`` or ends with its
    underline's character. Only such a paragraph (one in 30 of the PEPs') is cut into lines
    for :func:`_heading_of` to look at: the same headings, a third of the time."""
    return paragraph[0] == "#" or paragraph[-1] in UNDERLINES


def _heading_of(lines: list[str]) -> str | None:
    """The section heading a paragraph of ``lines`` is (an underlined line, or one line opening
    with ``#``) — None for a paragraph, or for a heading longer than :data:`MAX_HEADING_CHARS`,
    which is read as a paragraph."""
    if len(lines) == 2 and lines[1].strip() and set(lines[1].strip()) <= set(UNDERLINES):
        heading = lines[0].strip()
    elif len(lines) == 1 and lines[0].startswith("#"):
        heading = lines[0].lstrip("#").strip()
    else:
        return None
    return heading if len(heading) <= MAX_HEADING_CHARS else None


def split_passages(
    text: str, *, target_chars: int = 900, max_chars: int = 1600, min_chars: int = 240
) -> list[tuple[str, str]]:
    """(section heading, passage text) pairs on paragraph boundaries, ~``target_chars`` each.

    A section too short to stand alone (a link label, a one-line stub, a two-line abstract)
    runs on into the next passage instead of becoming a passage of its own; a passage that so
    holds several sections is headed by the one holding most of its text (in the usual case the
    next one's: the short section's heading would put the next function's docstring under the
    previous function's name in API text). Every paragraph is in exactly one passage.
    """
    passages: list[tuple[str, str]] = []
    section = ""
    buffer: list[tuple[str, str]] = []  # (the section it is under, a paragraph or its piece)
    size = 0

    def flush(force: bool = False) -> None:
        """Store the buffer as a passage if it is long enough to stand alone (``force``: in any
        case); a shorter one is kept, to run on into the next passage."""
        nonlocal buffer, size
        if buffer and (force or size >= min_chars):
            passages.append((_main_section(buffer), "\n\n".join(piece for _, piece in buffer)))
            buffer, size = [], 0

    paragraphs = re.split(r"\n\s*\n", text)
    for paragraph in paragraphs:
        stripped = paragraph.strip()
        if not stripped:
            continue
        heading = _heading_of(stripped.splitlines()) if could_be_heading(stripped) else None
        if heading is not None:
            flush()
            section = heading
            continue
        start = 0  # where the rest of a long paragraph begins: each cut copies only its piece
        while len(stripped) - start > max_chars:
            room = max_chars - size  # the first piece shares its passage with what is held
            cut = stripped.rfind(". ", start, start + room) - start
            cut = start + (cut + 1 if cut > target_chars // 2 else room)
            buffer.append((section, stripped[start:cut].strip()))
            flush(force=True)
            start = cut
            while stripped[start].isspace():
                start += 1
        stripped = stripped[start:]
        buffer.append((section, stripped))
        size += len(stripped)
        if size >= target_chars:
            flush(force=True)
    flush(force=True)
    return passages


def _main_section(pieces: list[tuple[str, str]]) -> str:
    """The section holding most of the text of ``pieces`` ((section, text) pairs; the first
    of equals)."""
    first = pieces[0][0]
    if all(section == first for section, _ in pieces):
        return first
    sizes: dict[str, int] = {}
    for section, piece in pieces:
        sizes[section] = sizes.get(section, 0) + len(piece)
    return max(sizes, key=sizes.__getitem__)
