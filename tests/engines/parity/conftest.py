"""The parity matrix's two engines, one process each for the whole package, and the
operations of every family pytest selected, run once on both (tests/engines/parity/
matrix.py).

Both sessions are built as headwater's users build them, ``headwater.session()`` and
``headwater.session(delta_engine="delta-spark")``, so Auto Loader, COPY INTO and the
pipelines run on either (the test session's ``engines`` peers keep delta-spark untouched
by headwater, as the other tests of tests/engines need it).
"""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest

from tests.engines.parity import matrix
from tests.engines.peer import running

# The whole matrix runs in the first test's setup (``parity_runs``): 7.6 min alone, 14-16
# min beside CI's other lane, where the suite's 900 s per test cut it off (2026-11-30).
# Its tests get the time of the whole tier; a hung peer still fails with its stacks.
MATRIX_TIMEOUT = 2700


def pytest_collection_modifyitems(config, items):
    here = Path(__file__).parent
    for item in items:
        if Path(str(item.path)).parent == here:
            item.add_marker(pytest.mark.timeout(MATRIX_TIMEOUT))


@pytest.fixture(scope="package")
def parity():
    with running("headwater-parity-", through_headwater=True) as peers:
        yield peers


@pytest.fixture(scope="package")
def parity_runs(parity, request, tmp_path_factory) -> dict[str, matrix.Runs]:
    """Each family module's runs, by its file."""
    tmp = tmp_path_factory.mktemp("parity")
    found = matrix.run(parity, matrix.selected(request.session.items), tmp)
    Path(tmp, "runs.pickle").write_bytes(pickle.dumps(found))  # to look into a failure
    return found
