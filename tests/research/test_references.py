"""Retrieval that follows the sources: keys, references, related documents, as_of for the whole run."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from research.corpus import Corpus
from research.references import (
    _BARE_LINK,
    _LINK,
    _MENTION,
    _bare_links,
    _links,
    link_key,
    normalize_key,
    own_keys,
    references,
)
from tests.pep_corpus import PEPS, skip_without_peps

pytestmark = pytest.mark.timeout(60)


def test_names_normalize_to_one_key() -> None:
    assert {normalize_key(n) for n in ("PEP 634", "pep-0634", "PEP-634", "pep 0634")} == {"pep 634"}
    assert link_key("https://peps.python.org/pep-0634/") == "pep 634"
    assert link_key("../guides/Setup.md#install") == "setup"
    assert own_keys("pep-0634", {"PEP": "634", "Title": "x"}) == {"pep 634"}


def every_pep() -> list[str]:
    """The text of every PEP of the shared corpus (the test is skipped without it)."""
    skip_without_peps()
    return [path.read_text(encoding="utf-8") for path in sorted(PEPS.glob("*.rst"))]


def test_bare_links_are_the_patterns_matches_everywhere() -> None:
    """The scan that tries the bare-link pattern only before a ``-`` and digit finds what the
    pattern finds over the whole text: on odd texts and on every PEP."""
    odd = [
        "pep-8 xpep-8 Apep-8 -pep-8 _ab-8 abcdefghi-8 abcdefgh-8 ab-1234567 ab-12.rst/",
        "pep-8.rst-9 .rst-9 pep-8.md. é-8 éab-8 ab-٣ (pep-0008) <pep-0634.html>",
    ]
    texts = odd + every_pep()
    assert len(texts) > 700
    for text in texts:
        assert [m.span() for m in _bare_links(text)] == [
            m.span() for m in _BARE_LINK.finditer(text)
        ]


def test_links_are_the_patterns_matches_everywhere() -> None:
    """The scan that tries the link pattern only where a link can start finds what the pattern
    finds over the whole text: on odd texts (openers inside links, links back to back) and on
    every PEP."""
    odd = [
        '](a<b) <x>](y) href=\'z\' href="w" hhref="v" <<a> ](<c>) <> ]( href=)',
        '<a href="b">c</a> [d](e) <f>g<h> href=\' h<ref="i">',
    ]
    texts = odd + every_pep()
    for text in texts:
        assert [(m.span(), m.group(1)) for m in _links(text)] == [
            (m.span(), m.group(1)) for m in _LINK.finditer(text)
        ]


def test_mentions_are_the_plain_patterns_matches() -> None:
    """The mention pattern that starts with its capital letter finds what the plain one (a word
    boundary first) finds: on odd texts and on every PEP."""
    plain = re.compile(r"\b([A-Z]{2,6})[ \u00a0-]?0*(\d{1,5})\b", re.ASCII)
    odd = [
        "PEP 8 xPEP 8 _PEP 8 PEP-0008 PEP\u00a08 ABCDEFG 8 ABCDEF 8 PEP 123456 1PEP 8 éPEP 8",
        "PEP 8x RFC2616 (PEP 634) PEPs 8 -PEP 8 P 8",
    ]
    texts = odd + every_pep()
    for text in texts:
        found = [(m.span(), m.groups()) for m in _MENTION.finditer(text)]
        assert found == [(m.span(), m.groups()) for m in plain.finditer(text)]


def test_references_come_from_headers_links_and_mentions() -> None:
    text = (
        "This builds on PEP 3156 and :pep:`492`; see :rfc:`2616`, the `guide <setup.md>`_ "
        "and [notes](../notes/usage.md). Section labels like <pep-501-defer-shells> are not links."
    )
    found = references("pep-0525", text, {"Requires": "492, 3156", "Superseded-By": "828"})
    assert ("pep 492", "requires") in found and ("pep 3156", "requires") in found
    assert ("pep 828", "superseded-by") in found
    assert {("pep 3156", "mention"), ("pep 492", "mention"), ("rfc 2616", "mention")} <= found
    assert ("setup", "link") in found and ("usage", "link") in found
    assert not any(key.startswith("pep 501") for key, _ in found)
    assert all(key != "pep 525" for key, _ in found), "a document does not refer to itself"


GUIDE = """---
title: Installing frobnicators
published: 2024-01-10
---
# Installing frobnicators

