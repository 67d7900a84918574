"""Hostile documents (issue 27, item 5): what one costs the corpus loaders now that they are bounded.

Splitting one line of 5, 10 and 20 MB (linear: the 20 MB line costs ~4x the 5 MB one, where
copying the rest at every cut cost ~20x); a PDF whose 3,000 pages share one 1 MiB content stream
refused before any page is parsed. Figures are printed side by side; nothing here asserts a time.
"""

from __future__ import annotations

import time
from pathlib import Path

from research.loaders import UnreadableDocument, load_document, split_passages
from tests.security.test_hostile_documents import TEXT_OP, pdf


def _split_seconds(megabytes: int) -> float:
    text = "Widgets are frobnicated " * (megabytes * 1024 * 1024 // 24)
    started = time.perf_counter()
    split_passages(text)
    return time.perf_counter() - started


def main() -> None:
    times = {size: _split_seconds(size) for size in (5, 10, 20)}
    shown = ", ".join(f"{size} MB {seconds:.2f} s" for size, seconds in times.items())
    print(f"one-line document split: {shown}; 20 MB / 5 MB = {times[20] / times[5]:.1f}x")
    shared = pdf(TEXT_OP * 20_000, pages=3000)
    started = time.perf_counter()
    try:
        load_document(Path("shared.pdf"), shared)
        outcome = "read"
    except UnreadableDocument:
        outcome = "refused"
    print(
        f"PDF of {len(shared) // 1024} KB, 3,000 pages sharing a 1 MiB content stream: "
        f"{outcome} in {time.perf_counter() - started:.2f} s"
    )
