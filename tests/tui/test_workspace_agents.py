"""The agent registry travels inside the Workspace object: each workspace sees its own agents,
reads them once, and nothing is kept in a module-level "current workspace"."""

from __future__ import annotations

import uuid
from pathlib import Path

from tui.launch.workbench import Workbench
from tui.launch.workspace import Workspace


def with_agent(folder: Path, name: str) -> Path:
    """``folder`` as a workspace holding one user agent ``name``."""
    (folder / "agents").mkdir(parents=True, exist_ok=True)
    (folder / "agents" / f"{name}.yaml").write_text(
        f"agents:\n  {name}:\n    role: Repeats the topic.\n    model: builtin\n"
        "    output: {topic: {type: string, required: true}}\n",
        encoding="utf-8",
    )
    return folder


def unique(prefix: str) -> str:
    """An agent name no other test registers (the engine's step registry is per process)."""
    return f"{prefix}_{uuid.uuid4().hex[:8]}"


def test_each_workspace_object_reads_its_own_agents_once(tmp_path: Path) -> None:
    first_name, second_name, later_name = unique("first"), unique("second"), unique("later")
    first = Workspace.named(with_agent(tmp_path / "one", first_name))
    second = Workspace.named(with_agent(tmp_path / "two", second_name))

    assert first_name in first.agent_registry.registry.agents
    assert second_name not in first.agent_registry.registry.agents
    assert second_name in second.agent_registry.registry.agents
    assert first_name not in second.agent_registry.registry.agents

    with_agent(first.root, later_name)
    assert later_name not in first.agent_registry.registry.agents  # read once, kept
    assert later_name in Workspace.named(first.root).agent_registry.registry.agents


def test_the_apps_workflows_use_the_agents_of_its_own_workspace(tmp_path: Path) -> None:
    name = unique("echoer")
    flow = (
        f"name: uses_{name}\ninputs: {{topic: {{type: string, default: owls}}}}\nsteps:\n"
        f"  - {{id: echo, uses: agent.{name}, inputs: {{topic: 'inputs.topic'}}}}\n"
    )
    without, holding = tmp_path / "without", with_agent(tmp_path / "holding", name)
    for workspace in (without, holding):
        (workspace / "workflows").mkdir(parents=True)
        (workspace / "workflows" / "flow.yaml").write_text(flow, encoding="utf-8")

    # the workspace lacking the agent first: its refusal cannot come from a later registration
    refused = Workbench(workspace=without, shipped_dir=tmp_path / "none").workflows()
    accepted = Workbench(workspace=holding, shipped_dir=tmp_path / "none").workflows()

    assert [(e.name, e.definition is None) for e in refused] == [("flow", True)]
    assert f"agent.{name}" in refused[0].error
    assert [(e.name, e.error) for e in accepted] == [(f"uses_{name}", "")]
