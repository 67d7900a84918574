"""Graph checks: the workflow graph is built and checked — cycles not closed by a bounded
loop, loop targets that are not ancestors, detours (one declarer per target, a target that
can start), tie-breaker targets that are not edges, and every name a CEL expression or a
``context.requires`` reads must be something the run context will hold when the expression
is evaluated."""

from __future__ import annotations

from collections.abc import Callable

from engine.conditions import CEL_TYPE_NAMES, RUN_FIELDS, STEP_VIEW_FIELDS, TOP_LEVEL_NAMES
from engine.graph import WorkflowGraph
from engine.loader.expressions import Expression, column_in
from engine.loader.names import closest
from engine.loader.problems import Problems
from engine.loader.step_checks import StepIndex, routing_node
from engine.spec import StepSpec, WorkflowDefinition
from engine.steps import StepRegistry


def check_graph(
    problems: Problems, step_index: StepIndex, registry: StepRegistry, wf: WorkflowDefinition
) -> None:
    graph = WorkflowGraph.of(wf)  # kept: a run of the loaded definition starts from it
    cycles = graph.forward_cycles()
    for cycle in cycles:
        _report_cycle(problems, step_index, wf, cycle)
    if cycles:
        return
    for spec in wf.steps:
        routing = spec.routing
        if routing is None:
            continue
        origin = step_index.sources[spec.id].origin
        if routing.loop is not None:
            target = routing.loop.target
            if target != spec.id and not graph.is_upstream(spec.id, target):
                problems.add(
                    step_index.node(spec.id, "routing", "loop", "target"),
                    f"step '{spec.id}': loop target '{target}' is not upstream of '{spec.id}'; a loop goes back to a step it depends on, directly or through others — choose such a step{origin}",
                )
        if routing.detour is not None:
            declarer = graph.detour_declarer(routing.detour.target)
            if declarer is not None and declarer != spec.id:
                problems.add(
                    step_index.node(spec.id, "routing", "detour", "target"),
                    f"step '{spec.id}': '{routing.detour.target}' is already the detour target of '{declarer}'; a detour target serves one step — give this detour its own target{origin}",
                )
            blockers = graph.detour_blockers(spec.id, routing.detour.target)
            if blockers:
                problems.add(
                    step_index.node(spec.id, "routing", "detour", "target"),
                    f"step '{spec.id}': detour target '{routing.detour.target}' depends on {', '.join(repr(b) for b in blockers)}, which runs only after '{spec.id}', so the detour could never start — remove that dependency from '{routing.detour.target}' or declare the detour on a step after it{origin}",
                )
        tie = routing.tie_breaker
        if tie is not None:
            edges = routing.targets()
            for index, target in enumerate(tie.valid_targets):
                if target not in edges:
                    problems.add(
                        step_index.node(spec.id, "routing", "tie_breaker", "valid_targets", index),
                        f"step '{spec.id}': tie_breaker valid target '{target}' is not an edge of the graph; it may only choose among this step's routing targets ({', '.join(edges)}) — remove it from valid_targets{origin}",
                    )
    for expression in step_index.expressions:
        _check_references(problems, step_index, registry, wf, graph, expression)
        if expression.condition:
            _check_read_as_condition(problems, registry, wf, expression)
    for spec in wf.steps:
        if spec.context is None:
            continue
        for index, ref in enumerate(spec.context.requires):
            step_part = ref.partition(".")[0]
            if not graph.can_read(spec.id, step_part):
                problems.add(
                    step_index.node(spec.id, "context", "requires", index),
                    f"step '{spec.id}': context.requires '{ref}' is not upstream of '{spec.id}'; add '{step_part}' to depends_on or drop it{step_index.sources[spec.id].origin}",
                )


def _check_read_as_condition(
    problems: Problems, registry: StepRegistry, wf: WorkflowDefinition, expression: Expression
) -> None:
    """A condition that is one name whose type is declared — an input, a step's status or
    iteration, an output field of a step's output model — must be a boolean one."""
    compiled = expression.compiled
    if len(compiled.references) != 1 or compiled.text.strip() != str(compiled.references[0]):
        return
    path = compiled.references[0].path
    declared: str | None = None
    if path[0] == "inputs" and len(path) == 2 and path[1] in wf.inputs:
        declared = wf.inputs[path[1]].type
    elif path == ("iteration",) or (path[0] == "steps" and path[2:] == ("iteration",)):
        declared = "int"
    elif path[0] == "steps" and path[2:] == ("status",):
        declared = "string"
    elif path[0] == "steps" and len(path) == 4 and path[2] == "outputs":
        declared = _output_field_type(registry, wf, path[1], path[3])
    elif path[0] == "outputs" and len(path) == 2 and expression.step is not None:
        declared = _output_field_type(registry, wf, expression.step.id, path[1])
    if declared is None or declared == "bool":
        return
    problems.add(
        expression.node,
        f"{expression.where}: {compiled.text!r} is declared {declared}, never true or false;"
        f" compare it, e.g. {_EXAMPLES.get(path[-1], _EXAMPLES.get(declared, '{} > 0')).format(compiled.text)}",
    )


_EXAMPLES = {
    "status": "{} == 'SUCCEEDED'",
    "string": "{} == 'done'",
    "list": "size({}) > 0",
    "dict": "size({}) > 0",
}


def _output_field_type(
    registry: StepRegistry, wf: WorkflowDefinition, step_id: str, name: str
) -> str | None:
    """The declared type of a step's output field when it is one plain type, else None."""
    if step_id not in wf.step_ids:
        return None
    uses = wf.step(step_id).uses
    if uses not in registry:
        return None
    field = registry.get(uses).output_model.model_fields.get(name)
    plain = {bool: "bool", int: "int", float: "float", str: "string", list: "list", dict: "dict"}
    annotation = field.annotation if field is not None else None
    return plain.get(annotation) if isinstance(annotation, type) else None


