"""The research evaluation: questions with gold and related documents, paraphrases, key facts.

Several splits over two corpora. The *tuning* split (``peps.yaml``, ``default.yaml``) is what
retrieval may be tuned on; the *held-out* split (``peps_heldout.yaml``, ``default_heldout.yaml``)
was written before the retrieval work of issue 22 and runs only when asked for by name
(``make eval SPLIT=heldout``) — the CI test only checks its floors. Its figures were seen once
when the first pass landed, so a fresh split, *heldout2* (``peps_heldout2.yaml``,
``default_heldout2.yaml``), was written before the second pass changed any retrieval code; it
runs only with an explicit ``final=True`` (``make eval SPLIT=heldout2 EVAL_ARGS=--final``), at
the end of a piece of work. heldout2 was in turn run during the second pass, so a third split,
*heldout3* (``peps_heldout3.yaml``, ``default_heldout3.yaml``), was written on 2026-11-27 by
someone who did not tune, before that session's retrieval work began, and kept out of the tuners'
reach until the work was finished; it too runs only with ``final=True``. heldout3 was then seen
(scored, and probed for the choice of the sentence model), so a fourth split, *heldout4*
(``peps_heldout4.yaml``, ``default_heldout4.yaml``), was written the same way at the start of the
fourth pass and scored once at its end; it too runs only with ``final=True``. heldout4 was then
tuned on with the others in the fifth pass, so a fifth split, *heldout5* (``peps_heldout5.yaml``,
``default_heldout5.yaml``), was written the same way at its start and scored once at its end;
it too runs only with ``final=True``. Every one of those splits had then been seen by tuners, so a
sixth split, *heldout6* (``peps_heldout6.yaml``, ``default_heldout6.yaml``), was written on
2026-11-28 by someone who did no tuning and read no retrieval code, on subjects none of the
earlier splits asks about; it too runs only with ``final=True``. heldout6 was then scored and
is in the repository, so a seventh split, *heldout7* (``peps_heldout7.yaml``,
``default_heldout7.yaml``), was written the same way on 2026-11-28, on subjects none of the
earlier splits (heldout6 included) asks about; it too runs only with ``final=True``. heldout7 was
then scored and is in the repository, so an eighth split, *heldout8* (``peps_heldout8.yaml``,
``default_heldout8.yaml``), was written the same way on 2026-11-28, on subjects none of the
earlier splits (heldout7 included) asks about; it too runs only with ``final=True``. heldout8
was then scored and is in the repository, so a ninth split, *heldout9* (``peps_heldout9.yaml``,
``default_heldout9.yaml``), was written the same way on 2026-11-28, on subjects none of the
earlier splits (heldout8 included) asks about, with no gold document whose text is identical or
near-identical to one of theirs, and dated that day (``as_of``: most PEPs no earlier split
names are newer than the earlier splits' 2025-06-30); it too runs only with ``final=True``.
heldout9 was then scored, so a tenth split, *heldout10* (``peps_heldout10.yaml``,
``default_heldout10.yaml``), was written the same way on 2026-11-28. Few documents were left
that no earlier split names, so its gold is never an earlier split's gold (nor near-identical in
text to one), and each question carries a category comment: A when no earlier split names its
gold documents at all, B when one named them only as related or flagged (figures are reported
for A alone and for A+B). It too runs only with ``final=True``. heldout10 was then scored, so an
eleventh split, *heldout11* (``peps_heldout11.yaml``, ``default_heldout11.yaml``), was written
the same way on 2026-11-28, heldout10 counted among the earlier splits; it too runs only with
``final=True``. heldout11 was then scored, so a twelfth split, *heldout12* (``peps_heldout12.yaml``,
``default_heldout12.yaml``), was written the same way on 2026-11-28, heldout11 counted among the
earlier splits; as no unnamed documents of substance were left, its questions are mostly category
B. It too runs only with ``final=True``. heldout12 was then scored, and every document had been
used, so a thirteenth split, *heldout13* (``peps_heldout13.yaml``, ``default_heldout13.yaml``),
was written on 2026-11-29 by someone who never read an earlier split's questions, lifting the rule
that forbade an earlier gold: a question whose gold an earlier split named as gold is category C
(:data:`REPEATS_EARLIER_GOLD`), asked in new words. It too runs only with ``final=True``.
heldout13 was then scored, so a fourteenth split, *heldout14* (``peps_heldout14.yaml``,
``default_heldout14.yaml``), was written the same way on 2026-11-29, heldout13 counted among the
earlier splits, with category A, B and C questions; it too runs only with ``final=True``.
heldout14 was then scored, so a fifteenth split, *heldout15* (``peps_heldout15.yaml``,
``default_heldout15.yaml``), was written the same way on 2026-11-29, heldout13 and heldout14
counted among the earlier splits, with category B and C questions; it too runs only with
``final=True``.
A sixteenth split, *heldout16* (``peps_heldout16.yaml``, ``default_heldout16.yaml``), was written
the same way on 2026-11-29, heldout13 to heldout15 counted among the earlier splits, with category
B questions only (no gold an earlier split's gold); it too runs only with ``final=True``.
A seventeenth split, *heldout17* (``peps_heldout17.yaml``, ``default_heldout17.yaml``), was written
the same way on 2026-11-29, heldout13 to heldout16 counted among the earlier splits, with category
B questions only; it too runs only with ``final=True``.
An eighteenth split, *heldout18* (``peps_heldout18.yaml``, ``default_heldout18.yaml``), was written
the same way on 2026-11-29, heldout13 to heldout17 counted among the earlier splits, with category
A questions on the last documents no earlier split names (two PEPs, three codecs) and category B
questions otherwise; it too runs only with ``final=True``.

Each question runs offline with the built-in model, in its own words and in each of its five
paraphrases (the documents' own words, a user's words, a typo, a long preamble, a different
question word). Per run: gold recall (gold documents cited), citation precision (cited
documents that are gold or related: on the question's subject), key-fact recall, quote
faithfulness (every quoted passage verbatim in the cited document's passage, and every
sentence of the report carries a citation), flagged documents cited as current, rounds and
seconds. Per question: paraphrase agreement — the share of paraphrases whose cited gold is the
gold the question itself found, and some: a paraphrase and its question that both find no gold
do not agree (:func:`same_gold`).
A sentence that opens the quote it stands on with a connective or an unresolved "This/It/These"
("However, …") is stranded: its antecedent is not in the passage it quotes, so it is unfaithful
too. Everything is measured on the written artifacts (report.md) and the corpus itself, never
on what the run says about itself.

**Retrieval-only mode** (``make eval EVAL_ARGS=--retrieval-only``, :func:`evaluate_retrieval`):
no research run, only the selection that decides what a run may cite — the documents the
workflow's anchor search keeps for a phrasing (research.steps.retrieval.select_on_topic, the
very function the run's source-policy step calls, on the same corpus with the same collections
and ``as_of``). The corpora are built once and every phrasing is one search, so the whole tuning
split with its paraphrases scores in well under a minute. It reports, per question and per set:
*selection recall* (gold documents selected), *selection precision* (selected documents that
are gold or related) and *same gold* (paraphrases whose selected gold is the question's). A run
cites only documents it selected and the few it follows from them, so this predicts the full
evaluation's gold recall and citation precision: on the tuning split, within 0.03 of them on
both corpora, questions and paraphrases alike (docs/research.md has the figures).
"""

