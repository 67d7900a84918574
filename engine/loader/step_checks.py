"""Step checks: each step read against the spec models, its names and references checked,
its CEL compiled, its routing's shape checked."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from itertools import chain

from pydantic import TypeAdapter, ValidationError

from engine.conditions import CelEvaluationError, CompiledExpr
from engine.loader.expressions import Expression, compile_checked
from engine.loader.finite import check_finite
from engine.loader.located_yaml import Node
from engine.loader.names import closest, identifier_problem, is_identifier, loc_text
from engine.loader.problems import Problems
from engine.loader.templates import StepSource
from engine.loader.validation import report_validation
from engine.spec import StepSpec
from engine.steps import StepRegistry


@dataclass
class StepIndex:
    """The steps read so far, by id, with where each was written; and every CEL expression
    compiled (for the graph-stage reference checks)."""

    sources: dict[str, StepSource] = field(default_factory=dict)
    expressions: list[Expression] = field(default_factory=list)

    def node(self, step_id: str, *path: str | int) -> Node:
        """The deepest node on ``path`` under the step's YAML."""
        return descend(self.sources[step_id].node, *path)

    def origin(self, step_id: str) -> str:
        return self.sources[step_id].origin


def read_steps(
    problems: Problems, sources: list[StepSource], registry: StepRegistry
) -> tuple[list[StepSpec], StepIndex]:
    """Every step that validates, and the index of all of them."""
    step_index = StepIndex()
    steps = [spec for spec in (_step(problems, step_index, s) for s in sources) if spec is not None]
    _check_ids(problems, step_index, registry, steps)
    _check_step_fields(problems, step_index, registry, steps)
    return steps, step_index


def _step(problems: Problems, step_index: StepIndex, source: StepSource) -> StepSpec | None:
    node = source.node
    id_node = node.get("id")
    if id_node is None:
        problems.add(node, f"step has no 'id'; add id: NAME{source.origin}")
        return None
    if not is_identifier(id_node.value):
        problems.add(id_node, identifier_problem(id_node.value, "step id") + source.origin)
        return None
    step_id = id_node.value
    if step_id in step_index.sources:
        first = step_index.sources[step_id].node.get("id")
        line = first.line if first else step_index.sources[step_id].node.line
        problems.add(
            id_node,
            f"duplicate step id '{step_id}' (first defined at line {line}); rename one of them{source.origin}",
        )
        return None
    step_index.sources[step_id] = source
    ok = _check_identifier_lists(problems, node, source)
    prefix = f"step '{step_id}': "
    config = node.get("config")
    if config is not None and config.is_map:  # else the model refuses it: one problem says so
        check_finite(problems, config, "config", prefix, source.origin)
    data = node.plain()
    if source.group is not None:
        data["group"] = source.group
    try:
        spec = StepSpec.model_validate(data)
    except ValidationError as error:
        report_validation(
            problems,
            error,
            node,
            StepSpec,
            prefix=prefix,
            suffix=source.origin,
            skip_patterns=not ok,
        )
        return None
    return spec if ok else None


def _check_identifier_lists(problems: Problems, node: Node, source: StepSource) -> bool:
    """Step references written as non-identifiers get the identifier explanation."""
    ok = True
    walks = [child.walk(key) for key, child in node.value.items() if key in _REFERRING]
    for path, child in chain.from_iterable(walks):
        if not references_a_step(path):
            continue
        if isinstance(child.value, (str, int, float, bool)) and not is_identifier(child.value):
            problems.add(child, identifier_problem(child.value, "step reference") + source.origin)
            ok = False
    return ok


