"""``python -m tests.research.eval [peps|default ...] [--split tuning|heldout|heldout2|heldout3] [--final]``.

``make eval`` runs the tuning split; ``make eval SPLIT=heldout`` the held-out split, which
nothing runs unless it is named (it is scored at the end of a piece of retrieval work, never
while tuning); ``make eval SPLIT=heldout2 EVAL_ARGS=--final`` and ``SPLIT=heldout3`` the later held-out
splits, which refuse to run without ``--final``.
"""

from __future__ import annotations

import argparse

from tests.research.eval.evaluate import CORPORA, SPLITS, FinalSplitRefused, evaluate, table


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
        help="the work is finished: allow the later held-out splits (heldout2, heldout3)",
    )
    args = parser.parse_args()
    unknown = [s for s in args.sets if s not in CORPORA]
    if unknown:
        parser.error(f"unknown set {unknown[0]!r}; use one of {', '.join(CORPORA)}")
    try:
        scores = evaluate(
            list(args.sets) or list(CORPORA),
            args.split,
            only=set(args.only) if args.only else None,
            paraphrases=not args.no_paraphrases,
            final=args.final,
            mixed=args.mixed,
        )
    except FinalSplitRefused as refused:
        parser.error(str(refused))
    print(f"split: {args.split}{' (mixed workspace: every collection searched)' * args.mixed}")
    print(table(scores))


if __name__ == "__main__":
    main()
