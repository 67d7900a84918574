"""Research benchmarks: PEP corpus indexing with vectors and without (what the vectors cost), the
CPU seconds of each phase of it, the embedding model's load time and memory, search latency, the
sentence encoder's load, memory and cost per document head and per question (and what the first
question on a fresh corpus pays for the heads), and research time per question offline.

Figures are printed side by side; nothing here asserts a time. Beside each wall time the CPU
time is printed too: on a machine other work shares, the wall time measures the load as much as
the code, and the CPU time is what an idle machine would need. Indexing is measured in fresh
processes (tests/benchmarks/research_indexing.py), niced, a few rounds (the best of each figure);
with ``BENCH_COMPARE_WITH=/tmp/main`` (an export of another tree, e.g. ``git archive main``) that
tree's indexing is measured in the same rounds, alternating with this one's, and the before /
after ratios are printed.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import research.steps  # noqa: F401 - registers the research steps the workflow uses
from engine.loader import load_workflow
from research.corpus import Corpus
from research.sentence_encoder import encoding_threads
from research.text import normalize_space
from tests.pep_corpus import PEPS
from tests.research.conftest import run_research

PROJECT = Path(__file__).resolve().parents[2]
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


INDEXING = Path(__file__).with_name("research_indexing.py")
COMPARE_WITH = "BENCH_COMPARE_WITH"
"""An environment variable naming another source tree measured beside this one."""
ROUNDS = 3


def _indexing_figures(tree: Path) -> dict[str, Any]:
    """research_indexing.py run on ``tree``'s code in fresh, niced processes (cold, then warm)."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    figures: dict[str, Any] = {}
    for mode in (["--cold"], []):
        done = subprocess.run(
            ["nice", sys.executable, str(INDEXING), str(PEPS), *mode],
            env=env,
            cwd=tempfile.gettempdir(),
            capture_output=True,
            text=True,
            check=True,
        )
        figures.update(json.loads(done.stdout))
    return figures


