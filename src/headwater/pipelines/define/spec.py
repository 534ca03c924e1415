"""The pipeline spec: SDP's ``spark-pipeline.yml``, read and checked before anything runs.

Fields as SDP defines them (``name``, ``storage``, ``catalog``, ``database`` or
``schema``, ``configuration``, ``libraries`` of ``glob: {include: ...}``); a library may
also be ``file: path`` (one file, as the known system lists notebooks). Unknown fields,
wrong types, and library paths that match nothing are errors naming the field or path,
raised before a single definition is evaluated.
"""

from __future__ import annotations

import glob as globs
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from headwater.errors import PipelineDefinitionError
from headwater.storage import paths as storage_paths

SPEC_FILE_NAMES = ("spark-pipeline.yml", "spark-pipeline.yaml")
FIELDS = ("name", "storage", "catalog", "database", "schema", "configuration", "libraries")


@dataclass(frozen=True)
class PipelineSpec:
    """A pipeline: its sources, where it keeps its state, where its tables land."""

    name: str
    storage: str
    root: Path
    libraries: tuple[str, ...] = ("transformations/**",)
    catalog: str | None = None
    database: str | None = None
    configuration: Mapping[str, str] = field(default_factory=dict)
    file: Path | None = None

    def source_files(self) -> list[Path]:
        """The ``.py`` and ``.sql`` files the libraries name, in a stable order (each
        library in spec order, its files sorted by path)."""
        found: list[Path] = []
        for pattern in self.libraries:
            matched = _expand(self.root, pattern)
            if not matched:
                raise PipelineDefinitionError(
                    f"[PIPELINE_LIBRARY_NOT_FOUND] The library '{pattern}' matches no file "
                    f"under {self.root}. Fix the path in `libraries`.",
                    str(self.file) if self.file else None,
                )
            for path in matched:
                if path.suffix not in (".py", ".sql"):
                    continue
                if path not in found:
                    found.append(path)
        return found

    @property
    def storage_path(self) -> str:
        if storage_paths.is_remote(self.storage):  # s3://, s3a://: taken as written
            return storage_paths.normalize(self.storage)
        path = Path(storage_paths.local_path(self.storage))
        return str(path if path.is_absolute() else (self.root / path).resolve())


def _expand(root: Path, pattern: str) -> list[Path]:
    base = root / pattern
    if not globs.has_magic(pattern):
        if base.is_dir():
            return sorted(p for p in base.rglob("*") if _is_source(p))
        return [base] if base.is_file() else []
    matched = globs.glob(str(base if not pattern.endswith("/**") else base / "*"), recursive=True)
    return sorted(Path(p) for p in matched if _is_source(Path(p)))


def _is_source(path: Path) -> bool:
    return path.is_file() and "__pycache__" not in path.parts


def find_spec(start: str | Path) -> Path:
    """The spec file ``start`` names, or the one in ``start`` (a directory) or above it."""
    path = Path(start).resolve()
    if path.is_file():
        return path
    if not path.exists():
        raise PipelineDefinitionError(
            f"[PIPELINE_SPEC_FILE_NOT_FOUND] {path} does not exist. Give a pipeline directory "
            "or its spark-pipeline.yml (`headwater pipelines init NAME` creates one)."
        )
    for folder in (path, *path.parents):
        found = [folder / n for n in SPEC_FILE_NAMES if (folder / n).is_file()]
        if len(found) > 1:
            raise PipelineDefinitionError(
                f"[MULTIPLE_PIPELINE_SPEC_FILES_FOUND] Both {found[0].name} and "
                f"{found[1].name} are in {folder}: keep one."
            )
        if found:
            return found[0]
    raise PipelineDefinitionError(
        f"[PIPELINE_SPEC_FILE_NOT_FOUND] No spark-pipeline.yml in {path} or above it. "
        "Run `headwater pipelines init NAME` to create a pipeline project."
    )


