"""Research benchmarks: PEP corpus indexing throughput, search latency, one full offline research run.

Figures are printed side by side; nothing here asserts a time.
"""

from __future__ import annotations

import asyncio
import tempfile
import time
from pathlib import Path

from engine.loader import load_workflow
from research.corpus import Corpus
from research.text import normalize_space

PROJECT = Path(__file__).resolve().parents[2]
PEPS = PROJECT.parent / "shared" / "corpus" / "peps"
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


def main() -> None:
    if not PEPS.is_dir():
        print(f"skipped: no PEP corpus at {PEPS}")
        return
    from tests.research.conftest import run_research

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        path = root / "corpus.sqlite"
        with Corpus(path) as corpus:
            started = time.perf_counter()
            report = corpus.add_folder(PEPS, "peps")
            seconds = time.perf_counter() - started
            print(
                f"index PEPs: {report.added} documents, {report.passages} passages in {seconds:.2f} s "
                f"= {report.added / seconds:.0f} docs/s"
            )
            started = time.perf_counter()
            again = corpus.add_folder(PEPS, "peps")
            print(
                f"re-index unchanged: {again.unchanged} documents in {time.perf_counter() - started:.3f} s"
            )
            latencies = []
            for _ in range(5):
                for query in QUERIES:
                    t0 = time.perf_counter()
                    corpus.search(query, limit=10)
                    latencies.append((time.perf_counter() - t0) * 1000)
            print(
                f"search ({len(latencies)} queries, top 10): p50 {_percentile(latencies, 0.5):.2f} ms, "
                f"p95 {_percentile(latencies, 0.95):.2f} ms"
            )
            _bench_following(corpus, _percentile(latencies, 0.5))
            _bench_distinct(corpus, _percentile(latencies, 0.5))

        workflow = load_workflow(PROJECT / "workflows" / "deep_research.yaml")
        for query, extra in [
            ("version specifiers packaging metadata", {}),
            ("WSGI web server gateway interface", {"domain": "reference"}),
        ]:
            started = time.perf_counter()
            run = asyncio.run(
                run_research(workflow, root / f"ws-{len(query)}", path, query, **extra)
            )
            wall = time.perf_counter() - started
            citations = run.outputs("final_synthesis")["citations"]
            faithful = 0
            with Corpus(path) as corpus:
                for citation in citations:
                    text = corpus.passage_text(citation["passage_id"]) or ""
                    faithful += normalize_space(citation["quote"]) in normalize_space(text)
            print(
                f"research run {query!r} {extra}: {run.result.status.value} in {wall:.2f} s, "
                f"{len(run.rounds)} rounds, stop {run.rounds[-1]['stop_reason']}, "
                f"confidence {run.outputs('final_synthesis')['confidence_level']}"
            )
            for scored in run.rounds:
                cells = " ".join(
                    f"{d[:4]} {c['score']:.2f}" for d, c in scored["dimensions"].items()
                )
                print(
                    f"    R{scored['round']} ({scored['round_kind']}): {cells}  CI {scored['ci']:.3f}"
                )
            print(f"    citation faithfulness: {faithful}/{len(citations)}")


if __name__ == "__main__":
    main()
