"""Loading workflows: the YAML shape of DESIGN §3, templates, locations, and the contract
that nothing but WorkflowLoadError ever escapes."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from engine.context import StepContext
from engine.errors import Problem
from engine.graph import WorkflowGraph
from engine.loader import (
    INTERNAL_ERROR,
    MAX_BYTES,
    WorkflowLoadError,
    load_workflow,
    load_workflow_text,
)
from engine.spec import SourceLocation
from engine.steps import REGISTRY as GLOBAL_REGISTRY
from engine.steps import AnyInput, AnyOutput, StepRegistry


class Verdict(BaseModel):
    status: str = "OK"
    confidence: float = 1.0
    decision: str = "continue"


async def judge(ctx: StepContext, inp: AnyInput) -> Verdict:
    return Verdict()


async def anything(ctx: StepContext, inp: AnyInput) -> AnyOutput:
    return AnyOutput()


REGISTRY = StepRegistry()
REGISTRY.register("demo.judge", judge)
REGISTRY.register("demo.any", anything)

FULL = textwrap.dedent("""\
    name: deep_research
    version: 2
    description: rounds, a review microloop, a detour
    engine: auto
    inputs:
      query:      {type: string, required: true}
      max_rounds: {type: int, default: 3, choices: [1, 2, 3, 4]}
      as_of:      {type: date, default: 2024-05-01}
    limits: {max_step_runs: 60, max_llm_calls: 20, token_budget: 1000, timeout_s: 30}
    templates:
      research_round:
        params: [n]
        steps:
          - id: hypothesis_r{n}
            uses: demo.any
            depends_on: ["supervisor_r{n-1}"]
            when: "inputs.max_rounds >= {n} && steps.supervisor_r{n-1}.outputs.decision == 'continue'"
            inputs: {round: "{n}", previous: "steps.supervisor_r{n-1}.outputs"}
            first: {depends_on: [intake_scope], when: null, inputs: {round: "1"}}
          - id: supervisor_r{n}
            uses: demo.judge
            depends_on: ["hypothesis_r{n}"]
    steps:
      - id: intake_scope
        uses: demo.any
        inputs: {query: "inputs.query"}
        interrupt: {after: true, kind: approval, prompt: "Approve the research plan?"}
      - use: research_round
        with: {n: [1, 2, 3]}
      - id: draft
        uses: demo.any
        depends_on: [supervisor_r3]
        trigger: all_done
        inputs:
          feedback: "has(steps.review.outputs.status) ? steps.review.outputs.status : ''"
      - id: review
        uses: demo.judge
        depends_on: [draft]
        model: {tier: 3}
        context: {requires: [draft, supervisor_r1.decision], max_tokens: 6000}
        optional: true
        timeout_s: 5
        retries: 2
        routing:
          kind: conditional
          next: publish
          terminate_when: "outputs.status == 'ABORT'"
          conditions:
            - {expr: "outputs.status == 'VERIFIED' && iteration >= 2", target: publish}
            - {expr: "outputs.confidence < 0.5 && size(steps.review.history) < 3", target: draft}
          loop: {target: draft, max_iterations: 3}
          detour: {target: gather_context, when: "outputs.status == 'BLOCKED'"}
          tie_breaker: {enabled: true, valid_targets: [publish, draft], prompt_hint: "quality", confidence_threshold: 0.7}
      - id: gather_context
        uses: demo.any
        inputs: {why: "steps.review.outputs.status"}
      - id: publish
        uses: demo.any
        depends_on: [review]
    completion:
      required_outputs: [report]
      required_steps: [publish]
    outputs:
      report: "steps.publish.outputs"
      rounds: "run.step_runs"
