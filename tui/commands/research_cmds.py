"""`workbench research` and `workbench corpus`: deep research from the command line.

``workbench research "question"`` runs workflows/deep_research.yaml over the
workspace corpus (the default collection is built on first use) and writes
report.md, quality.yaml and rag_package.jsonl to <workspace>/runs/<run_id>/.
``workbench research sensitivity RUN_ID…`` replays stored runs' stop and
coalesce decisions under other weights. ``workbench corpus add|list|search``
manages the corpus.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click
from rich.markup import escape
from rich.table import Table

from engine.protocol import ExecutionResult
from engine.run_inputs import InputError, resolve_inputs
from engine.store import new_run_id
from plumbing.workspace import RunFolder
from research.corpus import Corpus
from research.dates import parse_iso_day
from research.default_corpus import outdated_notices
from research.sources import DOMAINS
from tui.commands.app_cmds import open_app
from tui.commands.command_context import BadInput, load_or_exit, workspace_of
from tui.commands.common import (
    drive,
    interrupt_mode,
    open_store,
    responder_for,
    store_location,
)
from tui.config import active_config
from tui.echo import echo
from tui.launch.run import Surface, open_run
from tui.launch.wiring import open_corpus
from tui.launch.workspace import Workspace
from tui.present.console import SafeConsole
from tui.present.progress import counting
from tui.present.quality_file import read_quality
from tui.root_options import WORKSPACE_KEY
from workflows import WORKFLOWS_DIR

WORKFLOW = WORKFLOWS_DIR / "deep_research.yaml"


def _as_of(_ctx: click.Context, _param: click.Parameter, value: str | None) -> str | None:
    if value is None:
        return None
    try:
        return parse_iso_day(value).isoformat()
    except ValueError as error:
        raise click.BadParameter(str(error)) from None


class ResearchGroup(click.Group):
    """A group that is also a command: ``research "question"`` runs, ``research sensitivity …`` dispatches."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        """Take the first word that is neither an option nor an option's value, unless it names a subcommand."""
        takes_value = {
            name
            for param in self.params
            if isinstance(param, click.Option) and not param.is_flag and not param.count
            for name in param.opts
        }
        index = 0
        while index < len(args):
            word = args[index]
            if word == "--":
                index += 1
                break
            if not word.startswith("-") or word == "-":
                break
            index += 2 if word in takes_value else 1
        if index < len(args) and args[index] not in self.commands:
            ctx.meta["research.question"] = args[index]
            args = args[:index] + args[index + 1 :]
        return super().parse_args(ctx, args)


@click.group(
    "research",
    cls=ResearchGroup,
    invoke_without_command=True,
    context_settings={"help_option_names": ["-h", "--help"]},
)
@click.option(
    "--corpus",
    "corpus_dirs",
    multiple=True,
    type=click.Path(file_okay=False),
    help="A folder of md/rst/txt/html/pdf to index and search (repeatable). Default: every collection "
    "in the workspace corpus, the Python docs collection built on first use.",
)
@click.option(
    "--domain",
    type=click.Choice(DOMAINS),
    default=None,
    help="Sets the recency window (ADR-007 §5.4); without it the window is inferred from the corpus.",
)
@click.option(
    "--as-of",
    "as_of",
    callback=_as_of,
    default=None,
    metavar="YYYY-MM-DD",
    help="Measure recency against this day (default today; recorded in quality.yaml).",
)
@click.option("--max-rounds", type=click.IntRange(1, 4), default=4, show_default=True)
@click.option("--min-recent-sources", type=click.IntRange(0), default=10, show_default=True)
@click.option(
    "--weights",
    type=click.Choice(["proposed", "equal", "roc"]),
    default="proposed",
    show_default=True,
    help="CI weights coalesce ranks rounds by.",
)
@click.option("--patience", type=click.IntRange(0), default=1, show_default=True)
@click.option("--headless", is_flag=True, help="Print progress here instead of opening the app.")
@click.option(
    "--on-interrupt",
    type=click.Choice(["default", "wait", "ask"]),
    default=None,
    help="Who answers prompts: default (approve the plan, withhold insufficient reports), wait, ask.",
)
@click.pass_context
def research_group(
    ctx: click.Context,
    corpus_dirs: tuple[str, ...],
    domain: str | None,
    as_of: str | None,
    max_rounds: int,
    min_recent_sources: int,
    weights: str,
    patience: int,
    headless: bool,
    on_interrupt: str | None,
) -> None:
    """Research a question: workbench research "question" [options]."""
    if ctx.invoked_subcommand is not None:
        return
    question = ctx.meta.get("research.question")
    if question is None:
        echo(ctx.get_help())
        return
    if not question.strip():
        raise BadInput('the question is empty; ask something, e.g. workbench research "asyncio"')
    workspace = workspace_of(ctx)
    collections: list[str] = []
    console = SafeConsole()
    limits = active_config().corpus.limits()
    with Corpus(workspace.corpus_db) as corpus:
        for folder in corpus_dirs:
            try:
                with counting(console, folder, label=f"indexing {folder}") as progress:
                    report = corpus.add_folder(folder, on_progress=progress, limits=limits)
            except FileNotFoundError as error:
                raise BadInput(f"--corpus {error}") from None
            echo(report.summary(), one_line=True)
            for skipped in report.skipped:
                echo(f"  skipped {skipped.path}: {skipped.reason}", one_line=True)
            collections.append(report.collection)
        _tell_outdated(corpus)
    inputs: dict[str, Any] = {
        "query": question,
        "max_rounds": max_rounds,
        "min_recent_sources": min_recent_sources,
        "tiebreaker_weights": weights,
        "patience": patience,
        "collections": collections,
    }
    if domain:
        inputs["domain"] = domain
    if as_of:
        inputs["as_of"] = as_of
    if not headless:
        open_app((ctx.obj or {}).get(WORKSPACE_KEY), workflow=WORKFLOW, inputs=inputs)
        return
    ctx.exit(_run_headless(ctx, workspace, inputs, on_interrupt))


