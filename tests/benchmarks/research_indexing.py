"""One source tree's PEP-corpus indexing, measured in a fresh process: bench_research runs this
file under ``PYTHONPATH=<tree>`` for this tree and for the one ``BENCH_COMPARE_WITH`` names, so
both are measured side by side in one run. Prints one JSON object.

Only what every tree has is used (Corpus, Embedder, embedder, the loaders). Phases, each timed
alone (CPU seconds of the whole process, every thread): the model's load (and the resident memory
it adds), reading + parsing + splitting the files, embedding every passage (tokenizing and pooling
apart where the tree separates them), indexing into a fresh SQLite file with vectors and with
vectors not computed (zero vectors stored: what the rest of indexing costs), and re-indexing the
unchanged folder. With ``--cold``, only indexing with vectors in a process that has not loaded
the model yet (as ``workbench corpus add`` runs).

While indexing, the embedding thread's batches are timed too: how long they took and how much
CPU that thread spent on them. The difference is time it waited — for the GIL, which the indexing
thread holds while it runs Python, or for a core.
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from research import corpus_vectors
from research.corpus import Corpus
from research.embeddings import Embedder, embedder, package_folder
from research.loaders import load_document, split_passages


def resident_kib() -> int:
    """This process's resident memory (Linux /proc), in KiB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def timed(work: Callable[[], Any]) -> tuple[float, float, float, Any]:
    """(wall s, CPU s of the process, CPU s of this thread, result)."""
    wall, cpu, thread = time.perf_counter(), time.process_time(), time.thread_time()
    result = work()
    return (
        time.perf_counter() - wall,
        time.process_time() - cpu,
        time.thread_time() - thread,
        result,
    )


def parsed(folder: Path) -> list[str]:
    texts = []
    for path in sorted(folder.glob("*.rst")):
        document = load_document(path, path.read_bytes())
        texts += [f"{document.title}\n{s}\n{t}" for s, t in split_passages(document.text)]
    return texts


def index(folder: Path, root: Path, name: str) -> dict[str, float]:
    batches = [0.0, 0.0]  # the embedding thread's: wall, its own CPU
    embedded = corpus_vectors._embedded

    def timed_batch(texts: list[str]) -> list[bytes]:
        wall, thread = time.perf_counter(), time.thread_time()
        blobs = embedded(texts)
        batches[0] += time.perf_counter() - wall
        batches[1] += time.thread_time() - thread
        return blobs

    corpus_vectors._embedded = timed_batch
    try:
        with Corpus(root / f"{name}.sqlite") as corpus:
            wall, cpu, thread, report = timed(lambda: corpus.add_folder(folder, "peps"))
            again, _, _, unchanged = timed(lambda: corpus.add_folder(folder, "peps"))
    finally:
        corpus_vectors._embedded = embedded
    assert unchanged.unchanged == report.added
    return {
        "embedding_batches_wall": batches[0],
        "embedding_thread_cpu": batches[1],
        "documents": report.added,
        "passages": report.passages,
        "wall": wall,
        "cpu": cpu,
        "indexing_thread_cpu": thread,
        "reindex_unchanged_wall": again,
    }


def without_vectors() -> None:
    """Every Embedder entry a tree's indexing uses returns zeros at once (the vectors are not
    computed; zero vectors are still stored)."""

    def zeros(self: Embedder, texts: list[str]) -> np.ndarray:
        return np.zeros((len(texts), 256), dtype=np.float32)

    Embedder.embed = zeros  # type: ignore[method-assign]
    if hasattr(Embedder, "token_ids"):
        Embedder.token_ids = lambda self, texts: [[] for _ in texts]  # type: ignore[attr-defined]


def main(folder: Path) -> dict[str, Any]:
    figures: dict[str, Any] = {"tree": str(Path(sys.modules["research"].__path__[0]).parent)}
    before = resident_kib()
    load, _, _, model = timed(embedder)
    figures["model_load_wall"] = load
    figures["model_rss_mib"] = (resident_kib() - before) / 1024
    _, figures["parse_cpu"], _, texts = timed(lambda: parsed(folder))
    # each on a model of its own, which has seen none of the texts (indexing's has not either)
    _, figures["embed_cpu"], _, _ = timed(lambda: Embedder(package_folder()).embed(texts))
    name = next((n for n in ("tokens", "token_ids") if hasattr(model, n)), None)
    if name is not None:  # a tree that tokenizes and pools apart (``token_ids`` before)
        fresh = Embedder(package_folder())
        _, figures["tokenize_cpu"], _, ids = timed(lambda: getattr(fresh, name)(texts))
        _, figures["pool_cpu"], _, _ = timed(lambda: fresh.pool(texts, ids))
    with tempfile.TemporaryDirectory() as tmp:
        figures["with_vectors"] = index(folder, Path(tmp), "with")
        without_vectors()
        figures["without_vectors"] = index(folder, Path(tmp), "without")
    return figures


def cold(folder: Path) -> dict[str, Any]:
    """What ``workbench corpus add`` does in a new process: the model loads while indexing."""
    with tempfile.TemporaryDirectory() as tmp:
        return {"cold": index(folder, Path(tmp), "cold")}


if __name__ == "__main__":
    measure = cold if sys.argv[2:] == ["--cold"] else main
    print(json.dumps(measure(Path(sys.argv[1]))))
