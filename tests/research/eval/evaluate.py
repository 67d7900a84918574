"""The research evaluation: questions with gold documents, flagged documents and key facts.

``make eval`` runs every question of ``peps.yaml`` (over ../shared/corpus/peps) and
``default.yaml`` (over the default corpus) offline with the built-in model, and prints per
question and in total: gold-document recall, key-fact recall, quote faithfulness (every
quoted passage verbatim in the cited document's passage, and every sentence of the report
carries a citation), flagged documents cited as current, rounds used and seconds.
A sentence that opens the quote it stands on with a connective or an unresolved "This/It/These"
("However, …") is stranded: its antecedent is not in the passage it quotes, so it is unfaithful
too. Everything is measured on the written artifacts (report.md) and the corpus itself, never
on what the run says about itself.
"""

from __future__ import annotations

import asyncio
import re
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field

from engine.loader import load_workflow
from research.corpus import Corpus
from research.default_corpus import build_default_corpus
from research.text import depends_on_context, normalize_space

HERE = Path(__file__).resolve().parent
PROJECT = HERE.parents[2]
PEPS = PROJECT.parent / "shared" / "corpus" / "peps"
WORKFLOW = PROJECT / "workflows" / "deep_research.yaml"
SETS = {"peps": HERE / "peps.yaml", "default": HERE / "default.yaml"}

FLAG_NOTE = re.compile(r"\((?:[^()]*\b(?:superseded|rejected|withdrawn|deferred)\b[^()]*)\)", re.I)
CITATION = re.compile(r"\[(\d+)\]")
UNFLAGGED_SECTIONS = ("Sources", "Quality", "Timeline")


