"""``runs fork``'s ``--set`` and ``--input`` as written on the command line (tui/launch/fork_options.py)."""

from __future__ import annotations

import pytest

from engine.time_travel import ForkError
from tui.launch.fork_options import fork_edits


def test_a_fork_input_value_may_itself_contain_an_equals_sign() -> None:
    assert fork_edits(inputs=["query=a=b"]).inputs == {"query": "a=b"}


@pytest.mark.parametrize("given", ["=3", "  =3", "novalue"])
def test_a_fork_input_without_a_name_or_a_value_is_refused_saying_the_shape(given: str) -> None:
    with pytest.raises(ForkError) as refused:
        fork_edits(inputs=[given])
    assert str(refused.value) == f"--input {given!r} is not name=value"


def test_a_fork_output_field_may_itself_contain_a_dot() -> None:
    edits = fork_edits(sets=["critic.detail.score=1", "critic.note=ok"])
    assert edits.outputs == {"critic": {"detail.score": 1, "note": "ok"}}


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ("critic", "--set 'critic' is not step.field=value"),
        ("=1", "--set '=1' is not step.field=value"),
        ("critic=1", "--set 'critic=1': name a step and a field, e.g. --set critic.score=0.9"),
        (".score=1", "--set '.score=1': name a step and a field, e.g. --set critic.score=0.9"),
        ("critic.=1", "--set 'critic.=1': name a step and a field, e.g. --set critic.score=0.9"),
    ],
)
def test_a_fork_output_edit_that_is_not_step_field_value_is_refused_saying_so(
    given: str, message: str
) -> None:
    with pytest.raises(ForkError) as refused:
        fork_edits(sets=[given])
    assert str(refused.value) == message
