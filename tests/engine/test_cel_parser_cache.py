"""cel-python's parser comes from lark's on-disk cache (engine/conditions.py): the first process
writes it, later ones load it, a damaged file is rebuilt, and the cached parser parses exactly as
the one cel-python builds for itself."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

EXPRESSIONS = [
    "steps.review.outputs.score >= 0.8 && has(steps.review.outputs.notes)",
    "size(inputs.topics) > 2 ? 'many' : 'few'",
    "inputs.names.exists(n, n.startsWith('a')) || iteration % 2 == 0",
    "[1, 2.5, -3, 0x1F, 7u][2] in {'a': true}.keys()",
    "run.tokens < 4000 && !(outputs.verdict == null)",
]

PARSE = """
import json, sys
from celpy.celparser import CELParser
import engine.conditions
cached = CELParser.CEL_PARSER
trees = [str(cached.parse(text)) for text in json.loads(sys.argv[1])]
CELParser.CEL_PARSER = None
own = CELParser().CEL_PARSER  # built by cel-python itself, no cache
assert own is not cached
print(json.dumps({"same": trees == [str(own.parse(t)) for t in json.loads(sys.argv[1])]}))
"""


def parse_in_fresh_process(cache_home: Path) -> dict[str, bool]:
    done = subprocess.run(
        [sys.executable, "-c", PARSE, json.dumps(EXPRESSIONS)],
        env={**os.environ, "XDG_CACHE_HOME": str(cache_home)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, bool] = json.loads(done.stdout.splitlines()[-1])
    return result


def test_the_parser_is_cached_once_and_parses_as_cel_pythons_own(tmp_path: Path) -> None:
    cache = tmp_path / "cel-python" / "cel-parser.lark"
    assert parse_in_fresh_process(tmp_path) == {"same": True}  # built, then saved
    assert cache.is_file()
    saved = cache.read_bytes()
    assert parse_in_fresh_process(tmp_path) == {"same": True}  # loaded from the file
    assert cache.read_bytes() == saved


def test_a_damaged_cache_file_is_rebuilt(tmp_path: Path) -> None:
    cache = tmp_path / "cel-python" / "cel-parser.lark"
    cache.parent.mkdir(parents=True)
    cache.write_bytes(b"not a parser\n\x80\x04garbage")
    assert parse_in_fresh_process(tmp_path) == {"same": True}
    digest, _, parser = cache.read_bytes().partition(b"\n")
    assert len(digest) == 64 and all(c in b"0123456789abcdef" for c in digest)  # lark's header
    assert len(parser) > 10_000


def test_an_unwritable_cache_dir_still_parses(tmp_path: Path) -> None:
    blocked = tmp_path / "blocked"
    blocked.write_text("a file where the cache dir would be", encoding="utf-8")
    assert parse_in_fresh_process(blocked) == {"same": True}
