"""The router's commands: ``workbench providers``, ``workbench providers check``, ``workbench fault-server``."""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import click
import yaml
from rich.console import Console
from rich.table import Table
from rich.text import Text

from router.build import build_router
from router.fault.demo import demo_router_config
from router.fault.script import DEFAULT_SCRIPT_PATH, FaultScriptError, load_fault_script
from router.fault.server import FaultServer, RecordedRequest
from router.health_check import HealthCheck
from router.local import TaskHandlerRegistry
from router.models import ProviderSnapshot
from router.router import SmartModelRouter
from tui.commands.command_context import BadInput, workspace_of
from tui.commands.numbers import FiniteFloat
from tui.config import config_from_context, default_config_path
from tui.echo import echo, echo_json
from tui.exit_codes import FAILED
from tui.present.console import SafeConsole
from tui.present.headless import console_style

T = TypeVar("T")


def _open_router(ctx: click.Context) -> SmartModelRouter:
    stats_file = workspace_of(ctx).provider_stats_db
    settings = config_from_context(ctx)
    return build_router(
        settings.effective_router(os.environ),
        stats_path=stats_file if stats_file.exists() else None,
        stats_database=settings.store,
        task_handlers=TaskHandlerRegistry(),
    )


def _with_router(ctx: click.Context, use: Callable[[SmartModelRouter], Awaitable[T]]) -> T:
    """Open the router, run ``use`` on it, and close it without writing stats (these commands only look)."""

    async def run() -> T:
        router = _open_router(ctx)
        try:
            return await use(router)
        finally:
            await router.aclose(flush=False)

    return asyncio.run(run())


def _console() -> Console:
    """A console that does not squeeze the table to 80 columns when output is piped."""
    console = SafeConsole()
    return console if console.is_terminal else SafeConsole(width=160)


def _seconds(value: float | None) -> str:
    if value is None:
        return "—"
    return f"{value * 1000:.0f} ms" if value < 1 else f"{value:.2f} s"


def _headroom(remaining: int | None, limit: int | None) -> str:
    if remaining is None and limit is None:
        return "—"
    return f"{'?' if remaining is None else remaining}/{'?' if limit is None else limit}"


def providers_table(snapshots: list[ProviderSnapshot]) -> Table:
    table = Table(title="Providers", title_justify="left")
    for column, justify in (
        ("Provider", "left"),
        ("Kind", "left"),
        ("State", "left"),
        ("Next probe", "right"),
        ("Success", "right"),
        ("p50", "right"),
        ("p95", "right"),
        ("RPM left", "right"),
        ("TPM left", "right"),
        ("In flight", "right"),
        ("Spend", "right"),
        ("Notes", "left"),
    ):
        table.add_column(column, justify=justify)  # type: ignore[arg-type]
    for snap in snapshots:
        notes = []
        if snap.misconfigured:
            notes.append(f"misconfigured: {snap.misconfigured_reason}")
        if snap.last_error:
            notes.append(
                f"last error {snap.last_error}"
                + (f" ({snap.last_error_status})" if snap.last_error_status else "")
            )
        if snap.throttle_reject_p > 0:
            notes.append(f"throttling p={snap.throttle_reject_p:.2f}")
        for model, reason in snap.unhealthy_models.items():
            notes.append(f"model {model} {reason}")
        if snap.fallback_total:
            notes.append(f"{snap.fallback_total} answers in place of a remote provider")
        for model, mode in snap.structured_output.items():
            notes.append(f"{model}: structured output as {mode}")
        table.add_row(
            snap.name,
            snap.kind,
            Text(snap.state.value, style=console_style(snap.state.value)),
            f"{snap.cooldown_remaining_s:.1f} s" if snap.cooldown_remaining_s > 0 else "—",
            "—" if snap.success_rate is None else f"{snap.success_rate:.0%}",
            _seconds(snap.p50_latency_s),
            _seconds(snap.p95_latency_s),
            _headroom(snap.rpm_remaining, snap.rpm_limit),
            _headroom(snap.tpm_remaining, snap.tpm_limit),
            f"{snap.in_flight}/{snap.bulkhead_size}",
            f"${snap.cost_usd_total:.4f}" if snap.cost_usd_total else "—",
            "; ".join(notes),
        )
    return table


