"""The reference: what the program should output, computed on the host (the model stage's runner).

The compile stage saves, beside the ``.pte``, the lowered edge program (Cortex-M programs: it runs
with the ``cortex_m::`` ops' host implementations, CMSIS-NN's integer arithmetic, bit-exact with the
firmware), the quantized ``torch.export`` program, and a reference ``.npz`` of the sample's input and
outputs. :func:`load_reference` reads that ``.npz``; :func:`reference_outputs` runs the saved program
on any other input (``armgen run --input``). Later stages compare firmware output with these.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from armgen.errors import ModelError
from armgen.model.program_report import ProgramReport, TensorInfo
from armgen.model.tensors import (
    dequantize,
    numpy_dtype,
    stored_shape,
    to_logical_order,
    to_memory_order,
    with_dim_order,
)


@dataclass(frozen=True)
class Reference:
    """The program's inputs and the reference outputs for them (logical order).

    ``kind`` says what the outputs come from (the ``.npz``'s ``reference_kind``, see
    ``armgen.model.compile.REFERENCE_KINDS``): ``"lowered_cortex_m"`` (the lowered program with the
    ``cortex_m::`` host kernels: CMSIS-NN's integer arithmetic, bit-exact with the firmware) or
    ``"quantized_model"`` (the quantized model before lowering; also assumed for an ``.npz``
    without the entry).
    """

    inputs: tuple[np.ndarray, ...]
    outputs: tuple[np.ndarray, ...]
    source: str
    kind: str = "quantized_model"
    #: :func:`alternate_inputs` and the reference outputs for them, when the compile stage saved
    #: them (``alternate_input_<i>``/``alternate_output_<i>``; Cortex-M programs of this armgen).
    alternate_inputs: tuple[np.ndarray, ...] | None = None
    alternate_outputs: tuple[np.ndarray, ...] | None = None


#: The seed of :func:`alternate_inputs` (the run stage's second input).
ALTERNATE_SEED = 7


def alternate_inputs(infos: Sequence[TensorInfo], seed: int = ALTERNATE_SEED) -> list[np.ndarray]:
    """A second deterministic input (seeded uniform over each input dtype's range; float inputs
    standard normal), logical shapes.

    Used to check the outputs change with the input (a firmware that ignores its input, or a
    model that returns a constant, proves nothing). The compile stage saves its reference outputs
    so that ``armgen run`` need not load the program to check them.

    Raises:
        ModelError: an input dtype armgen does not exchange with firmware.
    """
    rng = np.random.default_rng(seed)
    arrays = []
    for info in infos:
        try:
            dtype = numpy_dtype(info.dtype)
        except KeyError:
            raise ModelError(f"program {info.dtype} I/O is not supported") from None
        if np.issubdtype(dtype, np.integer):
            lim = np.iinfo(dtype)
            arrays.append(rng.integers(lim.min, lim.max, size=info.shape, endpoint=True).astype(dtype))
        else:
            arrays.append(rng.standard_normal(info.shape).astype(dtype))
    return arrays


#: Warning when the reference is the quantized model rather than the lowered program.
ARITHMETIC_WARNING = (
    "reference computed with the quantized model before lowering, not the lowered program: "
    "CMSIS-NN's integer arithmetic can differ from it by more than the {tol:g} LSB tolerance "
    "(up to 7 LSB measured on kws), so a mismatch may be arithmetic, not a firmware fault"
)


def alternate_reference_arrays(lowered: Any, report: ProgramReport) -> dict[str, np.ndarray]:
    """The reference ``.npz`` entries ``alternate_input_<i>``/``alternate_output_<i>``: the run stage's
    second input (:func:`alternate_inputs`) and the lowered program's outputs for it, in memory order,
    so that ``armgen run`` checks it without loading the program (10-30 s on this machine).

    Args:
        lowered: the lowered edge program (``cortex_m::`` ops registered, as the compile stage has it).
        report: its program report. Programs whose I/O is not all int8 get no entries (the run
            stage computes theirs).

    Raises:
        ModelError: the lowered program fails on the host.
    """
    if any(t.dtype != "int8" for t in (*report.inputs, *report.outputs)):
        return {}
    import torch

    from armgen.model.lowered_program import exact_integer_convolution

    alt = alternate_inputs(report.inputs)
    args = [with_dim_order(torch.from_numpy(np.ascontiguousarray(a)), t.dim_order)
            for a, t in zip(alt, report.inputs, strict=True)]
    try:
        with torch.no_grad(), exact_integer_convolution():
            out = lowered.module()(*args)
    except Exception as exc:  # noqa: BLE001 - any failure here is one line for the user
        raise ModelError(f"the lowered program fails on the second input: {type(exc).__name__}: {exc}") from None
    outs = out if isinstance(out, (tuple, list)) else (out,)
    arrays = {f"alternate_input_{t.index}": to_memory_order(a, t.dim_order)
              for a, t in zip(alt, report.inputs, strict=True)}
    for t, y in zip(report.outputs, outs, strict=False):
        value = np.asarray(y.detach().contiguous().numpy())
        if not np.issubdtype(value.dtype, np.integer):
            return {}  # a program that dequantizes its outputs itself: the run stage computes them
        arrays[f"alternate_output_{t.index}"] = to_memory_order(value.astype(np.int8), t.dim_order)
    return arrays


def _artifact(report_dir: Path, name: str) -> Path:
    """``report_dir/name``, or ``report_dir/<basename>`` when a project keeps its artifacts flat."""
    path = Path(report_dir) / name
    flat = Path(report_dir) / Path(name).name
    return flat if not path.exists() and flat.exists() else path


def _logical(arr: np.ndarray, info: TensorInfo) -> np.ndarray:
    """An array in memory (dim) order of ``info`` -> logical order; logical arrays unchanged."""
    ordered = len(info.dim_order) == len(info.shape)
    if ordered and arr.shape == stored_shape(info.shape, info.dim_order):
        return to_logical_order(arr, info.shape, info.dim_order)
    if arr.shape == tuple(info.shape):
        return arr
    if ordered and arr.size == int(np.prod(info.shape)):
        return to_logical_order(arr, info.shape, info.dim_order)
    raise ModelError(f"reference array of shape {arr.shape} does not fit {info.dtype}{list(info.shape)}")


def load_reference(report: ProgramReport, report_dir: Path) -> Reference | None:
    """Load the compile stage's reference (``report.files["reference"]``, an ``.npz``).

    The file holds ``input_<i>``/``output_<i>`` arrays of the quantized program on the sample's
    deterministic input, in the program's dtype and in memory (dim) order, as armgen.model.compile
    writes them (e.g. NHWC for a channels_last input); arrays in logical shape are taken as they
    are. They are returned in logical order. Paths in ``report.files`` are relative to
    ``report_dir``.

    Returns:
        The reference, or None when the report names none.

    Raises:
        ModelError: the file is named but missing or malformed.
    """
    name = report.files.get("reference")
    if not name:
        return None
    path = _artifact(report_dir, name)
    try:
        with np.load(path) as npz:
            inputs = tuple(_logical(np.asarray(npz[f"input_{t.index}"]), t) for t in report.inputs)
            outputs = tuple(_logical(np.asarray(npz[f"output_{t.index}"]), t) for t in report.outputs)
            kind = (
                str(np.asarray(npz["reference_kind"]).reshape(-1)[0]) if "reference_kind" in npz else "quantized_model"
            )
            alt_in = alt_out = None
            if all(f"alternate_input_{t.index}" in npz for t in report.inputs) and all(
                    f"alternate_output_{t.index}" in npz for t in report.outputs):
                alt_in = tuple(_logical(np.asarray(npz[f"alternate_input_{t.index}"]), t) for t in report.inputs)
                alt_out = tuple(_logical(np.asarray(npz[f"alternate_output_{t.index}"]), t) for t in report.outputs)
    except (OSError, KeyError, ValueError) as exc:
        raise ModelError(f"cannot read the reference {path}: {exc}") from None
    return Reference(inputs, outputs, str(path), kind, alt_in, alt_out)


def reference_program(report: ProgramReport, report_dir: Path) -> tuple[Path, str]:
    """The saved program :func:`reference_outputs` runs, and its kind.

    Returns:
        ``(path, "lowered_cortex_m")`` for the lowered edge program (``report.files
        ["lowered_program"]``, Cortex-M programs from this armgen), else ``(path,
        "quantized_model")`` for the quantized ``torch.export`` program (``"quantized_program"``).

    Raises:
        ModelError: the report names neither.
    """
    for role, kind in (("lowered_program", "lowered_cortex_m"), ("quantized_program", "quantized_model")):
        name = report.files.get(role)
        if name:
            return _artifact(report_dir, name), kind
    raise ModelError("the program report names no saved program to compute a reference with")


def _cache_key(path: Path, kind: str, inputs: Sequence[np.ndarray]) -> str:
    """SHA-256 over what decides a reference: armgen's version, the saved program's bytes and kind,
    and each input's dtype, shape and bytes."""
    from armgen import __version__

    digest = hashlib.sha256(f"{__version__}\0{kind}\0".encode())
    digest.update(hashlib.sha256(path.read_bytes()).digest())
    for arr in inputs:
        arr = np.ascontiguousarray(arr)
        digest.update(f"{arr.dtype.str}{arr.shape}".encode())
        digest.update(arr.tobytes())
    return digest.hexdigest()


def reference_outputs(
    report: ProgramReport, report_dir: Path, inputs: Sequence[np.ndarray], *, cache_dir: Path | None = None
) -> tuple[np.ndarray, ...]:
    """Run the program the compile stage saved (see :func:`reference_program`) on ``inputs``.

    With ``cache_dir``, outputs are kept there (``reference-<sha256>.npz``, keyed on armgen's
    version, the saved program's bytes and the inputs) and read back on the next call with the same
    key: loading the lowered program imports ExecuTorch's ``cortex_m`` ops, 10-17 s of a repeated
    ``armgen run`` on this machine, so a run that changed nothing skips it.

    The host cannot run the ``.pte`` (the pip runtime has no ``cortex_m::`` kernels), so the
    reference is the saved lowered edge program (``report.files["lowered_program"]``, run with
    the ``cortex_m::`` ops' host implementations: the firmware's integer arithmetic) or, when
    there is none (Ethos-U, older reports), the quantized ``torch.export`` program (``.pt2``).
    Integer inputs are handed over with strides in the tensor's dim order (e.g. channels_last).

    Args:
        inputs: program inputs (logical order, program dtype); quantized inputs are dequantized
            first when the saved program takes float.

    Returns:
        One array per program output (what the saved program returns).

    Raises:
        ModelError: no saved program, or it cannot be loaded or run.
    """
    path, kind = reference_program(report, report_dir)
    cached = None
    if cache_dir is not None and path.is_file():
        cached = Path(cache_dir) / f"reference-{_cache_key(path, kind, inputs)}.npz"
        if cached.is_file():
            with contextlib.suppress(Exception), np.load(cached) as kept:
                return tuple(kept[f"output_{i}"] for i in range(len(kept.files)))
    outputs = _run_saved_program(report, path, kind, inputs)
    if cached is not None:
        cached.parent.mkdir(parents=True, exist_ok=True)
        tmp = cached.with_suffix(".tmp.npz")
        np.savez(tmp, **{f"output_{i}": o for i, o in enumerate(outputs)})
        os.replace(tmp, cached)
    return outputs


def _run_saved_program(
    report: ProgramReport, path: Path, kind: str, inputs: Sequence[np.ndarray]
) -> tuple[np.ndarray, ...]:
    """:func:`reference_outputs` without its cache: load the saved program and run it."""
    return reference_outputs_many(report, path.parent, [inputs], saved=(path, kind))[0]


def reference_outputs_many(
    report: ProgramReport, report_dir: Path, runs: Sequence[Sequence[np.ndarray]], *,
    saved: tuple[Path, str] | None = None,
) -> list[tuple[np.ndarray, ...]]:
    """:func:`reference_outputs` (without its cache) of each of ``runs`` (a list of program inputs each), the
    saved program loaded once (a stream's hundreds of windows: :mod:`armgen.firmware.stream_run`).

    Raises:
        ModelError: no saved program, or it cannot be loaded or run.
    """
    path, kind = saved if saved is not None else reference_program(report, report_dir)
    what = "lowered program" if kind == "lowered_cortex_m" else "quantized program"
    results = []
    try:
        import torch

        if not path.is_file():
            raise ModelError(f"{what} not found: {path}")
        if kind == "lowered_cortex_m":
            from armgen.model.lowered_program import load_lowered_program

            program = load_lowered_program(path)
        else:
            program = _load_quantized_program(path)
        placeholders = [
            n for n in program.graph.nodes if n.op == "placeholder" and n.name in
            set(program.graph_signature.user_inputs)
        ]
        from armgen.model.lowered_program import exact_integer_convolution

        module = program.module()  # once: each call unlifts the program into a new GraphModule
        seen: dict[bytes, tuple[np.ndarray, ...]] = {}  # a stream's silent stretches repeat a window
        for inputs in runs:
            key = b"".join(np.ascontiguousarray(a).tobytes() for a in inputs)
            if key in seen:
                results.append(seen[key])
                continue
            args = []
            for i, (arr, info) in enumerate(zip(inputs, report.inputs, strict=True)):
                want_float = True
                if i < len(placeholders):
                    val = placeholders[i].meta.get("val")
                    if val is not None and not val.dtype.is_floating_point:
                        want_float = False
                x = dequantize(arr, info.scale, info.zero_point).astype(np.float32) if want_float else arr
                # same values, strides in the tensor's dim order (e.g. channels_last)
                args.append(with_dim_order(torch.from_numpy(np.ascontiguousarray(x)), info.dim_order))
            with torch.no_grad(), exact_integer_convolution():
                out = module(*args)
            if not isinstance(out, (tuple, list)):
                out = (out,)
            seen[key] = tuple(np.asarray(o.detach().numpy()) for o in out)
            results.append(seen[key])
    except ModelError:
        raise
    except Exception as exc:  # noqa: BLE001 - any failure here is one line for the user
        raise ModelError(f"cannot run the {what} {path}: {type(exc).__name__}: {exc}") from None
    return results


def _load_quantized_program(path: Path) -> Any:
    """``torch.export.load`` of the quantized ``.pt2``, registering the ops it needs first."""
    import torch

    with contextlib.suppress(Exception):  # quantized_decomposed ops must be registered before deserializing
        import torch.ao.quantization.fx._decomposed  # noqa: F401
    try:
        return torch.export.load(str(path))
    except Exception:  # noqa: BLE001 - register torchao's and cortex_m's ops, then retry
        from armgen.model.lowered_program import register_cortex_m_ops

        register_cortex_m_ops()
        return torch.export.load(str(path))


def float_reference(report: ProgramReport, report_dir: Path) -> tuple[np.ndarray, ...] | None:
    """The float model's outputs for the reference input (``report.files["float_reference"]``, an
    ``.npz`` of ``output_<i>`` float32 arrays in logical order, written by the compile stage).

    Returns:
        One array per output, or None when the report names no float reference (older programs).

    Raises:
        ModelError: the file is named but missing or malformed.
    """
    name = report.files.get("float_reference")
    if not name:
        return None
    path = _artifact(report_dir, name)
    try:
        with np.load(path) as npz:
            return tuple(np.asarray(npz[f"output_{t.index}"], dtype=np.float32) for t in report.outputs)
    except (OSError, KeyError, ValueError) as exc:
        raise ModelError(f"cannot read the float reference {path}: {exc}") from None


def float_model_outputs(
    report: ProgramReport, report_dir: Path, inputs: Sequence[np.ndarray]
) -> tuple[np.ndarray, ...]:
    """Run the float model the compile stage saved (``report.files["float_program"]``, a
    ``torch.export`` ``.pt2``) on ``inputs``.

    Args:
        inputs: one array per program input, logical order; integer (quantized) arrays are dequantized
            with the input's scale and zero point first.

    Returns:
        One float32 array per output.

    Raises:
        ModelError: no float program saved, or it cannot be loaded or run.
    """
    name = report.files.get("float_program")
    if not name:
        raise ModelError("the program report names no saved float model")
    path = _artifact(report_dir, name)
    try:
        import torch

        if not path.is_file():
            raise ModelError(f"float model not found: {path}")
        program = torch.export.load(str(path))
        args = []
        for arr, info in zip(inputs, report.inputs, strict=True):
            a = np.asarray(arr)
            x = a if np.issubdtype(a.dtype, np.floating) else dequantize(a, info.scale, info.zero_point)
            args.append(torch.from_numpy(np.ascontiguousarray(x, dtype=np.float32)))
        with torch.no_grad():
            out = program.module()(*args)
    except ModelError:
        raise
    except Exception as exc:  # noqa: BLE001 - any failure here is one line for the user
        raise ModelError(f"cannot run the float model {path}: {type(exc).__name__}: {exc}") from None
    outs = out if isinstance(out, (tuple, list)) else (out,)
    return tuple(np.asarray(o.detach().numpy(), dtype=np.float32) for o in outs)
