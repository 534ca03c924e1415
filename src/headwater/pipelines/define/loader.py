"""Loading a pipeline's sources into a :class:`~headwater.pipelines.define.registry.Registry`.

SDP's own loader needs a Spark Connect session, so this one does what it does in-process:
each ``.py`` library runs as a fresh module with ``spark`` in its globals, inside SDP's
``graph_element_registration_context``; each ``.sql`` file goes to the SQL front. While
sources load, ``import dlt`` finds headwater's definitions module and
``pyspark.pipelines`` gains what the known system's docs show and OSS lacks
(``append_flow(once=True)``, the ``expect*`` decorators); both are put back afterwards. The pipeline's
``configuration`` is set as Spark confs first, so code reads it with ``spark.conf.get``
(and put back when the update ends: :mod:`.settings`).
"""

from __future__ import annotations

import importlib.util
import sys
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pyspark.pipelines as sdp
from pyspark.pipelines.graph_element_registry import graph_element_registration_context
from pyspark.sql import SparkSession

from headwater.errors import HeadwaterError, PipelineDefinitionError
from headwater.pipelines.define import decorators
from headwater.pipelines.define.registry import Registry, SqlLoader
from headwater.pipelines.define.settings import SessionSettings
from headwater.pipelines.define.spec import PipelineSpec


def load(
    settings: SessionSettings, spec: PipelineSpec, sql_loader: SqlLoader | None = None
) -> Registry:
    """Every definition of the spec's libraries, captured; nothing evaluated or written.
    The spec's configuration is set on ``settings``' session first."""
    spark = settings.spark
    files = spec.source_files()
    for key, value in spec.configuration.items():
        settings.set(key, value)
    registry = Registry(sql_loader)
    with pipeline_modules(), graph_element_registration_context(registry):
        for file in files:
            if file.suffix == ".py":
                run_python_source(spark, file)
            else:
                registry.register_sql(file.read_text(encoding="utf-8"), file)
    return registry


@contextmanager
def pipeline_modules() -> Iterator[None]:
    """``dlt`` importable while sources load, and ``pyspark.pipelines`` with what the
    known system's docs show: ``append_flow(once=...)``, ``create_streaming_table(
    expect_all=...)``, the ``expect*`` decorators, and a ``create_auto_cdc_flow`` that
    needs no Spark Connect client."""
    saved_dlt = sys.modules.get("dlt")
    added = sdp_additions()
    saved = {name: getattr(sdp, name, None) for name in added}
    sys.modules["dlt"] = decorators
    for name, func in added.items():
        setattr(sdp, name, func)
    try:
        yield
    finally:
        for name, before in saved.items():
            if before is None:
                delattr(sdp, name)
            else:
                setattr(sdp, name, before)
        if saved_dlt is None:
            sys.modules.pop("dlt", None)
        else:
            sys.modules["dlt"] = saved_dlt


def python_syntax_error(e: SyntaxError, file: Path | str) -> PipelineDefinitionError:
    """The one error for Python that does not compile, here and in :mod:`.precheck`."""
    return PipelineDefinitionError(f"[PIPELINE_PYTHON_SYNTAX_ERROR] {e.msg}", str(file), e.lineno)


def sdp_additions() -> dict[str, Callable[..., Any]]:
    """What ``pyspark.pipelines`` has while sources load, in place of (or besides) its own
    functions; :mod:`.precheck` checks calls against these same signatures."""
    added: dict[str, Callable[..., Any]] = {f.__name__: f for f in decorators.EXPECT_FUNCTIONS}
    added["append_flow"] = decorators.append_flow
    added["create_streaming_table"] = decorators.create_streaming_table
    added["create_auto_cdc_flow"] = decorators.sdp_create_auto_cdc_flow
    return added


def run_python_source(spark: SparkSession, file: Path) -> None:
    """Run one Python library as a module; its errors name the file and line.

    The source is read and compiled here rather than through the import system, whose
    bytecode cache keys on the file's mtime in whole seconds and its size: an edit saved
    within the same second at the same length would run the old code (``--watch``
    re-runs a file as soon as it is saved)."""
    module_spec = importlib.util.spec_from_file_location(file.stem, str(file))
    if module_spec is None or module_spec.loader is None:
        raise PipelineDefinitionError("Cannot load this file as Python.", str(file))
    module = importlib.util.module_from_spec(module_spec)
    module.__dict__["spark"] = spark
    try:
        code = compile(file.read_bytes(), str(file), "exec", dont_inherit=True)
        exec(code, module.__dict__)
    except SyntaxError as e:
        raise python_syntax_error(e, file) from None
    except PipelineDefinitionError:
        raise
    except (HeadwaterError, Exception) as e:
        raise PipelineDefinitionError(
            f"[PIPELINE_PYTHON_SOURCE_FAILED] {type(e).__name__}: {e}",
            str(file),
            line_in(e, file),
        ) from e


def line_in(error: BaseException, file: Path) -> int | None:
    """The last line of ``file`` in the error's traceback."""
    line = None
    for frame in traceback.extract_tb(error.__traceback__):
        if Path(frame.filename) == file:
            line = frame.lineno
    return line
