"""report.md keeps no raw control character: not from a model's sub-questions or the question
(headings), not from a document's title or quoted text (sources, claims) — and what would have
started a new Markdown block (a heading planted after a line break) stays on its own line."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from research.ci import weights_named
from research.coalesce import coalesce
from research.evidence import Claim, EvidenceMap, Passage, Source, SubQuestion
from research.matrix import DimensionScores
from research.policy import RoundRecord
from research.report import citations_for, ordered_claims, quality_metadata, render_report
from research.sources import SourcePolicy
from tests.security.conftest import PAYLOAD, acted_on, assert_no_raw_payload
from tests.tui.terminal import PROCESS_S, WORKBENCH, terminal_env

INJECTED = "\n\n# Injected heading\n\n[click](javascript:alert(1))"


def _report() -> str:
    source = Source(id="docs/evil", uri="file:///evil", title=f"Evil {PAYLOAD}{INJECTED}")
    passage = Passage(id="docs/evil#0", source_id=source.id, text=f"It is fast. {PAYLOAD}")
    claim = Claim(
        id="k1",
        text=f"The loop is fast {PAYLOAD}{INJECTED}",
        quote=f"It is fast. {PAYLOAD}",
        sub_question="q1",
        passage_ids=[passage.id],
        source_ids=[source.id],
        verified=True,
    )
    evidence = EvidenceMap(
        query=f"How fast is it? {PAYLOAD}",
        sub_questions=[SubQuestion(id="q1", text=f"A model's sub-question {PAYLOAD}{INJECTED}")],
        sources={source.id: source},
        passages={passage.id: passage},
        claims=[claim],
    )
    scores = DimensionScores(
        coverage=1.0, source_quality=0.75, agreement=1.0, verification=0.5, recency=1.0
    )
    record = RoundRecord(round=1, scores=scores, ci=0.8, recent_sources=0, recent_floor=0)
    quality = quality_metadata(
        coalesce([record], weights_named("equal"), "equal"),
        [record],
        SourcePolicy(as_of="2025-06-30"),
        "x",
        True,
    )
    sections = ordered_claims(evidence, None)
    return render_report(evidence, None, citations_for(evidence, sections), sections, quality, True)


def test_the_report_writer_keeps_no_control_character_and_no_planted_block() -> None:
    report = _report()
    assert not [char for char in report if acted_on(char)]
    lines = report.splitlines()
    assert "# How fast is it? SEC-CLIP SEC-TITLE SEC-CLEAR SEC-BELL SEC-C1 SEC-RTL" in lines
    assert not [line for line in lines if line.startswith("# Injected")]
    [heading] = [line for line in lines if line.startswith("## A model's sub-question")]
    assert heading.endswith("# Injected heading [click](javascript:alert(1))")


@pytest.mark.timeout(PROCESS_S)
def test_a_research_run_over_a_hostile_document_writes_a_clean_report(tmp_path: Path) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "event-loop.md").write_text(
        f"# The asyncio event loop {PAYLOAD}\n\n"
        f"The asyncio event loop schedules callbacks in a ready queue. {PAYLOAD}\n"
        "The event loop runs the scheduled callbacks in the order they were scheduled.\n"
        "A task is scheduled on the event loop with call_soon, and the event loop runs it until"
        " it awaits a future.\n",
        encoding="utf-8",
    )
    question = "How does the asyncio event loop schedule callbacks?"
    done = subprocess.run(
        [WORKBENCH, "--workspace", str(tmp_path), "research", question]
        + ["--corpus", str(folder), "--headless", "--on-interrupt", "default"],
        env=terminal_env(tmp_path),
        cwd=str(tmp_path),
        capture_output=True,
        stdin=subprocess.DEVNULL,
        timeout=PROCESS_S,
    )
    assert done.returncode == 0, done.stderr
    assert_no_raw_payload(done.stdout + done.stderr, "research --headless")
    [report] = (tmp_path / "runs").glob("*/report.md")
    text = report.read_text(encoding="utf-8")
    assert "The asyncio event loop SEC-CLIP SEC-TITLE" in text, "the document is cited"
    assert not [char for char in text if acted_on(char)]
