"""Issue 11: a person must never mistake the offline model's work for the configured provider's.
When a remote provider is configured but unreachable, the built-in model answers — and the
headless run says so per step and in its final summary."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from .test_engine_cli import workbench

pytestmark = pytest.mark.timeout(300)

AGENT = (
    "agents:\n  echoer:\n    role: Repeats the topic.\n    model: fast\n"
    "    output: {topic: {type: string, required: true}}\n"
)
FLOW = (
    "name: mine\ninputs: {topic: {type: string, default: owls}}\nsteps:\n"
    "  - {id: echo, uses: agent.echoer, inputs: {topic: 'inputs.topic'}}\n"
    "  - {id: again, uses: agent.echoer, depends_on: [echo], inputs: {topic: 'inputs.topic'}}\n"
    "outputs: {topic: 'steps.again.outputs.topic'}\n"
)
# Port 9 (discard) on loopback: nothing listens, so every call to it is refused at once.
UNREACHABLE = (
    "router:\n  providers:\n    - name: remote\n      kind: ollama\n"
    "      base_url: http://127.0.0.1:9/v1\n      models: {1: m, 2: m, 3: m}\n"
    "      timeout_s: 2\n"
)
SUMMARY = re.compile(
    r"(\d+) of (\d+) model answers came from the built-in fallback \(steps: echo, again\)"
)


def workspace(tmp_path: Path, router: str) -> tuple[Path, Path]:
    (tmp_path / "agents").mkdir()
    (tmp_path / "agents" / "mine.yaml").write_text(AGENT)
    flow = tmp_path / "flow.yaml"
    flow.write_text(FLOW)
    config = tmp_path / "config.yaml"
    config.write_text(router)
    return flow, config


def test_answers_of_the_built_in_fallback_are_disclosed(tmp_path: Path) -> None:
    flow, config = workspace(tmp_path, UNREACHABLE)
    done = workbench(tmp_path, "--config", str(config), "run", str(flow), "--headless")
    assert done.returncode == 0, done.stderr + done.stdout
    assert "from the built-in fallback," in done.stdout  # on each step's finished line
    found = SUMMARY.search(done.stdout)
    assert found is not None, done.stdout
    fallback, answers = int(found[1]), int(found[2])
    assert 2 <= fallback <= answers


def test_no_disclosure_when_the_built_in_model_is_the_only_provider(tmp_path: Path) -> None:
    flow, config = workspace(tmp_path, "router:\n  providers: []\n")
    done = workbench(tmp_path, "--config", str(config), "run", str(flow), "--headless")
    assert done.returncode == 0, done.stderr + done.stdout
    assert "built-in fallback" not in done.stdout