def _check_ids(
    problems: Problems, step_index: StepIndex, registry: StepRegistry, steps: list[StepSpec]
) -> None:
    """uses must be registered; every step a step names must exist."""
    known = set(step_index.sources)
    for spec in steps:
        source = step_index.sources[spec.id]
        if spec.uses not in registry:
            registered = registry.names()
            hint = closest(spec.uses, registered)
            listing = (
                f" (registered: {', '.join(registered[:12])}{', ...' if len(registered) > 12 else ''})"
                if not hint
                else ""
            )
            problems.add(
                source.node.get("uses"),
                f"step '{spec.id}': unknown step implementation '{spec.uses}' in uses{hint}{listing}{source.origin}",
            )
        for index, dependency in enumerate(spec.depends_on):
            at = step_index.node(spec.id, "depends_on", index)
            if dependency == spec.id:
                problems.add(
                    at,
                    f"step '{spec.id}' depends on itself; remove it from depends_on{source.origin}",
                )
            elif dependency not in known:
                problems.add(
                    at,
                    f"step '{spec.id}': depends_on names unknown step '{dependency}'{closest(dependency, known)}{source.origin}{_first_hint(source, dependency)}",
                )
        for path, target in routing_references(spec):
            at = step_index.node(spec.id, *path)
            if target not in known:
                problems.add(
                    at,
                    f"step '{spec.id}': {loc_text(path)} names unknown step '{target}'{closest(target, known)}{source.origin}{_first_hint(source, target)}",
                )


def _first_hint(source: StepSource, target: str) -> str:
    if source.template is None or not re.search(r"(?<![0-9])0$|-\d+$", target):
        return ""
    return "; use first: to override keys for the first instance"


def _check_step_fields(
    problems: Problems, step_index: StepIndex, registry: StepRegistry, steps: list[StepSpec]
) -> None:
    for spec in steps:
        origin = step_index.sources[spec.id].origin
        prefix = f"step '{spec.id}'"
        if spec.when is not None:
            compile_checked(
                problems,
                step_index.expressions,
                spec.when,
                step_index.node(spec.id, "when"),
                f"{prefix} when",
                spec,
                condition=True,
            )
        for name, expr in spec.inputs.items():
            at = step_index.node(spec.id, "inputs", name)
            compiled = compile_checked(
                problems, step_index.expressions, expr, at, f"{prefix} inputs.{name}", spec
            )
            if compiled is not None and not compiled.references:
                _check_constant_input(problems, registry, spec, name, compiled, at, origin)
        _check_input_names(problems, step_index, registry, spec, origin)
        if spec.context is not None:
            for index, ref in enumerate(spec.context.requires):
                step_part, _, field_part = ref.partition(".")
                if not is_identifier(step_part) or (
                    field_part and not field_part.replace(".", "_").isidentifier()
                ):
                    problems.add(
                        step_index.node(spec.id, "context", "requires", index),
                        f"{prefix}: context.requires entry '{ref}' must be a step id or step.field{origin}",
                    )
                elif step_part not in step_index.sources:
                    problems.add(
                        step_index.node(spec.id, "context", "requires", index),
                        f"{prefix}: context.requires names unknown step '{step_part}'{closest(step_part, step_index.sources)}{origin}",
                    )
        if spec.routing is not None:
            _check_routing_shape(problems, step_index, spec, origin)


def _check_constant_input(
    problems: Problems,
    registry: StepRegistry,
    spec: StepSpec,
    name: str,
    compiled: CompiledExpr,
    at: Node,
    origin: str,
) -> None:
    """An input that reads nothing is a constant: evaluate it now and check it against the
    step's input model, so a value that would fail the step at run time is refused here."""
    try:
        value = compiled.evaluate({})
    except CelEvaluationError as error:
        problems.add(
            at,
            f"step '{spec.id}': inputs.{name} ({compiled.text}) cannot be evaluated: {error};"
            f" fix the expression{origin}",
        )
        return
    if spec.uses not in registry:
        return
    fields = registry.get(spec.uses).input_model.model_fields
    field = fields.get(name) or next((info for info in fields.values() if info.alias == name), None)
    if field is None or field.annotation is None:
        return
    try:
        TypeAdapter(field.annotation).validate_python(value)
    except ValidationError as error:
        reason = error.errors()[0].get("msg", "invalid value")
        problems.add(
            at,
            f"step '{spec.id}': inputs.{name} is always {value!r}, which {spec.uses} refuses"
            f" ({reason}); give a value of the type it takes{origin}",
        )