Frobnicators install with one command. The [configuration guide](config.md) explains
the frobnicator settings, and [the legacy notes](legacy.md) describe the old way.
"""
CONFIG = """---
title: Configuring frobnicators
published: 2024-02-01
---
# Configuring frobnicators

Every frobnicator reads a settings file; the frobnicator settings name the widget ports.
"""
LEGACY = """---
title: Legacy notes
published: 2019-05-01
---
# Legacy notes

Before 2020 the frobnicator was configured by environment variables only.
"""
LATER = """---
title: Frobnicators two
published: 2030-01-01
---
# Frobnicators two

The next frobnicator generation replaces the settings file; see [installing](install.md).
"""


@pytest.fixture
def linked_corpus(tmp_path: Path) -> Corpus:
    root = tmp_path / "frob"
    root.mkdir()
    (root / "install.md").write_text(GUIDE)
    (root / "config.md").write_text(CONFIG)
    (root / "legacy.md").write_text(LEGACY)
    (root / "future.md").write_text(LATER)
    corpus = Corpus(tmp_path / "corpus.sqlite")
    corpus.add_folder(root, "frob")
    return corpus


def test_related_documents_follow_links_both_ways(linked_corpus: Corpus) -> None:
    with linked_corpus as corpus:
        assert corpus.related(["frob/install"]) == {
            "frob/config": "link",
            "frob/legacy": "link",
            "frob/future": "cited-by",
        }
        hits = corpus.search("frobnicator settings", related_to=["frob/install"], limit=5)
        assert [h["source_id"] for h in hits][:1] == ["frob/config"]
        assert {h["via"] for h in hits} <= {"link", "cited-by"}
        assert all(h["source_id"] != "frob/install" for h in hits)


def test_documents_after_as_of_are_out_of_every_search(linked_corpus: Corpus) -> None:
    with linked_corpus as corpus:
        everything = {h["source_id"] for h in corpus.search("frobnicator", limit=10)}
        assert "frob/future" in everything
        until = {
            h["source_id"] for h in corpus.search("frobnicator", limit=10, not_after="2025-06-30")
        }
        assert until == everything - {"frob/future"}
        related = corpus.search(
            "frobnicator", related_to=["frob/install"], not_after="2025-06-30", limit=10
        )
        assert "frob/future" not in {h["source_id"] for h in related}


def test_pep_headers_resolve_to_documents(pep_corpus_path: Path) -> None:
    with Corpus(pep_corpus_path) as corpus:
        related = corpus.related(["peps/pep-0622"])
        assert related["peps/pep-0634"] == "superseded-by"
        assert related["peps/pep-0636"] == "cited-by"
        assert corpus.related(["peps/pep-0634"])["peps/pep-0622"] == "replaces"
        assert "peps/pep-3156" in corpus.related(["peps/pep-0492"])


def test_a_version_1_corpus_is_read_again_for_its_references(tmp_path: Path) -> None:
    root = tmp_path / "frob"
    root.mkdir()
    (root / "install.md").write_text(GUIDE)
    (root / "config.md").write_text(CONFIG)
    path = tmp_path / "corpus.sqlite"
    with Corpus(path) as corpus:
        corpus.add_folder(root, "frob")
        # what a version-1 file holds: documents, no keys or references
        corpus._db.execute("DELETE FROM document_keys")
        corpus._db.execute("DELETE FROM document_refs")
        corpus._db.commit()
    with Corpus(path) as corpus:
        assert corpus.needs_reindex("frob")
        report = corpus.add_folder(root, "frob")
        assert report.updated == 2 and not corpus.needs_reindex("frob")
        assert corpus.related(["frob/install"]) == {"frob/config": "link"}