class EvalQuestion(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    question: str
    gold: list[str | int] = Field(min_length=1)
    flagged: list[str | int] = Field(default_factory=list)
    facts: list[list[str]] = Field(min_length=2, max_length=3)
    inputs: dict[str, Any] = Field(default_factory=dict)


class EvalSet(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    collection: str
    as_of: str
    questions: list[EvalQuestion]

    def source_id(self, ref: str | int) -> str:
        """A gold or flagged reference as the corpus's source id (a PEP number or a relative id)."""
        if isinstance(ref, int):
            return f"{self.collection}/pep-{ref:04d}"
        return f"{self.collection}/{ref}"


def load_set(name: str) -> EvalSet:
    return EvalSet.model_validate(yaml.safe_load(SETS[name].read_text(encoding="utf-8")))


@dataclass(frozen=True)
class QuestionScore:
    set_name: str
    id: str
    gold_recall: float
    fact_recall: float
    faithful: bool
    unfaithful_quotes: int
    uncited_sentences: int
    stranded_sentences: int
    flagged_as_current: int
    rounds: int
    seconds: float
    missing_gold: list[str]
    missing_facts: list[str]


def body_sections(report: str) -> dict[str, str]:
    """The report's ``##`` sections by heading (the title and its disclaimer left out)."""
    sections: dict[str, str] = {}
    current: str | None = None
    for line in report.splitlines():
        if line.startswith("## "):
            current = line[3:].strip()
            sections[current] = ""
        elif current is not None:
            sections[current] += line + "\n"
    return sections


def uncited_sentences(report: str) -> int:
    """Prose in the answering sections that no citation marker closes."""
    count = 0
    for heading, text in body_sections(report).items():
        if heading in UNFLAGGED_SECTIONS:
            continue
        for paragraph in re.split(r"\n\s*\n", text):
            paragraph = paragraph.strip()
            if not paragraph or paragraph.startswith("_"):
                continue
            for line in paragraph.splitlines():
                tail = CITATION.split(line)[-1]
                tail = FLAG_NOTE.sub("", tail).replace("[unverified]", "")
                if re.search(r"[A-Za-z]{3,}", tail):
                    count += 1
    return count


def stranded_sentences(report: str) -> int:
    """Cited statements in the answering sections that open by leaning on a sentence not there.

    Each citation marker closes one statement (the text since the previous marker, its status
    note and ``[unverified]`` mark aside); a statement carries its own quoted passage, so only
    its first sentence can lack an antecedent — a later one finds it in the same quote.
    """
    count = 0
    for heading, text in body_sections(report).items():
        if heading in UNFLAGGED_SECTIONS:
            continue
        for paragraph in re.split(r"\n\s*\n", text):
            if paragraph.strip().startswith("_"):
                continue
            for statement in CITATION.split(normalize_space(paragraph))[::2]:
                statement = FLAG_NOTE.sub("", statement).replace("[unverified]", "").strip()
                if statement and depends_on_context(statement):
                    count += 1
    return count


def flagged_as_current(report: str, citations: list[dict[str, Any]], flagged: set[str]) -> int:
    """Citations of a flagged document whose marker in the answer carries no status note."""
    answer = "\n".join(
        text for heading, text in body_sections(report).items() if heading not in UNFLAGGED_SECTIONS
    )
    count = 0
    for citation in citations:
        if citation["source_id"] not in flagged:
            continue
        for match in re.finditer(rf"\[{citation['number']}\]", answer):
            after = answer[match.end() :].lstrip(" ").removeprefix("[unverified]").lstrip(" ")
            if not FLAG_NOTE.match(after):
                count += 1
    return count


def score_run(
    set_name: str,
    eval_set: EvalSet,
    question: EvalQuestion,
    corpus: Corpus,
    report: str,
    citations: list[dict[str, Any]],
    rounds: int,
    seconds: float,
) -> QuestionScore:
    cited = {c["source_id"] for c in citations}
    gold = [eval_set.source_id(g) for g in question.gold]
    missing_gold = [g for g in gold if g not in cited]
    lowered = report.lower()
    missing_facts = [
        " | ".join(alternatives)
        for alternatives in question.facts
        if not any(a.lower() in lowered for a in alternatives)
    ]
    unfaithful = 0
    for citation in citations:
        text = corpus.passage_text(citation["passage_id"])
        if (
            text is None
            or not citation["passage_id"].startswith(citation["source_id"] + "#")
            or normalize_space(citation["quote"]) not in normalize_space(text)
        ):
            unfaithful += 1
    uncited = uncited_sentences(report)
    stranded = stranded_sentences(report)
    flagged = {eval_set.source_id(f) for f in question.flagged}
    return QuestionScore(
        set_name=set_name,
        id=question.id,
        gold_recall=(len(gold) - len(missing_gold)) / len(gold),
        fact_recall=(len(question.facts) - len(missing_facts)) / len(question.facts),
        faithful=unfaithful == 0 and uncited == 0 and stranded == 0 and bool(citations),
        unfaithful_quotes=unfaithful,
        uncited_sentences=uncited,
        stranded_sentences=stranded,
        flagged_as_current=flagged_as_current(report, citations, flagged),
        rounds=rounds,
        seconds=seconds,
        missing_gold=missing_gold,
        missing_facts=missing_facts,
    )


async def run_question(
    set_name: str, eval_set: EvalSet, question: EvalQuestion, corpus_path: Path, workspace: Path
) -> QuestionScore:
    from tests.research.conftest import run_research

    workflow = load_workflow(WORKFLOW)
    started = time.perf_counter()
    run = await run_research(
        workflow,
        workspace,
        corpus_path,
        question.question,
        as_of=eval_set.as_of,
        collections=[eval_set.collection],
        **question.inputs,
    )
    seconds = time.perf_counter() - started
    synthesis = run.outputs("final_synthesis") if "final_synthesis" in run.steps else {}
    report_path = workspace / "runs" / run.result.run_id / "report.md"
    report = report_path.read_text(encoding="utf-8") if report_path.is_file() else ""
    with Corpus(corpus_path) as corpus:
        return score_run(
            set_name,
            eval_set,
            question,
            corpus,
            report,
            list(synthesis.get("citations", [])),
            len(run.rounds),
            seconds,
        )


def build_corpora(folder: Path, names: list[str]) -> Path:
    path = folder / "corpus.sqlite"
    with Corpus(path) as corpus:
        if "peps" in names:
            corpus.add_folder(PEPS, "peps")
        if "default" in names:
            build_default_corpus(corpus)
    return path


def evaluate(
    names: list[str], only: set[str] | None = None, folder: Path | None = None
) -> list[QuestionScore]:
    """Run the named sets (``only``: question ids to keep) and return one score per question."""
    with tempfile.TemporaryDirectory() as tmp:
        root = folder or Path(tmp)
        corpus_path = build_corpora(root, names)
        scores = []
        for name in names:
            eval_set = load_set(name)
            for question in eval_set.questions:
                if only is not None and f"{name}:{question.id}" not in only:
                    continue
                workspace = root / f"ws-{name}-{question.id}"
                scores.append(
                    asyncio.run(run_question(name, eval_set, question, corpus_path, workspace))
                )
        return scores


@dataclass(frozen=True)
class Totals:
    questions: int
    gold_recall: float
    fact_recall: float
    faithfulness: float
    flagged_as_current: int
    rounds: float
    seconds: float


def totals(scores: list[QuestionScore]) -> Totals:
    n = max(1, len(scores))
    return Totals(
        questions=len(scores),
        gold_recall=sum(s.gold_recall for s in scores) / n,
        fact_recall=sum(s.fact_recall for s in scores) / n,
        faithfulness=sum(1 for s in scores if s.faithful) / n,
        flagged_as_current=sum(s.flagged_as_current for s in scores),
        rounds=sum(s.rounds for s in scores) / n,
        seconds=sum(s.seconds for s in scores),
    )


def table(scores: list[QuestionScore]) -> str:
    lines = [
        f"{'question':38} {'gold':>5} {'facts':>5} {'faith':>5} {'flag':>4} {'rnd':>3} {'s':>6}"
        "  missing"
    ]
    for s in scores:
        missing = ", ".join([*(g.split("/", 1)[1] for g in s.missing_gold), *s.missing_facts])
        faith = (
            "yes"
            if s.faithful
            else f"{s.unfaithful_quotes}q{s.uncited_sentences}u{s.stranded_sentences}s"
        )
        lines.append(
            f"{s.set_name + ':' + s.id:38.38} {s.gold_recall:5.2f} {s.fact_recall:5.2f} "
            f"{faith:>5} {s.flagged_as_current:4d} {s.rounds:3d} {s.seconds:6.1f}  {missing}"
        )
    t = totals(scores)
    lines.append(
        f"{'TOTAL (' + str(t.questions) + ' questions)':38} {t.gold_recall:5.2f} "
        f"{t.fact_recall:5.2f} {t.faithfulness:5.2f} {t.flagged_as_current:4d} {t.rounds:3.1f} "
        f"{t.seconds:6.1f}"
    )
    return "\n".join(lines)
