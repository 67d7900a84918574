"""The head ranking of hybrid search (research.hybrid): a document that shares no word with the
question is found by what its opening says it is for (issue 22: a question in a user's own words).
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from research.corpus import Corpus, CorpusRetriever
from research.embeddings import embedder
from research.hybrid import SEMANTIC_FLOOR, SearchFilters, fts_query, lexical
from research.steps.retrieval import select_on_topic

QUESTION = "How can I shrink a big file so it takes less room on disk?"
ANSWER = (
    "# Squeeze: the DEFLATE codec\n\nThis module compresses and decompresses byte streams with "
    "the DEFLATE algorithm. The compressed output is usually much smaller than the input.\n"
)
# each shares words of the question, in another sense
NEIGHBOURS = [
    "# Hotel rooms\n\nEvery room of the hotel is big, and breakfast takes an hour.\n",
    "# Frisbee\n\nA flying disk is thrown less far when the wind is strong.\n",
    "# Therapy\n\nA shrink listens to you so that you can take your worries less hard.\n",
    "# Marching\n\nSoldiers walk in single file across the big square.\n",
    "# Orchestra\n\nThe string section takes up most of the room on the stage.\n",
    "# Wool\n\nWool can shrink in hot water, so wash big jumpers cold.\n",
    "# Astronomy\n\nThe disk of the galaxy is less bright than its big centre.\n",
    "# Nails\n\nA metal file takes the rough edge off a nail.\n",
    "# Gardening\n\nLeave room between big plants so they get less shade.\n",
    "# Cooking\n\nMeat will shrink in the oven; a big roast takes hours.\n",
    "# Sports\n\nA discus, or disk, is thrown on a big field.\n",
    "# Offices\n\nThe file room holds big cabinets and takes a key to enter.\n",
]


def test_a_document_sharing_no_word_with_the_question_is_found_by_what_its_opening_says(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "squeeze.md").write_text(ANSWER)
    for number, text in enumerate(NEIGHBOURS):
        (folder / f"n{number}.md").write_text(text)
    with Corpus(tmp_path / "corpus.sqlite") as corpus:
        corpus.add_folder(folder, "c")
        filters = SearchFilters(collections=["c"])
        # neither half of the search offers it: no word in common, its words' vectors far off
        assert "c/squeeze" not in {
            s for _, s, _ in lexical(corpus._db, fts_query(QUESTION), filters, 50)
        }
        index = corpus.vectors()
        row = next(
            r for r, n in enumerate(index.row_source) if index.documents[n][0] == "c/squeeze"
        )
        assert float(index.matrix[row] @ embedder().embed_one(QUESTION)) < SEMANTIC_FLOOR

        hits = corpus.search(QUESTION, collections=["c"], limit=5, distinct_sources=True)
        selected = asyncio.run(
            select_on_topic(CorpusRetriever(corpus).search, QUESTION, ["c"], "2026-11-29")
        )
    assert "c/squeeze" in [h["source_id"] for h in hits]
    assert "c/squeeze" in selected  # and the anchor search keeps it as evidence
