"""Remove the constant tensors no operator reads, with their data.

Upstream's Cortex-M lowering adds a new weight, bias, multiplier and shift constant for each operator it
rewrites (``backends/cortex_m/passes/aten_to_cortex_m_pass.py``) and leaves the old ones as placeholders
without users; the emitter writes every constant of the graph signature into the ``.pte``, and
``Method::init`` builds an ``EValue`` and a ``TensorImpl`` for each (method-allocator RAM). Upstream's
``remove_unused_parameters_pass`` runs before the backend passes, so it never sees these. This pass runs
after them (:data:`armgen.model.passes.order.AFTER_CORTEX_M_PASSES`, and on the Ethos-U path after
partitioning) and deletes each with ExecuTorch's own ``delete_constant_placeholder``
(``backends/transforms/utils.py``), which also drops its state-dict/constant entry and its input spec.
"""

from __future__ import annotations

from typing import Any

import torch


def dead_constants(exported_program: Any) -> list[torch.fx.Node]:
    """The placeholders of ``exported_program`` that are parameters, buffers or lifted tensor constants
    and that no node uses."""
    sig = exported_program.graph_signature
    constant_inputs = (set(sig.inputs_to_parameters) | set(sig.inputs_to_buffers)
                       | set(sig.inputs_to_lifted_tensor_constants))
    return [n for n in exported_program.graph_module.graph.nodes
            if n.op == "placeholder" and n.name in constant_inputs and not n.users]


def remove_dead_constants(exported_program: Any) -> tuple[int, int]:
    """Delete every :func:`dead_constants` node of ``exported_program``, in place.

    Returns:
        (tensors removed, bytes of tensor data removed).
    """
    from executorch.backends.transforms.utils import delete_constant_placeholder, get_param_tensor

    removed = nbytes = 0
    for node in dead_constants(exported_program):
        tensor = get_param_tensor(exported_program, node)
        nbytes += tensor.numel() * tensor.element_size() if tensor is not None else 0
        delete_constant_placeholder(exported_program, node)
        removed += 1
    if removed:
        exported_program.graph_module.recompile()
    return removed, nbytes


class RemoveDeadConstantsPass:
    """:func:`remove_dead_constants` as an armgen pass (``cls(exported_program).call(graph_module)``)."""

    def __init__(self, exported_program: Any) -> None:
        self.exported_program = exported_program
        self.removed: tuple[int, int] = (0, 0)

    def call(self, graph_module: torch.fx.GraphModule) -> torch.fx.GraphModule:
        """Remove the dead constants of the program whose graph is ``graph_module``."""
        assert graph_module is self.exported_program.graph_module
        self.removed = remove_dead_constants(self.exported_program)
        return graph_module
