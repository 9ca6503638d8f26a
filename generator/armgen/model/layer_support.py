"""Layers armgen's Cortex-M path cannot run, found in the model before the long export and lowering.

Two checks: :func:`check_layers` reads the module tree (before anything is exported), and
:func:`check_operators` reads the float model's ``torch.export`` graph, before quantization: an ATen
operator that no row of the operator matrix (:mod:`armgen.model.operator_matrix`) has is refused by name,
with the layer that made it, rather than lowered into a program nobody has checked in firmware
(``nn.Conv3d`` ended in an internal error of ExecuTorch's lowering, "required rank 4 tensor to use
channels_last format", after quantization).

ExecuTorch 1.5.1's Cortex-M quantizer annotates no recurrent layer, so a ``GRU``/``LSTM``/``RNN``
stays float; export unrolls it into ``aten::linear`` calls, and neither the cortex_m nor the portable
kernels of 1.5.1 implement ``aten::linear.out`` (portable has ``mm``/``addmm``), so the program cannot
be linked. Found by measuring: a GRU keyword spotter failed after 40-50 s of lowering with
``operator aten::linear.out has no kernel``. Checking the module tree first gives the same verdict
in milliseconds, naming the layer.
"""

from __future__ import annotations

from typing import Any

from torch import nn

from armgen.errors import ModelError
from armgen.model.operator_matrix import unknown_operators

#: Module types the Cortex-M path cannot run, with the reason (one line).
UNSUPPORTED_LAYERS: dict[type[nn.Module], str] = {
    nn.GRU: "recurrent layers stay float (ExecuTorch 1.5.1 quantizes none) and lower to aten::linear, "
            "which no kernel library of ExecuTorch 1.5.1 implements for Cortex-M",
    nn.LSTM: "recurrent layers stay float (ExecuTorch 1.5.1 quantizes none) and lower to aten::linear, "
             "which no kernel library of ExecuTorch 1.5.1 implements for Cortex-M",
    nn.RNN: "recurrent layers stay float (ExecuTorch 1.5.1 quantizes none) and lower to aten::linear, "
            "which no kernel library of ExecuTorch 1.5.1 implements for Cortex-M",
    nn.GRUCell: "recurrent cells stay float (ExecuTorch 1.5.1 quantizes none) and lower to aten::linear, "
                "which no kernel library of ExecuTorch 1.5.1 implements for Cortex-M",
    nn.LSTMCell: "recurrent cells stay float (ExecuTorch 1.5.1 quantizes none) and lower to aten::linear, "
                 "which no kernel library of ExecuTorch 1.5.1 implements for Cortex-M",
}


def check_layers(model: nn.Module, where: str) -> None:
    """Refuse a model with a layer of :data:`UNSUPPORTED_LAYERS` (the first one, by module path).

    Args:
        model: the float model. where: the model's file or name, for the message.

    Raises:
        ModelError: one line naming the layer (``rnn (GRU)``) and the reason, with a hint.
    """
    for path, module in model.named_modules():
        reason = UNSUPPORTED_LAYERS.get(type(module))
        if reason is not None:
            raise ModelError(
                f"{where}: layer '{path or '(the model)'}' ({type(module).__name__}) cannot run on the Cortex-M "
                f"path: {reason}",
                hint="replace it with layers CMSIS-NN runs in int8, e.g. a stack of Conv1d over time with "
                "pooling (tests/models/conv1d_kws.py)",
            )


def check_operators(exported_program: Any, where: str) -> None:
    """Refuse a float model whose ``torch.export`` graph has an ATen operator the operator matrix lacks.

    Args:
        exported_program: ``torch.export.export`` of the float model. where: the model's file or name.

    Raises:
        ModelError: one line naming the operators (``aten.conv3d``) and the layer of the first, with a
            hint pointing at the README's matrix.
    """
    unknown = unknown_operators(exported_program.graph)
    if not unknown:
        return
    op, layer = unknown[0]
    more = f" (and {', '.join(o for o, _ in unknown[1:])})" if len(unknown) > 1 else ""
    made_by = f" of layer {layer}" if layer else ""
    raise ModelError(
        f"{where}: operator {op}{made_by}{more} is not in armgen's Cortex-M operator matrix: no firmware "
        "run has checked it, so armgen does not compile it",
        hint="the README's 'Operator matrix' lists the layers the Cortex-M path runs; rewrite the layer with "
        "those (e.g. a Conv3d as Conv2d over folded axes)",
    )


def check_kernel_limits(lowered_program: Any, where: str) -> None:
    """Refuse a lowered Cortex-M program that calls a kernel in a configuration it computes wrong.

    ``cortex_m::quantized_transpose_conv2d`` (CMSIS-NN ``arm_transpose_conv_s8``, 4a8f5b5d, the
    workspace's pin; unchanged on its main of 2026-07): after each input row it writes the output rows
    that became final, ``stride_h`` of them once past the top padding, without checking them against the
    output height, so when ``input_h * stride_h - pad_h`` exceeds the output height (a kernel shorter than
    stride + padding: a 1x1 kernel with stride 2) it writes the surplus rows past the end of its output
    tensor, over whatever the memory plan put there. Found by ExecuTorch's own case
    ``conv_transpose2d_kernel_1x1`` (3 -> 6 channels, stride 2, 4x4 input): a QEMU watchpoint caught it
    writing 42 bytes into the next planned tensor, another case's output (187 LSB off); alone it only
    wrote over free memory, so its own output was right.

    Args:
        lowered_program: the lowered edge program (after the Cortex-M passes). where: the model's file or name.

    Raises:
        ModelError: one line naming the layer, its geometry and the bytes it would overwrite.
    """
    for node in lowered_program.graph.nodes:
        schema = getattr(node.target, "_schema", None)
        if node.op != "call_function" or schema is None or schema.name != "cortex_m::quantized_transpose_conv2d":
            continue
        x, out = node.args[0].meta["val"], node.meta["val"]
        stride_h, pad_h = int(node.args[3][0]), int(node.args[4][0])
        in_h, out_h, out_w, out_c = int(x.shape[2]), int(out.shape[2]), int(out.shape[3]), int(out.shape[1])
        surplus = max(0, in_h * stride_h - pad_h) - out_h
        if surplus > 0:
            stack = node.meta.get("nn_module_stack") or {}
            layer = f"layer '{list(stack.values())[-1][0]}' " if stack else "a "
            raise ModelError(
                f"{where}: {layer}(ConvTranspose2d, stride {stride_h}, padding {pad_h}, output height {out_h}) "
                f"cannot run on CMSIS-NN: its int8 transposed convolution writes {surplus} row(s) "
                f"({surplus * out_w * out_c} B) past its output when the kernel is shorter than stride + padding",
                hint="use a kernel at least stride + padding high (kernel 2 for stride 2), or nn.Upsample "
                "followed by a Conv2d",
            )
