"""CEL text into cel-python's parse trees: its parser built once, and parsing shared by shape.

Part of the CEL layer (engine/conditions.py is its API); nothing else parses CEL.

- **cel-python builds its parser on every start.** Building the LALR tables from its
  grammar takes about 0.2 s, most of what `workbench validate` took; lark can keep a
  built parser in a file and load it ten times faster, but cel-python does not ask it
  to. So this module builds cel-python's parser — its grammar, its options — with lark's
  cache on, and installs it where cel-python looks for its one parser
  (``CELParser.CEL_PARSER``).
- **A workflow repeats shapes.** ``steps.s1.status == 'SUCCEEDED'`` and
  ``steps.s2.status == 'SUCCEEDED'`` differ only in the text of one token. An LALR
  parser's moves depend on the kinds of the tokens, never on their text, so two texts
  whose token kinds are the same have the same tree with different leaves. Every text
  is lexed (a few microseconds); the first text of each shape is parsed (a hundred or
  more), and its tree kept as a :class:`Shape` — the rules, and which token each leaf is;
  every later text of that shape gets the shape filled with its own tokens. A
  10,000-step workflow with two expressions a step parses a few shapes, not 20,000
  texts. A shape is kept only when the parser read exactly the tokens the lexer found
  (the parser's lexer looks at the parser's state; given the same kinds in the same
  states it reads the same tokens, so a shape kept is safe for every text with its kinds).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import celpy
import lark
from celpy.celparser import CELParser
from lark.lexer import BasicLexer, LexerThread
from platformdirs import user_cache_dir

PARSER_CACHE = Path(user_cache_dir("cel-python", appauthor=False)) / "cel-parser.lark"
"""cel-python's parser, as lark saves it; lark checks the file against the grammar, the
options and its own version, and rebuilds a stale, unreadable or missing one."""

_RULES: dict[str, lark.Token] = {}
"""One ``Token("RULE", name)`` per rule, shared by every tree."""


def _rule(name: str | lark.Token) -> lark.Token:
    if isinstance(name, lark.Token):
        return name
    token = _RULES.get(name)
    if token is None:
        token = _RULES[name] = lark.Token("RULE", name)
    return token


class RuleTree(lark.Tree[Any]):
    """A parse tree naming its rule with a ``Token("RULE", name)``, as the trees of a parser lark
    builds from the grammar do. A parser loaded from lark's cache names rules with plain strings,
    and cel-python's evaluation errors quote that name (conditions' ``_clean_message`` reads it)."""

    def __init__(self, data: str, children: list[Any], meta: Any = None) -> None:
        super().__init__(_rule(data), children, meta)


class _FilledTree(RuleTree):
    """A tree filled in from a :class:`Shape`: its line and column (``meta``) are worked out
    from its first and last token when something asks for them (an error's position)."""

    def __init__(self, data: lark.Token, children: list[Any], span: tuple[Any, Any]) -> None:
        lark.Tree.__init__(self, data, children, None)
        self._span = span

    @property
    def meta(self) -> lark.tree.Meta:
        if self._meta is None:
            first, last = self._span
            meta = lark.tree.Meta()  # type: ignore[no-untyped-call]  # lark leaves it untyped
            meta.empty = False
            meta.line, meta.column, meta.start_pos = first.line, first.column, first.start_pos
            meta.end_line, meta.end_column = last.end_line, last.end_column
            meta.end_pos = last.end_pos
            self._meta = meta
        return self._meta


def _literal_words(token: lark.Token) -> lark.Token:
    """``true`` and ``false`` lexed as names are boolean literals — cel-python's own lexer
    callback (``CELParser.ambiguous_literals``), except that the token keeps its place in the
    text: cel-python's makes a new token without one, and a shape finds a text's tokens by
    their places."""
    if token.value in ("true", "false"):
        return token.update("BOOL_LIT")
    return token


def _install_cached_parser() -> lark.Lark:
    """cel-python's parser, built as cel-python builds it (celpy/celparser.py) but through
    lark's cache (see the module docstring), its booleans placed (:func:`_literal_words`)."""
    if CELParser.CEL_PARSER is not None:
        return CELParser.CEL_PARSER
    try:
        PARSER_CACHE.parent.mkdir(parents=True, exist_ok=True)
        cache: str | bool = str(PARSER_CACHE)
    except OSError:  # no writable cache dir: build it every time, as cel-python would
        cache = False
    CELParser.CEL_PARSER = lark.Lark(
        (Path(celpy.__file__).parent / "cel.lark").read_text(encoding="utf-8"),
        parser="lalr",
        start="expr",
        debug=True,
        g_regex_flags=re.M,
        lexer_callbacks={"IDENT": _literal_words},
        propagate_positions=True,
        maybe_placeholders=False,
        priority="invert",
        tree_class=RuleTree,
        cache=cache,
    )
    return CELParser.CEL_PARSER


PARSER = _install_cached_parser()
_CEL_PARSER = CELParser(tree_class=RuleTree)
"""cel-python's adapter over the parser: it reports a syntax error as cel-python does."""
_LEXER = BasicLexer(PARSER.lexer_conf)
"""The parser's terminals, callbacks and ignored tokens, read without the parser's state."""


@dataclass(frozen=True)
class _Node:
    """A rule in a shape: its children are nodes or the index of a token."""

    rule: lark.Token
    children: tuple[_Node | int, ...]
    first: int
    last: int
    """The indexes of the first and the last token the rule covers."""

    def fill(self, tokens: tuple[lark.Token, ...]) -> RuleTree:
        children = [
            child.fill(tokens) if isinstance(child, _Node) else tokens[child]
            for child in self.children
        ]
        return _FilledTree(self.rule, children, (tokens[self.first], tokens[self.last]))


@dataclass(frozen=True, eq=False)
class Shape:
    """The tree every text with the same token kinds parses to, its leaves left open."""

    root: _Node

    def fill(self, tokens: tuple[lark.Token, ...]) -> RuleTree:
        return self.root.fill(tokens)


class Parsed:
    """A text parsed: its tokens, its shape, and its tree (filled in when first asked for)."""

    def __init__(
        self,
        tokens: tuple[lark.Token, ...],
        shape: Shape | None,
        tree: lark.Tree[Any] | None = None,
    ) -> None:
        self.tokens = tokens
        """Every token of the text, ignored ones (spaces, comments) left out; the tree's
        leaves are among them."""
        self.shape = shape
        """The shape the tree is filled from; None when the text's shape could not be kept."""
        self._tree = tree

    @property
    def tree(self) -> lark.Tree[Any]:
        if self._tree is None:
            assert self.shape is not None  # a Parsed without a shape is made with its tree
            self._tree = self.shape.fill(self.tokens)
        return self._tree


def lex(text: str) -> tuple[lark.Token, ...]:
    """The tokens of ``text`` (raises lark's errors for a character no token starts with)."""
    return tuple(LexerThread.from_text(_LEXER, text).lex(None))  # type: ignore[no-untyped-call]


def parse(text: str) -> Parsed:
    """``text`` parsed; raises what the parser raises for a text that does not parse."""
    try:
        tokens = lex(text)
    except lark.exceptions.LarkError:
        return _parse_new(text, None)  # the parser reports the error where it finds it
    shape = _SHAPES.get(tuple(token.type for token in tokens))
    if shape is None:
        return _parse_new(text, tokens)
    return Parsed(tokens, shape)


_SHAPES: dict[tuple[str, ...], Shape] = {}
"""The shapes kept, by the kinds of their tokens."""
_MAX_SHAPES = 4096
"""Shapes kept at most (a few hundred bytes each); texts of a shape not kept are parsed."""


def _parse_new(text: str, tokens: tuple[lark.Token, ...] | None) -> Parsed:
    """Parse ``text`` with the parser itself, and keep its shape when the parser read exactly
    ``tokens`` (see the module docstring)."""
    try:
        interactive = PARSER.parse_interactive(text)
        read = tuple(interactive.iter_parse())
        tree = interactive.feed_eof(read[-1] if read else None)  # type: ignore[no-untyped-call]
    except lark.exceptions.LarkError:
        _CEL_PARSER.parse(text)  # raises cel-python's own CELParseError for the text
        raise
    if tokens is None or not _same(read, tokens):
        return Parsed(read, None, tree)
    shape = _shape_of(tree, tokens)
    if shape is not None and len(_SHAPES) < _MAX_SHAPES:
        _SHAPES[tuple(token.type for token in tokens)] = shape
    return Parsed(tokens, shape, tree)


def _same(read: tuple[lark.Token, ...], tokens: tuple[lark.Token, ...]) -> bool:
    return len(read) == len(tokens) and all(
        a.type == b.type and a.start_pos == b.start_pos and a.value == b.value
        for a, b in zip(read, tokens)
    )


def _shape_of(tree: lark.Tree[Any], tokens: tuple[lark.Token, ...]) -> Shape | None:
    """``tree``'s shape: every leaf and every rule's first and last token found among
    ``tokens`` by position; None when one is not (no shape is kept)."""
    if any(token.start_pos is None or token.end_pos is None for token in tokens):
        return None  # a token without a place cannot be found again
    starts = {token.start_pos: index for index, token in enumerate(tokens)}
    ends = {token.end_pos: index for index, token in enumerate(tokens)}

    def node(subtree: lark.Tree[Any]) -> _Node | None:
        meta = subtree.meta
        if meta.empty or meta.start_pos not in starts or meta.end_pos not in ends:
            return None
        children: list[_Node | int] = []
        for child in subtree.children:
            built: _Node | int | None
            if isinstance(child, lark.Tree):
                built = node(child)
            else:
                built = starts.get(child.start_pos) if isinstance(child, lark.Token) else None
            if built is None:
                return None
            children.append(built)
        return _Node(
            _rule(subtree.data), tuple(children), starts[meta.start_pos], ends[meta.end_pos]
        )

    root = node(tree)
    return Shape(root) if root is not None else None