def load_spec(start: str | Path, overrides: Mapping[str, Any] | None = None) -> PipelineSpec:
    """Read and check the spec found from ``start``; ``overrides`` replace its fields."""
    file = find_spec(start)
    try:
        data = yaml.safe_load(file.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        raise PipelineDefinitionError(
            f"[PIPELINE_SPEC_INVALID_YAML] {getattr(e, 'problem', e)}",
            str(file),
            mark.line + 1 if mark is not None else None,
        ) from None
    if not isinstance(data, dict):
        raise PipelineDefinitionError(
            "[PIPELINE_SPEC_NOT_A_MAPPING] The spec must be a YAML mapping of fields.", str(file)
        )
    for key, value in (overrides or {}).items():
        if key == "configuration" and isinstance(data.get(key), dict):
            data[key] = {**data[key], **value}
        else:
            data[key] = value
    return spec_from_mapping(data, file.parent, file)


def spec_from_mapping(
    data: Mapping[str, Any], root: Path, file: Path | None = None
) -> PipelineSpec:
    where = str(file) if file else None
    for key in data:
        if key not in FIELDS:
            raise PipelineDefinitionError(
                f"[PIPELINE_SPEC_UNEXPECTED_FIELD] Unknown field '{key}'. The spec's fields "
                f"are {', '.join(FIELDS)}.",
                where,
            )
    for key in ("name", "storage"):
        if not isinstance(data.get(key), str) or not data[key]:
            raise PipelineDefinitionError(
                f"[PIPELINE_SPEC_MISSING_REQUIRED_FIELD] The spec needs `{key}` (a string).",
                where,
            )
    configuration = data.get("configuration") or {}
    if not isinstance(configuration, dict):
        raise PipelineDefinitionError(
            "[PIPELINE_SPEC_FIELD_NOT_DICT] `configuration` must map names to values.", where
        )
    libraries = data.get("libraries")
    catalog = _optional_str(data, "catalog", where)
    if catalog is not None and catalog.lower() not in ("spark_catalog", "hive_metastore"):
        raise PipelineDefinitionError(
            f"[PIPELINE_SPEC_UNKNOWN_CATALOG] catalog '{catalog}': headwater keeps tables in "
            "the session's catalog (spark_catalog); drop `catalog` or set it to spark_catalog.",
            where,
        )
    return PipelineSpec(
        name=data["name"],
        storage=data["storage"],
        root=root.resolve(),
        libraries=_libraries(libraries, where)
        if libraries is not None
        else ("transformations/**",),
        catalog=catalog,
        database=_optional_str(data, "database", where) or _optional_str(data, "schema", where),
        configuration={str(k): _conf_value(v) for k, v in configuration.items()},
        file=file,
    )


def _libraries(value: Any, where: str | None) -> tuple[str, ...]:
    if not isinstance(value, list):
        raise PipelineDefinitionError(
            "[PIPELINE_SPEC_INVALID_LIBRARIES] `libraries` must be a list of "
            "`- glob: {include: path/**}` or `- file: path` entries.",
            where,
        )
    found = []
    for entry in value:
        if isinstance(entry, dict) and isinstance(entry.get("glob"), dict):
            include = entry["glob"].get("include")
        elif isinstance(entry, dict) and "file" in entry:
            include = entry["file"]
        else:
            include = None
        if not isinstance(include, str) or not include:
            raise PipelineDefinitionError(
                f"[PIPELINE_SPEC_INVALID_LIBRARIES] Library entry {entry!r} is neither "
                "`glob: {include: path}` nor `file: path`.",
                where,
            )
        found.append(include)
    return tuple(found)


def _optional_str(data: Mapping[str, Any], key: str, where: str | None) -> str | None:
    value = data.get(key)
    if value is not None and not isinstance(value, str):
        raise PipelineDefinitionError(
            f"[PIPELINE_SPEC_FIELD_NOT_STRING] `{key}` must be a string.", where
        )
    return value


def _conf_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