def _check_input_names(
    problems: Problems, step_index: StepIndex, registry: StepRegistry, spec: StepSpec, origin: str
) -> None:
    """``inputs`` must give every required field of the step's input model, and no field it lacks."""
    if spec.uses not in registry:
        return
    model = registry.get(spec.uses).input_model
    fields = model.model_fields
    accepted = set(fields) | {info.alias for info in fields.values() if info.alias}
    if model.model_config.get("extra") != "allow":
        for name in spec.inputs:
            if name not in accepted:
                problems.add(
                    step_index.node(spec.id, "inputs").key_mark(name),
                    f"step '{spec.id}': {spec.uses} takes no input '{name}'{closest(name, accepted)}"
                    f" (inputs: {', '.join(fields) or 'none'}); remove it{origin}",
                )
    missing = [
        name
        for name, info in fields.items()
        if info.is_required()
        and name not in spec.inputs
        and (info.alias or name) not in spec.inputs
    ]
    if missing:
        at = step_index.node(spec.id, "inputs") if spec.inputs else step_index.node(spec.id, "uses")
        problems.add(
            at,
            f"step '{spec.id}': {spec.uses} needs input {', '.join(repr(m) for m in missing)}"
            f"; give it under inputs:{origin}",
        )


def _check_routing_shape(
    problems: Problems, step_index: StepIndex, spec: StepSpec, origin: str
) -> None:
    routing = spec.routing
    assert routing is not None
    prefix = f"step '{spec.id}'"
    at_kind = step_index.node(spec.id, "routing", "kind")
    if routing.kind == "loop" and routing.loop is None:
        problems.add(
            at_kind,
            f"{prefix}: kind: loop needs routing.loop: {{target: ..., max_iterations: N}}{origin}",
        )
    if routing.kind == "branch" and not routing.branches:
        problems.add(
            at_kind,
            f"{prefix}: kind: branch needs routing.branches: {{VALUE: step, ...}}{origin}",
        )
    if routing.branches and routing.kind != "branch":
        problems.add(
            step_index.node(spec.id, "routing", "branches"),
            f"{prefix}: branches are only read with kind: branch (kind is {routing.kind}){origin}",
        )
    if routing.kind == "conditional" and not routing.conditions and routing.tie_breaker is None:
        problems.add(
            at_kind, f"{prefix}: kind: conditional needs conditions (or a tie_breaker){origin}"
        )
    for target in (
        [c.target for c in routing.conditions] + list(routing.branches.values()) + [routing.next]
    ):
        if target == spec.id and not (routing.loop and routing.loop.target == spec.id):
            problems.add(
                routing_node(step_index, spec, target),
                f"{prefix} routes to itself; a step that repeats needs routing.loop: {{target: {spec.id}, max_iterations: N}}{origin}",
            )
            break
    detour = routing.detour
    if detour is not None:
        at = step_index.node(spec.id, "routing", "detour", "target")
        if detour.target == spec.id:
            problems.add(
                at,
                f"{prefix} detours to itself; a detour goes to another step and returns{origin}",
            )
        elif routing.loop is not None and detour.target == routing.loop.target:
            problems.add(
                at,
                f"{prefix}: detour target '{detour.target}' is also the loop target; a step is either a loop's or a detour's target{origin}",
            )
        elif detour.target == routing.next:
            problems.add(
                at,
                f"{prefix}: detour target '{detour.target}' is also routing.next; a detour returns and the default edge does not — use different steps{origin}",
            )
        if detour.when is not None:
            compile_checked(
                problems,
                step_index.expressions,
                detour.when,
                step_index.node(spec.id, "routing", "detour", "when"),
                f"{prefix} routing.detour.when",
                spec,
                routing=True,
                condition=True,
            )
    for index, condition in enumerate(routing.conditions):
        compile_checked(
            problems,
            step_index.expressions,
            condition.expr,
            step_index.node(spec.id, "routing", "conditions", index, "expr"),
            f"{prefix} routing.conditions[{index}]",
            spec,
            routing=True,
            condition=True,
        )
    if routing.terminate_when is not None:
        compile_checked(
            problems,
            step_index.expressions,
            routing.terminate_when,
            step_index.node(spec.id, "routing", "terminate_when"),
            f"{prefix} routing.terminate_when",
            spec,
            routing=True,
            condition=True,
        )
    if routing.kind == "branch":
        compile_checked(
            problems,
            step_index.expressions,
            routing.branch_on,
            step_index.node(spec.id, "routing", "branch_on")
            if "branch_on" in routing.model_fields_set
            else step_index.node(spec.id, "routing", "kind"),
            f"{prefix} routing.branch_on",
            spec,
            routing=True,
        )
    tie = routing.tie_breaker
    if tie is not None and routing.kind == "linear":
        problems.add(
            step_index.node(spec.id, "routing", "tie_breaker"),
            f"{prefix}: a tie_breaker is never asked with kind: linear, which always takes"
            f" routing.next; remove tie_breaker or use kind: conditional{origin}",
        )
    elif tie is not None and tie.enabled:
        at = step_index.node(spec.id, "routing", "tie_breaker")
        if routing.next is None:
            problems.add(
                at,
                f"{prefix}: a tie_breaker needs routing.next, the default edge it falls back to{origin}",
            )
        offered = tie.valid_targets or routing.targets()
        if len(set(offered)) < 2:
            problems.add(
                at,
                f"{prefix}: a tie_breaker needs at least two targets to choose between (has {', '.join(offered) or 'none'}){origin}",
            )


