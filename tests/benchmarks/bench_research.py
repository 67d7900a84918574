"""Research benchmarks: the embedding model's load time and memory, PEP corpus indexing with
vectors (and what the vectors cost), search latency, and research time per question offline.

Figures are printed side by side; nothing here asserts a time. Beside each wall time the CPU
time is printed too: on a machine other work shares, the wall time measures the load as much as
the code, and the CPU time is what an idle machine would need.
"""

from __future__ import annotations

import asyncio
import tempfile
import time
from pathlib import Path

import research.steps  # noqa: F401 - registers the research steps the workflow uses
from engine.loader import load_workflow
from research.corpus import Corpus
from research.embeddings import Embedder, embedder, package_folder
from research.loaders import load_document, split_passages
from research.text import normalize_space
from tests.research.conftest import run_research

PROJECT = Path(__file__).resolve().parents[2]
PEPS = PROJECT.parent / "shared" / "corpus" / "peps"
QUESTIONS = [
    "What is the history of structural pattern matching in Python?",
    "Why is print a function in Python 3?",
    "What are assignment expressions?",
    "How do I make file descriptors non-inheritable?",
    "Compare asyncio and concurrent.futures",
    "What is the current status of free-threaded CPython without the GIL?",
]
"""Questions of the tuning split, one of each kind (the held-out split is never run here)."""
QUERIES = [
    "structural pattern matching",
    "type hints annotations",
    "asyncio coroutines",
    "f-strings",
    "packaging metadata version",
    "exception context",
    "unicode strings bytes",
    "import system loaders",
    "garbage collection reference counting",
    "decorators for functions and methods",
]


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def _bench_following(corpus: Corpus, plain_p50_ms: float) -> None:
    """Following references beside a plain search, measured in the same run (a ratio, not a limit)."""
    related_ms: list[float] = []
    followed: list[int] = []
    for query in QUERIES:
        found = sorted({h["source_id"] for h in corpus.search(query, limit=10)})
        t0 = time.perf_counter()
        hits = corpus.search(query, limit=24, related_to=found, not_after="2025-06-30")
        related_ms.append((time.perf_counter() - t0) * 1000)
        followed.append(len(corpus.related(found)))
        del hits
    p50 = _percentile(related_ms, 0.5)
    print(
        f"follow references from the top 10 ({len(QUERIES)} queries, "
        f"{sum(followed) / len(followed):.0f} related documents each): p50 {p50:.2f} ms "
        f"= {p50 / plain_p50_ms:.2f}x a plain search"
    )


def _bench_distinct(corpus: Corpus, plain_p50_ms: float) -> None:
    """The best passage per document (what retrieval and verification ask for) beside a plain
    search: it ranks every match, so its cost is the ranking, not reading every match whole."""
    distinct_ms: list[float] = []
    for query in QUERIES:
        t0 = time.perf_counter()
        corpus.search(query, limit=8, offset=4, distinct_sources=True, not_after="2025-06-30")
        distinct_ms.append((time.perf_counter() - t0) * 1000)
    p50 = _percentile(distinct_ms, 0.5)
    print(
        f"best passage per document ({len(QUERIES)} queries, 8 after 4): p50 {p50:.2f} ms "
        f"= {p50 / plain_p50_ms:.2f}x a plain search"
    )


def _resident_kib() -> int:
    """This process's resident memory (Linux /proc), in KiB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def _bench_model() -> None:
    before = _resident_kib()
    started = time.perf_counter()
    model = Embedder(package_folder())
    seconds = time.perf_counter() - started
    print(
        f"embedding model (WordLlama l2_supercat_256): loaded in {seconds:.2f} s, weights "
        f"{model.memory_bytes / 2**20:.1f} MiB, process memory +{(_resident_kib() - before) / 1024:.1f} MiB"
    )


def _bench_vectors_cost() -> None:
    """What embedding alone costs on the PEP corpus's passages (the same texts indexing embeds)."""
    texts = []
    for path in sorted(PEPS.glob("*.rst")):
        document = load_document(path, path.read_bytes())
        texts += [f"{document.title}\n{s}\n{t}" for s, t in split_passages(document.text)]
    started = time.perf_counter()
    embedder().embed(texts)
    seconds = time.perf_counter() - started
    print(
        f"embed {len(texts)} passages alone: {seconds:.2f} s = {len(texts) / seconds:.0f} passages/s"
    )


