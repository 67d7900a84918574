"""`workbench registry …` and the shipped agent workflows, end to end in subprocesses, offline."""

from __future__ import annotations

import json
from pathlib import Path

from tests.cli.test_engine_cli import workbench
from workflows import WORKFLOWS_DIR


def test_registry_validate_list_and_show(tmp_path: Path) -> None:
    ok = workbench(tmp_path, "registry", "validate")
    assert ok.returncode == 0, ok.stderr
    assert ok.stdout.startswith("ok: 6 agents, 4 tools, 3 models, 1 policies")

    mine = tmp_path / "mine"
    (mine / "agents").mkdir(parents=True)
    bad = mine / "agents" / "bad.yaml"
    bad.write_text(
        "agents:\n  critic:\n    role: Criticises.\n    model: builtin\n"
        "    tools: [corpus_serch]\n    output: {verdict: {type: string}}\n"
    )
    problems = workbench(tmp_path, "registry", "validate", str(mine))
    assert problems.returncode == 1
    assert problems.stderr.splitlines()[0] == (
        f"{bad}:5:13: agent 'critic': unknown tool 'corpus_serch' (did you mean 'corpus_search'?)"
    )

    listed = workbench(tmp_path, "registry", "list", "--kind", "tools")
    assert listed.returncode == 0, listed.stderr
    for name in ("corpus_search", "document_read", "citation_check", "save_note"):
        assert name in listed.stdout

    shown = workbench(tmp_path, "registry", "show", "writer")
    assert shown.returncode == 0, shown.stderr
    header, _, body = shown.stdout.partition("\n")
    assert header.startswith("agent writer  (") and "research_assistant.yaml:" in header
    assert json.loads(body)["output"]["answer"] == "string (required)"
    missing = workbench(tmp_path, "registry", "show", "nobody")
    assert (missing.returncode, missing.stderr.strip()) == (
        2,
        "error: no agent, tool, model profile or policy named 'nobody'",
    )


def test_a_user_agent_in_the_workspace_runs_as_a_step(tmp_path: Path) -> None:
    (tmp_path / "agents").mkdir()
    (tmp_path / "agents" / "mine.yaml").write_text(
        "agents:\n  echoer:\n    role: Repeats the topic.\n    model: builtin\n"
        "    output: {topic: {type: string, required: true}}\n"
    )
    flow = tmp_path / "flow.yaml"
    flow.write_text(
        "name: mine\ninputs: {topic: {type: string, default: owls}}\nsteps:\n"
        "  - {id: echo, uses: agent.echoer, inputs: {topic: 'inputs.topic'}}\n"
        "outputs: {topic: 'steps.echo.outputs.topic'}\n"
    )
    done = workbench(tmp_path, "run", str(flow), "--headless")
    assert done.returncode == 0, done.stderr + done.stdout
    assert 'outputs: {"topic": "owls"}' in done.stdout


def test_the_advisory_research_assistant_answers_offline(tmp_path: Path) -> None:
    done = workbench(
        tmp_path,
        "run",
        str(WORKFLOWS_DIR / "research_assistant.yaml"),
        "--headless",
        "-i",
        "question=How does the json module encode Python objects?",
    )
    assert done.returncode == 0, done.stderr + done.stdout
    run_id = done.stdout.split("run ")[-1].split(":")[0].strip()
    exported = workbench(tmp_path, "runs", "export", run_id)
    events = [json.loads(line) for line in exported.stdout.splitlines()]
    finished = next(e for e in events if e["kind"] == "run_finished")
    assert finished["status"] == "COMPLETED"
    assert finished["outputs"]["agents"] == ["searcher", "reader", "fact_checker", "writer"]
    assert len(finished["outputs"]["answer"]) > 100
    names = [e["name"] for e in events if e["kind"] == "domain"]
    assert names.count("advisory.decision") == 5
    tools = [
        e["payload"]["tool"]
        for e in events
        if e["kind"] == "domain" and e["name"] == "agent.observation"
    ]
    assert tools == ["corpus_search", "document_read", "citation_check"]
    checked = next(
        e["payload"]["observation"]
        for e in events
        if e["kind"] == "domain"
        and e["name"] == "agent.observation"
        and e["payload"]["tool"] == "citation_check"
    )
    assert '"verified": true' in checked, "the quoted passage is in the document it cites"


def test_the_governed_workflow_waits_for_approval_showing_the_tool_call(tmp_path: Path) -> None:
    flow = str(WORKFLOWS_DIR / "governed_note.yaml")
    waiting = workbench(
        tmp_path, "run", flow, "--headless", "--on-interrupt", "wait", "-i", "question=json"
    )
    assert waiting.returncode == 4, waiting.stderr + waiting.stdout
    assert "note_taker wants to run save_note(text=" in waiting.stdout.replace("\n", "")
    assert not list((tmp_path / "runs").glob("*/*.md")), "nothing written before approval"
    approved = workbench(
        tmp_path, "run", flow, "--headless", "--on-interrupt", "default", "-i", "question=json"
    )
    assert approved.returncode == 0, approved.stderr + approved.stdout
    notes = list((tmp_path / "runs").glob("*/*.md"))
    assert len(notes) == 1 and notes[0].read_text().strip()
