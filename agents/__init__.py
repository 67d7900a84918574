"""Agents, tools, model profiles and governance policies as files (ADR set 002, AgentMesh).

``registry`` holds the validated definitions, ``registry_loader`` reads them
from YAML with ``file:line:col`` problems, ``governance`` checks every call an
agent is about to make against the loaded policies, ``react`` runs one agent's
bounded think → act → observe loop over ``StepContext.llm``, ``advisory`` is
the orchestrator of ``mode: advisory`` workflows, and ``registration`` puts
agents into the step registry as ``agent.NAME`` (and ``mode: advisory`` beside them). A
package of its own on the engine's step API (DESIGN §1: research above agents above engine
and router): the engine knows nothing of it, models are reached through ``StepContext.llm``
and tools through implementations other packages register.
"""
