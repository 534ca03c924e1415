"""``headwater pipelines init | dry-run | run | report`` from a shell: a fresh process, exit codes,
progress and summary on the terminal."""

from __future__ import annotations

import subprocess
import sys

import pytest


def headwater(*args: str, cwd, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "headwater.cli", *args],
        cwd=str(cwd),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@pytest.mark.slow
def test_init_then_dry_run_then_run(tmp_path):
    made = headwater("pipelines", "init", "shop", cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    project = tmp_path / "shop"
    assert (project / "spark-pipeline.yml").is_file()

    dry = headwater(
        "pipelines", "dry-run", "--warehouse", "wh", "--master", "local[1]", cwd=project
    )
    assert dry.returncode == 0, dry.stderr
    assert "even_numbers (batch) -> shop.even_numbers" in dry.stdout
    assert not (project / "pipeline-storage").exists()

    run = headwater("pipelines", "run", "--warehouse", "wh", "--master", "local[1]", cwd=project)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "numbers" in run.stdout and "COMPLETED" in run.stdout
    assert (project / "pipeline-storage" / "system" / "events" / "_delta_log").is_dir()

    report = headwater("pipelines", "report", "-o", "report.html", cwd=project)
    assert report.returncode == 0, report.stderr
    page = (project / "report.html").read_text()
    assert "even_numbers" in page and "non_negative" in page

    bad = headwater("pipelines", "run", "--refresh", "nope", "--master", "local[1]", cwd=project)
    assert bad.returncode == 2
    assert "--refresh names 'nope'" in bad.stderr
