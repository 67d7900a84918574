from __future__ import annotations

from pathlib import Path

import click
import pytest

from router.config import RouterConfig
from tui.app.app import WorkbenchApp
from tui.config import (
    ConfigError,
    WorkbenchConfig,
    config_from_context,
    default_config_path,
    load_config,
)
from tui.launch.workbench import make_workbench
from tui.paths import standard_config_path
from tui.root_options import CONFIG_ENV, CONFIG_PATH_KEY, CONFIG_REQUIRED_KEY


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "config.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def test_missing_file_means_defaults(tmp_path: Path) -> None:
    config = load_config(tmp_path / "absent.yaml")
    assert config.theme == "textual-dark" and config.keymap == {}


def test_valid_file(tmp_path: Path) -> None:
    config = load_config(
        write(
            tmp_path,
            "theme: nord\nkeymap:\n  run.toggle_outline: t\ncorpus:\n  folders: [~/docs]\n",
        )
    )
    assert config.theme == "nord"
    assert config.keymap == {"run.toggle_outline": "t"}
    assert config.corpus.folders == ["~/docs"]


@pytest.mark.parametrize(
    ("text", "line", "words"),
    [
        ("theme: nord\nkeymap:\n  run.report: [r\n", 3, "YAML"),
        ("theme: nord\n\ncolour: red\n", 3, "colour"),
        ("theme: nord\ncorpus:\n  folders: 7\n", 3, "corpus.folders"),
        ("- just\n- a list\n", 1, "mapping"),
        ("keymap:\n  app.help: ''\n", 2, "keymap.app.help"),
    ],
)
def test_mistakes_are_one_line_with_file_and_line(
    tmp_path: Path, text: str, line: int, words: str
) -> None:
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith(f"{path}:{line}:")
    assert words in message


async def test_app_shows_config_error_and_runs_on_defaults(tmp_path: Path, workspace: Path) -> None:
    path = write(tmp_path, "theme: nord\nbogus_section: 1\n")
    workbench = make_workbench(workspace, path)
    workbench.shipped_dir = workspace / "shipped"
    app = WorkbenchApp(workbench)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        messages = [n.message for n in app._notifications]
        assert any(m.startswith(f"{path}:2: bogus_section") for m in messages), messages
        assert app.theme == "textual-dark"


async def test_keymap_from_config_rebinds_by_id(workbench, tmp_path: Path) -> None:
    workbench.config = load_config(write(tmp_path, "keymap:\n  run.toggle_outline: t\n"))
    app = WorkbenchApp(workbench)
    async with app.run_test(size=(140, 44)) as pilot:
        await pilot.pause()
        screen = app.open_run("run-done")
        await pilot.pause()
        assert screen.query_one("#graph").current == "dag"
        await pilot.press("o")
        assert screen.query_one("#graph").current == "dag"
        await pilot.press("t")
        await pilot.pause()
        assert screen.query_one("#graph").current == "outline"


ROUTER_SECTION = (
    "router:\n"
    "  providers:\n"
    "    - name: local\n"
    "      kind: ollama_native\n"
    "      base_url: http://127.0.0.1:11434\n"
    "      model: qwen3\n"
    "  profiles:\n"
    "    careful: {provider: local, temperature: 0}\n"
    "  policy:\n"
    "    max_attempts: 2\n"
)


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("theme: " + "[" * 300 + "]" * 300 + "\n", ":1:"),
        ("keymap:\n" + "  # padding\n" * 100_000, "the limit is"),
    ],
    ids=["300 levels deep", "oversized"],
)
def test_a_hostile_config_is_refused_in_one_line_before_it_is_loaded(
    tmp_path: Path, text: str, words: str
) -> None:
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith(str(path)) and words in message
    assert "nested" in message or "bytes" in message


def test_router_section_is_the_typed_router_config(tmp_path: Path) -> None:
    config = load_config(write(tmp_path, "theme: nord\n" + ROUTER_SECTION))
    assert isinstance(config.router, RouterConfig)
    assert [p.name for p in config.router.providers] == ["local"]
    assert config.router.providers[0].models == {1: "qwen3", 2: "qwen3", 3: "qwen3"}
    assert config.router.policy.max_attempts == 2
    assert config.source == str(tmp_path / "config.yaml")


