"""Registry files: every class of error at its exact file:line:col, valid entries kept."""

from __future__ import annotations

from pathlib import Path

import pytest

import research.agent_tools  # noqa: F401 - registers the corpus tool implementations
from agents.registry_loader import load_registry, load_registry_text
from agents.tools import TOOL_IMPLEMENTATIONS
from tests.agents.agent_helpers import count

REPO = Path(__file__).resolve().parents[2]

AGENT = "models:\n  m: {tier: 1}\nagents:\n  a:\n    role: r\n    model: m\n"

CASES = {
    "yaml_syntax": (
        "agents:\n  a: [1, 2\n",
        "3:1: YAML syntax error: while parsing a flow sequence expected ',' or ']',"
        " but got '<stream end>'",
    ),
    "top_not_mapping": (
        "- agents\n",
        "1:1: a registry file is a mapping with agents, tools, models or policies sections",
    ),
    "unknown_section": (
        "agents: {}\ntool:\n  x: {}\n",
        "2:1: unknown section 'tool' (did you mean 'tools'?); a registry file has agents,"
        " tools, models, policies",
    ),
    "duplicate_key": (
        "models:\n  m: {tier: 1}\n  m: {tier: 2}\n",
        "3:3: duplicate key 'm' (first written at line 2)",
    ),
    "name_not_identifier": (
        "models:\n  Fast-One: {tier: 1}\n",
        "2:3: model profile name 'Fast-One' is not an identifier ([a-z][a-z0-9_]*)",
    ),
    "unknown_key": (
        "models:\n  m: {tier: 1, temprature: 0.2}\n",
        "2:16: model profile 'm'.temprature: unknown key (did you mean 'temperature'?);"
        " expected one of tier, provider, model, temperature, max_tokens, price_per_1k_tokens",
    ),
    "missing_required_field": (AGENT, "4:3: agent 'a'.output: Field required"),
    "wrong_type": (
        AGENT + "    output: {x: {type: string}}\n    max_iterations: many\n",
        "8:21: agent 'a'.max_iterations: Input should be a valid integer, unable to parse"
        " string as an integer (got 'many')",
    ),
    "out_of_range": (
        "models:\n  m: {tier: 9}\n",
        "2:13: model profile 'm'.tier: Input should be less than or equal to 5 (got 9)",
    ),
    "unknown_field_type": (
        AGENT + "    output:\n      x: {type: str}\n",
        "8:17: agent 'a'.output.x.type: Input should be 'string', 'int', 'float', 'bool',"
        " 'date', 'list' or 'dict' (got 'str')",
    ),
    "profile_without_target": (
        "models:\n  m: {temperature: 0.5}\n",
        "2:6: model profile 'm': a model profile names a provider tier or a provider",
    ),
    "unknown_implementation": (
        "tools:\n  t:\n    description: d\n    runs: corpus.serch\n",
        "4:11: tool 't': runs 'corpus.serch' is not a registered tool implementation"
        " (did you mean 'corpus.search'?) (registered: ",
    ),
    "implementation_not_importable": (
        "tools:\n  t:\n    description: d\n    runs: no_such_module:run\n",
        "4:11: tool 't': runs: cannot import no_such_module: ModuleNotFoundError:",
    ),
    "implementation_not_async": (
        "tools:\n  t:\n    description: d\n    runs: json:dumps\n",
        "4:11: tool 't': runs: json:dumps is not an async function",
    ),
    "agent_unknown_tool": (
        AGENT + "    tools: [lookup_x]\n    output: {x: {type: string}}\n",
        "7:13: agent 'a': unknown tool 'lookup_x'",
    ),
    "agent_unknown_model": (
        "models:\n  fast: {tier: 1}\nagents:\n  a:\n    role: r\n    model: fats\n"
        "    output: {x: {type: string}}\n",
        "6:12: agent 'a': unknown model profile 'fats' (did you mean 'fast'?)",
    ),
    "policy_unknown_agent": (
        "policies:\n  p:\n    agents:\n      ghost: {budget: {calls: 1}}\n",
        "4:7: policy 'p': unknown agent 'ghost'",
    ),
    "policy_unknown_tool": (
        "policies:\n  p:\n    approval_required: [nope]\n",
        "3:25: policy 'p': unknown tool 'nope'",
    ),
    "policy_unknown_model": (
        "policies:\n  p:\n    agents:\n      '*': {models: [gpt]}\n",
        "4:22: policy 'p': unknown model profile 'gpt'",
    ),
    "policy_negative_budget": (
        "policies:\n  p:\n    run_budget: {calls: -1}\n",
        "3:25: policy 'p'.run_budget.calls: Input should be greater than or equal to 0 (got -1)",
    ),
}


