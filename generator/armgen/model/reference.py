"""The reference: what the program should output, computed on the host (the model stage's runner).

The compile stage saves, beside the ``.pte``, the lowered edge program (Cortex-M programs: it runs
with the ``cortex_m::`` ops' host implementations, CMSIS-NN's integer arithmetic, bit-exact with the
firmware), the quantized ``torch.export`` program, and a reference ``.npz`` of the sample's input and
outputs. :func:`load_reference` reads that ``.npz``; :func:`reference_outputs` runs the saved program
on any other input (``armgen run --input``). Later stages compare firmware output with these.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from armgen.errors import ModelError
from armgen.model.program_report import ProgramReport, TensorInfo
from armgen.model.tensors import dequantize, stored_shape, to_logical_order, with_dim_order


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


#: Warning when the reference is the quantized model rather than the lowered program.
ARITHMETIC_WARNING = (
    "reference computed with the quantized model before lowering, not the lowered program: "
    "CMSIS-NN's integer arithmetic can differ from it by more than the {tol:g} LSB tolerance "
    "(up to 7 LSB measured on kws), so a mismatch may be arithmetic, not a firmware fault"
)


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
    except (OSError, KeyError, ValueError) as exc:
        raise ModelError(f"cannot read the reference {path}: {exc}") from None
    return Reference(inputs, outputs, str(path), kind)


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


def reference_outputs(
    report: ProgramReport, report_dir: Path, inputs: Sequence[np.ndarray]
) -> tuple[np.ndarray, ...]:
    """Run the program the compile stage saved (see :func:`reference_program`) on ``inputs``.

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
    what = "lowered program" if kind == "lowered_cortex_m" else "quantized program"
    try:
        import torch

        if not path.is_file():
            raise ModelError(f"{what} not found: {path}")
        if kind == "lowered_cortex_m":
            from armgen.model.lowered_program import load_lowered_program

            program = load_lowered_program(path)
        else:
            program = _load_quantized_program(path)
        args = []
        placeholders = [
            n for n in program.graph.nodes if n.op == "placeholder" and n.name in
            set(program.graph_signature.user_inputs)
        ]
        for i, (arr, info) in enumerate(zip(inputs, report.inputs, strict=True)):
            want_float = True
            if i < len(placeholders):
                val = placeholders[i].meta.get("val")
                if val is not None and not val.dtype.is_floating_point:
                    want_float = False
            x = dequantize(arr, info.scale, info.zero_point).astype(np.float32) if want_float else arr
            # same values, strides in the tensor's dim order (e.g. channels_last)
            args.append(with_dim_order(torch.from_numpy(np.ascontiguousarray(x)), info.dim_order))
        from armgen.model.lowered_program import exact_integer_convolution

        with torch.no_grad(), exact_integer_convolution():
            out = program.module()(*args)
    except ModelError:
        raise
    except Exception as exc:  # noqa: BLE001 - any failure here is one line for the user
        raise ModelError(f"cannot run the {what} {path}: {type(exc).__name__}: {exc}") from None
    if not isinstance(out, (tuple, list)):
        out = (out,)
    return tuple(np.asarray(o.detach().numpy()) for o in out)


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