from __future__ import annotations

import asyncio
import re
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, get_args

import yaml
from pydantic import BaseModel, ConfigDict, Field, field_validator

import research.steps  # noqa: F401 - registers the research steps the workflow uses
from engine.loader import load_workflow
from research.corpus import Corpus, CorpusRetriever
from research.default_corpus import build_default_corpus
from research.steps.retrieval import select_on_topic
from research.text import depends_on_context, normalize_space
from tests.pep_corpus import PEPS

HERE = Path(__file__).resolve().parent
PROJECT = HERE.parents[2]
WORKFLOW = PROJECT / "workflows" / "deep_research.yaml"
Split = Literal[
    "tuning",
    "heldout",
    "heldout2",
    "heldout3",
    "heldout4",
    "heldout5",
    "heldout6",
    "heldout7",
    "heldout8",
    "heldout9",
    "heldout10",
    "heldout11",
    "heldout12",
    "heldout13",
    "heldout14",
    "heldout15",
    "heldout16",
    "heldout17",
    "heldout18",
]
SPLITS: tuple[Split, ...] = get_args(Split)
FINAL_ONLY: frozenset[Split] = frozenset(
    {
        "heldout2",
        "heldout3",
        "heldout4",
        "heldout5",
        "heldout6",
        "heldout7",
        "heldout8",
        "heldout9",
        "heldout10",
        "heldout11",
        "heldout12",
        "heldout13",
        "heldout14",
        "heldout15",
        "heldout16",
        "heldout17",
        "heldout18",
    }
)
"""Splits that run only when the caller says the work is finished (``final=True``)."""
REPEATS_EARLIER_GOLD: frozenset[Split] = frozenset({"heldout13", "heldout14", "heldout15"})
"""Fresh splits whose gold may be an earlier split's gold: each such question is marked
``# category C`` in its file (every other fresh split asks only about new gold)."""
CORPORA = ("peps", "default")
SETS: dict[Split, dict[str, Path]] = {
    "tuning": {"peps": HERE / "peps.yaml", "default": HERE / "default.yaml"},
    "heldout": {"peps": HERE / "peps_heldout.yaml", "default": HERE / "default_heldout.yaml"},
    "heldout2": {"peps": HERE / "peps_heldout2.yaml", "default": HERE / "default_heldout2.yaml"},
    "heldout3": {"peps": HERE / "peps_heldout3.yaml", "default": HERE / "default_heldout3.yaml"},
    "heldout4": {"peps": HERE / "peps_heldout4.yaml", "default": HERE / "default_heldout4.yaml"},
    "heldout5": {"peps": HERE / "peps_heldout5.yaml", "default": HERE / "default_heldout5.yaml"},
    "heldout6": {"peps": HERE / "peps_heldout6.yaml", "default": HERE / "default_heldout6.yaml"},
    "heldout7": {"peps": HERE / "peps_heldout7.yaml", "default": HERE / "default_heldout7.yaml"},
    "heldout8": {"peps": HERE / "peps_heldout8.yaml", "default": HERE / "default_heldout8.yaml"},
    "heldout9": {"peps": HERE / "peps_heldout9.yaml", "default": HERE / "default_heldout9.yaml"},
    "heldout10": {
        "peps": HERE / "peps_heldout10.yaml",
        "default": HERE / "default_heldout10.yaml",
    },
    "heldout11": {
        "peps": HERE / "peps_heldout11.yaml",
        "default": HERE / "default_heldout11.yaml",
    },
    "heldout12": {
        "peps": HERE / "peps_heldout12.yaml",
        "default": HERE / "default_heldout12.yaml",
    },
    "heldout13": {
        "peps": HERE / "peps_heldout13.yaml",
        "default": HERE / "default_heldout13.yaml",
    },
    "heldout14": {
        "peps": HERE / "peps_heldout14.yaml",
        "default": HERE / "default_heldout14.yaml",
    },
    "heldout15": {
        "peps": HERE / "peps_heldout15.yaml",
        "default": HERE / "default_heldout15.yaml",
    },
    "heldout16": {
        "peps": HERE / "peps_heldout16.yaml",
        "default": HERE / "default_heldout16.yaml",
    },
    "heldout17": {
        "peps": HERE / "peps_heldout17.yaml",
        "default": HERE / "default_heldout17.yaml",
    },
    "heldout18": {
        "peps": HERE / "peps_heldout18.yaml",
        "default": HERE / "default_heldout18.yaml",
    },
}
STYLES = ("own_words", "user_words", "typo", "preamble", "question_word")
"""The five paraphrases every question carries."""

