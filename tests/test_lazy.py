"""``import headwater`` then the spellings the docs use (``headwater.pipelines.quality(...)``,
``headwater.copyinto.copy_into``, ``headwater.delta.tables``...): each package loads on first
use, so ``import headwater`` stays as light as it was."""

from __future__ import annotations

import re

from tests.conftest import REPO, run_python

# Spark option and conf keys (``headwater.fileMetadataColumn``) are spelt in lowerCamelCase;
# code is snake_case and CapWords.
OPTION_KEY = re.compile(r"\.[a-z]+[A-Z]")


def documented_spellings() -> list[str]:
    pages = [*sorted((REPO / "docs").glob("*.md")), REPO / "README.md"]
    found = {
        m.group(0)
        for page in pages
        for m in re.finditer(r"\bheadwater(?:\.[A-Za-z_]\w*)+", page.read_text())
    }
    return sorted(s for s in found if not OPTION_KEY.search(s))


CHECK = """
import sys
import headwater

heavy = [m for m in ("headwater.pipelines", "headwater.sql", "headwater.delta.tables",
                     "headwater.copyinto", "sqlglot", "deltalake") if m in sys.modules]
print("imported:", heavy)
for spelling in sys.argv[1:]:
    found = headwater
    try:
        for part in spelling.split(".")[1:]:
            found = getattr(found, part)
    except AttributeError as e:
        print("missing:", spelling, e)
print("hasattr:", hasattr(headwater, "no_such_package"), hasattr(headwater.delta, "nope"))
"""


def test_every_documented_spelling_resolves_after_import_headwater():
    spellings = documented_spellings()
    assert "headwater.pipelines.quality" in spellings and len(spellings) > 10
    done = run_python(CHECK, *spellings)
    assert "imported: []" in done.stdout, done.stdout  # nothing heavy until first use
    assert "missing:" not in done.stdout, done.stdout
    assert "hasattr: False False" in done.stdout, done.stdout
