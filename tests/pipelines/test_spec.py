"""The spec file, read and checked before anything runs (Spark-free)."""

from __future__ import annotations

import pytest

from headwater.errors import PipelineDefinitionError
from headwater.pipelines.define.spec import find_spec, load_spec


def write(tmp_path, text: str):
    path = tmp_path / "spark-pipeline.yml"
    path.write_text(text)
    return path


def test_sdp_spec_fields_are_read(tmp_path):
    (tmp_path / "transformations" / "sub").mkdir(parents=True)
    (tmp_path / "transformations" / "b.sql").write_text("")
    (tmp_path / "transformations" / "sub" / "a.py").write_text("")
    (tmp_path / "transformations" / "notes.txt").write_text("")
    write(
        tmp_path,
        """
name: sales
storage: store
catalog: spark_catalog
schema: sales_db
configuration: {source_dir: /landing, retries: 3, enabled: true}
libraries:
  - glob:
      include: transformations/**
""",
    )
    spec = load_spec(tmp_path)
    assert (spec.name, spec.database, spec.catalog) == ("sales", "sales_db", "spark_catalog")
    assert spec.configuration == {"source_dir": "/landing", "retries": "3", "enabled": "true"}
    assert spec.storage_path == str(tmp_path / "store")
    names = [p.relative_to(tmp_path).as_posix() for p in spec.source_files()]
    assert names == ["transformations/b.sql", "transformations/sub/a.py"]


def test_spec_is_found_from_a_subdirectory(tmp_path):
    path = write(tmp_path, "name: x\nstorage: s\n")
    (tmp_path / "deep" / "er").mkdir(parents=True)
    assert find_spec(tmp_path / "deep" / "er") == path


def test_an_unknown_field_is_named(tmp_path):
    write(tmp_path, "name: x\nstorage: s\nlibrary: []\n")
    with pytest.raises(PipelineDefinitionError, match="Unknown field 'library'") as e:
        load_spec(tmp_path)
    assert e.value.error_class == "PIPELINE_SPEC_UNEXPECTED_FIELD"
    assert "spark-pipeline.yml" in str(e.value)


def test_a_missing_required_field_is_named(tmp_path):
    write(tmp_path, "name: x\n")
    with pytest.raises(PipelineDefinitionError, match="needs `storage`"):
        load_spec(tmp_path)


def test_invalid_yaml_points_at_the_line(tmp_path):
    write(tmp_path, "name: x\nstorage: [s\nlibraries: 1\n")
    with pytest.raises(PipelineDefinitionError) as e:
        load_spec(tmp_path)
    assert e.value.error_class == "PIPELINE_SPEC_INVALID_YAML"
    assert e.value.line is not None


def test_a_library_path_that_matches_nothing_is_named(tmp_path):
    write(tmp_path, "name: x\nstorage: s\nlibraries:\n  - file: missing/flows.py\n")
    spec = load_spec(tmp_path)
    with pytest.raises(PipelineDefinitionError, match="'missing/flows.py' matches no file"):
        spec.source_files()


def test_no_spec_anywhere_says_how_to_create_one(tmp_path):
    with pytest.raises(PipelineDefinitionError, match="headwater pipelines init"):
        find_spec(tmp_path)


def test_configuration_overrides_merge_with_the_spec(tmp_path):
    write(tmp_path, "name: x\nstorage: s\nconfiguration: {a: '1', b: '2'}\n")
    spec = load_spec(tmp_path, {"configuration": {"b": "3"}})
    assert spec.configuration == {"a": "1", "b": "3"}


def test_a_catalog_other_than_the_sessions_is_refused(tmp_path):
    write(tmp_path, "name: x\nstorage: s\ncatalog: main\n")
    with pytest.raises(PipelineDefinitionError, match="catalog 'main'"):
        load_spec(tmp_path)
