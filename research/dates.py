"""Dates written in documents: parse the common spellings into ``datetime.date``.

Only dates a document states about itself count (front matter, RST field
lists, HTML meta, PDF info); file modification times never do — they change
on every checkout and say nothing about when the text was written.
"""
from __future__ import annotations

import re
from datetime import date, datetime

_MONTHS = {m: i for i, m in enumerate(
    ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"], start=1)}

_ISO = re.compile(r"\b(\d{4})-(\d{1,2})-(\d{1,2})")
_DAY_MON_YEAR = re.compile(r"\b(\d{1,2})[- ]([A-Za-z]{3,9})\.?[- ,]+(\d{4})\b")
_MON_DAY_YEAR = re.compile(r"\b([A-Za-z]{3,9})\.? (\d{1,2}),? (\d{4})\b")
_PDF = re.compile(r"^D:(\d{4})(\d{2})(\d{2})")


def _make(year: int, month: int, day: int) -> date | None:
    try:
        return date(year, month, day)
    except ValueError:
        return None


def parse_date(text: str) -> date | None:
    """The first date in ``text`` (ISO, 05-Jul-2001, 5 July 2001, July 5, 2001, PDF D:2001...)."""
    text = text.strip()
    pdf = _PDF.match(text)
    if pdf:
        return _make(int(pdf.group(1)), int(pdf.group(2)), int(pdf.group(3)))
    iso = _ISO.search(text)
    if iso:
        return _make(int(iso.group(1)), int(iso.group(2)), int(iso.group(3)))
    dmy = _DAY_MON_YEAR.search(text)
    if dmy and dmy.group(2)[:3].lower() in _MONTHS:
        return _make(int(dmy.group(3)), _MONTHS[dmy.group(2)[:3].lower()], int(dmy.group(1)))
    mdy = _MON_DAY_YEAR.search(text)
    if mdy and mdy.group(1)[:3].lower() in _MONTHS:
        return _make(int(mdy.group(3)), _MONTHS[mdy.group(1)[:3].lower()], int(mdy.group(2)))
    return None


def parse_dates(text: str) -> list[date]:
    """Every date in a list such as an RST ``Post-History:`` field, in the order written."""
    found: list[tuple[int, date]] = []
    for match in _ISO.finditer(text):
        parsed = _make(int(match.group(1)), int(match.group(2)), int(match.group(3)))
        if parsed:
            found.append((match.start(), parsed))
    for match in _DAY_MON_YEAR.finditer(text):
        month = _MONTHS.get(match.group(2)[:3].lower())
        parsed = _make(int(match.group(3)), month, int(match.group(1))) if month else None
        if parsed:
            found.append((match.start(), parsed))
    for match in _MON_DAY_YEAR.finditer(text):
        month = _MONTHS.get(match.group(1)[:3].lower())
        parsed = _make(int(match.group(3)), month, int(match.group(2))) if month else None
        if parsed:
            found.append((match.start(), parsed))
    return [d for _, d in sorted(found, key=lambda item: item[0])]


def parse_iso_day(value: str) -> date:
    """A ``YYYY-MM-DD`` input such as ``--as-of``; raises ValueError with a clear message."""
    try:
        return datetime.strptime(value.strip(), "%Y-%m-%d").date()
    except ValueError:
        raise ValueError(f"{value!r} is not a date; write it as YYYY-MM-DD, e.g. 2025-06-30") from None
