"""Nothing in the application prints to the terminal except through its chokepoints.

tui/echo.py (plain lines, JSON, logging's last resort) and tui/present/console.py's SafeConsole
clean every text; a ``print()``, ``click.echo()``, a plain rich ``Console()`` or a write to
``sys.stdout``/``sys.stderr`` anywhere else would bypass them. The packages below the app print
nothing at all.
"""

from __future__ import annotations

import ast
from pathlib import Path

PROJECT = Path(__file__).resolve().parents[2]
CHOKEPOINTS = {"tui/echo.py", "tui/present/console.py"}
EXEMPT = {
    "tui/entry.py": "two constant lines before anything else is imported (Ctrl-C, a broken install)"
}
PACKAGES = ("tui", "engine", "router", "agents", "research", "workflows", "plumbing")


def _printing_calls(tree: ast.AST) -> list[tuple[int, str]]:
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if isinstance(func, ast.Name) and func.id in ("print", "Console"):
            found.append((node.lineno, func.id))
        elif isinstance(func, ast.Attribute):
            owner = ast.unparse(func.value)
            if (owner, func.attr) in (("click", "echo"), ("click", "secho"), ("rich", "print")):
                found.append((node.lineno, f"{owner}.{func.attr}"))
            elif func.attr == "Console" or (
                func.attr == "write" and owner in ("sys.stdout", "sys.stderr")
            ):
                found.append((node.lineno, f"{owner}.{func.attr}"))
    return sorted(found)


def test_only_the_chokepoints_print() -> None:
    bypasses = []
    for package in PACKAGES:
        for path in sorted((PROJECT / package).rglob("*.py")):
            relative = path.relative_to(PROJECT).as_posix()
            if relative in CHOKEPOINTS or relative in EXEMPT:
                continue
            for line, call in _printing_calls(ast.parse(path.read_text(encoding="utf-8"))):
                bypasses.append(f"{relative}:{line}: {call}(…)")
    assert not bypasses, "prints around tui/echo.py and SafeConsole:\n" + "\n".join(bypasses)


def test_the_check_finds_each_way_of_printing() -> None:
    source = (
        "print(x)\nclick.echo(x)\nclick.secho(x)\nConsole().print(x)\nrich.console.Console()\n"
        "sys.stdout.write(x)\nsys.stderr.write(x)\nrich.print(x)\necho(x)\nSafeConsole()\n"
    )
    assert [call for _, call in _printing_calls(ast.parse(source))] == [
        "print",
        "click.echo",
        "click.secho",
        "Console",
        "rich.console.Console",
        "sys.stdout.write",
        "sys.stderr.write",
        "rich.print",
    ]