def _bench_questions(workflow: object, root: Path, path: Path) -> None:
    walls, cpus = [], []
    for number, question in enumerate(QUESTIONS):
        started, cpu = time.perf_counter(), time.process_time()
        run = asyncio.run(run_research(workflow, root / f"ws-q{number}", path, question))
        wall = time.perf_counter() - started
        walls.append(wall)
        cpus.append(time.process_time() - cpu)
        synthesis = run.outputs("final_synthesis")
        print(
            f"    {wall:5.2f} s ({cpus[-1]:.2f} CPU-s)  {len(run.rounds)} rounds, "
            f"{len(synthesis['citations'])} citations, "
            f"confidence {synthesis['confidence_level']}: {question}"
        )
    print(
        f"research time per question ({len(walls)} questions, offline): mean "
        f"{sum(walls) / len(walls):.2f} s, max {max(walls):.2f} s; CPU mean "
        f"{sum(cpus) / len(cpus):.2f} s, max {max(cpus):.2f} s"
    )


def main() -> None:
    if not PEPS.is_dir():
        print(f"skipped: no PEP corpus at {PEPS}")
        return
    _bench_model()
    _bench_vectors_cost()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        path = root / "corpus.sqlite"
        with Corpus(path) as corpus:
            started, cpu = time.perf_counter(), time.process_time()
            report = corpus.add_folder(PEPS, "peps")
            seconds = time.perf_counter() - started
            cpu = time.process_time() - cpu
            print(
                f"index PEPs with vectors: {report.added} documents, {report.passages} passages in "
                f"{seconds:.2f} s = {report.added / seconds:.0f} docs/s; CPU {cpu:.2f} s = "
                f"{report.added / cpu:.0f} docs/s on an idle core"
            )
            started = time.perf_counter()
            again = corpus.add_folder(PEPS, "peps")
            print(
                f"re-index unchanged: {again.unchanged} documents in {time.perf_counter() - started:.3f} s"
            )
            started = time.perf_counter()
            index = corpus.vectors()
            print(
                f"load the vector index: {len(index)} vectors, {index.matrix.nbytes / 2**20:.1f} MiB, "
                f"{time.perf_counter() - started:.3f} s"
            )
            latencies = []
            for _ in range(5):
                for query in QUERIES:
                    t0 = time.perf_counter()
                    corpus.search(query, limit=10)
                    latencies.append((time.perf_counter() - t0) * 1000)
            print(
                f"hybrid search ({len(latencies)} queries, top 10): p50 {_percentile(latencies, 0.5):.2f} ms, "
                f"p95 {_percentile(latencies, 0.95):.2f} ms"
            )
            _bench_following(corpus, _percentile(latencies, 0.5))
            _bench_distinct(corpus, _percentile(latencies, 0.5))

        workflow = load_workflow(PROJECT / "workflows" / "deep_research.yaml")
        _bench_questions(workflow, root, path)
        query = "WSGI web server gateway interface"
        run = asyncio.run(run_research(workflow, root / "ws-wsgi", path, query, domain="reference"))
        citations = run.outputs("final_synthesis")["citations"]
        faithful = 0
        with Corpus(path) as corpus:
            for citation in citations:
                text = corpus.passage_text(citation["passage_id"]) or ""
                faithful += normalize_space(citation["quote"]) in normalize_space(text)
        print(f"citation faithfulness ({query!r}): {faithful}/{len(citations)}")


if __name__ == "__main__":
    main()
