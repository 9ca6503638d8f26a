"""The lowered Cortex-M edge program on disk: the host reference for the firmware's outputs.

The compile stage saves the edge program after the Cortex-M passes (``<name>.lowered.pt2``)
and the run stage loads it in a later process to compute the reference outputs of any input.
Run on the host, its ``cortex_m::`` ops use their host implementations
(``executorch/backends/cortex_m/ops/operators.py``), which follow CMSIS-NN's integer
arithmetic: the firmware's int8 outputs equal them bit for bit (measured on QEMU for the four
samples), unlike the quantized model before lowering (up to 7 LSB apart on kws).
"""

from __future__ import annotations

import contextlib
import importlib
import io
import warnings
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any


def save_lowered_program(ep: Any, path: Path | str) -> None:
    """Save a lowered edge program (Cortex-M passes applied) with ExecuTorch's exir serde.

    ``torch.export.save`` cannot serialize the ``executorch.exir.memory.alloc`` nodes of the
    CMSIS-NN scratch buffers; ``executorch.exir.serde.serialize.save`` can. Its zip entries carry
    the current time, so the archive is rewritten with fixed timestamps (deterministic output).
    Read it back with :func:`load_lowered_program`.
    """
    from executorch.exir.serde.serialize import save

    buf = io.BytesIO()
    save(ep, buf)
    buf.seek(0)
    with zipfile.ZipFile(buf) as src, zipfile.ZipFile(path, "w", compression=zipfile.ZIP_STORED) as dst:
        for item in src.infolist():
            info = zipfile.ZipInfo(item.filename, date_time=(1980, 1, 1, 0, 0, 0))
            dst.writestr(info, src.read(item.filename))


def strip_volatile_meta(ep: Any) -> None:
    """Drop node provenance that embeds object ids (``from_node``) or this machine's paths (``stack_trace``),
    so a saved program is reproducible.

    Loading a quantized ``.pt2`` needs the ``quantized_decomposed`` ops registered first
    (``import torchao.quantization.pt2e.quantize_pt2e``).
    """
    for node in ep.graph_module.graph.nodes:
        node.meta.pop("from_node", None)
        node.meta.pop("stack_trace", None)  # absolute paths of this machine (the model source, the venv)
    # A delegate's LoweredBackendModule keeps the partition it was lowered from (``original_module``, an
    # ExportedProgram serialized with the program): its nodes carry the same provenance.
    for module in ep.graph_module.modules():
        original = getattr(module, "original_module", None)
        if original is not None and original is not ep and hasattr(original, "graph_module"):
            strip_volatile_meta(original)


def register_cortex_m_ops() -> None:
    """Register the ``cortex_m::`` ops (with host implementations) and ``quantized_decomposed``.

    ``executorch.backends.cortex_m.passes`` must be imported before ``...ops.operators``: the
    operators module imports the passes, which look up ``edge.cortex_m`` ops, so importing the
    operators module first fails half-way (executorch 1.5.1).
    """
    # In this order (an import sorter must not reorder it, hence import_module).
    for module in (
        "executorch.backends.cortex_m.passes",
        "executorch.backends.cortex_m.ops.operators",
        "torchao.quantization.pt2e.quantize_pt2e",  # quantized_decomposed ops
    ):
        importlib.import_module(module)


def load_lowered_program(path: Path | str) -> Any:
    """Load a program saved by :func:`save_lowered_program` (in any process).

    Returns:
        The ``torch.export.ExportedProgram``; ``.module()(*inputs)`` runs it on the host with
        the ``cortex_m::`` ops' host implementations. Inputs: the program's dtype (int8 for
        quantized I/O), logical shape, strides in the input's dim order.

    Raises:
        Whatever ExecuTorch's deserializer raises for a missing or malformed file.
    """
    register_cortex_m_ops()
    from executorch.exir.serde.serialize import load

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return load(str(path))


class _ExactIntegerConvolution:
    """``torch.nn.functional`` with ``conv2d`` of integer tensors computed in float64.

    The host implementation of ``cortex_m::quantized_conv2d`` (executorch 1.5.1,
    ``backends/cortex_m/ops/operators.py``) convolves int32 tensors with ``F.conv2d``; PyTorch's CPU
    kernel for a dilated convolution (``slow_conv_dilated2d``) has no integer version, so a dilated
    int8 convolution (e.g. a 1-D keyword spotter's ``Conv1d(dilation=2)``) cannot run on the host.
    In float64 every int8 x int8 product and every sum of fewer than 2**37 of them is exact, so the
    result, rounded back to the integer type, is CMSIS-NN's accumulator bit for bit.

    On one thread: PyTorch's float64 CPU convolution (no oneDNN kernel) parallelises a depthwise one over its
    groups, and on a busy machine each call then waits about 1 s for the other thread (measured 2026-12-06, 2-core
    Xeon with another job: sww's 128-channel depthwise layers 1.02 s a call on two threads, 1 ms on one), which
    made the host reference of a 48-window stream take 70 s instead of about 1 s.
    """

    def __init__(self, functional: Any) -> None:
        self._functional = functional

    def __getattr__(self, name: str) -> Any:
        return getattr(self._functional, name)

    def conv2d(self, x: Any, weight: Any, bias: Any = None, *args: Any, **kwargs: Any) -> Any:
        if x.dtype.is_floating_point:
            return self._functional.conv2d(x, weight, bias, *args, **kwargs)
        import torch

        threads = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            out = self._functional.conv2d(x.double(), weight.double(), None if bias is None else bias.double(),
                                          *args, **kwargs)
        finally:
            torch.set_num_threads(threads)
        return out.round().to(x.dtype)


@contextlib.contextmanager
def exact_integer_convolution() -> Iterator[None]:
    """While active, the ``cortex_m::`` host kernels convolve integers exactly in float64 (see
    :class:`_ExactIntegerConvolution`); run every host reference of a lowered program inside it."""
    register_cortex_m_ops()
    operators = importlib.import_module("executorch.backends.cortex_m.ops.operators")
    original = getattr(operators, "F")  # noqa: B009 - the module's torch.nn.functional binding
    setattr(operators, "F", _ExactIntegerConvolution(original))  # noqa: B010
    try:
        yield
    finally:
        setattr(operators, "F", original)  # noqa: B010


__all__ = [
    "exact_integer_convolution", "load_lowered_program", "register_cortex_m_ops", "save_lowered_program",
    "strip_volatile_meta",
]
