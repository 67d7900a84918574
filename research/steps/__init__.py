"""Research step implementations; importing this package registers them all.

Registering a step (and so checking a workflow, `workbench validate`) needs only its name and
its input and output models. Each step therefore imports what it runs — the model pipeline
(``research.pipeline``, which reaches the router and the built-in extractive model) and the
task schemas (``research.tasks``) — inside its function, when it first runs; its models and
the research state they carry are imported with the module.
"""

from research.steps import analysis, delivery, intake, retrieval, supervision, verification

__all__ = ["analysis", "delivery", "intake", "retrieval", "supervision", "verification"]
