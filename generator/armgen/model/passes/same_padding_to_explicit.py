"""``padding='same'`` convolutions as explicitly padded ones, before quantization (Cortex-M path).

``nn.Conv2d(..., padding='same')`` exports as ``aten.conv2d.padding`` (a string argument), which
ExecuTorch 1.5.1's ``CortexMQuantizer`` does not annotate: the layer stayed a float portable
``aten::convolution`` (measured on the operator matrix's case, 18,432 MACs in float). This pass
rewrites it, and ``aten.conv1d.padding``, to the ``.default`` overload with the numbers PyTorch's
'same' uses (``torch/nn/modules/conv.py``, ``_reversed_padding_repeated_twice``: total
``dilation * (kernel - 1)`` per axis, the odd one on the right/bottom). Even totals become the
convolution's own symmetric padding; an odd total becomes an ``aten.pad`` in front (which the
quantizer and ExecuTorch's lowering take as ``cortex_m::pad``) and no convolution padding. 'same'
needs stride 1 (PyTorch refuses it otherwise), so there is nothing else to handle. ``padding='valid'``
is zero padding.
"""

from __future__ import annotations

import torch
from torch.fx import GraphModule
from torch.fx.passes.infra.pass_base import PassBase, PassResult

aten = torch.ops.aten

_DEFAULT = {aten.conv2d.padding: aten.conv2d.default, aten.conv1d.padding: aten.conv1d.default}


def _per_axis(value: list[int], spatial: int) -> list[int]:
    return value * spatial if len(value) == 1 else value


class SamePaddingToExplicitPass(PassBase):
    """Rewrite ``conv1d``/``conv2d`` with a string padding to the ``.default`` overload (see the module).

    Args:
        example_inputs: the model's example inputs, to export the rewritten graph again (fresh shapes and
            metadata for the quantizer, as :class:`~armgen.model.passes.conv1d_to_conv2d.Conv1dToConv2dPass`).
    """

    def __init__(self, example_inputs: tuple[torch.Tensor, ...]) -> None:
        super().__init__()
        self.example_inputs = example_inputs

    def call(self, graph_module: GraphModule) -> PassResult:
        graph = graph_module.graph
        modified = False
        for node in list(graph.nodes):
            if node.op != "call_function" or node.target not in _DEFAULT:
                continue
            x, weight, bias = node.args[0], node.args[1], node.args[2] if len(node.args) > 2 else None
            spatial = len(weight.meta["val"].shape) - 2
            stride = _per_axis(list(node.args[3]) if len(node.args) > 3 else [1], spatial)
            mode = node.args[4] if len(node.args) > 4 else "valid"
            dilation = _per_axis(list(node.args[5]) if len(node.args) > 5 else [1], spatial)
            groups = node.args[6] if len(node.args) > 6 else 1
            kernel = list(weight.meta["val"].shape[2:])
            totals = [0] * spatial if mode == "valid" else [d * (k - 1) for d, k in zip(dilation, kernel, strict=True)]
            padding = [t // 2 for t in totals]
            with graph.inserting_before(node):
                if any(t % 2 for t in totals):
                    # aten.pad lists the last axis first: (left, right, top, bottom)
                    pads: list[int] = []
                    for t in reversed(totals):
                        pads += [t // 2, t - t // 2]
                    x = graph.call_function(aten.pad.default, (x, pads, "constant", 0.0))
                    padding = [0] * spatial
                conv = graph.call_function(_DEFAULT[node.target], (x, weight, bias, stride, padding, dilation, groups))
            conv.meta = dict(node.meta)
            node.replace_all_uses_with(conv)
            graph.erase_node(node)
            modified = True
        if not modified:
            return PassResult(graph_module, False)
        graph.lint()
        graph_module.recompile()
        return PassResult(torch.export.export(graph_module, self.example_inputs).module(check_guards=False), True)
