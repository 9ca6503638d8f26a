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
