"""The committed program fixtures (tests/data/programs, made by its make.py) are what the pinned ExecuTorch
produces: the fast tier's project, render and size tests read them instead of exporting.

The slow test compiles every fixture again as make.py does (untrained weights, wherever it runs) and compares
each kept file with the committed one. When it fails after a pin or compile-stage change, run
``python tests/data/programs/make.py`` and commit the result.

Not byte for byte: calibration runs the float model, and torch's float kernels round differently on another
kind of CPU. Measured on an Intel Xeon with AMX (the fixtures were made on another machine): kws-cortex-m55.pte
differed in 3 of 50,144 bytes, the Ethos-U programs in 50-51 of about 37,500; on an AMD EPYC (Zen 1,
2026-12-04) in 1,369 of 50,144 and about 2,260 of 37,550. Read back with ExecuTorch's deserializer, the
AMD kws-cortex-m55 program differs only in float-derived numbers, each by float rounding: float32 constants
(output scales) and int32 constants (requantization multipliers) by at most 3.5e-7 of the tensor's largest
magnitude, three Int arguments (multipliers near 2**31) by at most 191, no int8 weight, shape, dtype, memory
plan offset or operator at all; the reports only in float figures (an output scale by 1.5e-7 relative, SNR
and max-error in the 5th-6th digit) and the digest, the NPU programs' reference outputs by one quantization
step of that scale, no planned buffer, pool, operator or Vela figure. So the comparison is exact for every
structure, name, text and small integer, and within what float rounding explains for the rest: program
numbers within :data:`NUMBER_RTOL`, report floats within :data:`FLOAT_RTOL`, reference outputs within
:data:`OUTPUT_ATOL_SHARE`, an Ethos-U delegate's payload (Vela's command stream with its scale words) of the
same length (its Vela summary and figures are compared exactly).
"""

from __future__ import annotations

import dataclasses
import enum
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


#: Relative tolerance of a program's numbers across CPUs: Int/Double arguments relative to their value,
#: constant tensors relative to the tensor's largest magnitude. Float rounding moved them by at most 3.5e-7
#: (module docstring); a small integer (a shape, a shift, an offset below 10**5) must match exactly.
NUMBER_RTOL = 1e-5
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


#: numpy element types of the constant tensors a program holds, by ExecuTorch's ScalarType numbering
#: (executorch.exir.scalar_type: BYTE 0, CHAR 1, SHORT 2, INT 3, LONG 4, FLOAT 6, DOUBLE 7).
_NUMPY_DTYPE = {0: np.uint8, 1: np.int8, 2: np.int16, 3: np.int32, 4: np.int64, 6: np.float32, 7: np.float64}


def _tree_difference(fresh, committed, where: str) -> str | None:
    """Where two deserialized program trees differ beyond float rounding: types, lengths, bytes, strings and
    enums exact; ints and floats within NUMBER_RTOL of the committed value."""
    if type(fresh) is not type(committed):
        return f"{where}: {type(fresh).__name__} != {type(committed).__name__}"
    if dataclasses.is_dataclass(committed):
        return next((d for f in dataclasses.fields(committed)
                     if (d := _tree_difference(getattr(fresh, f.name), getattr(committed, f.name),
                                               f"{where}.{f.name}"))), None)
    if isinstance(committed, list):
        if len(fresh) != len(committed):
            return f"{where}: {len(fresh)} items, committed {len(committed)}"
        return next((d for i, (a, b) in enumerate(zip(fresh, committed, strict=True))
                     if (d := _tree_difference(a, b, f"{where}[{i}]"))), None)
    if isinstance(committed, (int, float)) and not isinstance(committed, (bool, enum.Enum)):
        close = abs(fresh - committed) <= NUMBER_RTOL * abs(committed)
        return None if close else f"{where}: {fresh} != {committed}"
    return None if fresh == committed else f"{where}: differs"


def _pte_difference(fresh: bytes, committed: bytes) -> str | None:
    """Where two .pte files differ beyond float rounding, read with armgen's reader of ExecuTorch's deserializer
    (:func:`armgen.model.pte_reader.deserialized_program`): the same length; constant tensors element by element
    within NUMBER_RTOL of the tensor's largest magnitude (int8 weights: exact); delegate payloads of the same
    length; everything else by :func:`_tree_difference`. The two programs are compared, not modified (the reader
    caches them): what was checked here is blanked in copies."""
    from armgen.model.pte_reader import deserialized_program

    if len(fresh) != len(committed):
        return f"{len(fresh)} B, committed {len(committed)} B"
    a, b = deserialized_program(fresh), deserialized_program(committed)
    if len(a.constant_buffer) != len(b.constant_buffer) or len(a.backend_delegate_data) != len(b.backend_delegate_data):
        return "constant buffers or delegates: not as many"
    checked: set[int] = set()
    for plan in b.execution_plan:
        for i, value in enumerate(plan.values):
            tensor = value.val
            if type(tensor).__name__ != "Tensor" or not tensor.data_buffer_idx or tensor.allocation_info is not None:
                continue
            index, dtype = tensor.data_buffer_idx, _NUMPY_DTYPE.get(int(tensor.scalar_type))
            x, y = (np.frombuffer(p.constant_buffer[index].storage, dtype or np.uint8) for p in (a, b))
            if x.shape != y.shape:
                return f"constant buffer {index}: {x.nbytes} B, committed {y.nbytes} B"
            if dtype is None:
                if not np.array_equal(x, y):
                    return f"constant buffer {index} ({tensor.scalar_type.name}): differs"
            elif np.abs(x.astype(np.float64) - y).max(initial=0.0) > NUMBER_RTOL * np.abs(y.astype(np.float64)).max(initial=0.0):
                return f"{plan.name} value {i}: constant tensor ({tensor.scalar_type.name}) beyond float rounding"
            checked.add(index)
    for x, y in zip(a.backend_delegate_data, b.backend_delegate_data, strict=True):
        if len(x.data) != len(y.data):
            return f"delegate payload: {len(x.data)} B, committed {len(y.data)} B"

    def rest(program):
        """The program with the constant tensors checked above and the delegate payloads blanked (a copy)."""
        return dataclasses.replace(
            program,
            constant_buffer=[dataclasses.replace(buf, storage=b"") if n in checked else buf
                             for n, buf in enumerate(program.constant_buffer)],
            backend_delegate_data=[dataclasses.replace(d, data=b"") for d in program.backend_delegate_data])

    return _tree_difference(rest(a), rest(b), "program")


def _difference(role: str, fresh: Path, committed: Path) -> str | None:
    """Why a fresh compile's file is not the committed fixture beyond float rounding (None when it is)."""
    a, b = fresh.read_bytes(), committed.read_bytes()
    if a == b:
        return None
    if role == "pte":
        return _pte_difference(a, b)
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
