"""Explicit zero pads in front of convolutions folded into the convolution (emitted program only).

A TensorFlow 'SAME' layer with stride 2 pads one more row or column after the data than before it.
PyTorch convolutions pad symmetrically, so such a model (the samples' ``SameConv2d``; vww's and
ic's strided layers, kws's first layer) has a ``cortex_m::pad`` in front of the convolution: a copy
of the whole input into a planned buffer one row and column larger (vww's first layer: 27,648 B
read, 28,227 B written and held) before the convolution reads it.

CMSIS-NN needs no such copy: its convolutions take the top/left padding as ``padding.h`` /
``padding.w`` and read any row or column outside the input (top, bottom, left or right) as the
input zero point, the rest of the geometry coming from the output's dimensions. TFLite Micro hands it
'SAME' padding that way. So a pad that writes the input zero point, and pads only height and width,
can go: the convolution reads the pad's input directly with ``padding + pre_pad``, and its output,
shape and values, stays the same.

Upstream's host implementations and shape functions compute a convolution's output size from
symmetric padding, so, like :mod:`.strided_conv_width_to_channels`, this rewrite works on the tensor
specs of the program to emit, just before memory planning (:mod:`armgen.model.passes.before_planning`);
the host reference keeps the pad, and the firmware's bit-exact match with it checks the rewrite.
Convolutions whose CMSIS-NN wrapper can take a 1xN path (kernel height 1) are left alone.
"""

from __future__ import annotations

from typing import Any

import torch


def fold_pads_into_convolutions(
    graph_module: torch.fx.GraphModule, skip: set[torch.fx.Node] | None = None
) -> set[torch.fx.Node]:
    """Remove every ``cortex_m::pad.out`` that only feeds one 2-D convolution (regular or depthwise)
    and can be folded into it, in an out-variant graph with ``TensorSpec``s.

    Args:
        graph_module: the graph ``to_executorch`` is about to plan.
        skip: convolutions not to touch (those :mod:`.strided_conv_width_to_channels` regrouped).

    Returns:
        set: the convolution nodes that took their pad (one pad removed each).
    """
    convs = {torch.ops.cortex_m.quantized_conv2d.out: 6, torch.ops.cortex_m.quantized_depthwise_conv2d.out: 7}
    folded = set()
    for node in list(graph_module.graph.nodes):
        if node.op != "call_function" or node.target not in convs or (skip and node in skip):
            continue
        if _fold(node, convs[node.target]):
            folded.add(node)
    if folded:
        graph_module.recompile()
    return folded


def _fold(conv: torch.fx.Node, offset_index: int) -> bool:
    args: Any = conv.args
    pad = args[0]
    if not (isinstance(pad, torch.fx.Node) and pad.op == "call_function"
            and pad.target == torch.ops.cortex_m.pad.out and len(pad.users) == 1):
        return False
    pad_args: Any = pad.args
    x, pre, post, value = pad_args
    weight = args[1]
    w_spec = weight.meta.get("spec") if isinstance(weight, torch.fx.Node) else None
    if not isinstance(x, torch.fx.Node) or w_spec is None or len(w_spec.shape) != 4:
        return False
    kernel_h = int(w_spec.shape[1])  # OHWI (conv) and IHWO (depthwise) both keep H at dimension 1
    pre, post = [int(p) for p in pre], [int(p) for p in post]  # NHWC order: n, h, w, c
    if kernel_h < 2 or pre[0] or post[0] or pre[3] or post[3] or int(value) != -int(args[offset_index]):
        return False
    padding = [int(args[4][0]) + pre[1], int(args[4][1]) + pre[2]]
    conv.args = (x, *args[1:4], padding, *args[5:])
    out = pad.kwargs.get("out")
    graph = conv.graph
    graph.erase_node(pad)
    if isinstance(out, torch.fx.Node) and not out.users:
        graph.erase_node(out)
    return True
