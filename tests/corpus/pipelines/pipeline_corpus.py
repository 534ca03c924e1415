"""Published pipeline examples run as tests: where each example's text comes from, the only
edits the README allows, the pipeline folder it runs in and the comparison with an oracle
computed without headwater. Spark-free but for :meth:`Pipeline.run` and :meth:`Pipeline.rows`.

The examples' text is not kept in this repository (no published text is copied here;
pyspark's docstrings are read from the installed package): each other one is read at test
time from the corpus folder, ``$HEADWATER_PIPELINE_CORPUS`` or
``../shared/compat/pipelines`` beside the checkout (as ``tests/delta/test_compat_corpus.py``
reads its tables), at ``<owner>/<repo>/<commit>/<path>``, and checked against the SHA-256
of the file at that commit; a case whose file is missing is skipped with what to put where.
``python tests/corpus/pipelines/pipeline_sources.py --git owner/repo=<clone> <folder>`` fills the
folder from clones of the public repositories."""

from __future__ import annotations

import csv
import hashlib
import io
import itertools
import json
import math
import os
import textwrap
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

REPO = Path(__file__).resolve().parents[3]
CORPUS_ENV = "HEADWATER_PIPELINE_CORPUS"
# The pipeline setting of the runtimes the older demos were written for: before the known
# platform's Runtime 17.0 (its pipelines' default channel runs 17.3 today) ANSI mode was
# off, so a cast of text that does not fit gave NULL; from 17.0 on it is on, as in Spark 4.
PRE_ANSI_RUNTIME = {"spark.sql.ansi.enabled": "false"}


def corpus_folder() -> Path:
    given = os.environ.get(CORPUS_ENV)
    return Path(given) if given else REPO.parent / "shared" / "compat" / "pipelines"


@dataclass(frozen=True)
class Source:
    """One published file: a repository's file at a commit (``url`` is where a reader
    sees it), or with ``block`` the code block of language ``lang`` under that heading of
    a Markdown file (a documentation page's example)."""

    repo: str
    path: str
    commit: str
    sha256: str
    url: str
    licence: str
    block: str = ""
    lang: str = ""

    @property
    def location(self) -> Path:
        return self.location_in(corpus_folder())

    def location_in(self, folder: Path) -> Path:
        where = folder / self.repo / self.commit / self.path
        if self.block:
            slug = "-".join(self.block.lower().split())
            return where.with_name(f"{where.name}.blocks") / f"{slug}.{self.lang}"
        return where

    def text(self) -> str:
        """The file, exactly as published, or a skip naming what is missing."""
        where = self.location
        if where.is_file():
            data = where.read_bytes()
        else:
            pytest.skip(f"corpus file missing: {self.repo}@{self.commit}:{self.path} at {where}")
        digest = hashlib.sha256(data).hexdigest()
        assert digest == self.sha256, f"{self.url}: not the published text (sha256 {digest})"
        return data.decode("utf-8")


@dataclass(frozen=True)
class Docstring:
    """An example an installed package prints in a docstring (the lines under its
    ``Example:``, dedented): the package ships the text, so the test reads it where the
    package is installed, in CI too, and nothing of it is kept here. ``sha256`` pins the
    text: a new version of the package that changes it fails the test by name."""

    module: str
    name: str
    sha256: str
    url: str
    licence: str

    def text(self) -> str:
        import importlib
        import inspect

        doc = inspect.getdoc(getattr(importlib.import_module(self.module), self.name)) or ""
        lines = doc.splitlines()
        assert "Example:" in lines, f"{self.module}.{self.name} has no Example: in its docstring"
        block: list[str] = []
        for line in lines[lines.index("Example:") + 1 :]:
            if line.strip() and not line.startswith(" "):
                break
            block.append(line)
        text = textwrap.dedent("\n".join(block)).strip("\n") + "\n"
        digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
        assert digest == self.sha256, (
            f"the example of {self.module}.{self.name} changed (sha256 {digest}): {text!r}"
        )
        return text


@dataclass(frozen=True)
class Edit:
    """One change the README allows (a path, the session line, a catalog's name), with
    why. ``old`` must occur exactly ``count`` times; ``new`` may name the test's folders
    as ``{landing}``, ``{storage}``, ``{database}``."""

    old: str
    new: str
    why: str
    count: int = 1