FLAG_NOTE = re.compile(r"\((?:[^()]*\b(?:superseded|rejected|withdrawn|deferred)\b[^()]*)\)", re.I)
CITATION = re.compile(r"(?<![\w)\]])((?:\[\d+\])+)")
"""A run of citation markers (``[2]``, ``[2][5]``) not glued to a name, a call or an index
before it: quoted code's indexing (``obj[2]``, ``f()[0]``, ``m[1][2]``) cites nothing."""
UNFLAGGED_SECTIONS = ("Sources", "Quality", "Timeline")
NOT_THE_ANSWER = ("Sources", "Quality")
"""Sections a key fact is not looked for in: the source list repeats every cited document's
title and status, so a fact that is a title word would be met without the answer saying it."""


class EvalQuestion(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    question: str
    gold: list[str | int] = Field(min_length=1)
    related: list[str | int] = Field(default_factory=list)
    """Further documents on the question's subject: citing them is on topic."""
    flagged: list[str | int] = Field(default_factory=list)
    facts: list[list[str]] = Field(default_factory=list, max_length=3)
    paraphrases: dict[str, str]
    inputs: dict[str, Any] = Field(default_factory=dict)

    @field_validator("paraphrases")
    @classmethod
    def _five_styles(cls, value: dict[str, str]) -> dict[str, str]:
        if sorted(value) != sorted(STYLES) or not all(v.strip() for v in value.values()):
            raise ValueError(f"give one non-empty paraphrase for each of {', '.join(STYLES)}")
        return value

    def phrasings(self) -> list[tuple[str, str]]:
        """(style, text): the question itself first, then its paraphrases."""
        return [("question", self.question), *((s, self.paraphrases[s]) for s in STYLES)]


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


def load_set(name: str, split: Split = "tuning") -> EvalSet:
    return EvalSet.model_validate(yaml.safe_load(SETS[split][name].read_text(encoding="utf-8")))


class FinalSplitRefused(RuntimeError):
    """A fresh held-out split asked for without saying the work is finished."""

    def __init__(self, split: str) -> None:
        super().__init__(
            f"the {split} split is scored only at the end of a piece of work, never while "
            f"tuning: say so with --final (make eval SPLIT={split} EVAL_ARGS=--final)"
        )


@dataclass(frozen=True)
class QuestionScore:
    """One run: a question (or one of its paraphrases, ``style``) of one set."""

    set_name: str
    id: str
    style: str
    gold_recall: float
    precision: float
    """Cited documents on the question's subject (gold or related), of all cited."""
    cited_gold: frozenset[str]
    off_topic: list[str]
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


MARKDOWN_ESCAPE = re.compile(r"\\([!-/:-@\[-`{-~])")
"""A backslash escape of CommonMark (``\\<``, ``]\\(``): the report escapes a document's
Markdown that would act, and the sections are read as a reader sees them, without it."""


def body_sections(report: str) -> dict[str, str]:
    """The report's ``##`` sections by heading (the title and its disclaimer left out), their
    text as rendered (backslash escapes read)."""
    sections: dict[str, str] = {}
    current: str | None = None
    for line in report.splitlines():
        if line.startswith("## "):
            current = line[3:].strip()
            sections[current] = ""
        elif current is not None:
            sections[current] += MARKDOWN_ESCAPE.sub(r"\1", line) + "\n"
    return sections


def answer_text(report: str) -> str:
    """What the report answers with: its sections but the source list and the quality table
    (the title, the question's own words, and the sub-questions' headings left out too)."""
    return "".join(
        text for heading, text in body_sections(report).items() if heading not in NOT_THE_ANSWER
    )


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
    numbers = {str(c["number"]) for c in citations if c["source_id"] in flagged}
    count = 0
    for match in CITATION.finditer(answer):
        cited = [n for n in re.findall(r"\d+", match.group(1)) if n in numbers]
        after = answer[match.end() :].lstrip(" ").removeprefix("[unverified]").lstrip(" ")
        if cited and not FLAG_NOTE.match(after):
            count += len(cited)
    return count


def score_run(
    set_name: str,
    eval_set: EvalSet,
    question: EvalQuestion,
    style: str,
    corpus: Corpus,
    report: str,
    citations: list[dict[str, Any]],
    rounds: int,
    seconds: float,
) -> QuestionScore:
    cited = {c["source_id"] for c in citations}
    gold = [eval_set.source_id(g) for g in question.gold]
    on_topic = set(gold) | {eval_set.source_id(r) for r in question.related}
    off_topic = sorted(cited - on_topic)
    missing_gold = [g for g in gold if g not in cited]
    lowered = answer_text(report).lower()
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
        style=style,
        gold_recall=(len(gold) - len(missing_gold)) / len(gold),
        precision=(len(cited) - len(off_topic)) / len(cited) if cited else 0.0,
        cited_gold=frozenset(set(gold) & cited),
        off_topic=off_topic,
        fact_recall=(
            (len(question.facts) - len(missing_facts)) / len(question.facts)
            if question.facts
            else 1.0
        ),
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
    set_name: str,
    eval_set: EvalSet,
    question: EvalQuestion,
    corpus_path: Path,
    workspace: Path,
    style: str = "question",
    mixed: bool = False,
) -> QuestionScore:
    """Run one phrasing (``style``: "question" or a paraphrase style) and score its report
    (``mixed``: search every collection of the corpus, not only the set's own)."""
    from tests.research.conftest import run_research

    workflow = load_workflow(WORKFLOW)
    text = dict(question.phrasings())[style]
    started = time.perf_counter()
    run = await run_research(
        workflow,
        workspace,
        corpus_path,
        text,
        as_of=eval_set.as_of,
        collections=[] if mixed else [eval_set.collection],
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
            style,
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
    names: list[str],
    split: Split,
    *,
    only: set[str] | None = None,
    paraphrases: bool = True,
    folder: Path | None = None,
    final: bool = False,
    mixed: bool = False,
) -> list[QuestionScore]:
    """Run the named sets of one split (``only``: question ids as set:id) and score every run.

    The held-out splits run only when ``split`` names them: nothing here reaches them by
    default; a split in ``FINAL_ONLY`` runs only with ``final=True`` as well. ``mixed``: the
    mixed workspace — both corpora indexed into one file and every question searching all of
    it, so a second collection is there to drown the first.
    """
    with _corpora(names, split, final, mixed, folder) as (root, corpus_path):
        return [
            asyncio.run(
                run_question(
                    name,
                    eval_set,
                    question,
                    corpus_path,
                    root / f"ws-{split}-{name}-{question.id}-{style}{'-mixed' * mixed}",
                    style,
                    mixed,
                )
            )
            for name, eval_set, question, style, _ in _phrasings(names, split, only, paraphrases)
        ]


