"""Zero-width pads removed from the lowered Cortex-M program.

ExecuTorch 1.5.1's Cortex-M lowering can leave a ``cortex_m::pad`` whose pre- and post-padding are
all zero (kws: one in front of the global average pool, ``pre_pad = post_pad = [0, 0, 0, 0]`` on the
1x64x25x5 feature map). ``arm_pad_s8`` then copies the whole tensor into a second planned buffer for
nothing. This pass runs after upstream's passes and hands the pad's input straight to its users.
"""

from __future__ import annotations

import torch
from torch.fx.passes.infra.pass_base import PassBase, PassResult


class RemoveNoOpPadPass(PassBase):
    """Remove ``cortex_m::pad`` nodes that pad nothing (every pre/post pad zero)."""

    def call(self, graph_module: torch.fx.GraphModule) -> PassResult:
        from executorch.exir.dialects._ops import ops as exir_ops

        pad = exir_ops.edge.cortex_m.pad.default
        modified = False
        for node in list(graph_module.graph.nodes):
            if node.op != "call_function" or node.target != pad:
                continue
            x, pre, post = node.args[0], node.args[1], node.args[2]
            if isinstance(x, torch.fx.Node) and not any(pre) and not any(post):
                node.replace_all_uses_with(x)
                graph_module.graph.erase_node(node)
                modified = True
        if modified:
            graph_module.graph.lint()
            graph_module.recompile()
        return PassResult(graph_module, modified)
