"""The JVM jars of the optional tiers (``jars/pom.xml``) for tests and benchmarks, fetched
by ``scripts/fetch-jars.sh`` into the shared cache and checked against
``jars/SHA256SUMS``. The script runs once per process and tier: once the cache is complete
it makes no Maven call, so later processes pay a few milliseconds."""

from __future__ import annotations

import functools
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FETCH = ROOT / "scripts" / "fetch-jars.sh"


def tier_jars(tier: str) -> list[str]:
    """Absolute paths of the tier's jars (fetched and verified when needed)."""
    return list(_fetched(tier))


@functools.cache
def _fetched(tier: str) -> tuple[str, ...]:
    done = subprocess.run(["bash", str(FETCH), tier], capture_output=True, text=True)
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise RuntimeError(f"the {tier} jars are not available: {last}")
    return tuple(line for line in done.stdout.splitlines() if line)