@pytest.mark.parametrize("text,expected", CASES.values(), ids=list(CASES))
def test_each_error_class_is_reported_at_its_exact_place(text: str, expected: str) -> None:
    loaded = load_registry_text(text, "reg.yaml", TOOL_IMPLEMENTATIONS.names())
    messages = [str(p) for p in loaded.problems]
    assert len(messages) == 1, messages
    assert messages[0].startswith(f"reg.yaml:{expected}"), messages[0]


def test_an_invalid_definition_is_dropped_and_the_valid_ones_kept() -> None:
    text = AGENT + "    tools: [nothing]\n    output: {x: {type: string}}\n"
    text += "  b:\n    role: r\n    model: m\n    output: {x: {type: string}}\n"
    loaded = load_registry_text(text, "reg.yaml", TOOL_IMPLEMENTATIONS.names())
    assert [p.line for p in loaded.problems] == [7]
    assert sorted(loaded.registry.agents) == ["b"]
    assert sorted(loaded.registry.models) == ["m"]


def test_roots_files_and_overrides(tmp_path: Path) -> None:
    """A name twice in one root is an error at the second file; a later root overrides."""
    user = tmp_path / "user"
    (user / "models").mkdir(parents=True)
    (user / "models" / "a.yaml").write_text("models:\n  builtin: {provider: builtin}\n")
    (user / "models" / "b.yaml").write_text("models:\n  mine: {tier: 1}\n  builtin: {tier: 2}\n")
    (user / "agents").mkdir()
    (user / "agents" / "x.yaml").write_text("agents:\n  writer:\n    role: mine\n")
    loaded = load_registry(
        [(REPO / "workflows", "shipped"), (user, "workspace")], TOOL_IMPLEMENTATIONS.names()
    )
    messages = [str(p) for p in loaded.problems]
    b_file, x_file = user / "models" / "b.yaml", user / "agents" / "x.yaml"
    assert messages == [
        f"{x_file}:2:3: agent 'writer'.model: Field required",
        f"{x_file}:2:3: agent 'writer'.output: Field required",
        f"{b_file}:3:3: model profile 'builtin' is defined twice in this root"
        f" (first at {user / 'models' / 'a.yaml'}:2:3)",
    ]
    assert loaded.registry.models["builtin"].origin.root == "workspace"
    assert loaded.registry.models["mine"].origin.line == 2
    assert loaded.registry.agents["writer"].origin.root == "shipped", "the bad override is dropped"


def test_the_shipped_registry_is_valid() -> None:
    loaded = load_registry([(REPO / "workflows", "shipped")], TOOL_IMPLEMENTATIONS.names())
    assert loaded.problems == []
    assert {"searcher", "reader", "fact_checker", "writer"} <= set(loaded.registry.agents)
    assert {"corpus_search", "document_read", "citation_check"} <= set(loaded.registry.tools)


def test_a_tool_may_run_a_python_function_by_its_import_path() -> None:
    text = "tools:\n  t:\n    description: d\n    runs: tests.agents.agent_helpers:count\n"
    loaded = load_registry_text(text, "reg.yaml", TOOL_IMPLEMENTATIONS.names())
    assert loaded.problems == []
    assert TOOL_IMPLEMENTATIONS.get("tests.agents.agent_helpers:count") is count
