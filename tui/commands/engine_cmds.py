"""The engine's commands, gathered: `workbench run`, `validate`, `resume` (run_cmds) and
`runs list|show|export|history|fork` (runs_cmds).

The commands live in :mod:`tui.commands.run_cmds` and :mod:`tui.commands.runs_cmds`,
the helpers they share in :mod:`tui.commands.common`; this module re-exports both so
existing imports (``from tui.commands.engine_cmds import drive``) keep working, and
``COMMANDS`` still lists every one of those commands.
"""
from __future__ import annotations

import click

from tui.commands.common import (
    BAD_INPUT,
    BUILTIN_STEP_PREFIX,
    EXIT_CODES,
    ON_INTERRUPT,
    RUNS_FILE,
    BadInput,
    close_run_context,
    default_responder,
    drive,
    interrupt_mode,
    load_or_exit,
    make_run_context,
    open_store,
    parse_answer,
    register_steps,
    responder_for,
    terminal_responder,
    workspace_path,
)
from tui.commands.run_cmds import SHADOW_DIFFERS, resume_command, run_command, validate_command
from tui.commands.runs_cmds import runs_export, runs_fork, runs_group, runs_history, runs_list, runs_show

__all__ = [
    "BAD_INPUT", "BUILTIN_STEP_PREFIX", "EXIT_CODES", "ON_INTERRUPT", "RUNS_FILE", "SHADOW_DIFFERS", "BadInput",
    "COMMANDS", "close_run_context", "default_responder", "drive", "interrupt_mode", "load_or_exit",
    "make_run_context", "open_store", "parse_answer", "register_steps", "responder_for", "resume_command",
    "run_command", "runs_export", "runs_fork", "runs_group", "runs_history", "runs_list", "runs_show",
    "terminal_responder", "validate_command", "workspace_path",
]

COMMANDS: list[click.Command] = [run_command, validate_command, resume_command, runs_group]
