"""Dates written in documents: parse the common spellings into ``datetime.date``.

Only dates a document states about itself count (front matter, RST field
lists, HTML meta, PDF info); file modification times never do — they change
on every checkout and say nothing about when the text was written.
"""

from __future__ import annotations

import re
from datetime import date, datetime

_MONTHS = {
    m: i
    for i, m in enumerate(
        ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"],
        start=1,
    )
}

_ISO = re.compile(r"\b(\d{4})-(\d{1,2})-(\d{1,2})")
_DAY_MON_YEAR = re.compile(r"\b(\d{1,2})[- ]([A-Za-z]{3,9})\.?[- ,]+(\d{4})\b")
_MON_DAY_YEAR = re.compile(r"\b([A-Za-z]{3,9})\.? (\d{1,2}),? (\d{4})\b")
_PDF = re.compile(r"^D:(\d{4})(\d{2})(\d{2})")


def _make(year: int, month: int, day: int) -> date | None:
    try:
        return date(year, month, day)
    except ValueError:
        return None


def _month(name: str) -> int | None:
    return _MONTHS.get(name[:3].lower())


def _iso_date(match: re.Match[str]) -> date | None:
    return _make(int(match.group(1)), int(match.group(2)), int(match.group(3)))


def _day_mon_year(match: re.Match[str]) -> date | None:
    month = _month(match.group(2))
    return _make(int(match.group(3)), month, int(match.group(1))) if month else None


def _mon_day_year(match: re.Match[str]) -> date | None:
    month = _month(match.group(1))
    return _make(int(match.group(3)), month, int(match.group(2))) if month else None


_SPELLINGS = ((_ISO, _iso_date), (_DAY_MON_YEAR, _day_mon_year), (_MON_DAY_YEAR, _mon_day_year))
"""Each spelling with how its match becomes a date (a month name must be a known one)."""


def parse_date(text: str) -> date | None:
    """The first date in ``text`` (ISO, 05-Jul-2001, 5 July 2001, July 5, 2001, PDF D:2001...)."""
    text = text.strip()
    pdf = _PDF.match(text)
    if pdf:
        return _iso_date(pdf)
    iso = _ISO.search(text)
    if iso:
        return _iso_date(iso)
    dmy = _DAY_MON_YEAR.search(text)
    if dmy and _month(dmy.group(2)):
        return _day_mon_year(dmy)
    mdy = _MON_DAY_YEAR.search(text)
    if mdy and _month(mdy.group(1)):
        return _mon_day_year(mdy)
    return None


def parse_dates(text: str) -> list[date]:
    """Every date in a list such as an RST ``Post-History:`` field, in the order written."""
    found = [
        (match.start(), parsed)
        for pattern, build in _SPELLINGS
        for match in pattern.finditer(text)
        if (parsed := build(match)) is not None
    ]
    return [d for _, d in sorted(found, key=lambda item: item[0])]


def parse_iso_day(value: str) -> date:
    """A ``YYYY-MM-DD`` input such as ``--as-of``; raises ValueError with a clear message."""
    try:
        return datetime.strptime(value.strip(), "%Y-%m-%d").date()
    except ValueError:
        raise ValueError(
            f"{value!r} is not a date; write it as YYYY-MM-DD, e.g. 2025-06-30"
        ) from None