def _run_headless(
    ctx: click.Context, workspace: Workspace, inputs: dict[str, Any], on_interrupt: str | None
) -> int:
    wf = load_or_exit(ctx, str(WORKFLOW), 2)
    try:
        resolved = resolve_inputs(wf, inputs)
    except InputError as error:
        raise BadInput(str(error)) from None
    console = SafeConsole()
    run_id = new_run_id()

    async def run(printer: Surface) -> ExecutionResult:
        async with open_run(
            workspace,
            wf,
            inputs=resolved,
            run_id=run_id,
            responder=responder_for(interrupt_mode(on_interrupt), console),
            surfaces=[printer],
            store=store,
        ) as opened:
            return await opened.start()

    with open_store(ctx) as store:
        return drive(
            store, run_id, run, console, lambda _: research_summary(workspace.run_folder(run_id))
        )


def research_summary(folder: Path) -> list[str]:
    """What a research run produced, in a few lines ending with the report's path: its confidence,
    the round the report uses, why research stopped — from quality.yaml, never cut JSON."""
    files = RunFolder(folder)
    report = files.report
    if not report.is_file():
        return ["no report was written (see the steps above for why)"]
    quality = read_quality(files.quality)
    lines = [quality["error"]] if "error" in quality else []
    if quality and "error" not in quality:
        best = quality.get("best_ci")
        lines.append(
            f"confidence {quality.get('confidence_level', '?')} · report from round "
            f"R{quality.get('selected_round', '?')} of {quality.get('rounds_completed', '?')}"
            + (f" (CI {best:.2f})" if isinstance(best, (int, float)) else "")
            + f" · stopped: {quality.get('stop_reason') or '–'}"
        )
        failing = quality.get("failing_metrics") or []
        if failing:
            lines.append(f"below the quality gate: {', '.join(map(str, failing))}")
    lines.append(f"quality: {files.quality} · rag package: {files.rag_package}")
    lines.append(f"report: {report}")
    return lines


