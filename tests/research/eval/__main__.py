"""``python -m tests.research.eval [peps|default ...] [--only set:id ...]`` (what ``make eval`` runs)."""

from __future__ import annotations

import argparse

from tests.research.eval.evaluate import SETS, evaluate, table


def main() -> None:
    parser = argparse.ArgumentParser(prog="make eval")
    parser.add_argument("sets", nargs="*", help=f"which sets (default all): {', '.join(SETS)}")
    parser.add_argument("--only", nargs="*", default=None, help="question ids as set:id")
    args = parser.parse_args()
    unknown = [s for s in args.sets if s not in SETS]
    if unknown:
        parser.error(f"unknown set {unknown[0]!r}; use one of {', '.join(SETS)}")
    scores = evaluate(list(args.sets) or list(SETS), set(args.only) if args.only else None)
    print(table(scores))


if __name__ == "__main__":
    main()
