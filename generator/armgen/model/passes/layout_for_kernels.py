"""Every tensor laid out in memory as the kernel that reads or writes it indexes it.

The Cortex-M path quantizes a channels-last model (``CortexMQuantizer`` annotates a convolution only
on channels-last tensors, ``pattern_checkers.CortexMConv2DCheck``), so the program's 4-D tensors carry
the dim order NHWC (``[0, 2, 3, 1]``) from the model input on. The host runs each op on the logical
tensor whatever its layout, but many firmware kernels index their tensors as if they were contiguous
and ignore the dim order: ExecuTorch's ``cortex_m::transpose`` (``op_transpose.cpp`` hands the logical
sizes to ``arm_transpose_s8``), ``cortex_m::maximum``/``minimum`` when they broadcast,
``cortex_m::quantized_batch_matmul``, portable ``cat`` (``op_cat.cpp`` copies contiguous slabs along
``dim``), portable ``max_pool2d_with_indices`` (refuses a channels-last input with
``InvalidArgument``). Measured before this pass (qemu_mps3_an547, ExecuTorch main cff6f4dd): a
permute of a 1x3x4x5 input 208 LSB off, nearest upsample + channel concat 197 LSB off, while the host
reference was right.

This pass runs last on the lowered Cortex-M program and, per kernel call, by what the kernel reads:

* **channels-last kernels** (CMSIS-NN convolutions and pools, :data:`CHANNELS_LAST`): a 4-D activation
  input not laid out NHWC is copied to NHWC first;
* **element-wise kernels** (:data:`ELEMENTWISE`): left alone while every tensor argument has the
  output's shape (or one element) and its layout, except that a portable kernel's tensors of the
  output's rank must also carry its dim order (``tensors_have_same_dim_order``: a 1x1x1x1 constant
  beside NHWC tensors is copied to NHWC); otherwise, like a layout-blind kernel;
* **kernels that honour the dim order** (:data:`DIM_ORDER_AWARE`): left alone;
* **every other kernel** (layout-blind): each input not laid out contiguously is copied to a contiguous
  tensor first, and an output the graph wants in another layout is written contiguously and copied
  back, so every other node sees the layout it was traced with.

A copy is ExecuTorch's own ``dim_order_ops::_to_dim_order_copy`` (a portable kernel). Size-1
dimensions do not count: a 1x1x49x10 tensor is the same bytes in either dim order and gets no copy,
so programs whose layouts already agree (the four MLPerf Tiny samples) are not changed.
"""

from __future__ import annotations

from typing import Any

import torch
from torch.fx.passes.infra.pass_base import PassBase, PassResult

#: NCHW in NHWC memory order (ExecuTorch's channels-last dim order of a 4-D tensor).
CHANNELS_LAST_ORDER = (0, 2, 3, 1)

#: Kernels that index NHWC (ExecuTorch main ``backends/cortex_m/ops/op_quantized_*conv2d.cpp`` and
#: ``cortex_m_ops_common.h`` ``validate_cmsis_nn_pool2d``: "tensors must use channels_last dimension order").
CHANNELS_LAST = frozenset({
    "cortex_m::quantized_conv2d", "cortex_m::quantized_depthwise_conv2d", "cortex_m::quantized_transpose_conv2d",
    "cortex_m::quantized_avg_pool2d", "cortex_m::quantized_max_pool2d",
})

#: Kernels that read and write element i of every tensor at the same offset: right in any layout when
#: all their tensors share one (a one-element tensor broadcasts in any layout).
ELEMENTWISE = frozenset({
    "cortex_m::quantize_per_tensor", "cortex_m::dequantize_per_tensor", "cortex_m::quantized_add",
    "cortex_m::quantized_mul", "cortex_m::quantized_div", "cortex_m::quantized_activation",
    "cortex_m::maximum", "cortex_m::minimum",
    "aten::add", "aten::sub", "aten::mul", "aten::div", "aten::relu", "aten::clamp", "aten::hardtanh",
    "aten::sigmoid", "aten::tanh", "aten::hardswish", "aten::hardsigmoid", "aten::leaky_relu", "aten::gelu",
    "aten::neg", "aten::abs", "aten::exp", "aten::log", "aten::sqrt", "aten::rsqrt", "aten::maximum",
    "aten::minimum", "aten::pow", "aten::where", "aten::_to_copy",
    "quantized_decomposed::quantize_per_tensor", "quantized_decomposed::dequantize_per_tensor",
})

