"""A Markdown report cut into its sections, for copying one (plain Python, no Textual).

A section starts at a heading and runs to the next heading of the same or a higher level, so a
section includes its subsections. Headings inside fenced code blocks are not headings.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_FENCE = re.compile(r"^\s*(```|~~~)")


@dataclass(frozen=True)
class Section:
    title: str
    level: int
    start: int
    """The heading's line (0-based)."""
    end: int
    """One past the section's last line."""
    text: str


def report_sections(markdown: str) -> list[Section]:
    lines = markdown.splitlines()
    headings: list[tuple[int, int, str]] = []
    fenced = False
    for number, line in enumerate(lines):
        if _FENCE.match(line):
            fenced = not fenced
            continue
        match = None if fenced else _HEADING.match(line)
        if match:
            headings.append((number, len(match.group(1)), match.group(2)))
    sections = []
    for index, (start, level, title) in enumerate(headings):
        end = next((s for s, lv, _ in headings[index + 1 :] if lv <= level), len(lines))
        text = "\n".join(lines[start:end]).strip() + "\n"
        sections.append(Section(title, level, start, end, text))
    return sections


def section_at(markdown: str, line: int) -> Section | None:
    """The innermost section holding ``line`` (None before the first heading)."""
    holding = [s for s in report_sections(markdown) if s.start <= line < s.end]
    return max(holding, key=lambda s: s.start) if holding else None
