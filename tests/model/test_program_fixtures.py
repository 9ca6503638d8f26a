"""The committed program fixtures (tests/data/programs, made by its make.py) are what the pinned ExecuTorch
produces: the fast tier's project, render and size tests read them instead of exporting.

The slow test compiles every fixture again as make.py does (untrained weights, wherever it runs) and compares
each kept file byte for byte. When it fails
after a pin or compile-stage change, run ``python tests/data/programs/make.py`` and commit the result.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json

import pytest

from _programs import FIXTURE_PROGRAMS, FIXTURE_ROLES, FIXTURES_DIR, compile_fixture, fixture_files, program
from armgen.model.inspect_program import report_from_pte_bytes


def test_every_fixture_is_listed_and_every_listed_one_is_there():
    on_disk = {p.name for p in FIXTURES_DIR.iterdir() if p.is_dir() and not p.name.startswith("__")}
    assert on_disk == set(FIXTURE_PROGRAMS)
    total = sum(p.stat().st_size for p in FIXTURES_DIR.rglob("*") if p.is_file())
    assert total < 1_000_000, f"the program fixtures take {total} B: keep them well under 1 MB"


@pytest.mark.parametrize("key", sorted(FIXTURE_PROGRAMS))
def test_fixture_report_describes_its_program(key):
    """Each report names the .pte beside it (size, digest), the pinned ExecuTorch, and the fixture's target;
    and the .pte read back with ExecuTorch's deserializer gives the report's program facts."""
    sample, target, _ = FIXTURE_PROGRAMS[key]
    report, pte, report_path = program(key)
    data = pte.read_bytes()
    assert (report.name, report.target) == (sample, target)
    assert report.pte_size == len(data) and report.pte_sha256 == hashlib.sha256(data).hexdigest()
    assert report.executorch_version == importlib.metadata.version("executorch")
    assert set(fixture_files(key)) >= {"pte", "report", "reference"}
    again = report_from_pte_bytes(data, report.pte_file, None, source=str(pte))
    assert again.planned_buffers == report.planned_buffers
    assert [o.name for o in again.operators] == [o.name for o in report.operators]
    assert json.loads(report_path.read_text())["pte_sha256"] == report.pte_sha256


@pytest.mark.slow
@pytest.mark.parametrize("key", sorted(FIXTURE_PROGRAMS))
def test_fixture_is_what_the_pinned_executorch_compiles(key, tmp_path):
    fresh = compile_fixture(key, tmp_path)
    committed = fixture_files(key)
    assert sorted(committed) == sorted(role for role in FIXTURE_ROLES if role in fresh.files)
    for role, path in committed.items():
        assert fresh.files[role].read_bytes() == path.read_bytes(), (
            f"{path.relative_to(FIXTURES_DIR)} differs from a fresh compile: run python tests/data/programs/make.py "
            f"{key} and commit the result"
        )
