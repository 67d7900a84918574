"""`workbench app` (the default), `workbench serve`, `workbench demo chaos`.

``open_app`` is what other command groups call to open the app on a new run
or a stored one (``workbench run``, ``workbench research``).
"""

from __future__ import annotations

import shlex
import sys
from pathlib import Path
from typing import Any

import click

from tui.commands.numbers import FiniteFloat
from tui.config import ConfigError, config_path_for, config_required
from tui.launch.run_driver import RunJob
from tui.launch.workbench import make_workbench
from tui.root_options import WORKSPACE_KEY


def open_app(
    workspace: str | Path | None,
    *,
    workflow: Path | None = None,
    inputs: dict[str, Any] | None = None,
    engine: str | None = None,
    run_id: str | None = None,
    job: RunJob | None = None,
) -> None:
    """Open the app: straight onto a new run of ``workflow`` (or ``job``), on stored ``run_id``, or on Home.

    ``workflow`` is loaded on the run's worker thread, after the first frame; ``engine`` forces
    an engine (None: chosen by the workflow's shape).
    """
    from tui.app.app import (
        WorkbenchApp,  # imported here: Textual is slow to import and headless commands skip it
    )

    workbench = make_workbench(workspace)
    workbench.store()  # opened before the first frame, so an unreadable store is one line, not a crash screen
    if job is None and workflow is not None:
        job = workbench.new_run_job(workflow, inputs or {}, engine=engine)
    WorkbenchApp(workbench, run_job=job, open_run_id=run_id).run()


@click.command("app")
@click.option(
    "--run", "run_id", default=None, help="Open this stored run (replay, report, prompts)."
)
@click.pass_context
def app_command(ctx: click.Context, run_id: str | None) -> None:
    """Open the workbench (the default when `workbench` is run alone)."""
    open_app((ctx.obj or {}).get(WORKSPACE_KEY), run_id=run_id)


@click.command("serve")
@click.option("--host", default="127.0.0.1", show_default=True, help="Interface to listen on.")
@click.option(
    "--port", default=8000, show_default=True, type=click.IntRange(1, 65535), help="TCP port."
)
@click.option(
    "--max-sessions",
    default=4,
    show_default=True,
    type=click.IntRange(min=1),
    help="App sessions (browser tabs) at once; one more is told to try later.",
)
@click.option(
    "--public-url",
    default=None,
    help="The address browsers use, when it is not http://HOST:PORT (behind a reverse proxy: "
    "https://workbench.example.org); the page's WebSocket must come from it.",
)
@click.pass_context
def serve_command(
    ctx: click.Context, host: str, port: int, max_sessions: int, public_url: str | None
) -> None:
    """Serve the workbench in a browser (textual-serve), behind a token.

    The address printed at start carries a new token; export WORKBENCH_TOKEN (16 characters or
    more) to choose it. Only pages of the served address may connect. Keep it on loopback and
    put a TLS reverse proxy in front to reach it from elsewhere (docs/security.md).
    """
    from tui.commands.served_app import serve  # imported here: textual-serve is slow to import

    workspace = (ctx.obj or {}).get(WORKSPACE_KEY)
    command = [sys.executable, "-m", "tui.cli"]
    if workspace:
        command += ["--workspace", str(workspace)]
    if config_required(ctx):
        # Named with --config: it must exist, so say so here rather than on a page that never
        # leaves its splash. A $WORKBENCH_CONFIG path reaches the app through the inherited
        # environment, where a file that does not exist yet means the defaults.
        path = config_path_for(ctx)
        if not path.exists():
            raise ConfigError(f"{path}: no such config file; check the --config path")
        command += ["--config", str(path)]
    command.append("app")
    serve(
        shlex.join(command),
        host=host,
        port=port,
        public_url=public_url.rstrip("/") if public_url else None,
        max_sessions=max_sessions,
    )


@click.group("demo")
def demo_group() -> None:
    """Demonstrations that need no network and no API keys."""


@demo_group.command("chaos")
@click.option(
    "--time-scale",
    default=0.05,
    show_default=True,
    type=FiniteFloat(min=0, min_open=True),
    help="Shrinks every scripted delay and cooldown (0.05: a 30 s cooldown takes 1.5 s).",
)
@click.option("--query", default="How does asyncio schedule tasks?", show_default=True)
@click.option("--headless", is_flag=True, help="Print events instead of opening the app.")
@click.pass_context
def chaos_command(ctx: click.Context, time_scale: float, query: str, headless: bool) -> None:
    """Fault server + flaky providers + a research run: watch breakers trip, cool down, probe and close."""
    from tui.demo.chaos import run_chaos_demo

    run_chaos_demo(
        (ctx.obj or {}).get(WORKSPACE_KEY), time_scale=time_scale, query=query, headless=headless
    )


COMMANDS = [app_command, serve_command, demo_group]
