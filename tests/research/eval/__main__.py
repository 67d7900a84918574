"""``python -m tests.research.eval [peps|default ...] [--split tuning|heldout|heldout2|...|heldout18] [--final]``.

``make eval`` runs the tuning split; ``make eval SPLIT=heldout`` the held-out split, which
nothing runs unless it is named (it is scored at the end of a piece of retrieval work, never
while tuning); ``make eval SPLIT=heldout2 EVAL_ARGS=--final``, ``SPLIT=heldout3``,
``SPLIT=heldout4``, ``SPLIT=heldout5``, ``SPLIT=heldout6``, ``SPLIT=heldout7``,
``SPLIT=heldout8``, ``SPLIT=heldout9``, ``SPLIT=heldout10``, ``SPLIT=heldout11``,
``SPLIT=heldout12``, ``SPLIT=heldout13``, ``SPLIT=heldout14``, ``SPLIT=heldout15``,
``SPLIT=heldout16``, ``SPLIT=heldout17`` and ``SPLIT=heldout18`` the later held-out splits, which
refuse to run without ``--final``.
``--retrieval-only`` scores only the documents each phrasing's anchor search selects (no
research run; seconds, not minutes: evaluate.py's docstring).
"""

from __future__ import annotations

import argparse

from tests.research.eval.evaluate import (
    CORPORA,
    SPLITS,
    FinalSplitRefused,
    evaluate,
    evaluate_retrieval,
    selection_table,
    table,
)


def main() -> None:
    parser = argparse.ArgumentParser(prog="make eval")
    parser.add_argument(
        "sets", nargs="*", help=f"which corpora (default all): {', '.join(CORPORA)}"
    )
    parser.add_argument("--split", choices=SPLITS, default="tuning", help="default: tuning")
    parser.add_argument("--only", nargs="*", default=None, help="question ids as set:id")
    parser.add_argument(
        "--no-paraphrases", action="store_true", help="run each question in its own words only"
    )
    parser.add_argument(
        "--mixed",
        action="store_true",
        help="index both corpora into one workspace and search all of it (a second collection "
        "must not drown the first)",
    )
    parser.add_argument(
        "--final",
        action="store_true",
        help="the work is finished: allow the later held-out splits (heldout2 ... heldout18)",
    )
    parser.add_argument(
        "--retrieval-only",
        action="store_true",
        help="score only the documents each phrasing's anchor search selects (fast; no run)",
    )
    args = parser.parse_args()
    unknown = [s for s in args.sets if s not in CORPORA]
    if unknown:
        parser.error(f"unknown set {unknown[0]!r}; use one of {', '.join(CORPORA)}")
    options = {
        "only": set(args.only) if args.only else None,
        "paraphrases": not args.no_paraphrases,
        "final": args.final,
        "mixed": args.mixed,
    }
    names = list(args.sets) or list(CORPORA)
    try:
        if args.retrieval_only:
            report = selection_table(evaluate_retrieval(names, args.split, **options))
        else:
            report = table(evaluate(names, args.split, **options))
    except FinalSplitRefused as refused:
        parser.error(str(refused))
    print(f"split: {args.split}{' (mixed workspace: every collection searched)' * args.mixed}")
    print(report)


if __name__ == "__main__":
    main()
