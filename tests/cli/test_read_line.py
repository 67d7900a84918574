"""The terminal prompt's reader (tui.commands.common.read_line) on a real pipe: one line per
answer, what follows left for the next prompt, None at the end of input, and a cancelled read
(Ctrl-C) leaves nothing watching the descriptor."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tui.commands.common import read_line

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
def pipe() -> Iterator[tuple[int, int]]:
    read_end, write_end = os.pipe()
    yield read_end, write_end
    for fd in (read_end, write_end):
        try:
            os.close(fd)
        except OSError:
            pass


async def test_one_line_per_read_and_the_rest_kept(pipe: tuple[int, int]) -> None:
    read_end, write_end = pipe
    os.write(write_end, "approve\r\nréject\nlast".encode())
    os.close(write_end)
    assert await read_line(read_end) == "approve"
    assert await read_line(read_end) == "réject"
    assert await read_line(read_end) == "last"  # a last line without its newline still counts
    assert await read_line(read_end) is None


async def test_an_empty_line_is_not_the_end_of_input(pipe: tuple[int, int]) -> None:
    read_end, write_end = pipe
    os.write(write_end, b"\n")
    assert await read_line(read_end) == ""


async def test_a_line_typed_later_is_awaited(pipe: tuple[int, int]) -> None:
    read_end, write_end = pipe
    reading = asyncio.ensure_future(read_line(read_end))
    os.write(write_end, b"app")
    await asyncio.sleep(0)
    assert not reading.done()
    os.write(write_end, b"rove\n")
    assert await reading == "approve"


async def test_a_cancelled_read_stops_watching(pipe: tuple[int, int]) -> None:
    read_end, write_end = pipe
    reading = asyncio.ensure_future(read_line(read_end))
    await asyncio.sleep(0)
    reading.cancel()
    with pytest.raises(asyncio.CancelledError):
        await reading
    assert not asyncio.get_running_loop().remove_reader(read_end)
    os.write(write_end, b"next\n")
    assert await read_line(read_end) == "next"  # the cancelled read consumed nothing


async def test_a_regular_file_is_read_without_the_selector(tmp_path: Path) -> None:
    answers = tmp_path / "answers"
    answers.write_text("reject\n", encoding="utf-8")
    fd = os.open(answers, os.O_RDONLY)
    try:
        assert await read_line(fd) == "reject"
        assert await read_line(fd) is None
    finally:
        os.close(fd)
