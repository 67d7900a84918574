"""The loader's error table: every class of malformed definition, each with its exact
``file:line:col: message`` (DESIGN §3: every problem at load time, never a traceback)."""

from __future__ import annotations

import textwrap

import pytest
from pydantic import BaseModel

from engine.context import StepContext
from engine.loader import WorkflowLoadError, load_workflow_text
from engine.steps import AnyInput, AnyOutput, StepRegistry


class Verdict(BaseModel):
    status: str = "OK"
    confidence: float = 1.0
    decision: str = "continue"
    terminate: bool = False


async def judge(ctx: StepContext, inp: AnyInput) -> Verdict:
    return Verdict()


async def anything(ctx: StepContext, inp: AnyInput) -> AnyOutput:
    return AnyOutput()


class WriterInput(BaseModel):
    topic: str
    words: int = 100


async def writer(ctx: StepContext, inp: WriterInput) -> AnyOutput:
    return AnyOutput()


REGISTRY = StepRegistry()
REGISTRY.register("demo.judge", judge)
REGISTRY.register("demo.any", anything)
REGISTRY.register("demo.writer", writer)


def case(name: str, yaml_text: str, *problems: str):
    return pytest.param(textwrap.dedent(yaml_text).lstrip("\n"), list(problems), id=name)