#: Kernels that read the dim order and index by it: ExecuTorch main ``op_pad.cpp`` (NHWC or contiguous),
#: ``op_softmax.cpp`` (its quantizer pattern admits NHWC only over the channel axis), portable
#: ``upsample_*2d`` (``upsample_util.cpp``: default or channels-last), the dim-order copies themselves.
#: A channel broadcast of ``quantized_add``/``quantized_mul`` needs NHWC (``op_quantized_add.cpp``):
#: see :func:`_kind`.
DIM_ORDER_AWARE = frozenset({
    "cortex_m::pad", "cortex_m::softmax", "aten::upsample_nearest2d", "aten::upsample_bilinear2d",
    "dim_order_ops::_to_dim_order_copy", "dim_order_ops::_clone_dim_order", "aten::alias_copy",
})


def _dim_order(t: torch.Tensor) -> tuple[int, ...]:
    from executorch.exir.tensor import dim_order_from_stride

    return tuple(int(d) for d in dim_order_from_stride(t.stride())) if t.dim() else ()


def physical_order(t: torch.Tensor) -> tuple[int, ...]:
    """The dimensions of ``t`` longer than one, outermost first in memory: two tensors of one shape
    hold the same bytes exactly when these agree."""
    return tuple(d for d in _dim_order(t) if t.shape[d] != 1)


def _is_contiguous(t: torch.Tensor) -> bool:
    order = physical_order(t)
    return list(order) == sorted(order)


def _is_channels_last(t: torch.Tensor) -> bool:
    want = tuple(d for d in CHANNELS_LAST_ORDER if t.shape[d] != 1)
    return t.dim() != 4 or physical_order(t) == want


def _op_name(node: torch.fx.Node) -> str | None:
    schema = getattr(node.target, "_schema", None)
    return None if schema is None else str(schema.name)


def _tensor(node: Any) -> torch.Tensor | None:
    val = node.meta.get("val") if isinstance(node, torch.fx.Node) else None
    return val if isinstance(val, torch.Tensor) else None


def _tensor_inputs(node: torch.fx.Node) -> list[torch.fx.Node]:
    """The arguments of ``node`` that are single tensors (lists, as ``cat``'s, flattened)."""
    found: list[torch.fx.Node] = []
    for arg in list(node.args) + list(node.kwargs.values()):
        for a in arg if isinstance(arg, (list, tuple)) else (arg,):
            if _tensor(a) is not None and a not in found:
                found.append(a)
    return found


#: Portable reshapes: ExecuTorch replaces a static ``view_copy`` by a view of the same bytes when it plans
#: memory (``executorch_prim::et_view``, no kernel, no dim-order check), so the bytes' layout is what
#: counts: kws's 1x64x1x1 NHWC pool output into its classifier needs no copy. A view_copy left as a kernel
#: (one that feeds the program's output, see :func:`_kind`) does check the labels (``op_view_copy.cpp``).
RESHAPES = frozenset({"aten::view_copy", "aten::squeeze_copy", "aten::unsqueeze_copy", "aten::_unsafe_view"})

#: Tensor arguments that are data, for kernels whose other tensor arguments are tables laid out for
#: the kernel (``quantized_activation``'s 256-entry lookup table): how many come first.
DATA_ARGS = {"cortex_m::quantized_activation": 1}


def _data_inputs(name: str, node: torch.fx.Node) -> list[torch.fx.Node]:
    found = _tensor_inputs(node)
    return found[:DATA_ARGS[name]] if name in DATA_ARGS else found


def _kind(name: str, node: torch.fx.Node) -> str:
    """``channels_last``, ``elementwise``, ``aware`` or ``contiguous``: what the kernel of ``node`` needs."""
    if name in CHANNELS_LAST:
        return "channels_last"
    if name in DIM_ORDER_AWARE:
        return "aware"
    out = _tensor(node)
    if name in ELEMENTWISE and out is not None:
        ins = [t for t in (_tensor(a) for a in _data_inputs(name, node)) if t is not None]
        if all(tuple(t.shape) == tuple(out.shape) or t.numel() == 1 for t in ins):
            order = physical_order(out)
            if all(physical_order(t) == order for t in ins if t.numel() != 1):
                # (a tensor of lower rank, a broadcast scalar, counts as contiguous)
                relabel = [t for t in ins if (_dim_order(t) != _dim_order(out) if t.dim() == out.dim()
                                              else _dim_order(out) != tuple(range(out.dim())))]
                if name.startswith("aten::") and relabel:
                    # A portable kernel wants one dim order label on all of them (tensors_have_same_dim_order),
                    # and a one-element constant cannot be labelled NHWC (the emitter reads the label from
                    # strides, which tie): all of them contiguous then.
                    return "contiguous_by_label"
                return "elementwise"
        elif name in ("cortex_m::quantized_add", "cortex_m::quantized_mul") and out.dim() == 4 and all(
            _is_channels_last(t) for t in ins + [out]
        ):
            return "aware"  # a channel broadcast on NHWC tensors, which the CMSIS-NN kernel does itself
    # A portable kernel checks dim-order labels too (op_convolution.cpp: tensors_have_same_dim_order(in, out)),
    # except a reshape, which ExecuTorch's emitter mostly turns into a view of the same bytes (no kernel).
    if name == "aten::view_copy" and any(u.op == "output" for u in node.users):
        # ExecuTorch keeps a view_copy that feeds the program's output as a kernel
        # (exir/passes/replace_view_copy_with_view_pass.py), and op_view_copy.cpp compares the labels
        # (a mean over H and W without keepdim stopped on InvalidArgument)
        return "contiguous_by_label"
    return "contiguous_by_label" if name.startswith("aten::") and name not in RESHAPES else "contiguous"


