"""The router's config: file and mapping loading, one-line errors naming file and key, providers from env."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from router.config import (
    ConfigError,
    RouterConfig,
    effective_router_config,
    load_router_config,
    router_config_from_env,
)


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "config.yaml"
    path.write_text(text)
    return path


def test_file_with_router_key(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """
theme: dark
router:
  providers:
    - name: openai
      kind: openai
      models: {1: gpt-4.1-mini, "2": gpt-4.1}
      bulkhead: 20
      rpm: 500
      tpm: 200000
    - {name: local, kind: ollama_native, model: llama3.2, base_url: "http://127.0.0.1:11434/"}
  profiles:
    careful: {provider: openai, model: gpt-4.1, temperature: 0}
  policy: {max_attempts: 3}
""",
    )
    config = load_router_config(path)
    openai, local = config.providers
    assert (
        openai.models == {1: "gpt-4.1-mini", 2: "gpt-4.1"}
        and openai.api_key_env == "OPENAI_API_KEY"
    )
    assert (openai.bulkhead, openai.rpm, openai.tpm) == (20, 500, 200000)
    assert (
        local.models == {1: "llama3.2", 2: "llama3.2", 3: "llama3.2"} and local.api_key_env is None
    )
    assert local.resolved_base_url == "http://127.0.0.1:11434"
    assert config.profiles["careful"].temperature == 0
    assert config.policy.max_attempts == 3 and config.policy.cooldown_rate_limit_s == 120


def test_empty_or_absent_router_section(tmp_path: Path) -> None:
    assert load_router_config(write(tmp_path, "")) == RouterConfig()
    assert load_router_config(write(tmp_path, "theme: dark\n")) == RouterConfig()


@pytest.mark.parametrize(
    ("section", "message"),
    [
        (
            {"providers": [{"name": "x", "kind": "opena", "model": "m"}]},
            "cfg.yaml: router.providers[0].kind: Input should be",
        ),
        ({"providers": [{"name": "x", "kind": "openai"}]}, "router.providers[0]: needs models:"),
        (
            {"providers": [{"name": "x", "kind": "openai", "model": "m", "bulkhed": 3}]},
            "router.providers[0].bulkhed: unknown key",
        ),
        (
            {"providers": [{"name": "x", "kind": "openai", "model": "m", "bulkhead": 0}]},
            "router.providers[0].bulkhead: Input should be greater than or equal to 1",
        ),
        (
            {"providers": [{"name": "x", "kind": "azure", "model": "m"}]},
            "an azure provider needs base_url",
        ),
        (
            {"providers": [{"name": "builtin", "kind": "openai", "model": "m"}]},
            "'builtin' is reserved",
        ),
        (
            {"providers": [{"name": "Open AI", "kind": "openai", "model": "m"}]},
            "router.providers[0].name: use lower-case",
        ),
        (
            {"providers": [{"name": "x", "kind": "openai", "models": {0: "m"}}]},
            "tiers are whole numbers from 1",
        ),
        (
            {"providers": [{"name": "x", "kind": "openai", "model": "m", "base_url": "ftp://h"}]},
            "must be an http(s) URL",
        ),
        (
            {
                "providers": [
                    {"name": "x", "kind": "openai", "model": "m"},
                    {"name": "x", "kind": "gemini", "model": "g"},
                ]
            },
            "provider name 'x' is used twice",
        ),
        ({"profiles": {"p": {"provider": "ghost"}}}, "profile 'p' names provider 'ghost'"),
        (
            {"policy": {"max_attempts": 0}},
            "router.policy.max_attempts: Input should be greater than or equal to 1",
        ),
        ({"policy": {"nope": 1}}, "router.policy.nope: unknown key"),
        (
            {"providers": [{"kind": "openai", "model": "m"}]},
            "router.providers[0].name: is required",
        ),
        ([1, 2], "router: must be a mapping"),
    ],
)
def test_errors_are_one_line_naming_file_and_key(section: object, message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        load_router_config(section, "cfg.yaml") if isinstance(section, dict) else __import__(
            "router.config"
        ).config.parse_router_config(section, "cfg.yaml")
    text = str(caught.value)
    assert "\n" not in text and text.startswith("cfg.yaml: ")
    assert message in text


def test_several_problems_are_counted(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"\(and 1 more problem\(s\)\)"):
        load_router_config(
            {"providers": [{"name": "x", "kind": "nope"}, {"name": "y", "kind": "nope"}]}, "c"
        )


def test_yaml_errors_and_missing_files(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"config.yaml:\d+:\d+: YAML syntax error"):
        load_router_config(write(tmp_path, "router:\n  providers:\n  - {name: x\n"), "config.yaml")
    with pytest.raises(ConfigError, match="file not found"):
        load_router_config(tmp_path / "absent.yaml")
    with pytest.raises(ConfigError, match="top level must be a mapping"):
        load_router_config(write(tmp_path, "- a\n- b\n"))


def test_no_environment_means_builtin_alone() -> None:
    assert router_config_from_env({}).providers == []
    assert router_config_from_env({"OPENAI_API_KEY": "  "}).providers == []
    assert (
        router_config_from_env({"AZURE_OPENAI_API_KEY": "k"}).providers == []
    )  # needs the endpoint too


def test_every_environment_variable() -> None:
    env = {
        "OPENAI_API_KEY": "a",
        "ANTHROPIC_API_KEY": "b",
        "GEMINI_API_KEY": "c",
        "AZURE_OPENAI_API_KEY": "d",
        "AZURE_OPENAI_ENDPOINT": "https://res.openai.azure.com/",
        "AZURE_OPENAI_DEPLOYMENT": "gpt4o-dep",
        "GITHUB_TOKEN": "e",
        "OLLAMA_HOST": "0.0.0.0:11500",
        "OLLAMA_MODEL": "qwen3",
    }
    config = router_config_from_env(env)
    by_name = {p.name: p for p in config.providers}
    assert set(by_name) == {"openai", "anthropic", "gemini", "azure", "github", "ollama"}
    assert by_name["azure"].resolved_base_url == "https://res.openai.azure.com"
    assert (
        by_name["azure"].models[1] == "gpt4o-dep"
        and by_name["azure"].resolved_api_version == "2024-10-21"
    )
    assert by_name["github"].resolved_base_url == "https://models.github.ai/inference"
    assert by_name["ollama"].resolved_base_url == "http://127.0.0.1:11500"
    assert by_name["ollama"].kind == "ollama_native" and by_name["ollama"].models[1] == "qwen3"
    assert all(p.api_key_env in (None, *env) for p in config.providers)


@pytest.mark.parametrize(
    ("host", "expected"),
    [
        ("localhost", "http://localhost:11434"),
        ("http://10.0.0.5:9999", "http://10.0.0.5:9999"),
        ("0.0.0.0", "http://127.0.0.1:11434"),
        ("https://ollama.example.com", "https://ollama.example.com:11434"),
    ],
)
def test_ollama_host_forms(host: str, expected: str) -> None:
    assert router_config_from_env({"OLLAMA_HOST": host}).providers[0].resolved_base_url == expected


def test_file_providers_win_over_environment() -> None:
    file_config = load_router_config(
        {
            "providers": [{"name": "mine", "kind": "openai", "model": "m"}],
            "policy": {"max_attempts": 2},
        }
    )
    assert effective_router_config(file_config, {"GEMINI_API_KEY": "x"}) is file_config
    policy_only = load_router_config({"policy": {"max_attempts": 2}})
    merged = effective_router_config(policy_only, {"GEMINI_API_KEY": "x"})
    assert [p.name for p in merged.providers] == ["gemini"] and merged.policy.max_attempts == 2
    assert effective_router_config(None, {}).providers == []


def test_config_is_frozen() -> None:
    config = load_router_config({"providers": [{"name": "x", "kind": "openai", "model": "m"}]})
    with pytest.raises(ValidationError):
        config.providers[0].bulkhead = 3  # type: ignore[misc]
