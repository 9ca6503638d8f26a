"""Layers armgen's Cortex-M path cannot run, found in the model before the long export and lowering.

ExecuTorch 1.5.1's Cortex-M quantizer annotates no recurrent layer, so a ``GRU``/``LSTM``/``RNN``
stays float; export unrolls it into ``aten::linear`` calls, and neither the cortex_m nor the portable
kernels of 1.5.1 implement ``aten::linear.out`` (portable has ``mm``/``addmm``), so the program cannot
be linked. Found by measuring: a GRU keyword spotter failed after 40-50 s of lowering with
``operator aten::linear.out has no kernel``. Checking the module tree first gives the same verdict
in milliseconds, naming the layer.
"""

from __future__ import annotations

from torch import nn

from armgen.errors import ModelError

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