def markdown_block(text: str, heading: str, lang: str) -> str:
    """The code blocks of ``lang`` in the sections titled ``heading`` (each up to the next
    heading of the same or a higher level), without their fences and indentation, one
    after the other (as a reader types them one below the other into one file)."""
    lines = text.splitlines(keepends=True)
    blocks: list[str] = []
    for start, title in enumerate(lines):
        if not title.startswith("#") or title.lstrip("#").strip() != heading:
            continue
        level = len(title) - len(title.lstrip("#"))
        block: list[str] | None = None
        for line in lines[start + 1 :]:
            if (
                block is None
                and line.startswith("#")
                and len(line) - len(line.lstrip("#")) <= level
            ):
                break
            if block is None and line.strip() == f"```{lang}":
                block = []
            elif block is not None and line.strip() == "```":
                blocks.append(textwrap.dedent("".join(block)))
                block = None
            elif block is not None:
                block.append(line)
    assert blocks, f"no {lang} block under {heading!r}"
    return "\n".join(blocks)


def edited(text: str, edits: Sequence[Edit], **places: str) -> str:
    for edit in edits:
        found = text.count(edit.old)
        assert found == edit.count, f"{edit.old!r} occurs {found} times, not {edit.count}"
        new = edit.new
        for name, value in places.items():
            new = new.replace("{" + name + "}", value)
        text = text.replace(edit.old, new)
    return text


_ids = itertools.count()


@dataclass
class Pipeline:
    """A pipeline project in ``root``: spec, sources, landing folder; its tables in a
    database of its own."""

    root: Path
    database: str
    spark: Any

    @classmethod
    def create(cls, tmp_path: Path, spark: Any, case: str) -> Pipeline:
        root = tmp_path / case
        root.mkdir()
        return cls(root, f"corpus_{case}_{next(_ids)}_{os.getpid()}", spark)

    @property
    def landing(self) -> Path:
        return self.root / "landing"

    @property
    def storage(self) -> Path:
        return self.root / "storage"

    def places(self) -> dict[str, str]:
        return {
            "landing": str(self.landing),
            "storage": str(self.storage),
            "database": self.database,
        }

    def source(self, name: str, text: str) -> Path:
        path = self.root / "transformations" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        return path

    def spec(self, configuration: Mapping[str, str] | None = None, **fields: Any) -> Path:
        data = {
            "name": self.database,
            "storage": str(self.storage),
            "database": self.database,
            "configuration": dict(configuration or {}),
            "libraries": [{"glob": {"include": "transformations/**"}}],
            **fields,
        }
        path = self.root / "spark-pipeline.yml"
        path.write_text(yaml.safe_dump(data))
        return path

    def land(self, relative: str, text: str) -> Path:
        path = self.landing / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        return path

    def append(self, table: str, rows: Sequence[tuple], schema: str) -> None:
        """Rows appended to ``table`` of the pipeline's database (an input the example
        reads by name), created with ``schema`` (DDL) when new."""
        self.spark.sql(f"CREATE DATABASE IF NOT EXISTS {self.database}")
        df = self.spark.createDataFrame(list(rows), schema)
        df.write.format("delta").mode("append").saveAsTable(f"{self.database}.{table}")

    def run(self, **options: Any):
        from headwater import pipelines

        if not (self.root / "spark-pipeline.yml").exists():
            self.spec()
        return pipelines.run(self.root, self.spark, **options)

    def rows(self, table: str) -> list[dict[str, Any]]:
        """The table's rows as plain dicts, read by name from the pipeline's database."""
        return [
            r.asDict(recursive=True) for r in self.spark.table(f"{self.database}.{table}").collect()
        ]

    def columns(self, table: str) -> list[str]:
        return self.spark.table(f"{self.database}.{table}").columns

    def quality(self) -> list[dict[str, Any]]:
        """Expectation results of every update, from ``headwater.pipelines.quality``."""
        from headwater import pipelines

        return [r.asDict() for r in pipelines.quality(self.root, self.spark).collect()]


def json_lines(rows: Iterable[Mapping[str, Any]]) -> str:
    return "".join(json.dumps(r) + "\n" for r in rows)


