"""Conv1d regions as unit-height Conv2d, before quantization (Cortex-M path).

ExecuTorch 1.5.1's Cortex-M quantizer annotates ``aten.conv1d`` only in its experimental
explicit-layout pipeline, whose NHWC runtime operators (``quantized_conv2d_nhwc``) the 1.5 runtime
sources do not have; in the default pipeline a ``Conv1d`` stays a float portable ``aten::convolution``
(87.8 M instructions for a small 1-D keyword spotter on the M55). Upstream's
``ConvertConv1dToConv2dPass`` (backends/transforms) runs on the edge graph, after quantization, too
late for the quantizer. This pass does the same rewrite on the ATen graph before quantization:

- ``conv1d(x, w[O, I, K])`` -> ``conv2d(x4, w4[O, I, 1, K])`` with stride/padding/dilation ``(1, s)``,
  ``(0, p)``, ``(1, d)``, where ``x4`` is ``x`` as ``(N, C, 1, W)`` in channels_last (the layout the
  CMSIS-NN lowering takes);
- the ops that follow a converted convolution move to 4-D with it, so the quantizer sees its usual
  conv + batch norm + activation patterns and pooling: batch norm, elementwise activations,
  add/mul/sub of two converted tensors, ``avg/max_pool1d`` -> ``avg/max_pool2d``,
  ``adaptive_avg_pool1d`` -> ``adaptive_avg_pool2d``, ``mean`` over the time axis;
- a converted value leaves the region (back to contiguous, then ``squeeze(2)``) where a 3-D op
  consumes it.

The result is exported again (fresh shapes and metadata for the quantizer). The float outputs are
the same up to float rounding (checked by ``tests/model/test_passes.py``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch.fx import GraphModule, Node
from torch.fx.passes.infra.pass_base import PassBase, PassResult

aten = torch.ops.aten

#: Shape-preserving elementwise ops that move into a 4-D region unchanged.
_UNARY = frozenset({
    aten.relu.default, aten.relu_.default, aten.hardtanh.default, aten.hardtanh_.default, aten.clamp.default,
    aten.clamp_.default, aten.relu6.default, aten.sigmoid.default, aten.tanh.default, aten.hardsigmoid.default,
    aten.hardsigmoid_.default, aten.hardswish.default, aten.hardswish_.default, aten.leaky_relu.default,
    aten.gelu.default, aten.dropout.default,
})
#: Elementwise ops of two tensors of the region (broadcasting not handled: both must be converted).
_BINARY = frozenset({aten.add.Tensor, aten.sub.Tensor, aten.mul.Tensor})


def _pair(values: Any, default: int) -> list[int]:
    """A 1-D ``[v]`` argument as the 2-D ``[default, v]``."""
    v = list(values) if isinstance(values, (list, tuple)) else [values]
    return [default, int(v[0])] if v else []


class Conv1dToConv2dPass(PassBase):
    """Rewrite 1-D convolution regions of a pre-quantization ATen graph as unit-height 2-D ones.

    Args:
        example_inputs: the model's example inputs, to export the rewritten graph again.

    ``call`` returns ``PassResult(graph_module, modified)``; the graph module is a fresh export when
    anything changed.
    """

    def __init__(self, example_inputs: tuple[torch.Tensor, ...]) -> None:
        super().__init__()
        self.example_inputs = example_inputs

    def call(self, graph_module: GraphModule) -> PassResult:
        convs = [n for n in graph_module.graph.nodes if n.op == "call_function" and n.target == aten.conv1d.default]
        if not convs:
            return PassResult(graph_module, False)
        _Rewriter(graph_module).run()
        exported = torch.export.export(graph_module, self.example_inputs)
        return PassResult(exported.module(check_guards=False), True)


class _Rewriter:
    """One rewrite of one graph: ``four`` maps each converted 3-D node to its 4-D counterpart."""

    def __init__(self, gm: GraphModule) -> None:
        self.gm = gm
        self.graph = gm.graph
        self.four: dict[Node, Node] = {}
        self.entries: dict[Node, Node] = {}
        self.replaced_weights: set[str] = set()
        self.rules: dict[Any, Callable[[Node], Node | None]] = {
            aten.conv1d.default: self._conv,
            aten.batch_norm.default: self._same_op,
            aten.adaptive_avg_pool1d.default: self._adaptive_avg_pool,
            aten.avg_pool1d.default: self._avg_pool,
            aten.max_pool1d.default: self._max_pool,
            aten.mean.dim: self._mean,
        }

    def run(self) -> None:
        for node in list(self.graph.nodes):
            if node.op != "call_function":
                continue
            rule = self.rules.get(node.target)
            if rule is None and node.target in _UNARY:
                rule = self._same_op
            elif rule is None and node.target in _BINARY:
                rule = self._binary
            if rule is None:
                continue
            if node.target != aten.conv1d.default and not (node.args and node.args[0] in self.four):
                continue  # only ops that follow a converted convolution move to 4-D
            before = set(self.graph.nodes)
            new = rule(node)
            if new is not None and new is not node:
                self._leave(node, new)
            _inherit_layer(node, [n for n in self.graph.nodes if n not in before and n.op == "call_function"])
        self.graph.eliminate_dead_code()
        self._drop_unused_weights()
        self.graph.lint()
        self.gm.recompile()

    def _drop_unused_weights(self) -> None:
        """Delete the 3-D weights the 2-D ones replaced (an export would carry them into the program)."""
        used = {str(n.target) for n in self.graph.nodes if n.op == "get_attr"}
        for target in self.replaced_weights - used:
            owner, _, leaf = target.rpartition(".")
            delattr(self.gm.get_submodule(owner) if owner else self.gm, leaf)

    # ---- region boundaries -------------------------------------------------------------------
    def _in4(self, value: Any) -> Node:
        """The 4-D form of a converted value."""
        return self.four[value]

    def _enter(self, value: Node) -> Node:
        """``value`` (3-D) as ``(N, C, 1, W)`` channels_last, made once per value."""
        if value in self.four:
            return self.four[value]
        if value not in self.entries:
            with self.graph.inserting_after(value):
                unsq = self.graph.call_function(aten.unsqueeze.default, (value, 2))
            with self.graph.inserting_after(unsq):
                self.entries[value] = self.graph.call_function(
                    aten.clone.default, (unsq,), {"memory_format": torch.channels_last})
        return self.entries[value]

    def _leave(self, old: Node, new: Node) -> None:
        """Record ``new`` as ``old``'s 4-D form; ``old``'s users get ``squeeze(new, 2)`` (3-D again) when
        ``new`` is 4-D (a mean without keepdim already left the region)."""
        keeps_4d = new.target != aten.mean.dim or bool(new.args[2] if len(new.args) > 2 else new.kwargs.get("keepdim"))
        if not keeps_4d:
            old.replace_all_uses_with(new)
            return
        self.four[old] = new
        # Back to the contiguous layout first: ExecuTorch's squeeze/view kernels require input and
        # output of one dim order, and a 3-D tensor has no channels_last one.
        with self.graph.inserting_after(new):
            contiguous = self.graph.call_function(aten.clone.default, (new,),
                                                  {"memory_format": torch.contiguous_format})
        with self.graph.inserting_after(contiguous):
            back = self.graph.call_function(aten.squeeze.dim, (contiguous, 2))
        old.replace_all_uses_with(back)
        self.four[back] = new  # a later region op that reads the 3-D value reads the 4-D one

    # ---- rules: each returns the 4-D node (inserted before the old one), or None to keep it ----
    def _conv(self, node: Node) -> Node | None:
        args = list(node.args) + [None] * (7 - len(node.args))
        x, weight, bias, stride, padding, dilation, groups = args
        if not (isinstance(x, Node) and isinstance(weight, Node) and weight.op == "get_attr"):
            return None  # weights computed in the graph: left as they are
        if isinstance(padding, str):
            return None  # padding="same"/"valid" (aten.conv1d.padding): left as it is
        weight4 = self._weight_2d(weight)
        with self.graph.inserting_before(node):
            return self.graph.call_function(aten.conv2d.default, (
                self._enter(x), weight4, bias, _pair(stride or [1], 1), _pair(padding or [0], 0),
                _pair(dilation or [1], 1), groups or 1))

    def _weight_2d(self, weight: Node) -> Node:
        param = self.gm.get_parameter(str(weight.target)) if _is_param(self.gm, str(weight.target)) \
            else self.gm.get_buffer(str(weight.target))
        self.replaced_weights.add(str(weight.target))
        name = "_armgen_2d_" + str(weight.target).replace(".", "_")
        if not hasattr(self.gm, name):
            value = param.detach().unsqueeze(2).contiguous(memory_format=torch.channels_last)
            self.gm.register_parameter(name, torch.nn.Parameter(value, requires_grad=False))
        with self.graph.inserting_after(weight):
            return self.graph.get_attr(name)

    def _same_op(self, node: Node) -> Node:
        with self.graph.inserting_before(node):
            return self.graph.call_function(_target(node), (self._in4(node.args[0]), *node.args[1:]),
                                            dict(node.kwargs))

    def _binary(self, node: Node) -> Node | None:
        other = node.args[1]
        if not (isinstance(other, Node) and other in self.four):
            return None
        with self.graph.inserting_before(node):
            return self.graph.call_function(_target(node), (self._in4(node.args[0]), self._in4(other),
                                                          *node.args[2:]), dict(node.kwargs))

    def _adaptive_avg_pool(self, node: Node) -> Node:
        with self.graph.inserting_before(node):
            return self.graph.call_function(aten.adaptive_avg_pool2d.default,
                                            (self._in4(node.args[0]), _pair(node.args[1], 1)))

    def _avg_pool(self, node: Node) -> Node:
        a = list(node.args) + [None] * (6 - len(node.args))
        x, kernel, stride, padding, ceil_mode, count_include_pad = a
        with self.graph.inserting_before(node):
            return self.graph.call_function(aten.avg_pool2d.default, (
                self._in4(x), _pair(kernel, 1), _pair(stride or kernel, 1), _pair(padding or [0], 0),
                bool(ceil_mode), True if count_include_pad is None else bool(count_include_pad)))

    def _max_pool(self, node: Node) -> Node:
        a = list(node.args) + [None] * (6 - len(node.args))
        x, kernel, stride, padding, dilation, ceil_mode = a
        with self.graph.inserting_before(node):
            return self.graph.call_function(aten.max_pool2d.default, (
                self._in4(x), _pair(kernel, 1), _pair(stride or kernel, 1), _pair(padding or [0], 0),
                _pair(dilation or [1], 1), bool(ceil_mode)))

    def _mean(self, node: Node) -> Node | None:
        dims = node.args[1] if len(node.args) > 1 else None
        if not isinstance(dims, (list, tuple)) or [int(d) % 3 for d in dims] != [2]:
            return None  # only the mean over time (the last axis) is a pooling
        keepdim = bool(node.args[2] if len(node.args) > 2 else node.kwargs.get("keepdim", False))
        with self.graph.inserting_before(node):
            return self.graph.call_function(aten.mean.dim, (self._in4(node.args[0]), [2, 3] if not keepdim else [3],
                                                            keepdim))


#: What a node made in place of another keeps of its metadata: the module it came from (the placement
#: table's layer column, from ``nn_module_stack``), its source function and its stack trace.
_LAYER_META = ("nn_module_stack", "source_fn_stack", "stack_trace")


def _inherit_layer(old: Node, made: list[Node]) -> None:
    """Give each node made for ``old`` (its 4-D op, layout clones, squeeze) ``old``'s layer metadata,
    so the re-export and the placement table name the layer (without it, the table said "-")."""
    for node in made:
        for key in _LAYER_META:
            if key in old.meta and key not in node.meta:
                node.meta[key] = old.meta[key]


def _target(node: Node) -> Callable[..., Any]:
    """The op a ``call_function`` node calls."""
    assert callable(node.target)
    return node.target


def _is_param(gm: GraphModule, target: str) -> bool:
    try:
        gm.get_parameter(target)
    except AttributeError:
        return False
    return True
