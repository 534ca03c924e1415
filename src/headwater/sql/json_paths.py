"""``col:a.b[0]`` on JSON text, as the known system's SQL allows it.

Spark 4 takes ``:`` paths only on VARIANT columns (``COLUMN_IS_NOT_VARIANT_TYPE``); the
queries users copy from the known system's docs apply them to JSON strings, above all the
event log's ``details`` (``details:flow_progress.metrics.num_output_rows``). When Spark
refuses a statement for that reason, the dispatcher retries it with each path spelled as
``get_json_object(col, '$.a.b[0]')`` (which, like ``:`` on a string there, returns JSON
text for objects and arrays). A VARIANT column keeps Spark's own meaning: text is only
rewritten after Spark has said no.
"""

from __future__ import annotations

from sqlglot.tokens import Token, TokenType

from headwater.sql.text import tokenize

_NAME = {TokenType.VAR, TokenType.IDENTIFIER}


def _is_name(tok: Token) -> bool:
    return tok.token_type in _NAME or (
        tok.text.isidentifier() and tok.token_type != TokenType.STRING
    )


def _adjacent(a: Token, b: Token) -> bool:
    return a.end + 1 == b.start


def rewrite_json_paths(text: str) -> str:
    """``text`` with every ``name:path`` replaced by ``get_json_object(name, '$.path')``."""
    toks = tokenize(text)
    out: list[str] = []
    pos = 0
    i = 0
    while i < len(toks):
        tok = toks[i]
        prev = toks[i - 1] if i else None
        nxt = toks[i + 1] if i + 1 < len(toks) else None
        is_path = (
            tok.token_type == TokenType.COLON
            and prev is not None
            and nxt is not None
            and _is_name(prev)
            and _adjacent(prev, tok)
            and _adjacent(tok, nxt)
            and (_is_name(nxt) or nxt.token_type == TokenType.L_BRACKET)
        )
        if not is_path:
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
        path, end = _path(toks, i)
        if path == "$":
            i += 1
            continue
        column = text[toks[start].start : toks[i - 1].end + 1]
        out.append(text[pos : toks[start].start])
        literal = path.replace("\\", "\\\\").replace("'", "\\'")
        out.append(f"get_json_object({column}, '{literal}')")
        pos = toks[end].end + 1
        i = end + 1
    out.append(text[pos:])
    return "".join(out)


def _path(toks: list[Token], colon: int) -> tuple[str, int]:
    """The JSONPath of the ``:``/``.``/``[...]`` steps from ``colon``, and its last token."""
    parts = ["$"]
    i, last = colon, colon - 1
    while i < len(toks) and _adjacent(toks[last], toks[i]):
        step = toks[i]
        after = toks[i + 1] if i + 1 < len(toks) else None
        if (
            step.token_type in (TokenType.COLON, TokenType.DOT)
            and after is not None
            and _is_name(after)
            and _adjacent(step, after)
        ):
            parts.append("." + after.text)
            last, i = i + 1, i + 2
        elif (
            step.token_type == TokenType.COLON
            and i == colon
            and after is not None
            and after.token_type == TokenType.L_BRACKET
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
            else:
                parts.append(f"[{inner.text}]")
            last, i = i + 2, i + 3
        else:
            break
    return "".join(parts), last
