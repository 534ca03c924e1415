"""A view's definition digest covers what its function computes: the helpers it calls and
the constants and closure values it names, not only its own source (Spark-free)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

from headwater.pipelines.define.elements import Flow
from headwater.pipelines.refresh.inputs import definition_digest

PIPELINE = """
from pyspark.sql import functions as F

THRESHOLD = {threshold}

def aggregate():
    return F.col("amount") > THRESHOLD{helper_tail}

def gold():
    return aggregate()

def per_region(region):
    def view():
        return F.col("region") == region
    return view
"""


def _load(tmp_path: Path, name: str, threshold: int = 10, helper_tail: str = ""):
    path = tmp_path / f"{name}.py"
    path.write_text(PIPELINE.format(threshold=threshold, helper_tail=helper_tail))
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _digest(func) -> str:
    flow = Flow(name="gold", target="gold", func=func, origin=None)  # type: ignore[arg-type]
    return definition_digest(flow, '{"fields": []}')


def test_same_definition_same_digest(tmp_path):
    assert _digest(_load(tmp_path, "p_a").gold) == _digest(_load(tmp_path, "p_b").gold)


def test_an_edited_helper_changes_the_digest(tmp_path):
    before = _digest(_load(tmp_path, "p_c").gold)
    after = _digest(_load(tmp_path, "p_d", helper_tail=' & F.col("ok")').gold)
    assert before != after


def test_a_changed_constant_changes_the_digest(tmp_path):
    before = _digest(_load(tmp_path, "p_e", threshold=10).gold)
    assert before != _digest(_load(tmp_path, "p_f", threshold=11).gold)


def test_closure_values_tell_flows_made_in_a_loop_apart(tmp_path):
    module = _load(tmp_path, "p_g")
    north, south = module.per_region("north"), module.per_region("south")
    assert _digest(north) != _digest(south)
    assert _digest(north) == _digest(module.per_region("north"))


def test_library_functions_are_named_not_followed():
    from pyspark.sql import functions as F

    from headwater.pipelines.refresh.definition import definition_text

    helper_calls = F.col

    def view():
        return helper_calls("x")

    text = definition_text(view)
    assert "def view" in text and "def col" not in text
