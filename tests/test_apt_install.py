"""``scripts/apt-install.sh``, which the set-up scripts install Debian packages through
(Java, Maven, Chromium, PostgreSQL): asked for nothing, or on a machine without apt-get, it
says so in one line and installs nothing. No Spark; apt itself is not run."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "apt-install.sh"
BASH = shutil.which("bash") or "/bin/bash"


def run(*args: str, path: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [BASH, str(SCRIPT), *args], capture_output=True, text=True, env={"PATH": path}
    )


def test_no_package_named_is_a_usage_error(tmp_path):
    done = run(path=str(tmp_path))
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == ["apt-install.sh: name the packages to install"]


def test_without_apt_get_the_error_names_the_packages(tmp_path):
    done = run("maven", "chromium", path=str(tmp_path))  # a PATH with no apt-get on it
    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == [
        "apt-install.sh: no apt-get to install maven chromium with"
    ]
    assert done.stdout == ""
