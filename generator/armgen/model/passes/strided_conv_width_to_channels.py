"""Strided convolutions over few channels read their input as wider pixels (emitted program only).

CMSIS-NN's ``arm_convolve_s8`` builds its im2col buffer one input pixel at a time: one
``arm_memcpy_s8`` (or ``arm_memset_s8`` for padding) of ``input_ch`` bytes per kernel tap. With one
input channel that is a call per byte; kws's first layer (``Conv2d(1, 64, (10, 4), stride=2)`` on
49x10) makes 5,000 of them per inference, about 75,000 instructions on the M4 in ``memcpy`` and
``memset`` alone. TFLite Micro runs the same kernel the same way.

An NHWC tensor ``(H, W, C)`` is, byte for byte, the tensor ``(H, W/f, f*C)``: ``f`` neighbouring
pixels read as one pixel of ``f*C`` channels. When ``f`` divides both the convolution's horizontal
stride and its kernel width, the convolution over the regrouped tensor, with the OHWI weights
``(O, kh, kw, C)`` read as ``(O, kh, kw/f, f*C)`` (the same bytes), stride ``(sh, sw/f)`` and no
horizontal padding, computes every output from the same products in integer arithmetic, and
CMSIS-NN copies ``f*C`` bytes per call, ``f`` times fewer calls. The scratch buffer does not change
(``arm_convolve_s8_get_buffer_size`` depends on ``kh * kw * C`` only).

The horizontal padding has to be explicit for that, so the rewrite applies where the convolution's
input is a ``cortex_m::pad`` read by nothing else (a TF 'SAME' strided layer has one for its odd row
or column): the convolution's horizontal padding moves into that pad, widened to a multiple of
``f``. The pad kernel (``backends/cortex_m/ops/op_pad.cpp``) derives its work from its input and
pad widths only, so its output tensor can be declared as the regrouped tensor: no copy is added.

Neither the host implementations nor the shape functions of upstream's ``cortex_m`` ops know this
reading of memory (``to_executorch`` re-derives every shape from them), so the rewrite is done on
the tensor specs just before memory planning (:mod:`armgen.model.passes.before_planning`), in the
program that is emitted. The host reference comes from the lowered program before it; the firmware's bit-exact match
with that reference is the check of the rewrite.
"""

from __future__ import annotations

import math
from typing import Any

import torch

#: Largest regrouping factor tried (a larger one only pays while the im2col copies stay short).
MAX_FACTOR = 4


def regroup_strided_conv_inputs(
    graph_module: torch.fx.GraphModule, skip: set[torch.fx.Node] | None = None
) -> set[torch.fx.Node]:
    """Rewrite every eligible ``cortex_m::quantized_conv2d.out`` and its feeding ``cortex_m::pad.out``
    in an out-variant graph whose nodes carry ``TensorSpec``s (``meta["spec"]``).

    Eligible: horizontal dilation 1, kernel height > 1 (CMSIS-NN's 1xN and 1x1 paths size their
    scratch differently), not grouped, input from a pad read only by this convolution whose pad value
    is the convolution's input zero point, and ``f = gcd(stride_w, kernel_w)`` (at most
    :data:`MAX_FACTOR`) of at least 2.

    Args:
        graph_module: the graph ``to_executorch`` is about to plan.
        skip: convolutions not to touch (those an earlier rewrite changed,
            :data:`armgen.model.passes.order.BEFORE_PLANNING`).

    Returns:
        set: the convolution nodes rewritten.
    """
    conv_out = torch.ops.cortex_m.quantized_conv2d.out  # EdgeToBackendOpsPass ran: ATen-style targets
    rewritten = set()
    for node in graph_module.graph.nodes:
        if node.op == "call_function" and node.target == conv_out and not (skip and node in skip):
            plan = _plan(node)
            if plan is not None:
                _rewrite(node, *plan)
                rewritten.add(node)
    if rewritten:
        graph_module.recompile()
    return rewritten


def _plan(node: torch.fx.Node) -> tuple[torch.fx.Node, int] | None:
    """The feeding pad node and the factor ``f``, or None where the rewrite does not apply."""
    args: Any = node.args  # fx's Argument union: the cortex_m schemas fix what each one is
    pad, weight, _bias, stride, _padding, dilation, input_offset = args[:7]
    if not (isinstance(pad, torch.fx.Node) and pad.op == "call_function"
            and pad.target == torch.ops.cortex_m.pad.out and len(pad.users) == 1):
        return None
    if not isinstance(weight, torch.fx.Node) or len(weight.users) != 1:
        return None
    x_spec, w_spec = pad.meta.get("spec"), weight.meta.get("spec")
    if x_spec is None or w_spec is None or len(x_spec.shape) != 4 or len(w_spec.shape) != 4:
        return None
    _o, kh, kw, kc = (int(d) for d in w_spec.shape)  # OHWI
    if int(dilation[1]) != 1 or kh < 2 or kc != int(x_spec.shape[1]):
        return None
    pad_args: Any = pad.args
    if int(pad_args[3]) != -int(input_offset):  # the pad must write what the padding reads as 0
        return None
    common = math.gcd(int(stride[1]), kw)
    factor = max(f for f in range(1, MAX_FACTOR + 1) if common % f == 0)
    return (pad, factor) if factor >= 2 else None


def _rewrite(node: torch.fx.Node, pad: torch.fx.Node, factor: int) -> None:
    pad_args: Any = pad.args
    args: Any = node.args
    x, pre, post, value = pad_args
    pre, post = [int(p) for p in pre], [int(p) for p in post]  # NHWC order: n, h, w, c
    weight, bias, stride, padding, *rest = args[1:]
    n, channels, height, width = (int(d) for d in pad.meta["spec"].shape)
    pad_w = int(padding[1])
    width += 2 * pad_w
    extra = (-width) % factor  # columns past the last window, never read
    pre[2] += pad_w
    post[2] += pad_w + extra
    width += extra
    pad.args = (x, pre, post, value)
    _reshape_spec(pad.meta["spec"], (n, channels * factor, height, width // factor), channels_last=True)

    assert isinstance(weight, torch.fx.Node)
    o, kh, kw, c = (int(d) for d in weight.meta["spec"].shape)  # same bytes, read as fewer, wider taps
    _reshape_spec(weight.meta["spec"], (o, kh, kw // factor, c * factor), channels_last=False)
    node.args = (pad, weight, bias, [int(stride[0]), int(stride[1]) // factor], [int(padding[0]), 0],
                 *rest)


def _reshape_spec(spec: Any, shape: tuple[int, ...], channels_last: bool) -> None:
    """Give a ``TensorSpec`` (not yet planned) a new shape, NCHW-contiguous or channels_last."""
    from executorch.exir.tensor import dim_order_from_stride

    fmt = torch.channels_last if channels_last else torch.contiguous_format
    stride = torch.empty(shape, device="meta").to(memory_format=fmt).stride()
    spec.shape = torch.Size(shape)
    spec.stride = tuple(stride)
    spec.dim_order = dim_order_from_stride(spec.stride)
