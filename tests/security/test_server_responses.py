"""A model's answer is hostile too: a malicious OpenAI-compatible server on loopback (the router's
fault server, its answers written by the test) plans a research question with a sub-question
carrying the payload, and the real `workbench run --headless` in a pseudo-terminal shows it as
text and sends none of its codes.

(The router keeps a server's error bodies out of what it reports — `providers check` says
``HTTP 503`` — so what a server writes reaches the person through the answers.)
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from research.extractive import scope
from router.fault.server import FaultServer
from tests.security.conftest import (
    PAYLOAD,
    assert_no_raw_payload,
    in_terminal,
)
from tests.security.test_terminal_escapes import screen_of
from tests.tui.terminal import PROCESS_S

KEY_ENV = "SEC_HOSTILE_KEY"


def hostile_plan(task: str, inputs: dict[str, Any], raw: dict[str, Any]) -> dict[str, Any]:
    """The built-in planner's plan, its second sub-question the payload."""
    assert task == "research.scope", task
    plan = scope(inputs).model_dump(mode="json")
    plan["sub_questions"][1]["text"] = f"Why {PAYLOAD}?"
    return plan


def plan_only(folder: Path) -> Path:
    path = folder / "plan_only.yaml"
    data = {
        "name": "plan_only",
        "inputs": {"query": {"type": "string", "required": True}},
        "steps": [
            {"id": "plan", "uses": "research.intake_scope", "inputs": {"query": "inputs.query"}}
        ],
        "outputs": {"asked": "steps.plan.outputs.sub_questions[1].text"},
    }
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    return path


@pytest.mark.timeout(PROCESS_S)
async def test_a_model_s_hostile_sub_question_reaches_a_headless_run_as_text(
    tmp_path: Path,
) -> None:
    async with FaultServer(responder=hostile_plan) as server:
        provider = {
            "name": "hostile",
            "kind": "openai",
            "base_url": f"{server.url('openai')}/v1",
            "model": "m",
            "api_key_env": KEY_ENV,
        }
        (tmp_path / "config.yaml").write_text(
            yaml.safe_dump({"router": {"providers": [provider]}}), encoding="utf-8"
        )
        args = ["run", str(plan_only(tmp_path)), "--headless"]
        args += ["--input", "query=How does the event loop schedule callbacks?"]
        written = await asyncio.to_thread(
            in_terminal, tmp_path, *args, env={KEY_ENV: "sk-loopback-not-a-secret"}
        )
    assert written.exit_code == 0, written.text
    assert_no_raw_payload(written.output, "run --headless (a model's answer)")
    shown = screen_of(written).replace("\n", "")
    # the outputs are printed as JSON: C0 controls as JSON escapes, the rest shown by the console
    for visible in (
        "Why SEC-CLIP\\u001b]52;c;",
        "SEC-BELL\\u0007",
        "SEC-C1<U+009B>31m",
        "<U+202E>RTL",
    ):
        assert visible in shown, f"{visible} not in {shown}"
    assert json.dumps("sk-loopback-not-a-secret") not in written.text