@contextmanager
def _corpora(
    names: list[str], split: Split, final: bool, mixed: bool, folder: Path | None
) -> Iterator[tuple[Path, Path]]:
    """(the run's folder, the corpus file): refused before anything is built when ``split``
    runs only at the end of a piece of work and ``final`` is not said."""
    if split in FINAL_ONLY and not final:
        raise FinalSplitRefused(split)
    with tempfile.TemporaryDirectory() as tmp:
        root = folder or Path(tmp)
        yield root, build_corpora(root, list(CORPORA) if mixed else names)


def _phrasings(
    names: list[str], split: Split, only: set[str] | None, paraphrases: bool
) -> Iterator[tuple[str, EvalSet, EvalQuestion, str, str]]:
    """(set name, set, question, style, text) for every phrasing to run, in order."""
    for name in names:
        eval_set = load_set(name, split)
        for question in eval_set.questions:
            if only is not None and f"{name}:{question.id}" not in only:
                continue
            for style, text in question.phrasings()[: None if paraphrases else 1]:
                yield name, eval_set, question, style, text


@dataclass(frozen=True)
class Totals:
    questions: int
    gold_recall: float
    precision: float
    fact_recall: float
    faithfulness: float
    flagged_as_current: int
    rounds: float
    seconds: float
    paraphrases: int
    paraphrase_gold_recall: float
    paraphrase_precision: float
    paraphrase_agreement: float
    """Paraphrases whose cited gold is the gold their question found (share)."""