def csv_text(header: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(["" if v is None else v for v in row] for row in rows)
    return out.getvalue()


def _normal(value: Any) -> Any:
    if isinstance(value, float) and not math.isnan(value):
        return round(value, 9)
    if isinstance(value, dict):
        return tuple(sorted((k, _normal(v)) for k, v in value.items()))
    if isinstance(value, list):
        return tuple(_normal(v) for v in value)
    return value


def _key(row: Mapping[str, Any]) -> tuple:
    return tuple(sorted((k, _normal(v)) for k, v in row.items()))


def assert_rows(actual: Sequence[Mapping[str, Any]], expected: Sequence[Mapping[str, Any]]) -> None:
    """The same rows, as multisets (order ignored, floats to 9 decimals), and the same
    columns; on a difference, the rows only one side has."""
    if expected and actual:
        assert set(actual[0]) == set(expected[0]), (sorted(actual[0]), sorted(expected[0]))
    got, want = Counter(map(_key, actual)), Counter(map(_key, expected))
    missing, extra = want - got, got - want
    assert not missing and not extra, textwrap.shorten(
        f"missing {sorted(missing.elements(), key=repr)[:5]}; "
        f"unexpected {sorted(extra.elements(), key=repr)[:5]} "
        f"({len(actual)} rows, {len(expected)} expected)",
        4000,
    )


def project(rows: Iterable[Mapping[str, Any]], columns: Sequence[str]) -> list[dict[str, Any]]:
    return [{c: r.get(c) for c in columns} for r in rows]


def rule_counts(rows: Sequence[Any], failing: Mapping[str, Any]) -> dict[str, tuple[int, int]]:
    """``{rule: (passed, failed)}`` over ``rows``, each rule given as a predicate that is
    true for the rows breaking it."""
    counts = {}
    for name, breaks in failing.items():
        bad = sum(1 for r in rows if breaks(r))
        counts[name] = (len(rows) - bad, bad)
    return counts


def expectation_counts(
    quality: Iterable[Mapping[str, Any]], dataset: str, update_id: str | None = None
) -> dict[str, tuple[int, int]]:
    """``{expectation: (passed, failed)}`` for ``dataset`` (its last name part), summed
    over every update or only ``update_id``'s."""
    totals: dict[str, tuple[int, int]] = {}
    for row in quality:
        if str(row["dataset"]).split(".")[-1].lower() != dataset.lower():
            continue
        if update_id is not None and row["update_id"] != update_id:
            continue
        passed, failed = totals.get(row["expectation"], (0, 0))
        totals[row["expectation"]] = (
            passed + int(row["passed_records"]),
            failed + int(row["failed_records"]),
        )
    return totals


def notebook_cells(text: str) -> list[tuple[str, str]]:
    """The cells of a notebook exported as source (``# Databricks notebook source`` or
    ``-- Databricks notebook source``), as ``(kind, code)``: ``sql`` or ``python`` for the
    file's language or a ``%sql`` / ``%python`` cell, ``md`` and other magics as named
    (their ``MAGIC`` prefixes removed)."""
    comment = "--" if text.startswith("--") else "#"
    language = "sql" if comment == "--" else "python"
    body = text.split("\n", 1)[1] if "notebook source" in text.split("\n", 1)[0] else text
    cells = []
    for cell in body.split(f"\n{comment} COMMAND ----------\n"):
        lines = [
            line
            for line in cell.strip("\n").splitlines()
            if not line.startswith(f"{comment} DBTITLE")
        ]
        if not lines:
            continue
        magic = f"{comment} MAGIC"
        if all(line.startswith(magic) for line in lines):
            code = [line[len(magic) :].removeprefix(" ") for line in lines]
            kind = code[0].strip().lstrip("%").split()[0] if code[0].startswith("%") else "md"
            cells.append((kind, "\n".join(code[1:] if code[0].startswith("%") else code)))
        else:
            cells.append((language, "\n".join(lines)))
    return cells


def sql_statements(cell: str) -> list[str]:
    """The statements of a SQL cell, split at ``;`` outside quotes and ``--`` comments;
    empty ones (only comments) left out."""
    statements, current, quote, i = [], [], "", 0
    while i < len(cell):
        ch = cell[i]
        if quote:
            current.append(ch)
            quote = "" if ch == quote else quote
        elif ch in "'\"`":
            quote = ch
            current.append(ch)
        elif cell.startswith("--", i):
            end = cell.find("\n", i)
            end = len(cell) if end < 0 else end
            current.append(cell[i:end])
            i = end
            continue
        elif ch == ";":
            statements.append("".join(current))
            current = []
        else:
            current.append(ch)
        i += 1
    statements.append("".join(current))
    meaningful = [
        s
        for s in statements
        if any(line.strip() and not line.strip().startswith("--") for line in s.splitlines())
    ]
    return [s.strip() for s in meaningful]


def with_widgets(sql: str, widgets: Mapping[str, str]) -> str:
    """A notebook's widget values put in a SQL cell as the notebook does (``${name}`` and
    ``$name``)."""
    for name, value in sorted(widgets.items(), key=lambda kv: -len(kv[0])):
        sql = sql.replace("${" + name + "}", value).replace("$" + name, value)
    return sql