""")


def test_a_full_definition_loads_with_every_feature():
    wf = load_workflow_text(FULL, source="full.yaml", registry=REGISTRY)
    assert wf.name == "deep_research" and wf.version == 2 and wf.source == "full.yaml"
    assert wf.step_ids == [
        "intake_scope",
        "hypothesis_r1",
        "supervisor_r1",
        "hypothesis_r2",
        "supervisor_r2",
        "hypothesis_r3",
        "supervisor_r3",
        "draft",
        "review",
        "gather_context",
        "publish",
    ]
    assert wf.limits.step_run_bound(len(wf.steps)) == 60
    assert str(wf.inputs["as_of"].default) == "2024-05-01"
    review = wf.step("review")
    assert review.routing is not None and review.routing.loop is not None
    assert review.routing.targets() == ["publish", "draft", "gather_context"]
    assert (review.model.tier, review.context.requires, review.optional, review.retries) == (
        3,
        ["draft", "supervisor_r1.decision"],
        True,
        2,
    )
    assert wf.step("intake_scope").interrupt.after is True
    graph = WorkflowGraph(wf)
    assert graph.has_cycles
    assert graph.between("draft", "review") == ["draft", "review"]


def test_templates_substitute_n_and_n_minus_one_and_first_overrides_the_first_instance():
    wf = load_workflow_text(FULL, registry=REGISTRY)
    first, second = wf.step("hypothesis_r1"), wf.step("hypothesis_r2")
    assert (first.depends_on, first.when, first.inputs) == (["intake_scope"], None, {"round": "1"})
    assert second.depends_on == ["supervisor_r1"]
    assert (
        second.when
        == "inputs.max_rounds >= 2 && steps.supervisor_r1.outputs.decision == 'continue'"
    )
    assert second.inputs == {"round": "2", "previous": "steps.supervisor_r1.outputs"}
    assert [wf.step(f"supervisor_r{n}").group for n in (1, 2, 3)] == [
        "research_round:1",
        "research_round:2",
        "research_round:3",
    ]
    assert wf.step("draft").group is None


def test_template_parameters_may_be_several_and_scalars_repeat():
    text = textwrap.dedent("""\
        name: w
        templates:
          lane:
            params: [n, kind]
            steps:
              - {id: "lane_{kind}_{n}", uses: demo.any, config: {index: "{n+1}", literal: "{query}"}}
        steps:
          - use: lane
            with: {n: [1, 2], kind: fast}
    """)
    wf = load_workflow_text(text, registry=REGISTRY)
    assert wf.step_ids == ["lane_fast_1", "lane_fast_2"]
    assert wf.step("lane_fast_2").config == {"index": "3", "literal": "{query}"}
    assert wf.step("lane_fast_1").group == "lane:1,fast"


def test_locations_point_back_at_the_yaml_including_template_lines():
    wf = load_workflow_text(FULL, source="full.yaml", registry=REGISTRY)
    assert wf.locations["steps.review.routing.next"] == SourceLocation(
        file="full.yaml", line=46, column=13
    )
    assert wf.locations["steps.supervisor_r2.uses"].line == 21
    assert wf.locations["outputs.report"].line == 64
    assert wf.locations["inputs.query.type"] == SourceLocation(file="full.yaml", line=6, column=22)


def test_loop_back_edge_ancestry_and_detour_return_make_steps_readable():
    wf = load_workflow_text(FULL, registry=REGISTRY)
    assert "steps.review.outputs.status" in wf.step("draft").inputs["feedback"]
    assert wf.step("gather_context").inputs == {"why": "steps.review.outputs.status"}


def test_the_default_registry_is_the_process_registry():
    GLOBAL_REGISTRY.register("tests.loader_probe", anything)
    wf = load_workflow_text("name: w\nsteps:\n  - {id: a, uses: tests.loader_probe}\n")
    assert wf.step("a").uses == "tests.loader_probe"


def test_several_problems_are_reported_together_in_file_order():
    text = textwrap.dedent("""\
        name: w
        steps:
          - id: b
            uses: demo.nope
            when: "inputs.x >"
          - id: a
            uses: demo.any
            retries: -1
    """)
    with pytest.raises(WorkflowLoadError) as caught:
        load_workflow_text(text, source="w.yaml", registry=REGISTRY)
    assert [(p.line, p.column) for p in caught.value.problems] == [(4, 11), (5, 21), (8, 14)]
    assert str(caught.value).count("\n") == 2


def test_step_references_that_are_not_identifiers_are_found_in_depends_on_and_routing_only():
    text = textwrap.dedent("""\
        name: w
        steps:
          - id: a
            uses: demo.any
            routing: {next: "bad-name"}
            description: "not-a-reference"
          - id: b
            uses: demo.any
            inputs: {x: "1x"}
            depends_on: [a, "1x"]
    """)
    with pytest.raises(WorkflowLoadError) as caught:
        load_workflow_text(text, source="w.yaml", registry=REGISTRY)
    found = [(p.line, p.column, p.message.split(" is ")[0]) for p in caught.value.problems]
    assert found == [(5, 21, "step reference 'bad-name'"), (10, 21, "step reference '1x'")]


def test_problems_print_as_file_line_column_message():
    assert str(Problem("a.yaml", 3, 7, "bad")) == "a.yaml:3:7: bad"
    error = WorkflowLoadError([Problem("a.yaml", 9, 1, "late"), Problem("a.yaml", 2, 5, "early")])
    assert str(error) == "a.yaml:2:5: early\na.yaml:9:1: late"


# -- files ------------------------------------------------------------------------------------


def test_load_workflow_reads_a_file_and_names_it_in_problems(tmp_path: Path):
    path = tmp_path / "flow.yaml"
    path.write_text("name: w\nsteps:\n  - {id: a, uses: demo.any}\n", encoding="utf-8")
    assert load_workflow(path, registry=REGISTRY).source == str(path)
    path.write_text("name: w\nsteps:\n  - {id: a, uses: demo.gone}\n", encoding="utf-8")
    with pytest.raises(
        WorkflowLoadError, match=rf"^{path}:3:19: step 'a': unknown step implementation"
    ):
        load_workflow(path, registry=REGISTRY)


@pytest.mark.parametrize(
    "content, message",
    [
        (b"name: w\n\xff\xfe\x00garbage", "2:1: the file is not UTF-8 text; save it as UTF-8"),
        (b"\x89PNG\r\n\x1a\n\x00\x00", "1:1: the file is not UTF-8 text; save it as UTF-8"),
        (
            b"\xef\xbb\xbfname: w\nsteps: 3\n",
            "2:8: steps must be a non-empty list of steps, got a number",
        ),
        (
            b"#" * (MAX_BYTES + 1),
            "1:1: the file is 4.0 MB, more than the 4 MB a workflow may be; repeat steps with a"
            " template (templates: … use:) instead of writing them out",
        ),
    ],
)
def test_unreadable_files_are_one_clear_line(tmp_path: Path, content: bytes, message: str):
    path = tmp_path / "bad.yaml"
    path.write_bytes(content)
    with pytest.raises(WorkflowLoadError) as caught:
        load_workflow(path, registry=REGISTRY)
    assert str(caught.value) == f"{path}:{message}"


def test_a_missing_file_is_a_load_error(tmp_path: Path):
    with pytest.raises(WorkflowLoadError, match="cannot read the file: No such file or directory"):
        load_workflow(tmp_path / "absent.yaml", registry=REGISTRY)


def test_an_alias_bomb_is_refused_without_expanding_it():
    bomb = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}]\n"
        for i in range(20)
    )
    with pytest.raises(WorkflowLoadError, match="aliases"):
        load_workflow_text(bomb, registry=REGISTRY)


# -- nothing but WorkflowLoadError escapes ----------------------------------------------------------


def assert_only_load_errors(text: str) -> None:
    try:
        load_workflow_text(text, source="fuzz.yaml", registry=REGISTRY)
    except WorkflowLoadError as error:
        assert error.problems
        assert INTERNAL_ERROR not in str(error), str(error)
        for problem in error.problems:
            assert problem.file == "fuzz.yaml" and problem.line >= 1 and problem.column >= 1
            assert "\n" not in problem.message


VOCABULARY = [
    "name",
    "version",
    "engine",
    "inputs",
    "limits",
    "templates",
    "steps",
    "completion",
    "outputs",
    "id",
    "uses",
    "depends_on",
    "when",
    "routing",
    "kind",
    "next",
    "conditions",
    "expr",
    "target",
    "loop",
    "max_iterations",
    "detour",
    "tie_breaker",
    "valid_targets",
    "branches",
    "params",
    "use",
    "with",
    "first",
    "type",
    "default",
    "required_steps",
    "context",
    "requires",
    "interrupt",
    "after",
    "a",
    "b",
    "r{n}",
    "r{n-1}",
    "demo.any",
    "demo.judge",
    "n",
    "true",
    "outputs.x > 1",
    "steps.a.status",
]
SCALARS = st.one_of(
    st.sampled_from(VOCABULARY),
    st.integers(-5, 10**30),
    st.floats(allow_nan=True),
    st.booleans(),
    st.none(),
    st.text(max_size=8),
)
DOCUMENTS = st.recursive(
    SCALARS,
    lambda children: st.one_of(
        st.lists(children, max_size=4),
        st.dictionaries(st.sampled_from(VOCABULARY), children, max_size=5),
    ),
    max_leaves=25,
)


@given(document=st.dictionaries(st.sampled_from(VOCABULARY), DOCUMENTS, max_size=6))
@settings(max_examples=200, suppress_health_check=[HealthCheck.too_slow])
def test_random_yaml_structures_raise_only_load_errors(document):
    assert_only_load_errors(yaml.safe_dump(document, allow_unicode=True))


@given(text=st.text(max_size=300))
@settings(max_examples=150)
def test_garbage_text_raises_only_load_errors(text):
    assert_only_load_errors(text)


@given(data=st.data())
@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow])
def test_mutated_valid_definitions_raise_only_load_errors_or_load(data):
    text = FULL
    for _ in range(data.draw(st.integers(1, 4))):
        start = data.draw(st.integers(0, len(text)))
        end = data.draw(st.integers(start, min(len(text), start + 12)))
        insert = data.draw(
            st.sampled_from(["", "-", "{", "[", ":", " ", "\n", "x", "'", "*a", "&a", "0"])
        )
        text = text[:start] + insert + text[end:]
    assert_only_load_errors(text)


@given(content=st.binary(max_size=200))
@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_random_bytes_in_a_file_raise_only_load_errors(tmp_path: Path, content: bytes):
    path = tmp_path / "random.yaml"
    path.write_bytes(content)
    try:
        load_workflow(path, registry=REGISTRY)
    except WorkflowLoadError as error:
        assert INTERNAL_ERROR not in str(error), str(error)


def test_non_text_input_is_a_load_error():
    with pytest.raises(WorkflowLoadError, match="expected YAML text, got bytes"):
        load_workflow_text(b"name: w", registry=REGISTRY)  # type: ignore[arg-type]
