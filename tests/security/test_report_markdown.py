"""report.md keeps no raw control character: not from a model's sub-questions or the question
(headings), not from a document's title or quoted text (sources, claims) — and what would have
started a new Markdown block (a heading planted after a line break) stays on its own line.

Nor does their Markdown act: a document's or a model's link, image, autolink, raw HTML or link
definition is shown as the text it is, and a claim, a quote or a paragraph of prose that opens
with a block's marker (``## Sources``) starts no block. The report is read through a real
CommonMark parser (markdown-it, the one the app's Markdown widget uses)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from markdown_it import MarkdownIt
from markdown_it.token import Token

from research.ci import weights_named
from research.coalesce import coalesce
from research.evidence import Claim, EvidenceMap, Passage, Source, SubQuestion
from research.matrix import DimensionScores
from research.policy import RoundRecord
from research.report import citations_for, ordered_claims, quality_metadata, render_report
from research.sources import SourcePolicy
from research.tasks import SynthesisAnswer, SynthesisSection
from tests.security.conftest import PAYLOAD, acted_on, assert_no_raw_payload
from tests.tui.terminal import PROCESS_S, WORKBENCH, terminal_env

INJECTED = "\n\n# Injected heading\n\n[click](javascript:alert(1))"
ACTIVE = (
    "[click](javascript:alert(1)) ![pixel](https://tracker.example/p.png)"
    " <img src=x onerror=alert(1)> <script>alert(1)</script> <https://evil.example/>"
    " <!-- hidden --> <a href='file:///etc/passwd'>x</a> \\\\<b>bold</b>"
)
"""Markdown that acts when report.md is read: links (a click runs the script or opens the
file), an image fetched as the report is shown (it tells a tracker the report was read), raw
HTML, an autolink; the last tag behind an escaped backslash."""
DEFINITION = "[1]: javascript:alert(1)"
"""A link definition: it would make every ``[1]`` citation marker of the report a link."""


def _report(*, prose: str = "") -> str:
    source = Source(id="docs/evil", uri="file:///evil", title=f"Evil {PAYLOAD}{INJECTED} {ACTIVE}")
    passage = Passage(id="docs/evil#0", source_id=source.id, text=f"It is fast. {PAYLOAD}")
    claim = Claim(
        id="k1",
        text=f"The loop is fast {PAYLOAD}{INJECTED} {ACTIVE}",
        quote=f"It is fast. {PAYLOAD}",
        sub_question="q1",
        passage_ids=[passage.id],
        source_ids=[source.id],
        verified=True,
    )
    planted = claim.model_copy(
        update={"id": "k2", "text": f"{DEFINITION} a claim", "quote": "## Sources planted"}
    )
    evidence = EvidenceMap(
        query=f"How fast is it? {PAYLOAD} {ACTIVE}",
        sub_questions=[
            SubQuestion(id="q1", text=f"A model's sub-question {PAYLOAD}{INJECTED} {ACTIVE}")
        ],
        sources={source.id: source},
        passages={passage.id: passage},
        claims=[claim, planted],
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
    synthesis = (
        SynthesisAnswer(
            summary="",
            sections=[SynthesisSection(sub_question="q1", claim_ids=["k1", "k2"], prose=prose)],
        )
        if prose
        else None
    )
    sections = ordered_claims(evidence, synthesis)
    return render_report(
        evidence, synthesis, citations_for(evidence, sections), sections, quality, True
    )


def _tokens(report: str) -> list[Token]:
    """Every token of ``report`` as CommonMark reads it, inline ones included."""
    tokens: list[Token] = []
    for token in MarkdownIt("commonmark").parse(report):
        tokens += [token, *(token.children or [])]
    return tokens


def test_the_report_writer_keeps_no_control_character_and_no_planted_block() -> None:
    report = _report()
    assert not [char for char in report if acted_on(char)]
    lines = report.splitlines()
    assert lines[0].startswith(
        "# How fast is it? SEC-CLIP SEC-TITLE SEC-CLEAR SEC-BELL SEC-C1 SEC-RTL"
    )
    assert not [line for line in lines if line.startswith("# Injected")]
    [heading] = [line for line in lines if line.startswith("## A model's sub-question")]
    assert "# Injected heading [click]" in heading


@pytest.mark.parametrize(
    "prose",
    [
        "",
        f"## Sources {ACTIVE} [k1]. {DEFINITION} [k2].",
        "<div onmouseover=alert(1) x [k1].",  # a paragraph opening an HTML block, tag or not
    ],
)
def test_the_markdown_of_a_document_or_a_model_is_shown_as_text_never_acted_on(
    prose: str,
) -> None:
    report = _report(prose=prose)
    tokens = _tokens(report)

    acting = [t.type for t in tokens if t.type.startswith(("link", "image", "html"))]
    assert not acting, f"{acting} in:\n{report}"
    headings = [
        tokens[index + 1].content
        for index, token in enumerate(tokens)
        if token.type == "heading_open" and token.tag == "h2"
    ]
    assert headings[1:] == [headings[1], "Sources", "Quality"]
    assert headings[0] == "Summary" and headings[1].startswith("A model's sub-question")
    text = " ".join(t.content for t in tokens if t.type == "text")
    assert "[click](javascript:alert(1))" in text, "the words are kept, as text"
    assert "<img src=x onerror=alert(1)>" in text
    assert "![pixel](https://tracker.example/p.png)" in text
    if prose.startswith("<div"):
        assert "<div onmouseover=alert(1) x. [1]" in text, "a model's words, as text"


def test_a_models_code_spans_show_as_written_in_the_report() -> None:
    """Code in a model's prose shows its text as written, with no backslash an escape would
    leave there, and a stray backtick before it opens no span that swallows an escape."""
    prose = "The `List<int>` type, the `<img src=x onerror=alert(1)>` tag, a stray ` here [k1]."
    tokens = _tokens(_report(prose=prose))
    code = [t.content for t in tokens if t.type == "code_inline"]
    assert code[:2] == ["List<int>", "<img src=x onerror=alert(1)>"]
    assert not [t.type for t in tokens if t.type.startswith(("link", "image", "html"))]


@pytest.mark.timeout(PROCESS_S)
def test_a_research_run_over_a_hostile_document_writes_a_clean_report(tmp_path: Path) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "event-loop.md").write_text(
        f"# The asyncio event loop {PAYLOAD}\n\n"
        f"The asyncio event loop schedules callbacks in a ready queue. {PAYLOAD} {ACTIVE}\n"
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
    assert "![pixel]" in text, "its quote is"
    assert not [char for char in text if acted_on(char)]
    assert not [t.type for t in _tokens(text) if t.type.startswith(("link", "image", "html"))]
    [package] = (tmp_path / "runs").glob("*/rag_package.jsonl")
    raw = package.read_text(encoding="utf-8")
    assert not [char for char in raw if acted_on(char)], "the package escapes them, as JSON"
    chunks = [json.loads(line) for line in raw.splitlines()]
    assert any(PAYLOAD in chunk["text"] for chunk in chunks), "its text is exact once parsed"