@click.group("providers", invoke_without_command=True)
@click.option(
    "--json", "as_json", is_flag=True, help="Print the snapshots as JSON instead of a table."
)
@click.pass_context
def providers_group(ctx: click.Context, as_json: bool) -> None:
    """Show every LLM provider: breaker state, cooldown, success rate, latency, headroom, in-flight."""
    if ctx.invoked_subcommand is not None:
        return

    async def collect(router: SmartModelRouter) -> list[ProviderSnapshot]:
        return router.snapshot()

    snapshots = _with_router(ctx, collect)
    if as_json:
        echo_json([s.model_dump(mode="json") for s in snapshots])
        return
    _console().print(providers_table(snapshots))


@providers_group.command("check")
@click.pass_context
def providers_check(ctx: click.Context) -> None:
    """Probe each provider's health endpoint (/v1/models, /api/tags, ...) now."""

    results: list[HealthCheck] = _with_router(ctx, lambda router: router.check_health())
    if not results:
        echo("No remote providers configured: the built-in provider serves alone.")
        return
    table = Table(title="Provider health", title_justify="left")
    for column in ("Provider", "Kind", "Result", "Latency", "Detail"):
        table.add_column(column)
    for result in results:
        table.add_row(
            result.name,
            result.kind,
            Text("ok" if result.ok else "FAIL", style="green" if result.ok else "bold red"),
            _seconds(result.latency_s),
            result.detail,
        )
    _console().print(table)
    if not all(r.ok for r in results):
        ctx.exit(FAILED)


def _print_request(record: RecordedRequest) -> None:
    echo(
        f"{record.at:8.2f}s  {record.provider:<10} {record.method:<4} {record.api_path:<48} "
        f"{record.route:<6} -> {record.fault}"
    )


@click.command("fault-server")
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=0,
    show_default=True,
    help="Port on 127.0.0.1 (0 picks a free one).",
)
@click.option(
    "--script",
    "script_path",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Chaos script (YAML); default: the shipped router/fault/scripts/chaos.yaml.",
)
@click.option(
    "--time-scale",
    type=FiniteFloat(min=0, min_open=True),
    default=None,
    help="Multiply every scripted delay and Retry-After (0.1 = ten times faster).",
)
@click.option("--quiet", is_flag=True, help="Do not print each request.")
def fault_server_cmd(
    port: int, script_path: Path | None, time_scale: float | None, quiet: bool
) -> None:
    """Run the loopback fault-injecting provider server so you can watch the router cope."""
    try:
        script = load_fault_script(script_path or DEFAULT_SCRIPT_PATH)
    except FaultScriptError as exc:
        raise BadInput(str(exc)) from None
    server = FaultServer(
        script=script,
        time_scale=time_scale,
        port=port,
        on_request=None if quiet else _print_request,
    )

    async def serve() -> None:
        try:
            await server.start()
        except OSError as exc:
            raise BadInput(
                f"cannot listen on 127.0.0.1:{port} ({exc.strerror or exc}) — choose another --port"
            ) from None
        prefixes = sorted(script.providers) or ["openai"]
        section: dict[str, Any] = {
            "router": demo_router_config(server.base_url, prefixes, time_scale=server.time_scale)
        }
        echo(f"fault server listening on {server.base_url} (time scale {server.time_scale:g})")
        for prefix in prefixes:
            echo(f"  {prefix:<10} {server.url(prefix)}")
        echo(f"\nrouter config for these providers (paste it into {default_config_path()}):\n")
        echo(yaml.safe_dump(section, sort_keys=False))
        echo("Ctrl-C stops the server.", err=True)
        # Explicit handlers: a process started in the background inherits SIGINT ignored,
        # and a supervisor stops servers with SIGTERM; both must end it cleanly.
        stopping = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(signum, stopping.set)
        try:
            await stopping.wait()
        finally:
            await server.stop()

    try:
        asyncio.run(serve())
    except KeyboardInterrupt:
        pass
    echo("fault server stopped", err=True)


COMMANDS = [providers_group, fault_server_cmd]
