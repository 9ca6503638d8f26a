"""Test-session set-up: a site fact, read only when present, and no network.

The trained MLPerf Tiny weights are data files of this site (``../shared/models/mlperf_tiny`` beside the
checkout; see its README). armgen itself finds them only through ``$ARMGEN_MLPERF_DIR``, ``--weights``,
its cache or a download; the tests point the variable there when the folder exists and the variable is
unset, and set ``ARMGEN_OFFLINE=1`` and a fresh ``ARMGEN_CACHE_DIR`` for the session, so no test
downloads anything or reads the user's cache (tests of the download path serve the files from
127.0.0.1 and lift the switch themselves).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

_SITE_MLPERF = Path(__file__).resolve().parent.parent.parent / "shared" / "models" / "mlperf_tiny"
if "ARMGEN_MLPERF_DIR" not in os.environ and _SITE_MLPERF.is_dir():
    os.environ["ARMGEN_MLPERF_DIR"] = str(_SITE_MLPERF)
os.environ["ARMGEN_OFFLINE"] = "1"


def pytest_configure(config):
    """Under pytest-xdist (``-n``, pyproject's addopts), the controller makes the one folder where every worker's
    session compile cache lives (tests/_programs.py); the workers inherit ``$ARMGEN_TEST_PROGRAMS``."""
    if getattr(config.option, "numprocesses", None) and not hasattr(config, "workerinput"):
        import tempfile

        os.environ["ARMGEN_TEST_PROGRAMS"] = tempfile.mkdtemp(prefix="armgen-test-programs-")


def pytest_unconfigure(config):
    """The controller removes the shared compile cache when the run ends."""
    if getattr(config.option, "numprocesses", None) and not hasattr(config, "workerinput"):
        import shutil

        shutil.rmtree(os.environ.pop("ARMGEN_TEST_PROGRAMS", ""), ignore_errors=True)


@pytest.fixture(autouse=True, scope="session")
def _private_weights_cache(tmp_path_factory):
    """A weights cache of the session's own (empty at start), so the user's cache never decides a test."""
    os.environ["ARMGEN_CACHE_DIR"] = str(tmp_path_factory.mktemp("armgen-cache"))
    yield


def pytest_addoption(parser):
    """``--update-golden``: tests/project/test_golden.py rewrites its golden copies (as ``ARMGEN_UPDATE_GOLDEN=1``)."""
    parser.addoption("--update-golden", action="store_true", default=False,
                     help="rewrite tests/data/golden from the current templates (review the diff, then commit)")


NEEDS = ("needs_gcc", "needs_qemu", "needs_workspace", "needs_zephyr")


def pytest_collection_modifyitems(config, items):
    """The ``needs_*`` markers become skips with the reason from tests/_needs.py (each condition computed once,
    and only when a selected test carries its marker)."""
    import _needs

    for item in items:
        for marker in item.iter_markers():
            if marker.name in NEEDS and (why := _needs.reason(marker)) is not None:
                item.add_marker(pytest.mark.skip(reason=why))
                break
    items[:] = costliest_files_first(items)


#: A test file's place in the run by the costliest marker any of its tests carries: Zephyr builds (minutes
#: each), then other firmware builds, then model exports, then the rest.
COST_ORDER = ("needs_zephyr", "workspace", "slow")


def costliest_files_first(items: list) -> list:
    """``items`` with whole files reordered, the costliest first (:data:`COST_ORDER`), collection order kept
    otherwise. pytest-xdist (``--dist loadfile --no-loadscope-reorder``, pyproject's addopts) hands files to the
    workers in this order, so the long Zephyr files start at once instead of last (xdist's own order is by
    number of tests, which puts them at the end) and the many short files fill in at the end of the run."""
    rank: dict[str, int] = {}
    first: dict[str, int] = {}
    for index, item in enumerate(items):
        path = item.nodeid.split("::", 1)[0]
        first.setdefault(path, index)
        names = {m.name for m in item.iter_markers()}
        cost = next((i for i, name in enumerate(COST_ORDER) if name in names), len(COST_ORDER))
        rank[path] = min(rank.get(path, cost), cost)
    return sorted(items, key=lambda item: (rank[p := item.nodeid.split("::", 1)[0]], first[p]))