def routing_node(step_index: StepIndex, spec: StepSpec, target: str) -> Node:
    for path, value in routing_references(spec):
        if value == target:
            return step_index.node(spec.id, *path)
    return step_index.node(spec.id, "routing")


def descend(node: Node, *path: str | int) -> Node:
    """The deepest node that exists along ``path`` from ``node``."""
    for part in path:
        child = node.get(part)
        if child is None:
            break
        node = child
    return node


_REFERRING = ("depends_on", "routing")
"""The sections of a step where :func:`references_a_step` finds names of steps."""


def references_a_step(path: str) -> bool:
    """Dotted paths in a step whose scalar names another step."""
    parts = path.split(".")
    if parts[:1] == ["depends_on"] and len(parts) == 2:
        return True
    if parts[:1] != ["routing"] or len(parts) < 2:
        return False
    tail = parts[1:]
    return (
        tail == ["next"]
        or (tail[0] == "conditions" and len(tail) == 3 and tail[2] == "target")
        or (tail[0] == "branches" and len(tail) == 2)
        or tail in (["loop", "target"], ["detour", "target"])
        or (tail[:2] == ["tie_breaker", "valid_targets"] and len(tail) == 3)
    )


def routing_references(spec: StepSpec) -> list[tuple[tuple[str | int, ...], str]]:
    """(path under the step, target) for every step a step's routing names."""
    routing = spec.routing
    if routing is None:
        return []
    found: list[tuple[tuple[str | int, ...], str]] = []
    if routing.next is not None:
        found.append((("routing", "next"), routing.next))
    found += [
        (("routing", "conditions", i, "target"), c.target) for i, c in enumerate(routing.conditions)
    ]
    found += [(("routing", "branches", key), target) for key, target in routing.branches.items()]
    if routing.loop is not None:
        found.append((("routing", "loop", "target"), routing.loop.target))
    if routing.detour is not None:
        found.append((("routing", "detour", "target"), routing.detour.target))
    if routing.tie_breaker is not None:
        found += [
            (("routing", "tie_breaker", "valid_targets", i), t)
            for i, t in enumerate(routing.tie_breaker.valid_targets)
        ]
    return found
