"""Reading a statement token by token, for the commands sqlglot has no grammar for.

sqlglot parses SELECT, MERGE, CREATE and the like into trees, but OPTIMIZE, VACUUM, RESTORE,
DESCRIBE HISTORY/DETAIL and COPY INTO come back as opaque commands (or wrong trees), and so
do the statement heads of pipeline SQL files (``CREATE OR REFRESH STREAMING TABLE ...``).
Their grammars are small, so one cursor over sqlglot's tokens reads them all exactly, and
every error names the token (line, column) where the statement stopped making sense. The
pipeline front (:mod:`headwater.pipelines.sql_files.queries`) uses this cursor too, raising its
own error type.

Words are matched as the user wrote them, whatever sqlglot made one token of: ``at("PARTITIONED",
"BY")`` matches the one token ``PARTITIONED BY`` as well as two tokens, and a match always ends
at a token's end. Strings and backquoted names never match a word.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeGuard

from sqlglot.tokens import Token, TokenType

from headwater.errors import HeadwaterError
from headwater.sql.text import Statement

_NOT_WORDS = {
    TokenType.STRING,
    TokenType.IDENTIFIER,
    TokenType.NUMBER,
    TokenType.DOT,
    TokenType.COMMA,
    TokenType.L_PAREN,
    TokenType.R_PAREN,
    TokenType.EQ,
    TokenType.SEMICOLON,
}


@dataclass(frozen=True)
class TableRef:
    """A table as written: by name (``db.t``) or by path (``delta.`/p``` or ``'/p'``)."""

    parts: tuple[str, ...] = ()
    path: str | None = None

    @property
    def name(self) -> str:
        """The name with each part backquoted, as :func:`headwater.catalog.names.parse` reads it."""
        return ".".join("`" + p.replace("`", "``") + "`" for p in self.parts)

    @property
    def display(self) -> str:
        """What copy_into and messages get: ``db.t``, or ``delta.`/path```."""
        if self.path is not None:
            return f"delta.`{self.path}`"
        return ".".join(p if _plain(p) else "`" + p.replace("`", "``") + "`" for p in self.parts)

    @classmethod
    def of_parts(cls, parts: list[str]) -> TableRef:
        if len(parts) == 2 and parts[0].lower() == "delta" and ("/" in parts[1] or ":" in parts[1]):
            return cls(path=parts[1])
        return cls(parts=tuple(parts))

    def __str__(self) -> str:
        return self.display


def _plain(part: str) -> bool:
    return part.replace("_", "a").isalnum() and not part[:1].isdigit()


def is_word(tok: Token | None) -> TypeGuard[Token]:
    """A bare word (keyword or unquoted name), not a literal, quoted name or symbol."""
    return (
        tok is not None
        and tok.token_type not in _NOT_WORDS
        and (tok.text[:1].isalpha() or tok.text[:1] == "_")
    )


def is_name(tok: Token | None) -> bool:
    return tok is not None and (tok.token_type == TokenType.IDENTIFIER or is_word(tok))


STRINGS = {
    TokenType.STRING,
    TokenType.RAW_STRING,
    TokenType.NATIONAL_STRING,
    TokenType.NATIONAL_RAW_STRING,
    TokenType.UNICODE_STRING,
    TokenType.HEREDOC_STRING,
    TokenType.BYTE_STRING,
    TokenType.HEX_STRING,
    TokenType.BIT_STRING,
}


def keys_of(tok: Token) -> list[str]:
    """What a token matches: its words (upper case; sqlglot makes one token of ``ORDER BY``)
    or its symbol; ``[""]``, which matches nothing, for strings and backquoted names."""
    if tok.token_type in STRINGS or tok.token_type == TokenType.IDENTIFIER:
        return [""]
    return tok.text.upper().split() or [""]


def key_of(tok: Token) -> str:
    """The first of :func:`keys_of`."""
    return keys_of(tok)[0]


class Cursor:
    def __init__(self, stmt: Statement, tokens: list[Token] | None = None, pos: int = 0) -> None:
        self.stmt = stmt
        self.toks = stmt.tokens if tokens is None else tokens
        self.i = pos

    # -- looking -----------------------------------------------------------------------------

    def peek(self, k: int = 0) -> Token | None:
        j = self.i + k
        return self.toks[j] if j < len(self.toks) else None

    def word(self, k: int = 0) -> str:
        tok = self.peek(k)
        return tok.text.upper() if is_word(tok) else ""

    def at(self, *words: str) -> bool:
        return self.matched(words) is not None

    def matched(self, words: tuple[str, ...]) -> int | None:
        """How many tokens ``words`` take from the cursor on, or None when they are not next
        (a match ends at a token's end)."""
        wanted = [part for word in words for part in word.upper().split()]
        j = self.i
        k = 0
        while k < len(wanted):
            if j >= len(self.toks):
                return None
            keys = keys_of(self.toks[j])
            if keys != wanted[k : k + len(keys)]:
                return None
            k += len(keys)
            j += 1
        return j - self.i

    def at_type(self, token_type: TokenType) -> bool:
        tok = self.peek()
        return tok is not None and tok.token_type == token_type

    @property
    def done(self) -> bool:
        return self.i >= len(self.toks)

    # -- taking ------------------------------------------------------------------------------

    def next(self) -> Token:
        tok = self.peek()
        if tok is None:
            raise self.error("Unexpected end of the statement.")
        self.i += 1
        return tok

    def accept(self, *words: str) -> bool:
        taken = self.matched(words)
        if taken is None:
            return False
        self.i += taken
        return True

    def expect(self, *words: str) -> None:
        if not self.accept(*words):
            raise self.error(f"Expected {' '.join(words)}, found {self.found()}.")

    def accept_type(self, token_type: TokenType) -> Token | None:
        if self.at_type(token_type):
            return self.next()
        return None

    def expect_type(self, token_type: TokenType, what: str) -> Token:
        tok = self.accept_type(token_type)
        if tok is None:
            raise self.error(f"Expected {what}, found {self.found()}.")
        return tok

    def expect_end(self) -> None:
        if not self.done:
            raise self.error(f"Unexpected {self.found()}.")

    def table(self) -> TableRef:
        """``name[.name...]``, ``delta.`/path``` or a ``'path'`` string."""
        tok = self.peek()
        if tok is not None and tok.token_type == TokenType.STRING:
            self.i += 1
            return TableRef(path=tok.text)
        if not is_name(tok):
            raise self.error(f"Expected a table name, found {self.found()}.")
        parts = [self.next().text]
        while self.at_type(TokenType.DOT) and is_name(self.peek(1)):
            self.i += 1
            parts.append(self.next().text)
        return TableRef.of_parts(parts)

    def string(self, what: str = "a quoted string") -> str:
        return self.expect_type(TokenType.STRING, what).text

    def integer(self, what: str = "a number") -> int:
        tok = self.expect_type(TokenType.NUMBER, what)
        try:
            return int(tok.text)
        except ValueError:
            raise self.error(f"Expected {what}, found {tok.text}.", tok) from None

    def number(self, what: str = "a number") -> float:
        return float(self.expect_type(TokenType.NUMBER, what).text)

    def value(self) -> str:
        """An option value: a string, number, true/false, or a bare word."""
        tok = self.next()
        if tok.token_type in (TokenType.STRING, TokenType.NUMBER, TokenType.IDENTIFIER):
            return tok.text
        if tok.token_type in (TokenType.TRUE, TokenType.FALSE):
            return tok.text.lower()
        if is_word(tok):
            return tok.text
        raise self.error(f"Expected a value, found '{tok.text}'.", tok)

    def options(self) -> dict[str, str]:
        """``( 'key' = value [, ...] )``; keys may also be bare dotted names."""
        self.expect_type(TokenType.L_PAREN, "'('")
        out: dict[str, str] = {}
        while not self.accept_type(TokenType.R_PAREN):
            if out:
                self.expect_type(TokenType.COMMA, "',' or ')'")
            key_tok = self.peek()
            if key_tok is not None and key_tok.token_type == TokenType.STRING:
                key = self.next().text
            else:
                key = self.table().display  # dotted bare name such as delta.appendOnly
            self.accept_type(TokenType.EQ)
            out[key] = self.value()
        return out

    def strings(self) -> list[str]:
        """``( 'a' [, 'b' ...] )``"""
        self.expect_type(TokenType.L_PAREN, "'('")
        out = [self.string()]
        while self.accept_type(TokenType.COMMA):
            out.append(self.string())
        self.expect_type(TokenType.R_PAREN, "')'")
        return out

    def rest(self) -> str:
        """The user's text from the current token to the end of the statement."""
        if self.done:
            return ""
        return self.stmt.slice(self.toks[self.i], self.toks[-1])

    def remaining(self) -> list[Token]:
        """The tokens from the current one to the end."""
        return self.toks[self.i :]

    def text(self, tokens: list[Token]) -> str:
        """The user's text of ``tokens`` (consecutive, at least one), verbatim."""
        return self.stmt.slice(tokens[0], tokens[-1])

    def group(self) -> list[Token]:
        """The tokens inside ``( ... )`` (nested parentheses kept), the cursor after ``)``."""
        self.expect("(")
        start, depth = self.i, 1
        while not self.done:
            key = key_of(self.toks[self.i])
            depth += 1 if key == "(" else -1 if key == ")" else 0
            self.i += 1
            if depth == 0:
                return self.toks[start : self.i - 1]
        self.i = start - 1
        raise self.error("This '(' is never closed.")

    def until(self, stops: tuple[tuple[str, ...], ...]) -> list[Token]:
        """The tokens up to (not including) the next of ``stops`` outside parentheses."""
        start, depth = self.i, 0
        while not self.done:
            if depth == 0 and any(self.at(*stop) for stop in stops):
                break
            key = key_of(self.toks[self.i])
            depth += 1 if key == "(" else -1 if key == ")" else 0
            self.i += 1
        return self.toks[start : self.i]

    def items(self, tokens: list[Token]) -> list[list[Token]]:
        """``tokens`` split at top-level commas; ``<``/``>`` nest too, for ``STRUCT<a: INT,
        ...>``. An empty item is an error at its comma."""
        result: list[list[Token]] = [[]]
        depth = angle = 0
        for tok in tokens:
            key = key_of(tok)
            if key in ("(", "[", "{"):
                depth += 1
            elif key in (")", "]", "}"):
                depth -= 1
            elif depth == 0 and key in ("<", ">", ">>"):
                angle = max(0, angle + {"<": 1, ">": -1, ">>": -2}[key])
            if key == "," and depth == 0 and angle == 0:
                result.append([])
            else:
                result[-1].append(tok)
        if any(not item for item in result):
            bad = next((t for t in tokens if key_of(t) == ","), None)
            raise self.error("An empty item in this list.", bad)
        return result

    # -- errors ------------------------------------------------------------------------------

    def found(self) -> str:
        tok = self.peek()
        return "the end of the statement" if tok is None else f"'{tok.text}'"

    def error(self, reason: str, tok: Token | None = None) -> HeadwaterError:
        tok = tok or self.peek()
        if tok is None:
            return self.stmt.error(reason, self.stmt.end + 1)
        return self.stmt.error_at(reason, tok)


def matching_paren(toks: list[Token], i: int) -> int:
    """Index of the ``)`` closing the ``(`` at ``i`` (or the last index if unbalanced)."""
    depth = 0
    for j in range(i, len(toks)):
        if toks[j].token_type == TokenType.L_PAREN:
            depth += 1
        elif toks[j].token_type == TokenType.R_PAREN:
            depth -= 1
            if depth == 0:
                return j
    return len(toks) - 1
