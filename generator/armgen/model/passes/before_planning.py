"""armgen's rewrites of the program to emit, run on its tensor specs just before memory planning.

``to_executorch`` re-derives every shape from the ops' shape functions until its memory planning
pass, the last point where specs can change before the emitter. The rewrites here give tensors
shapes, or convolutions padding, that upstream's host implementations do not compute but CMSIS-NN
runs exactly (each module says why), so they run there, inside ExecuTorch's own
``MemoryPlanningPass``, and never on the lowered program the host reference comes from:

    strided_conv_width_to_channels   f neighbouring pixels read as one by a strided convolution
    fold_pad_into_conv               explicit zero pads folded into the next convolution
"""

from __future__ import annotations

from typing import Any

import torch


def rewrite_before_planning(graph_module: torch.fx.GraphModule) -> dict[str, int]:
    """Run the rewrites on an out-variant graph with ``TensorSpec``s.

    Returns:
        dict: how many convolutions each rewrite changed (``regrouped``, ``pads_folded``).
    """
    from armgen.model.passes.fold_pad_into_conv import fold_pads_into_convolutions
    from armgen.model.passes.strided_conv_width_to_channels import regroup_strided_conv_inputs

    regrouped = regroup_strided_conv_inputs(graph_module)  # needs its pad: first
    folded = fold_pads_into_convolutions(graph_module, skip=regrouped)
    return {"regrouped": len(regrouped), "pads_folded": folded}


def memory_planning_pass() -> Any:
    """ExecuTorch's default ``MemoryPlanningPass`` preceded by :func:`rewrite_before_planning`
    (for ``ExecutorchBackendConfig(memory_planning_pass=...)``)."""
    from executorch.exir.passes.memory_planning_pass import MemoryPlanningPass

    class ArmgenMemoryPlanningPass(MemoryPlanningPass):
        def run(self, graph_module: torch.fx.GraphModule, graph_signature: Any = None) -> Any:
            rewrite_before_planning(graph_module)
            return super().run(graph_module, graph_signature)

    return ArmgenMemoryPlanningPass()