def same_gold(found: frozenset[str] | None, got: frozenset[str]) -> bool:
    """Whether a paraphrase brought back the gold its question found — some gold: two runs
    that both miss every gold document share a failure, not an answer."""
    return bool(found) and got == found


def _mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def totals(scores: list[QuestionScore]) -> Totals:
    own = [s for s in scores if s.style == "question"]
    found = {(s.set_name, s.id): s.cited_gold for s in own}
    others = [s for s in scores if s.style != "question"]
    return Totals(
        questions=len(own),
        gold_recall=_mean([s.gold_recall for s in own]),
        precision=_mean([s.precision for s in own]),
        fact_recall=_mean([s.fact_recall for s in own]),
        faithfulness=_mean([1.0 if s.faithful else 0.0 for s in scores]),
        flagged_as_current=sum(s.flagged_as_current for s in scores),
        rounds=_mean([float(s.rounds) for s in scores]),
        seconds=sum(s.seconds for s in scores),
        paraphrases=len(others),
        paraphrase_gold_recall=_mean([s.gold_recall for s in others]),
        paraphrase_precision=_mean([s.precision for s in others]),
        paraphrase_agreement=_mean(
            [1.0 if same_gold(found.get((s.set_name, s.id)), s.cited_gold) else 0.0 for s in others]
        ),
    )


