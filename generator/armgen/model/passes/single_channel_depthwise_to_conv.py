"""One-input-channel "depthwise" convolutions as regular convolutions on cores without MVE.

ExecuTorch 1.5.1's ``AtenToCortexMPass`` (backends/cortex_m/passes/aten_to_cortex_m_pass.py) lowers
every convolution with ``in_channels == groups`` to ``cortex_m::quantized_depthwise_conv2d``, so a
first layer over a one-channel input (kws: ``Conv2d(1, 64, (10, 4))``) becomes a depthwise
convolution with depth multiplier 64. On the M55 CMSIS-NN has an MVE kernel for that; without MVE
(M4, M7, M33) ``arm_depthwise_conv_wrapper_s8`` takes the generic path, 1.73 M instructions for kws's
first layer on the M4 against about 1.02 M as ``arm_convolve_wrapper_s8`` (upstream's own TODO
#16347 says the constraint should be benchmarked). This pass runs after upstream's and turns such
a node back into ``cortex_m::quantized_conv2d``: the same arithmetic (one input channel: each output
channel is one filter over the one input), weights in OHWI instead of IHWO, and its own CMSIS-NN
scratch size.
"""

from __future__ import annotations

from typing import Any

import torch
from torch.export import ExportedProgram
from torch.export.graph_signature import InputKind
from torch.fx.passes.infra.pass_base import PassBase, PassResult


class SingleChannelDepthwiseToConvPass(PassBase):
    """Rewrite ``cortex_m::quantized_depthwise_conv2d`` over one input channel as
    ``cortex_m::quantized_conv2d`` when the CMSIS-NN backend is not MVE.

    Args:
        exported_program: the lowered edge program (its constants are replaced in place).
        backend: the ``cmsis_nn.Backend`` of the target (``CortexMTargetConfig.backend``).
    """

    def __init__(self, exported_program: ExportedProgram, backend: Any) -> None:
        super().__init__()
        self.exported_program = exported_program
        self.backend = backend

    def call(self, graph_module: torch.fx.GraphModule) -> PassResult:
        from executorch.backends.cortex_m.library import cmsis_nn
        from executorch.exir.dialects._ops import ops as exir_ops

        if self.backend == cmsis_nn.Backend.MVE:
            return PassResult(graph_module, False)
        depthwise = exir_ops.edge.cortex_m.quantized_depthwise_conv2d.default
        modified = False
        for node in list(graph_module.graph.nodes):
            if node.op == "call_function" and node.target == depthwise and _input_channels(node) == 1:
                self._rewrite(node)
                modified = True
        if modified:
            graph_module.graph.lint()
            graph_module.recompile()
        return PassResult(graph_module, modified)

    def _rewrite(self, node: torch.fx.Node) -> None:
        from executorch.backends.cortex_m.passes.scratch_buffer_sizes import required_cmsis_nn_buffer_sizes
        from executorch.backends.transforms.utils import (
            create_constant_placeholder,
            delete_constant_placeholder,
            get_param_tensor,
        )
        from executorch.exir.dialects._ops import ops as exir_ops

        # depthwise: x, w[1,H,W,O], bias, stride, padding, dilation, depth_multiplier, input_offset,
        # output_offset, multipliers, shifts, act_min, act_max, scratch
        x, weight, bias, stride, padding, dilation, _mult, *rest = node.args
        assert isinstance(weight, torch.fx.Node)
        ihwo = get_param_tensor(self.exported_program, weight)
        assert ihwo is not None and ihwo.shape[0] == 1
        with node.graph.inserting_after(weight):
            ohwi = create_constant_placeholder(
                self.exported_program, node.graph, node.name + "_weight_ohwi", InputKind.PARAMETER,
                ihwo.permute(3, 1, 2, 0).contiguous(),
            )
        node.target = exir_ops.edge.cortex_m.quantized_conv2d.default
        node.args = (x, ohwi, bias, stride, padding, dilation, *rest)
        if not weight.users:
            delete_constant_placeholder(self.exported_program, weight)
        # The convolution's scratch buffer (as AtenToCortexMPass._initialize_alloc_node_size sizes it).
        sizes = required_cmsis_nn_buffer_sizes(node, self.backend) or []
        for i, size in enumerate(reversed(sizes)):
            alloc = node.args[-(i + 1)]
            assert isinstance(alloc, torch.fx.Node)
            alloc.args = (((size,), torch.uint8),)
            alloc.meta["val"] = torch.empty((size,), dtype=torch.uint8, device="meta")


def _input_channels(node: torch.fx.Node) -> int | None:
    """Channels of the convolution's input (NCHW logical shape), from its fake tensor."""
    x = node.args[0]
    val = x.meta.get("val") if isinstance(x, torch.fx.Node) else None
    return int(val.shape[1]) if isinstance(val, torch.Tensor) and val.dim() == 4 else None
