"""What the cycle collector is shown while a command runs (plumbing/collector.py)."""

from __future__ import annotations

import gc

from plumbing.collector import kept_from_collection


def test_what_lives_is_kept_from_collection_until_given_back() -> None:
    assert gc.get_freeze_count() == 0
    kept = [object() for _ in range(10)]
    give_back = kept_from_collection()
    assert gc.get_freeze_count() >= len(kept)
    give_back()
    assert gc.get_freeze_count() == 0


def test_a_freeze_made_by_someone_else_is_theirs_to_undo() -> None:
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        give_back = kept_from_collection()
        assert gc.get_freeze_count() == frozen
        give_back()
        assert gc.get_freeze_count() == frozen
    finally:
        gc.unfreeze()
