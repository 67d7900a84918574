"""Why a step was skipped, in words a newcomer reads, with the engine's own reason beside it.

The engine says ``when is false: steps.supervisor_r1.outputs.decision == 'continue' && …`` —
exact, and CEL. :func:`skip_words` puts the condition in words before it (``supervisor_r1's
decision is 'continue' and …``) and keeps the expression, so nothing is lost; a reason that is
not a condition is left as it is.
"""

from __future__ import annotations

import re

WHEN_FALSE = "when is false: "
_TERMS = (
    (re.compile(r"\bsteps\.([a-z][a-z0-9_]*)\.outputs\.([a-zA-Z_][\w.]*)"), r"\1's \2"),
    (re.compile(r"\binputs\.([a-zA-Z_]\w*)"), r"input \1"),
    (re.compile(r"\s*&&\s*"), " and "),
    (re.compile(r"\s*\|\|\s*"), " or "),
    (re.compile(r"\s*==\s*"), " is "),
    (re.compile(r"\s*!=\s*"), " is not "),
    (re.compile(r"\s*>=\s*"), " is at least "),
    (re.compile(r"\s*<=\s*"), " is at most "),
    (re.compile(r"\s*>\s*"), " is more than "),
    (re.compile(r"\s*<\s*"), " is less than "),
    (re.compile(r"!(?=[\w(])"), "not "),
)


def condition_words(expression: str) -> str:
    """A run condition (CEL) read aloud: ``steps.a.outputs.b == 'x' && inputs.n >= 2`` is
    ``a's b is 'x' and input n is at least 2``."""
    words = expression.strip()
    for pattern, replacement in _TERMS:
        words = pattern.sub(replacement, words)
    return words


def skip_words(reason: str) -> str:
    """A skip reason for people: a false ``when`` condition in words, the expression beside it."""
    if not reason.startswith(WHEN_FALSE):
        return reason
    expression = reason.removeprefix(WHEN_FALSE)
    return f"its condition did not hold: {condition_words(expression)}  [when: {expression}]"
