"""``col:a.b[0]`` on JSON text, as the known system's SQL allows it.

Spark 4 takes ``:`` paths only on VARIANT columns (``COLUMN_IS_NOT_VARIANT_TYPE``); the
queries users copy from the known system's docs apply them to JSON strings, above all the
event log's ``details`` (``details:flow_progress.metrics.num_output_rows``, or spaced as
the docs print it, ``details :flow_progress :data_quality :expectations``). When Spark
refuses a statement for that reason, the dispatcher retries it with each path spelled as
``get_json_object(col, '$.a.b[0]')`` (which, like ``:`` on a string there, returns JSON
text for objects and arrays). A VARIANT column keeps Spark's own meaning: text is only
rewritten after Spark has said no.

Column names follow the known system: a path that is a whole item of a select list, cast
with ``::type`` or not, is named by its last key (``details:flow_progress.metrics`` is
``metrics``; ``raw:store.basket[*]`` is ``basket``, subscripts not counting), where Spark
would name it ``get_json_object(details, $.flow_progress.metrics)``.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlglot.tokens import Token, TokenType

from headwater.sql.text import tokenize

_NAME = {TokenType.VAR, TokenType.IDENTIFIER}
# The words that end a select list (GROUP BY and ORDER BY are single tokens).
_AFTER_SELECT = {
    "FROM", "WHERE", "GROUP", "ORDER", "SORT", "CLUSTER", "DISTRIBUTE", "HAVING", "WINDOW",
    "QUALIFY", "LIMIT", "OFFSET", "UNION", "EXCEPT", "INTERSECT", "MINUS", "INTO", "LATERAL",
}  # fmt: skip
_ITEM_END = {TokenType.COMMA, TokenType.R_PAREN, TokenType.SEMICOLON}


def _is_name(tok: Token) -> bool:
    return tok.token_type in _NAME or (
        tok.text.isidentifier() and tok.token_type != TokenType.STRING
    )


def _adjacent(a: Token, b: Token) -> bool:
    return a.end + 1 == b.start


def _spaced(text: str, a: Token, b: Token) -> bool:
    """Only white space between ``a`` and ``b``."""
    return not text[a.end + 1 : b.start].strip()


def _ends_select(tok: Token) -> bool:
    """A keyword that ends a select list (``window(...)``, a name, does not)."""
    words = tok.text.upper().split()
    return tok.token_type not in _NAME and bool(words) and words[0] in _AFTER_SELECT


@dataclass(frozen=True)
class _Path:
    json_path: str  # $.a.b[0]
    last: int  # index of its last token
    key: str | None  # the last key, which names it


def refused_json_path(error: BaseException) -> bool:
    """Spark refused ``:`` on a column that is not VARIANT (4.3 raises the condition; 4.2 an
    INTERNAL_ERROR that names it): the cue to retry with the paths rewritten."""
    return "COLUMN_IS_NOT_VARIANT_TYPE" in str(error)


def rewrite_select_item(item: str) -> str:
    """One item of a select list, as ``selectExpr`` takes it, with its paths rewritten (a
    whole path named by its last key, as in a ``SELECT``)."""
    prefix = "SELECT "
    return rewrite_json_paths(prefix + item)[len(prefix) :]


def rewrite_json_paths(text: str) -> str:
    """``text`` with every ``name:path`` replaced by ``get_json_object(name, '$.path')``,
    a whole select item aliased as its last key."""
    toks = tokenize(text)
    in_select = _select_lists(toks)
    out: list[str] = []
    pos = 0
    i = 0
    while i < len(toks):
        if not _starts_path(text, toks, i):
            i += 1
            continue
        start = i - 1  # the column: back over a dotted name (t.details)
        while (
            start >= 2
            and toks[start - 1].token_type == TokenType.DOT
            and _is_name(toks[start - 2])
            and _adjacent(toks[start - 2], toks[start - 1])
        ):
            start -= 2
        path = _path(text, toks, i)
        if path.json_path == "$":
            i += 1
            continue
        column = text[toks[start].start : toks[i - 1].end + 1]
        out.append(text[pos : toks[start].start])
        literal = path.json_path.replace("\\", "\\\\").replace("'", "\\'")
        out.append(f"get_json_object({column}, '{literal}')")
        end = _casts_end(toks, path.last)
        out.append(text[toks[path.last].end + 1 : toks[end].end + 1])
        if path.key is not None and _whole_item(toks, start, end, in_select):
            out.append(" AS `" + path.key.replace("`", "``") + "`")
        pos = toks[end].end + 1
        i = end + 1
    out.append(text[pos:])
    return "".join(out)


def _starts_path(text: str, toks: list[Token], i: int) -> bool:
    """A ``:`` that follows a column and is followed by a key: ``details:a`` as Spark's
    docs write it, or ``details :a`` as the known system's event log docs print it (the
    column then a plain name, so ``LIMIT :n`` stays a parameter)."""
    tok = toks[i]
    if tok.token_type != TokenType.COLON or i == 0 or i + 1 >= len(toks):
        return False
    prev, nxt = toks[i - 1], toks[i + 1]
    if not _adjacent(tok, nxt) or not (_is_name(nxt) or nxt.token_type == TokenType.L_BRACKET):
        return False
    if _adjacent(prev, tok):
        return _is_name(prev)
    return prev.token_type in _NAME and _spaced(text, prev, tok)


def _path(text: str, toks: list[Token], colon: int) -> _Path:
    """The JSONPath of the ``:``/``.``/``[...]`` steps from ``colon``, its last token and its
    last key."""
    parts = ["$"]
    key: str | None = None
    i, last = colon, colon - 1
    while i < len(toks):
        step = toks[i]
        after = toks[i + 1] if i + 1 < len(toks) else None
        spaced_colon = step.token_type == TokenType.COLON and _spaced(text, toks[last], step)
        if not _adjacent(toks[last], step) and not spaced_colon:
            break
        if (
            step.token_type in (TokenType.COLON, TokenType.DOT)
            and after is not None
            and _is_name(after)
            and _adjacent(step, after)
        ):
            parts.append("." + after.text)
            key = after.text
            last, i = i + 1, i + 2
        elif (  # d:['k'], or a subscript after a key, a:b:[*] (the event log demos' form)
            step.token_type == TokenType.COLON
            and after is not None
            and after.token_type == TokenType.L_BRACKET
            and _adjacent(step, after)
        ):
            last, i = i, i + 1
        elif (
            step.token_type == TokenType.L_BRACKET
            and i + 2 < len(toks)
            and toks[i + 2].token_type == TokenType.R_BRACKET
        ):
            inner = toks[i + 1]
            if inner.token_type == TokenType.STRING:
                parts.append("['" + inner.text + "']")
                key = inner.text
            else:
                parts.append(f"[{inner.text}]")
            last, i = i + 2, i + 3
        else:
            break
    return _Path("".join(parts), last, key)


def _casts_end(toks: list[Token], last: int) -> int:
    """The last token of the ``::type`` casts right after token ``last`` (``last`` if none):
    a type name, then its ``(precision)`` or ``<element>`` if any."""
    i = last
    while i + 2 < len(toks) and toks[i + 1].token_type == TokenType.DCOLON:
        i += 2  # the type's name
        for opening, closing in (
            (TokenType.L_PAREN, TokenType.R_PAREN),
            (TokenType.LT, TokenType.GT),
        ):
            if i + 1 < len(toks) and toks[i + 1].token_type == opening:
                depth = 0
                for j in range(i + 1, len(toks)):
                    depth += {opening: 1, closing: -1}.get(toks[j].token_type, 0)
                    if depth == 0:
                        i = j
                        break
    return i


def _select_lists(toks: list[Token]) -> list[bool]:
    """For each token: is it in a select list (between SELECT and what ends the list, at
    SELECT's own depth of parentheses)?"""
    flags: list[bool] = []
    stack = [False]
    for tok in toks:
        if tok.token_type == TokenType.L_PAREN:
            flags.append(stack[-1])
            stack.append(False)
            continue
        if tok.token_type == TokenType.R_PAREN:
            if len(stack) > 1:
                stack.pop()
            flags.append(stack[-1])
            continue
        if tok.token_type == TokenType.SELECT:
            stack[-1] = True
        elif _ends_select(tok):
            stack[-1] = False
        flags.append(stack[-1])
    return flags


def _whole_item(toks: list[Token], start: int, end: int, in_select: list[bool]) -> bool:
    """Tokens ``start..end`` are a whole item of a select list, without an alias."""
    if start == 0 or not in_select[start]:
        return False
    before = toks[start - 1]
    if before.token_type not in (TokenType.SELECT, TokenType.COMMA, TokenType.DISTINCT) and (
        before.text.upper() != "ALL"
    ):
        return False
    if before.token_type == TokenType.COMMA and not in_select[start - 1]:
        return False
    after = toks[end + 1] if end + 1 < len(toks) else None
    return after is None or after.token_type in _ITEM_END or _ends_select(after)
