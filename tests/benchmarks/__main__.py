"""`make bench`: run every tests/benchmarks/bench_*.py module's ``main()`` in turn.

Benchmarks print figures measured side by side in one run; none asserts a time.
Pass module names (``engine``, ``router``...) to run a subset.
"""

from __future__ import annotations

import importlib
import pkgutil
import sys
import time

import tests.benchmarks as package


def main(argv: list[str]) -> int:
    wanted = set(argv)
    names = sorted(
        info.name
        for info in pkgutil.iter_modules(package.__path__)
        if info.name.startswith("bench_")
    )
    for name in names:
        if wanted and name.removeprefix("bench_") not in wanted:
            continue
        module = importlib.import_module(f"tests.benchmarks.{name}")
        print(f"\n=== {name} ===", flush=True)
        started = time.perf_counter()
        module.main()
        print(f"--- {name} took {time.perf_counter() - started:.1f} s", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