def _laid_out(val: torch.Tensor, order: tuple[int, ...]) -> torch.Tensor:
    """``val`` (a fake tensor) with the strides of dim order ``order``, so that the emitter, which reads
    the dim order back from the strides (``exir.tensor.dim_order_from_stride``), writes ``order``. (No copy
    is ever made of a one-element tensor: ``to_executorch`` re-derives its label from tied strides anyway.)"""
    if val.dim() == 4 and order in (CHANNELS_LAST_ORDER, (0, 1, 2, 3)):  # PyTorch's own strides for size-1 axes
        return val.clone(memory_format=torch.channels_last if order == CHANNELS_LAST_ORDER else torch.contiguous_format)
    inverse = [order.index(d) for d in range(len(order))]
    return val.permute(order).contiguous().permute(inverse)


def _copy(graph: torch.fx.Graph, x: torch.fx.Node, order: tuple[int, ...], before: torch.fx.Node) -> torch.fx.Node:
    """A ``_to_dim_order_copy`` of ``x`` into ``order``, inserted before ``before``."""
    from executorch.exir.dialects._ops import ops as exir_ops

    val = _tensor(x)
    assert val is not None
    with graph.inserting_before(before):
        copy = graph.call_function(
            exir_ops.edge.dim_order_ops._to_dim_order_copy.default, (x,), {"dtype": val.dtype, "dim_order": list(order)}
        )
    copy.meta = {k: v for k, v in x.meta.items() if k not in ("val", "tensor_meta")}
    copy.meta["val"] = _laid_out(val, order)
    return copy


class LayoutForKernelsPass(PassBase):
    """Insert dim-order copies where a kernel would index a tensor in another layout than it has."""

    @staticmethod
    def _wanted(kind: str, name: str, val: torch.Tensor, out: torch.Tensor | None) -> tuple[int, ...] | None:
        """The dim order an input ``val`` must be copied to first, None when it can be read as it is."""
        if kind == "channels_last":
            return CHANNELS_LAST_ORDER if val.dim() == 4 and not _is_channels_last(val) else None
        contiguous = tuple(range(val.dim()))
        if kind == "contiguous":
            return contiguous if val.dim() >= 2 and not _is_contiguous(val) else None
        if kind == "contiguous_by_label":
            return contiguous if val.numel() != 1 and _dim_order(val) != contiguous else None
        return None  # element-wise: the bytes already line up

    def call(self, graph_module: torch.fx.GraphModule) -> PassResult:
        graph = graph_module.graph
        modified = False
        for node in list(graph.nodes):
            name = _op_name(node) if node.op == "call_function" else None
            if name is None or name.startswith("dim_order_ops::"):
                continue
            kind = _kind(name, node)
            if kind == "aware":
                continue
            # A CMSIS-NN convolution's other tensors (weights in OHWI, bias, multipliers) are laid out for it.
            args = _tensor_inputs(node)[:1] if kind == "channels_last" else _data_inputs(name, node)
            for arg in args:
                val = _tensor(arg)
                assert val is not None
                want = self._wanted(kind, name, val, _tensor(node))
                if want is not None:
                    node.replace_input_with(arg, _copy(graph, arg, want, node))
                    modified = True
            out = _tensor(node)
            if out is not None and kind != "channels_last" and self._wanted(kind, name, out, out) is not None:
                users = list(node.users)
                wanted = _dim_order(out)
                node.meta["val"] = _laid_out(out, tuple(range(out.dim())))
                modified = True
                if wanted != CHANNELS_LAST_ORDER:
                    # Another order (a permute of an NHWC tensor gives [0, 3, 2, 1]) has no memory format for
                    # ExecuTorch's dim-order copy: the output stays contiguous, and the nodes after it are
                    # read by this pass as they come.
                    continue
                back = _copy(graph, node, wanted, node.next)
                back.meta["val"] = out
                for user in users:
                    user.replace_input_with(node, back)
        if modified:
            graph.lint()
            graph_module.recompile()
        return PassResult(graph_module, modified)
