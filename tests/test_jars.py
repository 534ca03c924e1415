"""The JVM jar manifest (``jars/pom.xml``), its checksums (``jars/SHA256SUMS``) and the
fetch script agree: every tier is listed in both, every pinned artifact has a checksum, the
jars meant for Spark's classpath leave out what pyspark ships, a complete cache is reused
without Maven, and a jar that differs from its checksum is refused in one line. No Spark;
the ``s3a`` tier is fetched (or found in the cache) for real."""

from __future__ import annotations

import re
import shutil
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import pyspark
import pytest

from tests.jars import FETCH, ROOT, tier_jars

BASH = shutil.which("bash") or "/bin/bash"
NS = {"m": "http://maven.apache.org/POM/4.0.0"}
# Run in a JVM of their own (`java -cp`: the broker, Kafka Connect with Debezium), so they
# keep their whole closure.
OWN_JVM = {"kafka-broker", "cdc"}


def pinned() -> dict[str, list[str]]:
    """Each tier (profile) of the manifest and the jar names its dependencies pin."""
    root = ET.parse(ROOT / "jars" / "pom.xml").getroot()
    tiers = {}
    for profile in root.iterfind("m:profiles/m:profile", NS):
        deps = profile.iterfind("m:dependencies/m:dependency", NS)
        tiers[profile.findtext("m:id", namespaces=NS)] = [
            f"{d.findtext('m:artifactId', namespaces=NS)}-{d.findtext('m:version', namespaces=NS)}.jar"
            for d in deps
        ]
    return tiers


def listed() -> dict[str, dict[str, str]]:
    """jars/SHA256SUMS as {tier: {jar: sha256}}."""
    sums: dict[str, dict[str, str]] = {}
    for line in (ROOT / "jars" / "SHA256SUMS").read_text().splitlines():
        m = re.fullmatch(r"([0-9a-f]{64})  ([^/]+)/([^/]+\.jar)", line)
        assert m, f"malformed line in jars/SHA256SUMS: {line!r}"
        sums.setdefault(m[2], {})[m[3]] = m[1]
    return sums


def unversioned(jar: str) -> str:
    return re.sub(r"[-_][0-9][^-]*(-[0-9][^-]*)*(\.Final)?\.jar$", "", jar)


def fetch(cache: Path, *args: str, path: str | None = None) -> subprocess.CompletedProcess:
    env = {
        "PATH": path or "/usr/bin:/bin",
        "HOME": str(Path.home()),
        "HEADWATER_JAR_CACHE": str(cache),
    }
    return subprocess.run([BASH, str(FETCH), *args], capture_output=True, text=True, env=env)


def test_every_tier_and_pinned_artifact_has_checksums():
    tiers, sums = pinned(), listed()
    assert set(tiers) == set(sums) and {"s3a", "delta-spark", "kafka", "kafka-broker"} <= set(tiers)
    for tier, jars in tiers.items():
        assert jars and set(jars) <= set(sums[tier]), tier


def test_jars_for_sparks_classpath_leave_out_what_pyspark_ships():
    ships = {unversioned(p.name) for p in (Path(pyspark.__file__).parent / "jars").glob("*.jar")}
    for tier, jars in listed().items():
        if tier not in OWN_JVM:
            assert not ships & {unversioned(j) for j in jars}, tier


def test_the_s3a_tier_is_the_listed_jars():
    jars = tier_jars("s3a")
    assert sorted(Path(j).name for j in jars) == sorted(listed()["s3a"])
    assert all(Path(j).is_file() for j in jars)


def copy_of_cache(tmp_path: Path, tier: str) -> Path:
    """The tier's cached jars, linked (not copied: the AWS bundle is ~650 MB) into a cache
    of its own."""
    cache = tmp_path / "cache"
    (cache / tier).mkdir(parents=True)
    for jar in tier_jars(tier):
        (cache / tier / Path(jar).name).symlink_to(jar)
    return cache


def test_a_complete_cache_is_used_without_maven(tmp_path):
    cache = copy_of_cache(tmp_path, "s3a")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "mvn").write_text(f"#!/bin/sh\ntouch {tmp_path}/mvn-called\nexit 1\n")
    (bin_dir / "mvn").chmod(0o755)
    done = fetch(cache, "--comma", "s3a", path=f"{bin_dir}:/usr/bin:/bin")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == ",".join(f"{cache}/s3a/{j}" for j in sorted(listed()["s3a"]))
    assert not (tmp_path / "mvn-called").exists()


def test_a_tampered_jar_is_refused_in_one_line(tmp_path):
    cache = copy_of_cache(tmp_path, "s3a")
    victim = cache / "s3a" / "hadoop-aws-3.5.0.jar"
    original = victim.resolve()
    victim.unlink()
    shutil.copyfile(original, victim)
    with victim.open("r+b") as f:
        f.seek(100)
        f.write(b"\0tampered")
    done = fetch(cache, "s3a")
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.strip() == (
        "fetch-jars: s3a/hadoop-aws-3.5.0.jar does not match its checksum in jars/SHA256SUMS"
        f" (refused); delete {cache}/s3a to fetch it again"
    )


@pytest.mark.parametrize("args", [("no-such-tier",), ()])
def test_an_unknown_or_missing_tier_is_one_line(tmp_path, args):
    done = fetch(tmp_path, *args)
    assert done.returncode == 1 and len(done.stderr.strip().splitlines()) == 1
    assert done.stderr.startswith("fetch-jars: ")