@research_group.command("sensitivity")
@click.argument("run_ids", nargs=-1, required=True)
@click.option(
    "--all-variants",
    is_flag=True,
    help="List every variant, not only the ones whose outcome flips.",
)
@click.pass_context
def sensitivity_command(ctx: click.Context, run_ids: tuple[str, ...], all_variants: bool) -> None:
    """Replay stored runs' stop and coalesce decisions under other CI weights and ADR-003's gate."""
    from engine.store import UnknownRun
    from research.events import ROUND_SCORED
    from research.sensitivity import analyse_run, records_from_payloads

    console = SafeConsole()
    flipped_runs: list[str] = []
    with open_store(ctx) as store:
        for run_id in run_ids:
            try:
                record = store.get_run(run_id)
            except UnknownRun:
                raise BadInput(
                    f"no run {run_id} in {store_location(ctx)}; list runs with: workbench runs list"
                ) from None
            payloads = [
                e.payload
                for e in store.events(run_id)
                if e.kind == "domain" and e.name == ROUND_SCORED
            ]
            if not payloads:
                console.print(f"{run_id}: no scored research rounds (not a deep_research run?)")
                continue
            records = records_from_payloads(payloads)
            inputs = record.inputs
            outcomes = analyse_run(
                records,
                weights_name=inputs.get("tiebreaker_weights") or "proposed",
                max_rounds=int(inputs.get("max_rounds") or 4),
                patience=int(
                    inputs.get("patience", 1) if inputs.get("patience") is not None else 1
                ),
            )
            flips = [o for o in outcomes if o.flipped]
            if flips:
                flipped_runs.append(run_id)
            table = Table(
                title=f"{run_id}: stopped at R{records[-1].round}, {len(flips)} of {len(outcomes)} "
                f"variants flip"
            )
            for column in ("variant", "stop round", "selected round", "flips"):
                table.add_column(column)
            for outcome in outcomes if all_variants else flips:
                table.add_row(
                    escape(outcome.variant),
                    f"R{outcome.stop_round}"
                    + (" (would continue)" if outcome.would_continue else ""),
                    f"R{outcome.selected_round}",
                    "yes" if outcome.flipped else "no",
                )
            console.print(table)
    console.print(
        "runs whose outcome flips: " + (", ".join(flipped_runs) or "none"), highlight=False
    )


@click.group("corpus")
def corpus_group() -> None:
    """Manage the local research corpus (SQLite FTS5 in the workspace's corpus.sqlite)."""


@corpus_group.command("add")
@click.argument("folder", type=click.Path(file_okay=False))
@click.option("--name", default=None, help="Collection name (default: the folder's name).")
@click.pass_context
def corpus_add(ctx: click.Context, folder: str, name: str | None) -> None:
    """Index (or re-index incrementally) a folder of md/rst/txt/html/pdf files."""
    limits = active_config().corpus.limits()
    with Corpus(workspace_of(ctx).corpus_db) as corpus:
        try:
            with counting(SafeConsole(), folder, label=f"indexing {folder}") as progress:
                report = corpus.add_folder(folder, name, on_progress=progress, limits=limits)
        except FileNotFoundError as error:
            raise BadInput(str(error)) from None
    echo(report.summary(), one_line=True)
    for skipped in report.skipped:
        echo(f"skipped {skipped.path}: {skipped.reason}", one_line=True)


def _tell_outdated(corpus: Corpus) -> None:
    """One line per collection indexed by an older version of the indexing code."""
    for notice in outdated_notices(corpus):
        echo(notice, err=True)


@corpus_group.command("list")
@click.pass_context
def corpus_list(ctx: click.Context) -> None:
    """The collections in the corpus (the default one is built on first use)."""
    with open_corpus(workspace_of(ctx)) as corpus:
        _tell_outdated(corpus)
        table = Table()
        for column in ("collection", "documents", "passages", "root"):
            table.add_column(column)
        for info in corpus.collections():
            table.add_row(info.name, str(info.documents), str(info.passages), escape(info.root))
        SafeConsole().print(table)


@corpus_group.command("search")
@click.argument("terms")
@click.option("--limit", type=click.IntRange(1, 100), default=10, show_default=True)
@click.option(
    "--collection", "collections", multiple=True, help="Search only this collection (repeatable)."
)
@click.pass_context
def corpus_search(ctx: click.Context, terms: str, limit: int, collections: tuple[str, ...]) -> None:
    """Search the corpus: passages ranked by bm25, with snippets."""
    if not terms.strip():
        raise BadInput("corpus search: TERMS is empty; give the words to search for")
    with open_corpus(workspace_of(ctx)) as corpus:
        _tell_outdated(corpus)
        known = [info.name for info in corpus.collections()]
        for name in collections:
            if name not in known:
                raise BadInput(
                    f"--collection {name!r}: no such collection in the corpus (it has "
                    f"{', '.join(known) or 'none'}); see workbench corpus list"
                )
        hits = corpus.search(terms, limit=limit, collections=list(collections) or None)
    if not hits:
        echo("no matches")
        return
    for hit in hits:
        dated = hit["updated"] or hit["published"] or "undated"
        echo(
            f"{hit['score']:7.2f}  {hit['passage_id']}  {hit['title']} ({hit['status'] or '-'}, {dated})",
            one_line=True,
        )
        echo(f"         {' '.join(hit['snippet'].split())}", one_line=True)


COMMANDS = [research_group, corpus_group]