def table(scores: list[QuestionScore]) -> str:
    """Per question (its own words, then how its paraphrases fared) and the totals per set."""
    lines = [
        f"{'question':34} {'gold':>5} {'prec':>5} {'facts':>5} {'faith':>6} {'flag':>4} "
        f"{'rnd':>3} {'s':>6} {'para':>5}  missing / off topic"
    ]
    sets = list(dict.fromkeys(s.set_name for s in scores))
    for set_name in sets:
        in_set = [s for s in scores if s.set_name == set_name]
        for s in (x for x in in_set if x.style == "question"):
            paraphrased = [p for p in in_set if p.id == s.id and p.style != "question"]
            agree = sum(same_gold(s.cited_gold, p.cited_gold) for p in paraphrased)
            missing = ", ".join([*(g.split("/", 1)[1] for g in s.missing_gold), *s.missing_facts])
            off = ", ".join(o.split("/", 1)[1] for o in s.off_topic[:6])
            faith = (
                "yes"
                if s.faithful
                else f"{s.unfaithful_quotes}q{s.uncited_sentences}u{s.stranded_sentences}s"
            )
            lines.append(
                f"{s.set_name + ':' + s.id:34.34} {s.gold_recall:5.2f} {s.precision:5.2f} "
                f"{s.fact_recall:5.2f} {faith:>6} {s.flagged_as_current:4d} {s.rounds:3d} "
                f"{s.seconds:6.1f} {f'{agree}/{len(paraphrased)}':>5}  {missing}"
                + (f" / {off}" if off else "")
            )
            for p in paraphrased:
                if not same_gold(s.cited_gold, p.cited_gold) or p.precision < 0.8:
                    lines.append(
                        f"    {p.style:30.30} {p.gold_recall:5.2f} {p.precision:5.2f}"
                        f"  off topic: {', '.join(o.split('/', 1)[1] for o in p.off_topic[:6])}"
                    )
        lines.append(summary(set_name, totals(in_set)))
    return "\n".join(lines)


def summary(label: str, t: Totals) -> str:
    return (
        f"TOTAL {label}: {t.questions} questions — gold recall {t.gold_recall:.2f}, citation "
        f"precision {t.precision:.2f}, fact recall {t.fact_recall:.2f}, faithful "
        f"{t.faithfulness:.2f}, flagged as current {t.flagged_as_current}; {t.paraphrases} "
        f"paraphrases — gold recall {t.paraphrase_gold_recall:.2f}, precision "
        f"{t.paraphrase_precision:.2f}, same gold {t.paraphrase_agreement:.2f}; "
        f"{t.rounds:.1f} rounds, {t.seconds:.0f} s"
    )


@dataclass(frozen=True)
class SelectionScore:
    """The documents the anchor search selects for one phrasing, scored (retrieval-only mode)."""

    set_name: str
    id: str
    style: str
    recall: float
    precision: float
    selected_gold: frozenset[str]
    missing_gold: list[str]
    off_topic: list[str]
    seconds: float


