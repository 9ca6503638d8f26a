"""What the compile stage computes on the host from the programs it made: the reference arrays and the
int8-against-float quality figures (:mod:`armgen.model.compile` writes them; split from it to keep
modules short).

The quantized program runs on the host as the firmware computes it: Cortex-M, the lowered edge
program with the ``cortex_m::`` ops' host implementations on the firmware's int8 input
(``executorch/backends/cortex_m/ops/operators.py``, CMSIS-NN's integer arithmetic); Ethos-U, whose
delegate cannot run on the host, the quantized (fake-quant) model on the float input.
"""

from __future__ import annotations

import contextlib
import io
import warnings
from typing import Any

import numpy as np
import torch

from armgen.errors import ModelError
from armgen.model.inspect_program import IoQuantization
from armgen.model.lowered_program import exact_integer_convolution
from armgen.model.program_report import ProgramReport
from armgen.model.quality import OutputQuality, output_quality
from armgen.model.reference import alternate_reference_arrays
from armgen.model.tensors import to_memory_order, with_dim_order


def one_line(exc: BaseException) -> str:
    """The exception as one line: its type and the first line of its message (at most 300 characters)."""
    text = str(exc).strip()
    first = text.splitlines()[0] if text else ""
    return f"{type(exc).__name__}: {first}"[:300]


@contextlib.contextmanager
def quiet(capture: io.StringIO | None = None):
    """Silence upstream chatter (Vela's report, deprecation warnings) while lowering."""
    buf = capture if capture is not None else io.StringIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with contextlib.redirect_stdout(buf):
            yield buf


def quantize_np(x: np.ndarray, q: IoQuantization) -> np.ndarray:
    """``clamp(round(x / scale) + zero_point)`` as torch's quantize_per_tensor does (round half even)."""
    t = torch.ops.quantized_decomposed.quantize_per_tensor.default(
        torch.from_numpy(np.ascontiguousarray(x, dtype=np.float32)), q.scale, q.zero_point, q.qmin, q.qmax, torch.int8
    )
    return t.numpy()


def program_inputs(
    inputs: tuple[torch.Tensor, ...], report: ProgramReport, in_q: list[Any]
) -> tuple[list[np.ndarray], list[torch.Tensor]]:
    """The firmware's view of float inputs: (arrays in program dtype and memory order, the same as
    tensors with strides in their dim order for the lowered program)."""
    stored, tensors = [], []
    for i, (t, info) in enumerate(zip(inputs, report.inputs, strict=False)):
        x = t.detach().contiguous().numpy().astype(np.float32)
        q = in_q[i] if i < len(in_q) else None
        arr = quantize_np(x, q) if (q is not None and info.dtype == "int8") else x
        stored.append(to_memory_order(arr, info.dim_order))
        tensors.append(with_dim_order(torch.from_numpy(arr), info.dim_order))
    return stored, tensors


def run_program(
    inputs: tuple[torch.Tensor, ...], report: ProgramReport, in_q: list[Any], out_q: list[Any], lowered: Any,
    qmodel: Any, target: str,
) -> list[tuple[np.ndarray, np.ndarray]]:
    """The quantized program on float ``inputs``: per output (the program's value, logical order; its
    dequantized float value). Cortex-M: the lowered program on the firmware's int8 input (the
    firmware's arithmetic); Ethos-U: the quantized model on the float input.

    Raises:
        ModelError: the lowered program fails on the host.
    """
    if lowered is not None:
        _, prog_inputs = program_inputs(inputs, report, in_q)
        try:
            with torch.no_grad(), quiet(), exact_integer_convolution():
                ref_out = lowered.module()(*prog_inputs)
        except Exception as exc:  # noqa: BLE001
            raise ModelError(f"running the lowered {target} program on the host failed: {one_line(exc)}") from exc
    else:
        with torch.no_grad():
            ref_out = qmodel(*inputs)
    ref_outs = ref_out if isinstance(ref_out, (tuple, list)) else (ref_out,)
    result = []
    for i, (t, info) in enumerate(zip(ref_outs, report.outputs, strict=False)):
        y = t.detach().contiguous().numpy()
        q = out_q[i] if i < len(out_q) else None
        if q is not None and info.dtype == "int8":
            if np.issubdtype(y.dtype, np.integer):  # the lowered program returns int8
                arr = y.astype(np.int8)
                y = ((y.astype(np.float32) - np.float32(q.zero_point)) * np.float32(q.scale)).astype(np.float32)
            else:
                arr = quantize_np(y, q)
        else:
            arr = y
        result.append((arr, np.asarray(y, dtype=np.float32)))
    return result


def reference_arrays(
    ref_inputs: tuple[torch.Tensor, ...], report: ProgramReport, in_q: list[Any], out_q: list[Any],
    lowered: Any, qmodel: Any, target: str,
) -> dict[str, np.ndarray]:
    """The reference ``.npz``: the firmware's inputs (program dtype, memory order) and the expected
    outputs, from the lowered program on the host (Cortex-M) or the quantized model (delegates).

    Raises:
        ModelError: the lowered program fails on the host.
    """
    arrays: dict[str, np.ndarray] = {}
    stored, _ = program_inputs(ref_inputs, report, in_q)
    for i, (arr, t) in enumerate(zip(stored, ref_inputs, strict=False)):
        arrays[f"input_{i}"] = arr
        arrays[f"float_input_{i}"] = t.detach().contiguous().numpy().astype(np.float32)
    arrays["reference_kind"] = np.array("lowered_cortex_m" if lowered is not None else "quantized_model")
    if lowered is not None:
        arrays.update(alternate_reference_arrays(lowered, report))
    outs = run_program(ref_inputs, report, in_q, out_q, lowered, qmodel, target)
    for i, ((arr, y), info) in enumerate(zip(outs, report.outputs, strict=False)):
        arrays[f"output_{i}"] = to_memory_order(arr, info.dim_order)
        arrays[f"float_output_{i}"] = y
    return arrays


def as_arrays(out: Any) -> list[np.ndarray]:
    """A model's output (a tensor or a tuple/list of them) as float32 arrays."""
    outs = out if isinstance(out, (tuple, list)) else (out,)
    return [np.asarray(t.detach().contiguous().numpy(), dtype=np.float32) for t in outs]


def looks_like_classifier(report: ProgramReport) -> bool:
    """A user model counts as a classifier when it has one output and that output is 2-D (batch x classes)."""
    return len(report.outputs) == 1 and len(report.outputs[0].shape) == 2 and report.outputs[0].shape[-1] > 1


def quality(
    calib: list[tuple[torch.Tensor, ...]], float_outs: list[list[np.ndarray]], report: ProgramReport,
    in_q: list[Any], out_q: list[Any], lowered: Any, qmodel: Any, target: str, classifier: bool,
) -> list[OutputQuality]:
    """The quantized program against the float model on the calibration inputs (:mod:`armgen.model.quality`).

    Raises:
        ModelError: the lowered program fails on the host, or the outputs do not pair up.
    """
    cand = [[y for _, y in run_program(sample, report, in_q, out_q, lowered, qmodel, target)] for sample in calib]
    n_out = len(report.outputs)
    reference = [np.stack([f[i].reshape(report.outputs[i].shape) for f in float_outs]) for i in range(n_out)]
    candidate = [np.stack([c[i].reshape(report.outputs[i].shape) for c in cand]) for i in range(n_out)]
    return output_quality(reference, candidate, classifier=classifier)
