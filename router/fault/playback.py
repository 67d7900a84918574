"""Where each provider prefix is in its script: the fault its next request meets."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from router.fault.script import Fault, ProviderScript


@dataclass(slots=True)
class ProviderState:
    script: ProviderScript
    started: float
    scale: float
    sequence: list[Fault] = field(default_factory=list)
    cursor: int = 0
    in_flight: int = 0
    max_in_flight: int = 0
    window: deque[tuple[float, int]] = field(default_factory=deque)

    def __post_init__(self) -> None:
        self.sequence = self.script.expanded_sequence()

    def _phase_fault(self, now: float) -> Fault:
        phases = self.script.phases
        elapsed = (now - self.started) / self.scale
        total = sum(p.for_s for p in phases)
        if self.script.repeat:
            elapsed %= total
        for phase in phases:
            if elapsed < phase.for_s:
                return phase.fault
            elapsed -= phase.for_s
        return self.script.then

    def peek(self, now: float) -> Fault:
        if self.script.fault is not None:
            return self.script.fault
        if self.script.phases:
            return self._phase_fault(now)
        if self.cursor < len(self.sequence):
            return self.sequence[self.cursor]
        return self.script.then

    def next_chat_fault(self, now: float) -> Fault:
        fault = self.peek(now)
        if (
            self.script.fault is None
            and not self.script.phases
            and self.cursor < len(self.sequence)
        ):
            self.cursor += 1
        return fault

    def health_fault(self, now: float) -> Fault:
        if isinstance(self.script.health, Fault):
            return self.script.health
        current = self.peek(now)
        if current.kind in ("down", "timeout") or (
            current.kind == "error"
            and current.status
            and (current.status >= 500 or current.status in (401, 403))
        ):
            return current
        return Fault()


def describe_fault(fault: Fault | None) -> str:
    if fault is None:
        return "unknown-endpoint"
    if fault.kind == "error":
        return f"error-{529 if fault.overloaded else fault.status}"
    return fault.kind
