"""Research step implementations; importing this package registers them all.

Registering a step (and so checking a workflow, `workbench validate`) needs only its name and
its input and output models. Each step therefore imports what only running it needs — the
model pipeline (``research.pipeline``, which reaches the router and the built-in extractive
model), the task schemas (``research.tasks``) and the event payloads (``research.events``) —
inside its function, when it first runs; its models and the research state they carry are
imported with the module (`tests/cli/test_lazy_commands.py` checks both).
"""

from research.steps import analysis, delivery, intake, retrieval, supervision, verification

__all__ = ["analysis", "delivery", "intake", "retrieval", "supervision", "verification"]