def _best(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The smallest of each figure over the rounds (the least disturbed by other work)."""
    best: dict[str, Any] = {}
    for key, value in runs[0].items():
        if isinstance(value, dict):
            best[key] = _best([run[key] for run in runs])
        elif isinstance(value, float):
            best[key] = min(run[key] for run in runs)
        else:
            best[key] = value
    return best


def _print_indexing(label: str, f: dict[str, Any]) -> None:
    vec, bare = f["with_vectors"], f["without_vectors"]
    docs = vec["documents"]
    print(f"  {label}:")
    print(
        f"    with vectors:    {vec['wall']:5.2f} s = {docs / vec['wall']:4.0f} docs/s; CPU "
        f"{vec['cpu']:5.2f} s (indexing thread {vec['indexing_thread_cpu']:.2f} s) = "
        f"{docs / vec['cpu']:4.0f} docs/s per CPU-s"
    )
    busiest = max(vec["indexing_thread_cpu"], vec["cpu"] - vec["indexing_thread_cpu"])
    print(
        f"    with vectors on two idle cores (the busier thread's CPU: indexing "
        f"{vec['indexing_thread_cpu']:.2f} s, embedding {vec['cpu'] - vec['indexing_thread_cpu']:.2f}"
        f" s): about {busiest:.2f} s = {docs / busiest:4.0f} docs/s"
    )
    print(
        f"    the embedding thread's batches: {vec['embedding_batches_wall']:.2f} s for "
        f"{vec['embedding_thread_cpu']:.2f} CPU-s of its own (waiting for the GIL or a core: "
        f"{vec['embedding_batches_wall'] - vec['embedding_thread_cpu']:.2f} s)"
    )
    cold = f["cold"]
    print(
        f"    with vectors, the model loading meanwhile (as corpus add): {cold['wall']:5.2f} s = "
        f"{docs / cold['wall']:4.0f} docs/s; CPU {cold['cpu']:5.2f} s"
    )
    print(
        f"    without vectors: {bare['wall']:5.2f} s = {docs / bare['wall']:4.0f} docs/s; CPU "
        f"{bare['cpu']:5.2f} s = {docs / bare['cpu']:4.0f} docs/s per CPU-s"
    )
    print(
        f"    the vectors cost {vec['wall'] - bare['wall']:+.2f} s wall, "
        f"{vec['cpu'] - bare['cpu']:+.2f} CPU-s ({docs} documents, {vec['passages']} passages)"
    )
    phases = [
        ("read + parse + split", f["parse_cpu"]),
        ("store (FTS, keys, references, commit)", bare["cpu"] - f["parse_cpu"]),
        ("embed every passage", f["embed_cpu"]),
    ]
    if "tokenize_cpu" in f:
        phases += [("  of which tokenize", f["tokenize_cpu"]), ("  of which pool", f["pool_cpu"])]
    for name, cpu in phases:
        print(f"    CPU {name:<38} {cpu:5.2f} s")
    print(
        f"    re-index unchanged: {vec['reindex_unchanged_wall']:.3f} s; embedding model: loaded in "
        f"{f['model_load_wall']:.2f} s, process memory +{f['model_rss_mib']:.1f} MiB"
    )


def _bench_indexing() -> None:
    other = os.environ.get(COMPARE_WITH)
    trees = {"this tree": PROJECT, **({f"before ({other})": Path(other)} if other else {})}
    runs: dict[str, list[dict[str, Any]]] = {label: [] for label in trees}
    for _ in range(ROUNDS):
        for label, tree in trees.items():  # alternating: both see the same load
            runs[label].append(_indexing_figures(tree))
    best = {label: _best(found) for label, found in runs.items()}
    print(f"index the PEP corpus into a fresh workspace (fresh processes, best of {ROUNDS}):")
    for label, figures in best.items():
        _print_indexing(label, figures)
    if other:
        after, before = best["this tree"], best[f"before ({other})"]
        for measure in ("wall", "cpu"):
            print(
                f"  before / after ({measure}): with vectors "
                f"{before['with_vectors'][measure] / after['with_vectors'][measure]:.2f}x "
                f"(cold {before['cold'][measure] / after['cold'][measure]:.2f}x), "
                f"without {before['without_vectors'][measure] / after['without_vectors'][measure]:.2f}x"
            )
        print(
            f"  before / after (CPU): embedding {before['embed_cpu'] / after['embed_cpu']:.2f}x; "
            f"model memory {before['model_rss_mib']:.1f} -> {after['model_rss_mib']:.1f} MiB"
        )


def _bench_sentence_model(path: Path) -> None:
    """The sentence encoder (research/sentence_encoder.py): load and memory, CPU per document head
    and per question, and a question's relevance on a corpus whose heads are not cached yet beside
    the same question once they are."""
    from research.document_heads import head_texts
    from research.sentence_encoder import sentence_encoder
    from tests.benchmarks.research_indexing import resident_kib

    before_kib, started, cpu = resident_kib(), time.perf_counter(), time.process_time()
    model = sentence_encoder()
    print(
        f"sentence encoder: loaded (weights checked) in {time.perf_counter() - started:.2f} s, "
        f"{time.process_time() - cpu:.2f} CPU-s; weights {model.memory_bytes / 2**20:.1f} MiB, "
        f"process memory +{(resident_kib() - before_kib) / 1024:.1f} MiB"
    )
    with Corpus(path) as corpus:
        sources = [s for (s,) in corpus._db.execute("SELECT source_id FROM documents LIMIT 128")]
        heads = [text for _, text in head_texts(corpus._db, sources).values()]
        cpu = time.process_time()
        model.encode(heads)
        per_head = (time.process_time() - cpu) / len(heads)
        cpu = time.process_time()
        for question in QUESTIONS:
            model.encode([question])
        per_question = (time.process_time() - cpu) / len(QUESTIONS)
        print(
            f"  CPU per document head {per_head * 1000:.1f} ms ({len(heads)} heads; every head of "
            f"the corpus: {per_head * len(corpus.vectors().documents):.1f} CPU-s), per question "
            f"{per_question * 1000:.1f} ms"
        )
        for question in QUESTIONS[:2]:
            cached = corpus._db.execute("SELECT COUNT(*) FROM document_heads").fetchone()[0]
            cpu = time.process_time()
            corpus.relevance(question)
            cold = time.process_time() - cpu
            computed = corpus._db.execute("SELECT COUNT(*) FROM document_heads").fetchone()[0]
            corpus._relevance.clear()
            cpu = time.process_time()
            corpus.relevance(question)
            warm = time.process_time() - cpu
            print(
                f"  a question's relevance, {cached} heads cached before: {cold:.2f} CPU-s "
                f"({computed - cached} heads computed) vs {warm:.2f} CPU-s once cached: {question}"
            )


def _bench_one_thread(root: Path, path: Path, wall: float, cpu: float) -> None:
    """The same first search computed as before the batches were shared among threads (one
    encoding thread, research/sentence_encoder.py ``MAX_THREADS``), on another fresh file with a
    memo of its own, beside the figure above: the ratios are measured in one run, under one
    load."""
    from research import sentence_encoder

    alone = root / "one-thread.sqlite"
    shutil.copy(path, alone)
    cache, threads = os.environ["XDG_CACHE_HOME"], sentence_encoder.MAX_THREADS
    os.environ["XDG_CACHE_HOME"] = str(root / "cache-one-thread")  # nothing remembered
    sentence_encoder.MAX_THREADS = 1
    try:
        with Corpus(alone) as corpus:
            corpus._db.execute("DELETE FROM document_heads")
            corpus._db.commit()
            load = os.getloadavg()[0]
            started, used = time.perf_counter(), time.process_time()
            corpus.search(QUERIES[0], limit=10)
            one_cpu, one_wall = time.process_time() - used, time.perf_counter() - started
    finally:
        os.environ["XDG_CACHE_HOME"], sentence_encoder.MAX_THREADS = cache, threads
    print(
        f"  the same on one encoding thread (as before): {one_wall:.2f} s, {one_cpu:.2f} CPU-s "
        f"(load {load:.1f} before); wall {one_wall / wall:.2f}x as long, CPU "
        f"{one_cpu / cpu:.2f}x as much"
    )


def _bench_remembered_heads(root: Path, path: Path, first: float) -> None:
    """The first search of another fresh file of the same documents (a second workspace, the
    default corpus built again): the machine's memo (research/sentence_memo.py) has the heads."""
    again = root / "again.sqlite"
    shutil.copy(path, again)
    with Corpus(again) as corpus:
        corpus._db.execute("DELETE FROM document_heads")
        corpus._db.commit()
        cpu = time.process_time()
        corpus.search(QUERIES[0], limit=10)
        remembered = time.process_time() - cpu
    print(
        f"  the same documents in another fresh file, heads remembered on this machine: "
        f"{remembered:.2f} CPU-s vs {first:.2f} ({first / max(remembered, 1e-9):.0f}x less)"
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
    _bench_indexing()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        os.environ["XDG_CACHE_HOME"] = str(root / "cache")  # a machine that has encoded nothing
        path = root / "corpus.sqlite"
        with Corpus(path) as corpus:
            corpus.add_folder(PEPS, "peps")
            started = time.perf_counter()
            index = corpus.vectors()
            print(
                f"load the vector index: {len(index)} vectors, {index.matrix.nbytes / 2**20:.1f} MiB, "
                f"{time.perf_counter() - started:.3f} s"
            )
            load = os.getloadavg()[0]
            started, cpu = time.perf_counter(), time.process_time()
            corpus.search(QUERIES[0], limit=10)
            heads = corpus._db.execute("SELECT COUNT(*) FROM document_heads").fetchone()[0]
            first, first_wall = time.process_time() - cpu, time.perf_counter() - started
            print(
                f"first search of a fresh corpus (computes and keeps the head of every document, "
                f"{heads} heads, for the head ranking): {first_wall:.2f} s, {first:.2f} CPU-s "
                f"({encoding_threads()} encoding threads; load {load:.1f} before)"
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

        _bench_one_thread(root, path, first_wall, first)
        _bench_remembered_heads(root, path, first)
        fresh = root / "fresh.sqlite"  # its heads are in the file and the memo: reading them
        shutil.copy(path, fresh)
        _bench_sentence_model(fresh)
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