CASES = [
    case(
        "yaml_syntax",
        """
        name: w
        steps:
          - id: a
           uses: demo.any
    """,
        "4:4: YAML syntax error: while parsing a block collection expected <block end>, but found '<block mapping start>'; check the indentation",
    ),
    case(
        "yaml_unclosed",
        """
        name: w
        steps: [{id: a, uses: demo.any}
    """,
        "3:1: YAML syntax error: while parsing a flow sequence expected ',' or ']', but got '<stream end>'; fix the YAML here (quote values that contain ': ' or start with a symbol)",
    ),
    case(
        "flow_braces",
        """
        name: w
        steps:
          - id: a
            uses: demo.any
            depends_on: [b_{n}]
    """,
        "5:20: YAML syntax error: while parsing a flow sequence expected ',' or ']', but got '{'; inside [...] or {...} quote values that contain braces, e.g. [\"step_r{n-1}\"]",
    ),
    case(
        "alias",
        """
        name: w
        base: &b {uses: demo.any}
        steps:
          - *b
    """,
        "4:5: YAML aliases (*name) are not supported: write the value out",
    ),
    case(
        "two_documents",
        """
        name: w
        steps: []
        ---
        name: x
    """,
        "3:1: a workflow file holds one YAML document; remove the second '---'",
    ),
    case(
        "duplicate_key",
        """
        name: w
        steps:
          - id: a
            uses: demo.any
            uses: demo.judge
    """,
        "5:5: duplicate key 'uses' (first written at line 4); keep one of them",
    ),
    case(
        "python_tag",
        """
        name: w
        steps:
          - id: a
            uses: !!python/object:os.system echo
    """,
        "4:11: unsupported YAML tag tag:yaml.org,2002:python/object:os.system; remove the tag",
    ),
    case(
        "top_list",
        """
        - id: a
          uses: demo.any
    """,
        "1:1: a workflow is a mapping with 'name' and 'steps', got a list; write name: and steps: at the top level",
    ),
    case(
        "list_key",
        """
        name: w
        steps:
          - ? [a]
            : 1
    """,
        "3:7: a mapping key must be a plain value, not a list or mapping; write the key as plain text",
    ),
    case(
        "unknown_top_key",
        """
        name: w
        stpes:
          - {id: a, uses: demo.any}
    """,
        "1:1: missing required key 'steps'; add it",
        "2:1: unknown key 'stpes' (did you mean 'steps'?); a workflow has name, version, description, engine, inputs, limits, templates, steps, completion, outputs",
    ),
    case(
        "missing_name",
        """
        steps:
          - {id: a, uses: demo.any}
    """,
        "1:1: missing required key 'name'; add it",
    ),
    case(
        "missing_steps",
        """
        name: w
    """,
        "1:1: missing required key 'steps'; add it",
    ),
    case(
        "bad_name",
        """
        name: Deep-Research
        steps:
          - {id: a, uses: demo.any}
    """,
        "1:7: workflow name 'Deep-Research' is not an identifier ([a-z][a-z0-9_]*) — CEL would read 'Deep-Research' as a subtraction (Deep - Research); use 'deep_research'",
    ),
    case(
        "bad_engine",
        """
        name: w
        engine: airflow
        steps:
          - {id: a, uses: demo.any}
    """,
        "2:9: engine: Input should be 'auto', 'kahn' or 'langgraph', got 'airflow'; correct the value",
    ),
    case(
        "bad_version",
        """
        name: w
        version: one
        steps:
          - {id: a, uses: demo.any}
    """,
        "2:10: version: Input should be a valid integer, unable to parse string as an integer, got 'one'; correct the value",
    ),
    case(
        "zero_step_runs",
        """
        name: w
        limits:
          max_step_runs: 0
        steps:
          - {id: a, uses: demo.any}
    """,
        "3:18: limits.max_step_runs must be a positive integer or auto, got 0; set auto or a number above 0",
    ),
    case(
        "limits_unknown",
        """
        name: w
        limits:
          max_tokens: 5
        steps:
          - {id: a, uses: demo.any}
    """,
        "3:3: limits: unknown key 'max_tokens'; expected one of: max_step_runs, max_llm_calls, token_budget, timeout_s, max_cost_usd",
    ),
    case(
        "input_name",
        """
        name: w
        inputs:
          max-rounds: {type: int}
        steps:
          - {id: a, uses: demo.any}
    """,
        "3:3: input name 'max-rounds' is not an identifier ([a-z][a-z0-9_]*) — CEL would read 'max-rounds' as a subtraction (max - rounds); use 'max_rounds'",
    ),
    case(
        "input_default_type",
        """
        name: w
        inputs:
          max_rounds: {type: int, default: four}
        steps:
          - {id: a, uses: demo.any}
    """,
        "3:36: input 'max_rounds': default 'four' is not of type int; give a default of type int or change the type",
    ),
    case(
        "input_type_unknown",
        """
        name: w
        inputs:
          when: {type: datetime}
        steps:
          - {id: a, uses: demo.any}
    """,
        "3:16: inputs.when.type: Input should be 'string', 'int', 'float', 'bool', 'date', 'list' or 'dict', got 'datetime'; correct the value",
    ),
    case(
        "required_step_unknown",
        """
        name: w
        steps:
          - {id: a, uses: demo.any}
        completion:
          required_steps: [b]
    """,
        "5:20: completion.required_steps names unknown step 'b'; name a step of this workflow",
    ),
    case(
        "required_output_undeclared",
        """
        name: w
        steps:
          - {id: a, uses: demo.any}
        completion:
          required_outputs: [report]
    """,
        "5:22: completion.required_outputs names 'report', which is not a workflow output (outputs: none are declared); declare it under outputs: or remove it",
    ),
    case(
        "outputs_syntax",
        """
        name: w
        steps:
          - {id: a, uses: demo.any}
        outputs:
          report: steps.a.outputs.text +
    """,
        "5:32: outputs.report: CEL syntax error: unexpected end of expression in 'steps.a.outputs.text +'; fix the expression",
    ),
    case(
        "outputs_unknown_step",
        """
        name: w
        steps:
          - {id: a, uses: demo.any}
        outputs:
          report: steps.b.outputs.text
    """,
        "5:11: outputs.report: 'steps.b.outputs.text': no step 'b'",
    ),
    case(
        "steps_not_list",
        """
        name: w
        steps: {id: a}
    """,
        "2:8: steps must be a non-empty list of steps, got a mapping",
    ),
    case(
        "step_not_mapping",
        """
        name: w
        steps:
          - a
    """,
        "3:5: a step is a mapping with id and uses, got a string",
    ),
    case(
        "step_without_id",
        """
        name: w
        steps:
          - uses: demo.any
    """,
        "3:5: step has no 'id'; add id: NAME",
    ),
    case(
        "id_subtraction",
        """
        name: w
        steps:
          - id: code-implementer
            uses: demo.any
    """,
        "3:9: step id 'code-implementer' is not an identifier ([a-z][a-z0-9_]*) — CEL would read 'code-implementer' as a subtraction (code - implementer); use 'code_implementer'",
    ),
    case(
        "id_reserved",
        """
        name: w
        steps:
          - id: loop
            uses: demo.any
    """,
        "3:9: step id 'loop' is a CEL reserved word; choose another name",
    ),
    case(
        "duplicate_id",
        """
        name: w
        steps:
          - id: a
            uses: demo.any
          - id: a
            uses: demo.any
    """,
        "5:9: duplicate step id 'a' (first defined at line 3); rename one of them",
    ),
    case(
        "unknown_uses",
        """
        name: w
        steps:
          - id: a
            uses: demo.jduge
    """,
        "4:11: step 'a': unknown step implementation 'demo.jduge' in uses (did you mean 'demo.judge'?)",
    ),
    case(
        "unknown_step_key",
        """
        name: w
        steps:
          - id: a
            uses: demo.any
            dependson: [b]
    """,
        "5:5: step 'a': unknown key 'dependson' (did you mean 'depends_on'?); expected one of: id, uses, description, depends_on, when, inputs, config, trigger, timeout_s, retries, retry_delay_s, interrupt, routing, model, context, optional, group",
    ),
    case(
        "retries_type",
        """
        name: w
        steps:
          - id: a
            uses: demo.any
            retries: many
    """,
        "5:14: step 'a': retries: Input should be a valid integer, unable to parse string as an integer, got 'many'; correct the value",
    ),
    case(
        "bad_trigger",
        """
        name: w
        steps:
          - id: a
            uses: demo.any
            trigger: any_success
    """,
        "5:14: step 'a': trigger: Input should be 'all_success', 'all_done', 'none_failed', 'none_failed_min_one_success', 'one_success' or 'one_failed', got 'any_success'; correct the value",
    ),
    case(
        "depends_unknown",
        """
        name: w
        steps:
          - id: a
            uses: demo.any
          - id: b
            uses: demo.any
            depends_on: [a, c]
    """,
        "7:21: step 'b': depends_on names unknown step 'c'",
    ),
    case(
        "depends_self",
        """
        name: w
        steps:
          - id: a
            uses: demo.any
            depends_on: [a]
    """,
        "5:18: step 'a' depends on itself; remove it from depends_on",
    ),
    case(
        "depends_cycle",
        """
        name: w
        steps:
          - id: a
            uses: demo.any
            depends_on: [b]
          - id: b
            uses: demo.any
            depends_on: [a]
    """,
        "5:18: step 'a' depends on 'b', which is downstream of it (cycle a → b → a); a cycle must be closed by a bounded routing.loop",
    ),
    case(
        "when_syntax",
        """
        name: w
        steps:
          - id: a
            uses: demo.any
            when: inputs.x >
    """,
        "5:20: step 'a' when: CEL syntax error: unexpected end of expression in 'inputs.x >'; fix the expression",
    ),
    case(
        "when_unknown_name",
        """
        name: w
        steps:
          - id: a
            uses: demo.any
          - id: b
            uses: demo.any
            depends_on: [a]
            when: "step.a.status == 'SUCCEEDED'"
    """,
        "8:12: step 'b' when: unknown name 'step' (did you mean 'steps'?); expressions read inputs, steps, outputs, iteration, run",
    ),
    case(
        "when_not_upstream",
        """
        name: w
        steps:
          - id: a
            uses: demo.any
          - id: b
            uses: demo.any
            when: "steps.a.status == 'SUCCEEDED'"
    """,
        "7:12: step 'b' when: 'steps.a.status': step 'a' is not upstream of 'b'; add it to depends_on or read it from a later step",
    ),
    case(
        "when_reads_outputs",
        """
        name: w
        steps:
          - id: a
            uses: demo.any
            when: "outputs.ok"
    """,
        "5:12: step 'a' when: 'outputs' (the step's own outputs) is only readable in routing expressions; read steps.<id>.outputs instead",
    ),
    case(
        "input_undeclared",
        """
        name: w
        inputs:
          query: {type: string}
        steps:
          - id: a
            uses: demo.any
            inputs: {q: inputs.qeury}
    """,
        "7:17: step 'a' inputs.q: 'inputs.qeury': no input 'qeury' (did you mean 'query'?) (inputs: query)",
    ),
    case(
        "unknown_function",
        """
        name: w
        steps:
          - id: a
            uses: demo.any
            when: "lenght(inputs) > 0"
    """,
        "5:12: step 'a' when: unknown function 'lenght' in 'lenght(inputs) > 0'; use a CEL function (see the README)",
    ),
    case(
        "view_field",
        """
        name: w
        steps:
          - id: a
            uses: demo.any
          - id: b
            uses: demo.any
            depends_on: [a]
            when: "steps.a.result == 1"
    """,
        "8:12: step 'b' when: 'steps.a.result': a step has status, outputs, history, iteration",
    ),
    case(
        "closed_output_field",
        """
        name: w
        steps:
          - id: a
            uses: demo.judge
          - id: b
            uses: demo.any
            depends_on: [a]
            when: "steps.a.outputs.confidance > 0.5"
    """,
        "8:12: step 'b' when: 'steps.a.outputs.confidance': the outputs of demo.judge have no field 'confidance' (did you mean 'confidence'?) (fields: confidence, decision, status, terminate)",
    ),
    case(
        "next_unknown",
        """
        name: w
        steps:
          - id: a
            uses: demo.any
            routing: {next: publsh}
          - id: publish
            uses: demo.any
    """,
        "5:21: step 'a': routing.next names unknown step 'publsh' (did you mean 'publish'?)",
    ),
    case(
        "routing_kind",
        """
        name: w
        steps:
          - id: a
            uses: demo.any
            routing: {kind: switch}
    """,
        "5:21: step 'a': routing.kind: Input should be 'linear', 'conditional', 'loop' or 'branch', got 'switch'; correct the value",
    ),
    case(
        "routes_to_itself",
        """
        name: w
        steps:
          - id: a
            uses: demo.any
            routing: {next: a}
    """,
        "5:21: step 'a' routes to itself; a step that repeats needs routing.loop: {target: a, max_iterations: N}",
    ),
    case(
        "routes_back_without_loop",
        """
        name: w
        steps:
          - id: a
            uses: demo.any
          - id: b
            uses: demo.any
            depends_on: [a]
            routing:
              kind: conditional
              conditions:
                - {expr: "true", target: a}
    """,
        "11:34: step 'b' routes back to 'a' (cycle a → b → a); a cycle must be closed by a bounded loop: routing.loop: {target: a, max_iterations: N}",
    ),
    case(
        "loop_not_ancestor",
        """
        name: w
        steps:
          - id: a
            uses: demo.any
          - id: b
            uses: demo.any
            routing:
              kind: loop
              loop: {target: a, max_iterations: 2}
    """,
        "9:22: step 'b': loop target 'a' is not upstream of 'b'; a loop goes back to a step it depends on, directly or through others — choose such a step",
    ),
    case(
        "loop_kind_without_loop",
        """
        name: w
        steps:
          - id: a
            uses: demo.any
            routing: {kind: loop, next: b}
          - id: b
            uses: demo.any
    """,
        "5:21: step 'a': kind: loop needs routing.loop: {target: ..., max_iterations: N}",
    ),
    case(
        "branch_without_branches",
        """
        name: w
        steps:
          - id: a
            uses: demo.judge
            routing: {kind: branch, next: b}
          - id: b
            uses: demo.any
    """,
        "5:21: step 'a': kind: branch needs routing.branches: {VALUE: step, ...}",
    ),
    case(
        "branches_wrong_kind",
        """
        name: w
        steps:
          - id: a
            uses: demo.judge
            routing:
              next: b
              branches: {OK: b}
          - id: b
            uses: demo.any
    """,
        "7:17: step 'a': branches are only read with kind: branch (kind is linear)",
    ),
    case(
        "conditional_without_conditions",
        """
        name: w
        steps:
          - id: a
            uses: demo.any
            routing: {kind: conditional, next: b}
          - id: b
            uses: demo.any
    """,
        "5:21: step 'a': kind: conditional needs conditions (or a tie_breaker)",
    ),
    case(
        "branch_on_missing_field",
        """
        name: w
        steps:
          - id: a
            uses: demo.judge
            routing:
              kind: branch
              branch_on: outputs.verdict
              branches: {OK: b}
          - id: b
            uses: demo.any
    """,
        "7:18: step 'a' routing.branch_on: 'outputs.verdict': the outputs of demo.judge have no field 'verdict' (fields: confidence, decision, status, terminate)",
    ),
    case(
        "tie_breaker_not_edge",
        """
        name: w
        steps:
          - id: a
            uses: demo.any
            routing:
              kind: conditional
              next: b
              conditions: [{expr: "false", target: c}]
              tie_breaker: {valid_targets: [b, d]}
          - {id: b, uses: demo.any}
          - {id: c, uses: demo.any}
          - {id: d, uses: demo.any}
    """,
        "9:40: step 'a': tie_breaker valid target 'd' is not an edge of the graph; it may only choose among this step's routing targets (b, c) — remove it from valid_targets",
    ),
    case(
        "tie_breaker_without_next",
        """
        name: w
        steps:
          - id: a
            uses: demo.any
            routing:
              kind: conditional
              conditions: [{expr: "false", target: b}, {expr: "true", target: c}]
              tie_breaker: {}
          - {id: b, uses: demo.any}
          - {id: c, uses: demo.any}
    """,
        "8:20: step 'a': a tie_breaker needs routing.next, the default edge it falls back to",
    ),
    case(
        "tie_breaker_one_target",
        """
        name: w
        steps:
          - id: a
            uses: demo.any
            routing:
              kind: conditional
              next: b
              tie_breaker: {}
          - {id: b, uses: demo.any}
    """,
        "8:20: step 'a': a tie_breaker needs at least two targets to choose between (has b)",
    ),
    case(
        "detour_itself",
        """
        name: w
        steps:
          - id: a
            uses: demo.any
            routing:
              detour: {target: a}
    """,
        "6:24: step 'a' detours to itself; a detour goes to another step and returns",
    ),
    case(
        "detour_upstream",
        """
        name: w
        steps:
          - id: a
            uses: demo.any
          - id: b
            uses: demo.any
            depends_on: [a]
            routing:
              detour: {target: a}
    """,
        "9:24: step 'b': detour target 'a' is upstream of it (cycle a → b → a); a detour goes to a step that is not upstream — to go back, use routing.loop",
    ),
    case(
        "detour_is_next",
        """
        name: w
        steps:
          - id: a
            uses: demo.any
            routing:
              next: b
              detour: {target: b}
          - {id: b, uses: demo.any}
    """,
        "7:24: step 'a': detour target 'b' is also routing.next; a detour returns and the default edge does not — use different steps",
    ),
    case(
        "detour_shared",
        """
        name: w
        steps:
          - id: a
            uses: demo.any
            routing: {detour: {target: c}}
          - id: b
            uses: demo.any
            routing: {detour: {target: c}}
          - {id: c, uses: demo.any}
    """,
        "8:32: step 'b': 'c' is already the detour target of 'a'; a detour target serves one step — give this detour its own target",
    ),
    case(
        "detour_never_starts",
        """
        name: w
        steps:
          - id: a
            uses: demo.any
            routing:
              next: b
              detour: {target: d}
          - {id: b, uses: demo.any}
          - {id: c, uses: demo.any, depends_on: [b]}
          - {id: d, uses: demo.any, depends_on: [c]}
    """,
        "7:24: step 'a': detour target 'd' depends on 'c', which runs only after 'a', so the detour could never start — remove that dependency from 'd' or declare the detour on a step after it",
    ),
    case(
        "detour_when_syntax",
        """
        name: w
        steps:
          - id: a
            uses: demo.any
            routing:
              detour: {target: b, when: "outputs.need =="}
          - {id: b, uses: demo.any}
    """,
        "6:47: step 'a' routing.detour.when: CEL syntax error: unexpected end of expression in 'outputs.need =='; fix the expression",
    ),
    case(
        "terminate_when_syntax",
        """
        name: w
        steps:
          - id: a
            uses: demo.any
            routing:
              terminate_when: "outputs.done = true"
    """,
        "6:37: step 'a' routing.terminate_when: CEL syntax error: unexpected character '=' in 'outputs.done = true'; fix the expression",
    ),
    case(
        "context_not_upstream",
        """
        name: w
        steps:
          - {id: a, uses: demo.any}
          - id: b
            uses: demo.any
            context: {requires: [a]}
    """,
        "6:26: step 'b': context.requires 'a' is not upstream of 'b'; add 'a' to depends_on or drop it",
    ),
    case(
        "context_unknown",
        """
        name: w
        steps:
          - id: b
            uses: demo.any
            context: {requires: [draft]}
    """,
        "5:26: step 'b': context.requires names unknown step 'draft'",
    ),
    case(
        "interrupt_empty",
        """
        name: w
        steps:
          - id: a
            uses: demo.any
            interrupt: {prompt: "Approve?"}
    """,
        "5:16: step 'a': interrupt: interrupt needs before: true or after: true; correct the value",
    ),
    case(
        "loop_zero",
        """
        name: w
        steps:
          - id: a
            uses: demo.any
          - id: b
            uses: demo.any
            depends_on: [a]
            routing:
              kind: loop
              loop: {target: a, max_iterations: 0}
    """,
        "10:41: step 'b': routing.loop.max_iterations: Input should be greater than or equal to 1, got 0; correct the value",
    ),
    case(
        "threshold_range",
        """
        name: w
        steps:
          - id: a
            uses: demo.any
            routing:
              kind: conditional
              next: b
              conditions: [{expr: "false", target: c}]
              tie_breaker: {confidence_threshold: 1.5}
          - {id: b, uses: demo.any}
          - {id: c, uses: demo.any}
    """,
        "9:43: step 'a': routing.tie_breaker.confidence_threshold: Input should be less than or equal to 1, got 1.5; correct the value",
    ),
    case(
        "unknown_template",
        """
        name: w
        steps:
          - use: round
            with: {n: [1]}
    """,
        "3:10: unknown template 'round' (templates: none are defined)",
    ),
    case(
        "template_without_params",
        """
        name: w
        templates:
          round:
            steps:
              - {id: r, uses: demo.any}
        steps:
          - use: round
            with: {n: [1]}
    """,
        "4:5: template 'round': params must be a non-empty list of names, e.g. [n]",
    ),
    case(
        "with_unknown_param",
        """
        name: w
        templates:
          round:
            params: [n]
            steps:
              - {id: "r{n}", uses: demo.any}
        steps:
          - use: round
            with: {n: [1], m: [2]}
    """,
        "9:20: template 'round' has no parameter 'm' (params: n)",
    ),
    case(
        "with_lengths",
        """
        name: w
        templates:
          round:
            params: [n, label]
            steps:
              - {id: "r{n}", uses: demo.any}
        steps:
          - use: round
            with: {n: [1, 2], label: [a, b, c]}
    """,
        "9:11: with: the value lists have different lengths (2, 3); give each parameter the same number of values",
    ),
    case(
        "dangling_n_minus_1",
        """
        name: w
        templates:
          round:
            params: [n]
            steps:
              - id: r{n}
                uses: demo.any
                depends_on: ["r{n-1}"]
        steps:
          - use: round
            with: {n: [1, 2]}
    """,
        "8:22: step 'r1': depends_on names unknown step 'r0' (template round, n=1); use first: to override keys for the first instance",
    ),
    case(
        "string_param_arithmetic",
        """
        name: w
        templates:
          round:
            params: [n]
            steps:
              - id: r_{n}
                uses: demo.any
                depends_on: ["r_{n-1}"]
        steps:
          - use: round
            with: {n: [a, b]}
    """,
        "8:22: template 'round': '{n-1}' needs an integer, but n is 'a'",
        "8:22: template 'round': '{n-1}' needs an integer, but n is 'b'",
    ),
    case(
        "nested_template_use",
        """
        name: w
        templates:
          round:
            params: [n]
            steps:
              - use: other
        steps:
          - use: round
            with: {n: [1]}
    """,
        "6:9: template 'round': templates cannot use other templates",
    ),
    case(
        "first_not_mapping",
        """
        name: w
        templates:
          round:
            params: [n]
            steps:
              - id: r{n}
                uses: demo.any
                first: [x]
        steps:
          - use: round
            with: {n: [1]}
    """,
        "8:16: template 'round': first must be a mapping of step keys to use for the first instance",
    ),
    case(
        "template_bad_id",
        """
        name: w
        templates:
          round:
            params: [n]
            steps:
              - id: round-{n}
                uses: demo.any
        steps:
          - use: round
            with: {n: [1]}
    """,
        "6:13: step id 'round-1' is not an identifier ([a-z][a-z0-9_]*) — CEL would read 'round-1' as a subtraction (round - 1); use 'round_1' (template round, n=1)",
    ),
    case(
        "template_not_upstream",
        """
        name: w
        templates:
          round:
            params: [n]
            steps:
              - id: r{n}
                uses: demo.judge
                when: "steps.r{n+1}.outputs.decision == 'continue'"
        steps:
          - use: round
            with: {n: [1, 2]}
    """,
        "8:16: step 'r1' when: 'steps.r2.outputs.decision': step 'r2' is not upstream of 'r1'; add it to depends_on or read it from a later step (template round, n=1)",
        "8:16: step 'r2' when: 'steps.r3.outputs.decision': no step 'r3' (template round, n=2)",
    ),
    case(
        "step_input_unknown",
        """
        name: w
        steps:
          - id: a
            uses: demo.writer
            inputs: {topic: "'x'", wrods: "10"}
    """,
        "5:28: step 'a': demo.writer takes no input 'wrods' (did you mean 'words'?) (inputs: topic, words); remove it",
    ),
    case(
        "step_input_missing",
        """
        name: w
        steps:
          - id: a
            uses: demo.writer
            inputs: {words: "10"}
    """,
        "5:13: step 'a': demo.writer needs input 'topic'; give it under inputs:",
    ),
    case(
        "step_input_missing_without_inputs",
        """
        name: w
        steps:
          - id: a
            uses: demo.writer
    """,
        "4:11: step 'a': demo.writer needs input 'topic'; give it under inputs:",
    ),
    pytest.param(
        "name: w\nsteps: " + "[" * 45 + "]" * 45 + "\n",
        [
            "2:47: the YAML nests more than 40 levels deep; flatten it"
            " (a workflow needs fewer than ten levels)"
        ],
        id="too_deep",
    ),
    pytest.param(
        "name: w\nversion: " + "9" * 5000 + "\nsteps:\n  - {id: a, uses: demo.any}\n",
        [
            "2:10: cannot read '9999999999999999999999999999999999999999': the number is too large; quote it to keep it as text"
        ],
        id="huge_int",
    ),
    pytest.param(
        "",
        ["1:1: the file is empty: a workflow needs at least 'name' and 'steps'; write them"],
        id="empty",
    ),
    pytest.param(
        "name: w\x07\nsteps: []\n",
        ["1:8: character '\\x07' is not allowed in YAML; remove it"],
        id="control_character",
    ),
    pytest.param(
        'name: w\nsteps:\n  - {id: a, uses: demo.any, when: "\\x01"}\n',
        [
            "3:36: step 'a' when: CEL syntax error: unexpected character '\\x01' in '\\x01'; fix the expression"
        ],
        id="control_character_in_cel",
    ),
    case(
        "tie_breaker_on_linear",
        """
        name: w
        steps:
          - id: a
            uses: demo.judge
            routing:
              kind: linear
              next: b
              tie_breaker: {valid_targets: [b, c]}
          - {id: b, uses: demo.any, depends_on: [a]}
          - {id: c, uses: demo.any, depends_on: [a]}
    """,
        "8:20: step 'a': a tie_breaker is never asked with kind: linear, which always takes routing.next; remove tie_breaker or use kind: conditional",
    ),
    case(
        "required_input_with_default",
        """
        name: w
        inputs:
          n: {type: int, required: true, default: 3}
        steps:
          - {id: a, uses: demo.any}
    """,
        "3:28: input 'n' is required and has a default, so the default is never used; remove required: true or the default",
    ),
    case(
        "constant_input_of_the_wrong_type",
        """
        name: w
        steps:
          - id: a
            uses: demo.writer
            inputs: {topic: "'t'", words: "'soon'"}
    """,
        "5:35: step 'a': inputs.words is always 'soon', which demo.writer refuses (Input should be a valid integer, unable to parse string as an integer); give a value of the type it takes",
    ),
    case(
        "constant_input_that_cannot_be_evaluated",
        """
        name: w
        steps:
          - id: a
            uses: demo.writer
            inputs: {topic: "'t'", words: "[1, 2][5]"}
    """,
        "5:35: step 'a': inputs.words ([1, 2][5]) cannot be evaluated: invalid_argument; fix the expression",
    ),
    case(
        "when_is_text",
        """
        name: w
        steps:
          - {id: a, uses: demo.any, when: "'yes'"}
    """,
        "3:35: step 'a' when: \"'yes'\" gives text, never true or false; write a condition, e.g. a comparison (x > 0, x == 'done') or has(...)",
    ),
    case(
        "when_is_arithmetic",
        """
        name: w
        inputs:
          n: {type: int, default: 1}
        steps:
          - {id: a, uses: demo.any, when: "inputs.n - 1"}
    """,
        "5:35: step 'a' when: 'inputs.n - 1' gives a number, never true or false; write a condition, e.g. a comparison (x > 0, x == 'done') or has(...)",
    ),
    case(
        "terminate_when_is_a_number",
        """
        name: w
        steps:
          - id: a
            uses: demo.judge
            routing: {kind: conditional, next: b, terminate_when: "size(outputs)", conditions: [{expr: "true", target: b}]}
          - {id: b, uses: demo.any}
    """,
        "5:59: step 'a' routing.terminate_when: 'size(outputs)' gives a number, never true or false; write a condition, e.g. a comparison (x > 0, x == 'done') or has(...)",
    ),
    case(
        "when_is_a_yaml_boolean",
        """
        name: w
        steps:
          - id: a
            uses: demo.any
            when: yes
    """,
        "5:11: step 'a': when: YAML reads this value as a boolean, not text (yes, no, on and off are booleans too); put it in quotes, e.g. when: \"true\"",
    ),
    pytest.param(
        "name: w\nsteps:\n\t- {id: a, uses: demo.any}\n",
        [
            "3:1: YAML syntax error: while scanning for the next token found character '\\t' that cannot start any token; indent with spaces — YAML does not allow tab characters there"
        ],
        id="tab_indentation",
    ),
    case(
        "non_ascii_id_folds",
        """
        name: w
        steps:
          - {id: café, uses: demo.any}
    """,
        "3:10: step id 'café' is not an identifier ([a-z][a-z0-9_]*); use 'cafe'",
    ),
    case(
        "non_ascii_id_without_ascii_letters",
        """
        name: w
        steps:
          - {id: 步骤, uses: demo.any}
    """,
        "3:10: step id '步骤' is not an identifier ([a-z][a-z0-9_]*): names are written in ASCII letters, digits and _; spell it in ASCII, e.g. 'step_1'",
    ),
    case(
        "min_on_a_string_input",
        """
        name: w
        inputs:
          topic: {type: string, min: 1}
        steps:
          - {id: a, uses: demo.any}
    """,
        "3:30: input 'topic': min bounds int and float inputs (this one is string); remove min or use choices",
    ),
    case(
        "min_above_max",
        """
        name: w
        inputs:
          n: {type: int, min: 5, max: 1}
        steps:
          - {id: a, uses: demo.any}
    """,
        "3:31: input 'n': max 1 is below min 5; swap them",
    ),
    case(
        "max_length_on_a_number",
        """
        name: w
        inputs:
          n: {type: int, max_length: 3}
        steps:
          - {id: a, uses: demo.any}
    """,
        "3:30: input 'n': max_length bounds string inputs (this one is int); remove max_length",
    ),
    case(
        "default_longer_than_max_length",
        """
        name: w
        inputs:
          s: {type: string, max_length: 3, default: abcd}
        steps:
          - {id: a, uses: demo.any}
    """,
        "3:45: default of input 's' must be at most 3 characters long, got 4 characters;"
        " change the default or the bounds",
    ),
    case(
        "default_below_min",
        """
        name: w
        inputs:
          n: {type: int, min: 1, default: 0}
        steps:
          - {id: a, uses: demo.any}
    """,
        "3:35: default of input 'n' must be at least 1, got 0; change the default or the bounds",
    ),
    case(
        "when_is_a_string_input",
        """
        name: w
        inputs:
          topic: {type: string, default: x}
        steps:
          - {id: a, uses: demo.any, when: inputs.topic}
    """,
        "5:35: step 'a' when: 'inputs.topic' is declared string, never true or false; compare it, e.g. inputs.topic == 'done'",
    ),
    case(
        "condition_is_a_status",
        """
        name: w
        steps:
          - {id: a, uses: demo.any}
          - {id: b, uses: demo.any, depends_on: [a], when: steps.a.status}
    """,
        "4:52: step 'b' when: 'steps.a.status' is declared string, never true or false; compare it, e.g. steps.a.status == 'SUCCEEDED'",
    ),
    case(
        "condition_is_a_number_output",
        """
        name: w
        steps:
          - id: a
            uses: demo.judge
            routing: {kind: conditional, next: b, conditions: [{expr: "outputs.confidence", target: b}]}
          - {id: b, uses: demo.any}
    """,
        "5:63: step 'a' routing.conditions[0]: 'outputs.confidence' is declared float, never true or false; compare it, e.g. outputs.confidence > 0",
    ),
    case(
        "numbers_not_finite_typed_and_free_form",
        """
        name: w
        version: .inf
        limits: {timeout_s: 1e400, max_cost_usd: -.inf}
        inputs:
          x: {type: float, default: .nan, min: .nan, choices: [1.0, .inf]}
        steps:
          - id: a
            uses: demo.judge
            timeout_s: .inf
            retry_delay_s: "-inf"
            config: {seconds: .inf, deep: [{x: .nan}]}
            routing: {kind: conditional, next: b, tie_breaker: {confidence_threshold: .nan}}
          - {id: b, uses: demo.any}
    """,
        "2:10: version: inf is not a finite number, and a run stores none; write a finite number",
        "3:21: limits.timeout_s: inf is not a finite number, and a run stores none; write a finite number",
        "3:42: limits.max_cost_usd: -inf is not a finite number, and a run stores none; write a finite number",
        "5:29: inputs.x.default: nan is not a finite number, and a run stores none; write a finite number",
        "5:40: inputs.x.min: nan is not a finite number, and a run stores none; write a finite number",
        "5:61: inputs.x.choices.1: inf is not a finite number, and a run stores none; write a finite number",
        "9:16: step 'a': timeout_s: inf is not a finite number, and a run stores none; write a finite number",
        "10:20: step 'a': retry_delay_s: -inf is not a finite number, and a run stores none; write a finite number",
        "11:23: step 'a': config.seconds: inf is not a finite number, and a run stores none; write a finite number",
        "11:40: step 'a': config.deep.0.x: nan is not a finite number, and a run stores none; write a finite number",
        "12:79: step 'a': routing.tie_breaker.confidence_threshold: nan is not a finite number, and a run stores none; write a finite number",
    ),
    case(
        "number_not_finite_where_a_mapping_or_list_belongs_is_one_problem",
        """
        name: w
        inputs:
          x: {type: float, choices: .inf}
        steps:
          - {id: a, uses: demo.any, config: .inf}
    """,
        "3:29: inputs.x.choices: Input should be a valid list, got inf; correct the value",
        "5:37: step 'a': config: Input should be a valid dictionary, got inf; correct the value",
    ),
    case(
        "a_value_a_union_refuses_is_one_problem_naming_what_it_takes",
        """
        name: w
        limits: {max_step_runs: 2.5}
        steps:
          - {id: a, uses: demo.any}
    """,
        "2:25: limits.max_step_runs: Input should be a valid integer or 'auto', got 2.5; correct the value",
    ),
    case(
        "a_union_refusing_a_list_is_one_problem",
        """
        name: w
        limits: {max_step_runs: [1]}
        steps:
          - {id: a, uses: demo.any}
    """,
        "2:25: limits.max_step_runs: Input should be a valid integer or 'auto'; correct the value",
    ),
    case(
        "a_union_refusing_a_value_that_is_not_finite_says_so_once",
        """
        name: w
        limits: {max_step_runs: .inf}
        steps:
          - {id: a, uses: demo.any}
    """,
        "2:25: limits.max_step_runs: inf is not a finite number, and a run stores none; write a finite number",
    ),
    case(
        "keys_missing_from_one_mapping_are_a_problem_each_not_a_union",
        """
        name: w
        steps:
          - {id: a, uses: demo.any, routing: {kind: loop, loop: {}}}
    """,
        "3:57: step 'a': missing required key 'routing.loop.max_iterations'; add it",
        "3:57: step 'a': missing required key 'routing.loop.target'; add it",
    ),
    case(
        "a_boolean_where_a_number_belongs_is_refused_not_read_as_one_or_zero",
        """
        name: w
        version: yes
        limits: {max_step_runs: on, timeout_s: true}
        steps:
          - {id: a, uses: demo.any, retries: off, routing: {kind: loop, loop: {target: a, max_iterations: yes}}}
    """,
        "2:10: version: YAML reads this value as a boolean, not a number (yes, no, on and off are booleans too); write a number",
        "3:25: limits.max_step_runs: YAML reads this value as a boolean, not a number (yes, no, on and off are booleans too); write a number",
        "3:40: limits.timeout_s: YAML reads this value as a boolean, not a number (yes, no, on and off are booleans too); write a number",
        "5:38: step 'a': retries: YAML reads this value as a boolean, not a number (yes, no, on and off are booleans too); write a number",
        "5:99: step 'a': routing.loop.max_iterations: YAML reads this value as a boolean, not a number (yes, no, on and off are booleans too); write a number",
    ),
    case(
        "number_not_finite_in_a_template_step",
        """
        name: w
        templates:
          round:
            params: [n]
            steps:
              - {id: "a{n}", uses: demo.any, config: {weights: [0.5, .inf]}}
        steps:
          - {use: round, with: {n: [1, 2]}}
    """,
        "6:62: step 'a1': config.weights.1: inf is not a finite number, and a run stores none; write a finite number (template round, n=1)",
        "6:62: step 'a2': config.weights.1: inf is not a finite number, and a run stores none; write a finite number (template round, n=2)",
    ),
]


