"""Agent and advisory events, folded into the run's view (tui/app/run_state.py).

Every ``agent.*`` and ``advisory.*`` event adds a line to the trail of the step
that emitted it, which the step detail shows. In an advisory run each
decision to invoke an agent adds a node to the DAG — ``searcher#1`` — joined
to the node before it, so the graph grows as the orchestrator decides; the
agent's thoughts and observations are that node's trail, and its finish
settles the node.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from engine.events import Domain
from engine.states import StepStatus

AGENT_STATUS = {
    "completed": StepStatus.SUCCEEDED,
    "incomplete": StepStatus.SUCCEEDED,
    "refused": StepStatus.FAILED,
}


@dataclass
class AdvisoryGraph:
    """Where each advisory step's grown nodes stand: the last node, and each agent's node."""

    last: dict[str, str] = field(default_factory=dict)
    current: dict[tuple[str, str], str] = field(default_factory=dict)
    """(orchestrator step, agent) → the node of its latest invocation."""


def node_id(agent: str, invocation: int) -> str:
    return f"{agent}#{invocation}"


def trail_line(e: Domain) -> str:
    p: dict[str, Any] = e.payload
    if e.name == "agent.thought":
        action = p.get("action", "")
        act = f"{p.get('tool')}({_args(p.get('args') or {})})" if action == "tool" else action
        cut = p.get("context", {}).get("truncated") or []
        dropped = p.get("context", {}).get("dropped") or []
        note = ""
        if cut or dropped:
            names = [c.get("ref", "") for c in cut] + [f"-{d}" for d in dropped]
            note = f" [context cut: {', '.join(names)}]"
        unreadable = f" unreadable: {p['unreadable']}" if p.get("unreadable") else ""
        return f"{p.get('agent')} {p.get('iteration')}. thought: {p.get('thought', '')} → {act}{unreadable}{note}"
    if e.name == "agent.observation":
        refused = f" REFUSED ({p['refused']})" if p.get("refused") else ""
        return f"{p.get('agent')} {p.get('iteration')}. observed{refused}: {p.get('observation', '')[:300]}"
    if e.name == "agent.finished":
        return f"{p.get('agent')} {p.get('status')} after {p.get('iterations')} turn(s): {p.get('reason', '')}"
    if e.name == "advisory.decision":
        fallback = f" (fallback: {p.get('reason')})" if p.get("fallback") else ""
        return (
            f"decision {p.get('iteration')}: {p.get('chosen')}{fallback} — {p.get('thought', '')}"
        )
    if e.name == "advisory.plan":
        return f"plan {'approved' if p.get('approved') else 'rejected'}: {', '.join(p.get('plan', []))}"
    return f"{e.name}: {p}"


def _args(args: dict[str, Any]) -> str:
    text = ", ".join(f"{k}={v!r}" for k, v in args.items())
    return text if len(text) <= 80 else text[:79] + "…"


def fold(
    e: Domain,
    graph: AdvisoryGraph,
    step: Callable[[str], Any],
    add_edge: Callable[[str, str], None],
) -> bool:
    """Apply one agent/advisory event; returns whether the graph grew. ``step(id)`` gets
    (or creates) a step view; ``add_edge(source, target)`` adds a drawn edge."""
    if e.step_id is None:
        return False
    line = trail_line(e)
    owner = step(e.step_id)
    owner.trail.append(line)
    p = e.payload
    if e.name == "advisory.decision" and str(p.get("chosen", "")).startswith("invoke "):
        agent = str(p["chosen"]).removeprefix("invoke ")
        previous = graph.current.get((e.step_id, agent))
        invocation = int(previous.rsplit("#", 1)[1]) + 1 if previous else 1
        node = node_id(agent, invocation)
        view = step(node)
        view.uses, view.status, view.group = f"agent.{agent}", StepStatus.RUNNING, None
        view.trail.append(line)
        add_edge(graph.last.get(e.step_id, e.step_id), node)
        graph.last[e.step_id] = node
        graph.current[(e.step_id, agent)] = node
        return True
    worker = p.get("agent")
    grown = graph.current.get((e.step_id, str(worker))) if worker else None
    if grown is None:
        return False
    view = step(grown)
    view.trail.append(line)
    if e.name == "agent.finished":
        view.status = AGENT_STATUS.get(str(p.get("status")), StepStatus.SUCCEEDED)
        view.tokens = int(p.get("tokens") or 0)
        view.iteration = int(p.get("iterations") or 0)
    return False
