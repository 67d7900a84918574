"""``make bench-peer``: this router and LiteLLM's Router, same scenarios, same loopback mocks.

Each scenario starts a fresh fault server (so both routers meet the same scripted timeline
from its start) and runs one router's clients in a process of its own
(:mod:`tests.tools.peer_clients`), then the other's. Printed side by side:

* overhead: per-request time over raw httpx against a mock that answers at once;
* chaos: 30 s, 8 clients, three deployments — one answers 429 with Retry-After 3 s for the
  first 10 s, one fails with 500 for 8 s of every 20 s, one is healthy at 150 ms;
* all down: every deployment fails for the first 10 s, then all are healthy (25 s in all).

Client successes, degraded answers (our built-in fallback: counted apart, never as successes),
client-visible failures, upstream calls wasted (requests the mocks answered with an error, and
health probes), p50/p95 latency of successes, and the time from recovery to the first success.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path
from statistics import mean, median
from typing import Any

from router.fault.server import FaultServer, RecordedRequest

REPO = Path(__file__).resolve().parents[2]
PREFIXES = ["d1", "d2", "d3"]
HEALTHY = {"latency_s": 0.15}
CHAOS = {
    "providers": {
        "d1": {
            "latency_s": 0.15,
            "phases": [
                {"for_s": 10, "fault": {"status": 429, "retry_after_s": 3}},
                {"for_s": 3600, "fault": "ok"},
            ],
        },
        "d2": {
            "latency_s": 0.15,
            "phases": [{"for_s": 8, "fault": 500}, {"for_s": 12, "fault": "ok"}],
            "repeat": True,
        },
        "d3": HEALTHY,
    }
}
DOWN_S = 10.0
ALL_DOWN = {
    "providers": {
        p: {
            "latency_s": 0.15,
            "phases": [{"for_s": DOWN_S, "fault": 500}, {"for_s": 3600, "fault": "ok"}],
        }
        for p in PREFIXES
    }
}


def client(
    python: str, router: str, server: FaultServer, script: Any, urls: list[str], *args: str
) -> dict[str, Any]:
    """Run one router's clients; the mocks' scripted timeline starts when they are ready
    (importing LiteLLM alone can take longer than an outage lasts)."""
    command = [python, "-m", "tests.tools.peer_clients", "--router", router, *args]
    for url in urls:
        command += ["--url", url]
    with subprocess.Popen(
        command,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=REPO,
    ) as process:
        assert process.stdin is not None and process.stdout is not None
        ready = process.stdout.readline()
        if ready.strip() == "READY":
            server.set_script(script)
            server.clear_requests()
            process.stdin.write("go\n")
            process.stdin.flush()
        out, err = process.communicate(timeout=600)
    if process.returncode != 0:
        raise SystemExit(f"{router} client failed:\n{err[-2000:]}")
    result: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
    return result


def urls(server: FaultServer, prefixes: list[str]) -> list[str]:
    return [f"{server.url(p)}/v1" for p in prefixes]


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q / 100 * len(ordered)) - 1))]


def wasted(requests: list[RecordedRequest]) -> int:
    return sum(
        1 for r in requests if r.route == "health" or (r.route == "chat" and r.fault != "ok")
    )


def overhead(pythons: dict[str, str]) -> dict[str, dict[str, float]]:
    out = {}
    for router, python in pythons.items():
        with FaultServer.running() as server:
            result = client(
                python,
                router,
                server,
                None,
                urls(server, ["d1"]),
                "--scenario",
                "overhead",
                "--count",
                "300",
            )
        routed, raw = result["routed"], result["raw"]
        out[router] = {
            "mean_ms": (mean(routed) - mean(raw)) * 1000,
            "p50_ms": (median(routed) - median(raw)) * 1000,
        }
    return out


def load(pythons: dict[str, str], script: dict[str, Any], duration: float) -> dict[str, Any]:
    out = {}
    for router, python in pythons.items():
        with FaultServer.running() as server:
            result = client(
                python,
                router,
                server,
                script,
                urls(server, PREFIXES),
                "--scenario",
                "load",
                "--clients",
                "8",
                "--duration",
                str(duration),
            )
            requests = server.requests
        records = result["records"]
        ok = [(start, end) for start, end, outcome in records if outcome == "ok"]
        latencies = [end - start for start, end in ok]
        after = [end for _, end in ok if end >= DOWN_S]
        out[router] = {
            "successes": len(ok),
            "degraded": sum(1 for *_, outcome in records if outcome == "degraded"),
            "failures": sum(1 for *_, outcome in records if outcome == "failed"),
            "wasted": wasted(requests),
            "upstream": sum(1 for r in requests if r.route in ("chat", "health")),
            "p50_s": percentile(latencies, 50),
            "p95_s": percentile(latencies, 95),
            "first_success_after_recovery_s": (min(after) - DOWN_S) if after else float("nan"),
        }
    return out


def table(title: str, rows: list[tuple[str, str]], data: dict[str, dict[str, Any]]) -> None:
    names = list(data)
    print(f"\n{title}")
    print(f"  {'':34}" + "".join(f"{n:>14}" for n in names))
    for label, key in rows:
        cells = []
        for name in names:
            value = data[name][key]
            cells.append(f"{value:>14.2f}" if isinstance(value, float) else f"{value:>14}")
        print(f"  {label:34}" + "".join(cells))


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--peer-python", required=True, help="python of the venv with LiteLLM")
    options = parser.parse_args(argv)
    pythons = {"ours": sys.executable, "litellm": options.peer_python}

    table(
        "overhead per request over raw httpx (ms)",
        [("mean", "mean_ms"), ("p50", "p50_ms")],
        overhead(pythons),
    )
    rows = [
        ("client successes", "successes"),
        ("degraded (built-in fallback)", "degraded"),
        ("client failures", "failures"),
        ("upstream calls wasted", "wasted"),
        ("upstream calls in all", "upstream"),
        ("p50 latency of successes (s)", "p50_s"),
        ("p95 latency of successes (s)", "p95_s"),
    ]
    table("chaos: 30 s, 8 clients, 429 / flapping 500 / healthy", rows, load(pythons, CHAOS, 30))
    table(
        "all down for the first 10 s, then healthy (25 s, 8 clients)",
        [*rows, ("first success after recovery (s)", "first_success_after_recovery_s")],
        load(pythons, ALL_DOWN, 25),
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
