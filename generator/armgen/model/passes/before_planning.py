"""armgen's rewrites of the program to emit, run on its tensor specs just before memory planning.

``to_executorch`` re-derives every shape from the ops' shape functions until its memory planning
pass, the last point where specs can change before the emitter. The rewrites here give tensors
shapes, or convolutions padding, that upstream's host implementations do not compute but CMSIS-NN
runs exactly (each module says why), so they run there, inside ExecuTorch's own
``MemoryPlanningPass``, and never on the lowered program the host reference comes from. Which
rewrites, and in what order: :data:`armgen.model.passes.order.BEFORE_PLANNING`.
"""

from __future__ import annotations

from typing import Any

import torch


def rewrite_before_planning(graph_module: torch.fx.GraphModule) -> dict[str, int]:
    """Run the rewrites of :data:`~armgen.model.passes.order.BEFORE_PLANNING`, in order, on an
    out-variant graph with ``TensorSpec``s; each leaves alone the convolutions earlier ones changed.

    Returns:
        dict: how many convolutions each rewrite changed, by function name.
    """
    from armgen.model.passes.order import BEFORE_PLANNING

    changed: set[torch.fx.Node] = set()
    counts = {}
    for rewrite in BEFORE_PLANNING:
        done = rewrite(graph_module, changed)
        counts[rewrite.__name__] = len(done)
        changed |= done
    return counts


def memory_planning_pass() -> Any:
    """ExecuTorch's default ``MemoryPlanningPass`` preceded by :func:`rewrite_before_planning`
    (for ``ExecutorchBackendConfig(memory_planning_pass=...)``)."""
    from executorch.exir.passes.memory_planning_pass import MemoryPlanningPass

    class ArmgenMemoryPlanningPass(MemoryPlanningPass):
        def run(self, graph_module: torch.fx.GraphModule, graph_signature: Any = None) -> Any:
            rewrite_before_planning(graph_module)
            return super().run(graph_module, graph_signature)

    return ArmgenMemoryPlanningPass()