@pytest.mark.parametrize("text, expected", CASES)
def test_malformed_definition_reports_exact_location_and_message(
    text: str, expected: list[str]
) -> None:
    with pytest.raises(WorkflowLoadError) as caught:
        load_workflow_text(text, source="wf.yaml", registry=REGISTRY)
    problems = caught.value.problems
    assert {p.file for p in problems} == {"wf.yaml"}
    assert [str(p).removeprefix("wf.yaml:") for p in problems] == expected
    assert str(caught.value) == "\n".join(f"wf.yaml:{line}" for line in expected)


def test_the_table_covers_at_least_forty_definitions() -> None:
    assert len(CASES) >= 40


ACCEPTED = [
    case(
        "when_is_a_bool_input",
        """
        name: w
        inputs:
          go: {type: bool, default: true}
        steps:
          - {id: a, uses: demo.any, when: inputs.go}
    """,
    ),
    case(
        "condition_is_a_bool_output",
        """
        name: w
        steps:
          - id: a
            uses: demo.judge
            routing: {kind: conditional, next: b, conditions: [{expr: outputs.terminate, target: b}]}
          - {id: b, uses: demo.any}
    """,
    ),
]


@pytest.mark.parametrize("text, expected", ACCEPTED)
def test_conditions_whose_declared_type_is_boolean_load(text: str, expected: list[str]) -> None:
    assert load_workflow_text(text, source="wf.yaml", registry=REGISTRY).steps
