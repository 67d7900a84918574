"""Tool implementations over the local corpus, for registry agents (``runs: corpus.search`` …).

Importing this module registers them in the engine's tool implementations.
They reach the corpus through the run's retriever (a :class:`CorpusRetriever`),
so they need nothing the steps do not already get. ``notes.save`` writes a
file into the run's folder — the one tool here with a side effect, which the
shipped policy puts behind a person's approval; each run writes its own (a
``run_effect``: a run replaying another's journal saves its note itself).
"""

from __future__ import annotations

import re
from typing import Any

from agents.tools import tool_implementation
from engine.context import StepContext
from plumbing.folder_writes import write_text_into
from research.corpus import Corpus, CorpusRetriever
from research.run_folders import RunFolders

PASSAGE_CHARS = 600
DOCUMENT_CHARS = 4000
"""How much of a document ``corpus.read`` returns; the agent's context budget trims further."""


def _corpus(ctx: StepContext) -> Corpus:
    retriever = ctx.services.retriever
    if not isinstance(retriever, CorpusRetriever):
        raise RuntimeError("this run has no local corpus to read documents from")
    return retriever.corpus


def _normal(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip().lower()


@tool_implementation("corpus.search")
async def corpus_search(ctx: StepContext, args: dict[str, Any]) -> dict[str, Any]:
    """Full-text search of the corpus: the best passage of each matching document."""
    hits = await ctx.retrieve(
        str(args["query"]), limit=int(args.get("limit") or 5), distinct_sources=True
    )
    return {
        "hits": [
            {
                "passage_id": hit["passage_id"],
                "source_id": hit["source_id"],
                "title": hit["title"],
                "uri": hit["uri"],
                "text": str(hit["text"])[:PASSAGE_CHARS],
            }
            for hit in hits
        ]
    }


@tool_implementation("corpus.read")
async def document_read(ctx: StepContext, args: dict[str, Any]) -> dict[str, Any]:
    """A document's title and its text from the start, passage by passage."""
    corpus = _corpus(ctx)
    source_id = str(args["source_id"])
    record = corpus.document(source_id)
    if record is None:
        return {"source_id": source_id, "error": f"no document {source_id!r} in the corpus"}
    passages: list[str] = []
    length = 0
    ordinal = 0
    while length < DOCUMENT_CHARS:
        text = corpus.passage_text(f"{source_id}#{ordinal}")
        if text is None:
            break
        passages.append(text)
        length += len(text)
        ordinal += 1
    return {
        "source_id": source_id,
        "title": record.title,
        "uri": record.uri,
        "summary": " ".join(passages)[:DOCUMENT_CHARS],
    }


@tool_implementation("citation.check")
async def citation_check(ctx: StepContext, args: dict[str, Any]) -> dict[str, Any]:
    """Whether the quoted text occurs in the cited document (whitespace and case aside)."""
    corpus = _corpus(ctx)
    source_id = str(args["source_id"])
    quote = _normal(str(args["text"]))
    if corpus.document(source_id) is None:
        return {"source_id": source_id, "verified": False, "reason": "no such document"}
    ordinal = 0
    while (text := corpus.passage_text(f"{source_id}#{ordinal}")) is not None:
        if quote and quote in _normal(text):
            return {
                "source_id": source_id,
                "verified": True,
                "passage_id": f"{source_id}#{ordinal}",
            }
        ordinal += 1
    return {"source_id": source_id, "verified": False, "reason": "the text is not in the document"}


@tool_implementation("notes.save", run_effect=True)
async def save_note(ctx: StepContext, args: dict[str, Any]) -> dict[str, Any]:
    """Write a Markdown note into the run's folder (a side effect: policies may gate it)."""
    folders = ctx.services.app.get(RunFolders)
    if folders is None:
        raise RuntimeError("this run has no folder to save notes in")
    name = re.sub(r"[^a-z0-9_-]+", "-", str(args.get("name") or "note").lower()).strip("-")
    folder = folders.of(ctx.run_id)
    folder.mkdir(parents=True, exist_ok=True)
    path = write_text_into(folder, f"{name or 'note'}.md", str(args["text"]).rstrip() + "\n")
    return {"saved": str(path), "bytes": path.stat().st_size}
