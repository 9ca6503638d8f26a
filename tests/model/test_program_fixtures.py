"""The committed program fixtures (tests/data/programs, made by its make.py) are what the pinned ExecuTorch
produces: the fast tier's project, render and size tests read them instead of exporting.

The slow test compiles every fixture again as make.py does (untrained weights, wherever it runs) and compares
each kept file with the committed one. When it fails after a pin or compile-stage change, run
``python tests/data/programs/make.py`` and commit the result.

Byte for byte only on a machine like the one that made them: calibration runs the float model, and torch's
float kernels round differently on another kind of CPU. Measured 2026-12-03 on an Intel Xeon with AMX (the
fixtures were made on another machine): kws-cortex-m55.pte differed in 3 of 50,144 bytes, the Ethos-U programs
in 50-51 of about 37,500, the reports only in float figures (an output scale by 1.5e-7 relative, SNR and
max-error in the 5th-6th digit) and the digest, the NPU programs' reference outputs by one quantization
step of that scale, no planned buffer, pool, operator or Vela figure at all. So the comparison is exact for
every integer, name and text, and for the rest within what float rounding explains: the same .pte length
with at most :data:`PTE_BYTES_MAY_DIFFER` of its bytes different, report floats within :data:`FLOAT_RTOL`, reference outputs within :data:`OUTPUT_ATOL_SHARE`.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import io
import json
import math
from pathlib import Path

import numpy as np
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


#: The share of a .pte's bytes float rounding on another CPU may change (quantization constants a calibrated
#: scale feeds: requantization multipliers, Vela's scale words); measured at most 0.14 % (module docstring).
PTE_BYTES_MAY_DIFFER = 0.005
#: Relative tolerance of float figures in a report (scales, SNR, errors) across CPUs.
FLOAT_RTOL = 1e-4
#: Tolerance of reference outputs, as a share of the largest magnitude: one quantization step of an output
#: whose scale moved by float rounding fits (kws on Ethos-U: 0.0008 on softmax outputs up to 1).
OUTPUT_ATOL_SHARE = 1e-3


def _json_difference(fresh, committed, where: str = "") -> str | None:
    """Where two program reports differ beyond float rounding (None when they do not): every key, integer and
    string exact, floats within FLOAT_RTOL; the .pte digest is left to the byte comparison."""
    if isinstance(committed, dict) and isinstance(fresh, dict):
        if set(fresh) != set(committed):
            return f"{where or '.'}: keys {sorted(set(fresh) ^ set(committed))}"
        for k in sorted(committed):
            if k != "pte_sha256" and (d := _json_difference(fresh[k], committed[k], f"{where}.{k}")):
                return d
        return None
    if isinstance(committed, list) and isinstance(fresh, list):
        if len(fresh) != len(committed):
            return f"{where}: {len(fresh)} items, committed {len(committed)}"
        return next((d for i, (a, b) in enumerate(zip(fresh, committed, strict=True))
                     if (d := _json_difference(a, b, f"{where}[{i}]"))), None)
    if isinstance(committed, float) and isinstance(fresh, (float, int)) and not isinstance(fresh, bool):
        return None if math.isclose(fresh, committed, rel_tol=FLOAT_RTOL, abs_tol=1e-12) else f"{where}: {fresh} != {committed}"
    return None if fresh == committed else f"{where}: {fresh!r} != {committed!r}"


def _npz_difference(fresh: bytes, committed: bytes) -> str | None:
    """Where two reference-output archives differ beyond float rounding: same arrays, shapes and dtypes;
    integers exact, floats within OUTPUT_ATOL_SHARE of the largest magnitude."""
    a, b = np.load(io.BytesIO(fresh)), np.load(io.BytesIO(committed))
    if sorted(a.files) != sorted(b.files):
        return f"arrays {sorted(a.files)} != {sorted(b.files)}"
    for name in b.files:
        x, y = a[name], b[name]
        if x.shape != y.shape or x.dtype != y.dtype:
            return f"{name}: {x.dtype}{list(x.shape)} != {y.dtype}{list(y.shape)}"
        if not np.issubdtype(y.dtype, np.floating):
            if not np.array_equal(x, y):
                return f"{name}: integer values differ"
        elif not np.allclose(x, y, rtol=0, atol=OUTPUT_ATOL_SHARE * max(float(np.abs(y).max()), 1e-30)):
            return f"{name}: max difference {float(np.abs(x - y).max())}"
    return None


def _difference(role: str, fresh: Path, committed: Path) -> str | None:
    """Why a fresh compile's file is not the committed fixture beyond float rounding (None when it is)."""
    a, b = fresh.read_bytes(), committed.read_bytes()
    if a == b:
        return None
    if role == "pte":
        if len(a) != len(b):
            return f"{len(a)} B, committed {len(b)} B"
        changed = sum(x != y for x, y in zip(a, b, strict=True))
        return None if changed <= PTE_BYTES_MAY_DIFFER * len(b) else f"{changed} of {len(b)} bytes differ"
    if role == "report":
        return _json_difference(json.loads(a), json.loads(b))
    if committed.suffix == ".npz":
        return _npz_difference(a, b)
    return "differs"  # text (the Vela summary): float rounding moves no figure there


@pytest.mark.slow
@pytest.mark.parametrize("key", sorted(FIXTURE_PROGRAMS))
def test_fixture_is_what_the_pinned_executorch_compiles(key, tmp_path):
    fresh = compile_fixture(key, tmp_path)
    committed = fixture_files(key)
    assert sorted(committed) == sorted(role for role in FIXTURE_ROLES if role in fresh.files)
    for role, path in committed.items():
        why = _difference(role, fresh.files[role], path)
        assert why is None, (
            f"{path.relative_to(FIXTURES_DIR)} differs from a fresh compile ({why}): run python "
            f"tests/data/programs/make.py {key} and commit the result"
        )