def _report_cycle(
    problems: Problems,
    step_index: StepIndex,
    wf: WorkflowDefinition,
    cycle: list[tuple[str, str, frozenset[str]]],
) -> None:
    order = {step_id: index for index, step_id in enumerate(wf.step_ids)}
    source, target, kinds = max(cycle, key=lambda e: (order[e[0]] >= order[e[1]], order[e[0]]))
    start = cycle.index(next(e for e in cycle if e[0] == target))
    ordered = cycle[start:] + cycle[:start]
    path = " → ".join([e[0] for e in ordered] + [target])
    spec = wf.step(source)
    origin = step_index.sources[source].origin
    if "detour" in kinds:
        problems.add(
            step_index.node(source, "routing", "detour", "target"),
            f"step '{source}': detour target '{target}' is upstream of it (cycle {path}); a detour goes to a step that is not upstream — to go back, use routing.loop{origin}",
        )
    elif "route" in kinds:
        problems.add(
            routing_node(step_index, spec, target),
            f"step '{source}' routes back to '{target}' (cycle {path}); a cycle must be closed by a bounded loop: routing.loop: {{target: {target}, max_iterations: N}}{origin}",
        )
    else:
        dependent = wf.step(target)
        index = dependent.depends_on.index(source)
        problems.add(
            step_index.node(target, "depends_on", index),
            f"step '{target}' depends on '{source}', which is downstream of it (cycle {path}); a cycle must be closed by a bounded routing.loop{step_index.sources[target].origin}",
        )


def _check_references(
    problems: Problems,
    step_index: StepIndex,
    registry: StepRegistry,
    wf: WorkflowDefinition,
    graph: WorkflowGraph,
    expression: Expression,
) -> None:
    step = expression.step
    readable: Callable[[str], bool]
    if step is None:
        roots = {"inputs", "steps", "run"}
        readable = set(wf.step_ids).__contains__
    else:
        roots = (
            set(TOP_LEVEL_NAMES) if expression.routing else {"inputs", "steps", "iteration", "run"}
        )
        reader, routing = step.id, expression.routing

        def readable(other: str) -> bool:
            return graph.can_read(reader, other) or (routing and other == reader)

    for reference in expression.compiled.references:
        message = _reference_problem(
            step_index, registry, wf, reference.path, roots, readable, step, expression.routing
        )
        if message:
            origin = step_index.sources[step.id].origin if step else ""
            problems.add(
                column_in(expression.node, reference.column),
                f"{expression.where}: {message}{origin}",
            )


def _reference_problem(
    step_index: StepIndex,
    registry: StepRegistry,
    wf: WorkflowDefinition,
    path: tuple[str, ...],
    roots: set[str],
    readable: Callable[[str], bool],
    step: StepSpec | None,
    routing: bool,
) -> str | None:
    root = path[0]
    dotted = ".".join(path)
    if root in CEL_TYPE_NAMES and len(path) == 1:
        return None
    if root not in TOP_LEVEL_NAMES:
        return f"unknown name '{root}'{closest(root, TOP_LEVEL_NAMES)}; expressions read {', '.join(TOP_LEVEL_NAMES)}"
    if root not in roots:
        if root == "outputs":
            return "'outputs' (the step's own outputs) is only readable in routing expressions; read steps.<id>.outputs instead"
        return f"'{root}' is not available here; this expression reads {', '.join(sorted(roots))}"
    if len(path) == 1:
        return None
    second = path[1]
    if root == "inputs":
        if second not in wf.inputs:
            declared = ", ".join(wf.inputs) or "none are declared"
            return (
                f"'{dotted}': no input '{second}'{closest(second, wf.inputs)} (inputs: {declared})"
            )
    elif root == "iteration":
        return f"'{dotted}': iteration is a number; it has no fields"
    elif root == "run":
        if second not in RUN_FIELDS:
            return f"'{dotted}': run has {', '.join(RUN_FIELDS)}"
    elif root == "outputs":
        assert step is not None
        return _field_problem(registry, step, path[1:], dotted)
    elif root == "steps":
        if second not in step_index.sources:
            return f"'{dotted}': no step '{second}'{closest(second, step_index.sources)}"
        if not readable(second):
            where = f"'{step.id}'" if step else "the workflow"
            return f"'{dotted}': step '{second}' is not upstream of {where}; add it to depends_on or read it from a later step"
        if len(path) >= 3 and path[2] not in STEP_VIEW_FIELDS:
            return f"'{dotted}': a step has {', '.join(STEP_VIEW_FIELDS)}"
        if len(path) >= 4 and path[2] == "outputs":
            return _field_problem(registry, wf.step(second), path[3:], dotted)
    return None


def _field_problem(
    registry: StepRegistry, spec: StepSpec, fields: tuple[str, ...], dotted: str
) -> str | None:
    """An output field the step's output model can never have."""
    if not fields or spec.uses not in registry:
        return None
    model = registry.get(spec.uses).output_model
    if model.model_config.get("extra") == "allow":
        return None
    names = set(model.model_fields)
    names |= {info.alias for info in model.model_fields.values() if info.alias}
    if fields[0] in names:
        return None
    listing = ", ".join(sorted(model.model_fields)) or "none"
    return f"'{dotted}': the outputs of {spec.uses} have no field '{fields[0]}'{closest(fields[0], names)} (fields: {listing})"