def score_selection(
    set_name: str,
    eval_set: EvalSet,
    question: EvalQuestion,
    style: str,
    selected: list[str],
    seconds: float,
) -> SelectionScore:
    gold = [eval_set.source_id(g) for g in question.gold]
    on_topic = set(gold) | {eval_set.source_id(r) for r in question.related}
    chosen = set(selected)
    return SelectionScore(
        set_name=set_name,
        id=question.id,
        style=style,
        recall=len(chosen & set(gold)) / len(gold),
        precision=len(chosen & on_topic) / len(chosen) if chosen else 0.0,
        selected_gold=frozenset(chosen & set(gold)),
        missing_gold=[g for g in gold if g not in chosen],
        off_topic=[s for s in selected if s not in on_topic],
        seconds=seconds,
    )


def evaluate_retrieval(
    names: list[str],
    split: Split,
    *,
    only: set[str] | None = None,
    paraphrases: bool = True,
    folder: Path | None = None,
    final: bool = False,
    mixed: bool = False,
) -> list[SelectionScore]:
    """Retrieval-only mode: each phrasing's selected documents, scored (the module docstring).
    The same split rules as :func:`evaluate`."""
    scores = []
    with (
        _corpora(names, split, final, mixed, folder) as (_, corpus_path),
        Corpus(corpus_path) as corpus,
    ):
        search = CorpusRetriever(corpus).search
        for name, eval_set, question, style, text in _phrasings(names, split, only, paraphrases):
            collections = [] if mixed else [eval_set.collection]
            started = time.perf_counter()
            selected = asyncio.run(select_on_topic(search, text, collections, eval_set.as_of))
            seconds = time.perf_counter() - started
            scores.append(score_selection(name, eval_set, question, style, list(selected), seconds))
    return scores


def selection_table(scores: list[SelectionScore]) -> str:
    """Per question (its own words; then each paraphrase that selects other gold or off-topic
    documents) and the totals per set."""
    lines = [f"{'question':34} {'gold':>5} {'prec':>5} {'para':>5}  missing / off topic"]

    def short(ids: list[str]) -> str:
        return ", ".join(i.split("/", 1)[1] for i in ids[:6])

    for set_name in dict.fromkeys(s.set_name for s in scores):
        in_set = [s for s in scores if s.set_name == set_name]
        own = [s for s in in_set if s.style == "question"]
        for s in own:
            paraphrased = [p for p in in_set if p.id == s.id and p.style != "question"]
            agree = sum(same_gold(s.selected_gold, p.selected_gold) for p in paraphrased)
            off = short(s.off_topic)
            lines.append(
                f"{s.set_name + ':' + s.id:34.34} {s.recall:5.2f} {s.precision:5.2f} "
                f"{f'{agree}/{len(paraphrased)}':>5}  {short(s.missing_gold)}"
                + (f" / {off}" if off else "")
            )
            for p in paraphrased:
                if not same_gold(s.selected_gold, p.selected_gold) or p.precision < 0.8:
                    lines.append(
                        f"    {p.style:30.30} {p.recall:5.2f} {p.precision:5.2f}"
                        f"  missing {short(p.missing_gold)} / off {short(p.off_topic)}"
                    )
        found = {s.id: s.selected_gold for s in own}
        others = [s for s in in_set if s.style != "question"]
        agreement = _mean(
            [1.0 if same_gold(found.get(p.id), p.selected_gold) else 0.0 for p in others]
        )
        lines.append(
            f"SELECTION {set_name}: {len(own)} questions — recall "
            f"{_mean([s.recall for s in own]):.2f}, precision {_mean([s.precision for s in own]):.2f}"
            f"; {len(others)} paraphrases — recall {_mean([s.recall for s in others]):.2f}, "
            f"precision {_mean([s.precision for s in others]):.2f}, same gold {agreement:.2f}; "
            f"{sum(s.seconds for s in in_set):.0f} s searching"
        )
    return "\n".join(lines)
