"""Loading a workflow (DESIGN §3): YAML with line numbers → templates → specs → checks.

``load_workflow`` either returns a ``WorkflowDefinition`` that the engines can
run without meeting a problem the loader could have seen, or raises
``WorkflowLoadError`` listing every problem as ``file:line:col: message``.
Nothing else escapes, whatever the file holds.

Stages, each reporting every problem it finds into one :class:`Problems`
collector before the next runs:

1. **Read** (located_yaml.py): the YAML is parsed event by event into located nodes (1-based
   line/column on every value and key), under the limits of every YAML file the product reads
   (plumbing/yaml_reading.py). Aliases, a second document, nesting deeper than
   ``MAX_DEPTH``, tags other than the plain scalar ones, duplicate keys and files larger than
   ``MAX_BYTES`` are refused.
2. **Shape**: templates are expanded (templates.py), every step and the workflow's other
   sections are validated against the spec models (step_checks.py, sections.py), ids are checked to be
   identifiers, names to be known, CEL to compile.
3. **Graph** (graph_checks.py): the workflow graph is built and checked: cycles not closed by a
   bounded loop, loop targets that are not ancestors, detours, tie-breaker
   targets that are not edges, and every name a CEL expression or a
   ``context.requires`` reads must be something the run context will hold
   when the expression is evaluated.
"""

from __future__ import annotations

from pathlib import Path

from engine.errors import Problem, WorkflowLoadError
from engine.loader.graph_checks import check_graph
from engine.loader.located_yaml import Node, YamlReader
from engine.loader.modes import MODE_KEY, mode_keys, mode_root
from engine.loader.names import closest, type_name
from engine.loader.problems import Problems
from engine.loader.sections import TOP_KEYS, check_workflow_sections, locations, read_header
from engine.loader.step_checks import StepIndex, read_steps
from engine.loader.templates import expand_steps
from engine.spec import WorkflowDefinition
from engine.steps import REGISTRY, StepRegistry
from plumbing.collector import cycle_collection_paused
from plumbing.yaml_reading import MAX_DEPTH, WORKFLOW_MAX_BYTES, YamlTooLarge, read_bounded

__all__ = [
    "INTERNAL_ERROR",
    "MAX_BYTES",
    "MAX_DEPTH",
    "Problem",
    "WorkflowLoadError",
    "load_workflow",
    "load_workflow_text",
]

MAX_BYTES = WORKFLOW_MAX_BYTES

INTERNAL_ERROR = "internal loader error (please report it)"


def _load(text: str, source: str, registry: StepRegistry) -> WorkflowDefinition:
    problems = Problems(source)
    root = YamlReader(problems).read(text)
    problems.raise_if_any()
    if root is None or root.value is None:
        problems.add(
            root, "the file is empty: a workflow needs at least 'name' and 'steps'; write them"
        )
        problems.raise_if_any()
    assert root is not None
    if not root.is_map:
        problems.add(
            root,
            f"a workflow is a mapping with 'name' and 'steps', got {type_name(root.plain())};"
            " write name: and steps: at the top level",
        )
        problems.raise_if_any()
    wf, step_index = _shape(problems, root, registry)
    problems.raise_if_any()
    assert wf is not None
    check_graph(problems, step_index, registry, wf)
    problems.raise_if_any()
    return wf


def _shape(
    problems: Problems, root: Node, registry: StepRegistry
) -> tuple[WorkflowDefinition | None, StepIndex]:
    """Stage 2: the definition, or None when a problem was found."""
    known = TOP_KEYS + mode_keys(root)
    for key in root.value:
        if key not in known:
            problems.add(
                root.key_mark(key),
                f"unknown key '{key}'{closest(key, known)}; a workflow has {', '.join(TOP_KEYS)}",
            )
    in_mode = MODE_KEY in root.value
    for required in ("name",) if in_mode else ("name", "steps"):
        if required not in root.value:
            problems.add(root, f"missing required key '{required}'; add it")
    if in_mode:
        root = mode_root(problems, root, registry)
    header = read_header(problems, root)
    steps, step_index = read_steps(problems, expand_steps(problems, root), registry)
    if header is not None:
        check_workflow_sections(problems, step_index, root, header)
    if problems or header is None:
        return None, step_index
    update = {
        "steps": steps,
        "source": problems.source,
        "locations": locations(problems, step_index, root),
    }
    return header.model_copy(update=update), step_index


def _too_large(source: str, size: int) -> Problem:
    return Problem(
        source,
        1,
        1,
        f"the file is {size / 1e6:.1f} MB, more than the {MAX_BYTES // 1_000_000} MB a workflow"
        " may be; repeat steps with a template (templates: … use:) instead of writing them out",
    )


# == public API ===============================================================


def load_workflow_text(
    text: str, source: str = "<string>", registry: StepRegistry | None = None
) -> WorkflowDefinition:
    """Load a workflow from YAML text; ``source`` names it in problems."""
    if not isinstance(text, str):
        raise WorkflowLoadError(
            [Problem(source, 1, 1, f"expected YAML text, got {type(text).__name__}")]
        )
    if len(text) > MAX_BYTES:
        raise WorkflowLoadError([_too_large(source, len(text))])
    try:
        with cycle_collection_paused():
            return _load(text, source, registry if registry is not None else REGISTRY)
    except WorkflowLoadError:
        raise
    except RecursionError:
        raise WorkflowLoadError(
            [Problem(source, 1, 1, "the workflow nests too deeply to load; flatten it")]
        ) from None
    except Exception as error:  # the contract: nothing but WorkflowLoadError escapes
        raise WorkflowLoadError(
            [
                Problem(
                    source,
                    1,
                    1,
                    f"{INTERNAL_ERROR}: {type(error).__name__}: {error}".splitlines()[0],
                )
            ]
        ) from error


def load_workflow(path: str | Path, registry: StepRegistry | None = None) -> WorkflowDefinition:
    """Load a workflow file; every problem is raised as one WorkflowLoadError."""
    source = str(path)
    try:
        data = read_bounded(Path(path), MAX_BYTES)
    except YamlTooLarge as refused:
        raise WorkflowLoadError([_too_large(source, refused.size)]) from None
    except OSError as error:
        raise WorkflowLoadError(
            [Problem(source, 1, 1, f"cannot read the file: {error.strerror or error}")]
        ) from None
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        line = data[: error.start].count(b"\n") + 1
        column = error.start - (data.rfind(b"\n", 0, error.start) + 1) + 1
        raise WorkflowLoadError(
            [Problem(source, line, column, "the file is not UTF-8 text; save it as UTF-8")]
        ) from None
    return load_workflow_text(text, source=source, registry=registry)