def test_file_providers_replace_the_environments(tmp_path: Path) -> None:
    config = load_config(write(tmp_path, ROUTER_SECTION))
    assert [p.name for p in config.effective_router({"OPENAI_API_KEY": "sk-x"}).providers] == [
        "local"
    ]


def test_policy_only_file_keeps_the_environments_providers(tmp_path: Path) -> None:
    config = load_config(write(tmp_path, "router:\n  policy:\n    max_attempts: 3\n"))
    effective = config.effective_router({"OPENAI_API_KEY": "sk-x"})
    assert [p.name for p in effective.providers] == ["openai"]
    assert effective.policy.max_attempts == 3


def test_a_profile_must_name_a_provider_of_the_file(tmp_path: Path) -> None:
    path = write(tmp_path, "theme: nord\nrouter:\n  profiles:\n    careful: {provider: openai}\n")
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    assert str(caught.value) == (
        f"{path}:2: router: profile 'careful' names provider 'openai', which is not "
        "configured; add it under router.providers"
    )


def test_empty_sections_mean_the_defaults(tmp_path: Path) -> None:
    config = load_config(write(tmp_path, "router:\ncorpus:\nkeymap:\n"))
    assert config.router == RouterConfig() and config.corpus.folders == [] and config.keymap == {}


@pytest.mark.parametrize(
    ("text", "line", "words"),
    [
        (
            ROUTER_SECTION.replace("ollama_native", "olama"),
            4,
            "router.providers[0].kind: Input should be 'openai'",
        ),
        (
            ROUTER_SECTION.replace("max_attempts: 2", "max_attempts: 0"),
            10,
            "router.policy.max_attempts",
        ),
        (
            ROUTER_SECTION.replace("temperature: 0", "temperature: 9"),
            8,
            "router.profiles.careful.temperature",
        ),
        (
            ROUTER_SECTION.replace("      model: qwen3\n", ""),
            3,
            "router.providers[0]: needs models",
        ),
        (ROUTER_SECTION.replace("  policy:\n", "  polcy:\n"), 9, "router.polcy: unknown key"),
        ("theme: nord\nrouter: [a, b]\n", 2, "router: Input should be a valid dictionary"),
    ],
)
def test_router_mistakes_name_file_line_and_key(
    tmp_path: Path, text: str, line: int, words: str
) -> None:
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith(f"{path}:{line}: ")
    assert words in message


def test_a_pasted_key_is_refused_without_being_repeated(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        ROUTER_SECTION.replace(
            "      model: qwen3\n", "      model: qwen3\n      api_key: sk-CANARY-5521\n"
        ),
    )
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    message = str(caught.value)
    assert message.startswith(
        f"{path}:7: router.providers[0].api_key: keys never go in the config file"
    )
    assert "CANARY" not in message


def test_which_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(CONFIG_ENV, str(tmp_path / "from-env.yaml"))
    assert standard_config_path() == tmp_path / "from-env.yaml"
    assert default_config_path() == tmp_path / "from-env.yaml"
    root = click.Context(
        click.Command("workbench"), obj={CONFIG_PATH_KEY: str(tmp_path / "flag.yaml")}
    )
    with root:
        assert default_config_path() == tmp_path / "flag.yaml"
    monkeypatch.delenv(CONFIG_ENV)
    assert standard_config_path().name == "config.yaml" and "research-workbench" in str(
        standard_config_path()
    )


def test_a_named_file_must_exist(tmp_path: Path) -> None:
    missing = tmp_path / "missing.yaml"
    assert load_config(missing) == WorkbenchConfig()
    root = click.Context(
        click.Command("workbench"), obj={CONFIG_PATH_KEY: str(missing), CONFIG_REQUIRED_KEY: True}
    )
    with pytest.raises(
        ConfigError, match=r"missing\.yaml: no such config file; check the --config path"
    ):
        config_from_context(root)
