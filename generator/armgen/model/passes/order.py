"""The order of the graph passes the compile stage runs, every stage in one place.

:mod:`armgen.model.compile` runs each list below at its stage, in the list's order; to add a pass,
put it in the list of the graph it rewrites and say there why it goes where it goes. The whole
flow, with ExecuTorch's fixed steps between the lists:

    Cortex-M (CMSIS-NN kernels)
      torch.export of the float model
      BEFORE_QUANTIZATION         the float ATen graph
      PT2E with CortexMQuantizer, torch.export of the int8 model
      to_edge_transform_and_lower(transform_passes=EDGE_TRANSFORMS, cortex_m_edge_compile_config())
      QuantizeInputs / QuantizeOutputs (the program takes and returns int8)
      CortexMPassManager          upstream's own list: cortex_m:: ops, CMSIS-NN scratch per CPU
      AFTER_CORTEX_M_PASSES       the lowered edge program (the host reference runs this one)
      to_executorch: BEFORE_PLANNING, then ExecuTorch's MemoryPlanningPass, then the emitter
      AFTER_EMIT                  the ``.pte`` bytes

    Ethos-U (Vela)
      torch.export of the float model
      BEFORE_QUANTIZATION_ETHOS_U the float ATen graph
      PT2E with EthosUQuantizer, torch.export of the int8 model
      to_edge_transform_and_lower(partitioner=[EthosUPartitioner]): Vela compiles the delegate
      QuantizeInputs / QuantizeOutputs
      AFTER_PARTITION_ETHOS_U     the CPU part of the edge program, then RemoveDeadConstantsPass
      to_executorch with ExecuTorch's default memory planning

The boundary passes (``QuantizeInputs``/``QuantizeOutputs``) come before anything that rewrites
quantize/dequantize into ``cortex_m::`` ops (``ReplaceQuantNodesPass``, also inside
``CortexMPassManager``): they look for ``quantized_decomposed`` nodes at the program's edges.
Pass classes are built with the constructor arguments they name (:func:`build`), as
``CortexMPassManager.transform`` builds its own.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import torch
from executorch.backends.cortex_m.passes.replace_quant_nodes_pass import ReplaceQuantNodesPass
from executorch.backends.transforms.remove_clone_ops import RemoveCloneOpsTransform

from armgen.model import compact_program as compaction
from armgen.model.passes.conv1d_to_conv2d import Conv1dToConv2dPass
from armgen.model.passes.fold_pad_into_conv import fold_pads_into_convolutions
from armgen.model.passes.layout_for_kernels import LayoutForKernelsPass
from armgen.model.passes.remove_dead_constants import RemoveDeadConstantsPass
from armgen.model.passes.remove_noop_pad import RemoveNoOpPadPass
from armgen.model.passes.same_padding_to_explicit import SamePaddingToExplicitPass
from armgen.model.passes.single_channel_depthwise_to_conv import SingleChannelDepthwiseToConvPass
from armgen.model.passes.strided_conv_width_to_channels import regroup_strided_conv_inputs

#: A rewrite of the graph to emit: ``(graph_module, skip)`` -> the convolution nodes it changed.
#: ``skip`` holds what earlier rewrites in the list changed; a rewrite leaves those alone.
BeforePlanningRewrite = Callable[[torch.fx.GraphModule, set[torch.fx.Node]], set[torch.fx.Node]]

# ---- Cortex-M ------------------------------------------------------------------------------------

#: The float ATen graph from ``torch.export``, before PT2E (``cls(example_inputs).call(graph)``).
BEFORE_QUANTIZATION: tuple[type, ...] = (
    # First: the quantizer annotates no string-padded convolution, and the next pass matches conv1d.default.
    SamePaddingToExplicitPass,
    # Before quantization: in its default pipeline CortexMQuantizer leaves aten.conv1d float, and
    # upstream's ConvertConv1dToConv2dPass runs on the edge graph, after the quantizer.
    Conv1dToConv2dPass,
)

#: ``transform_passes`` of ``to_edge_transform_and_lower`` (the edge graph before partitioning).
EDGE_TRANSFORMS: tuple[type, ...] = (
    # Clones that keep memory layout and dim order are copies for nothing (armgen's choice; upstream's
    # aot_arm_compiler does not run it).
    RemoveCloneOpsTransform,
)

#: The edge program ``CortexMPassManager`` returned; each pass rewrites its graph in place.
AFTER_CORTEX_M_PASSES: tuple[type, ...] = (
    # Matches cortex_m::quantized_depthwise_conv2d, which upstream's AtenToCortexMPass makes: after it.
    SingleChannelDepthwiseToConvPass,
    # Drops the cortex_m::pad nodes upstream's lowering leaves with all-zero padding: after it.
    # Independent of the pass above (it touches no convolution).
    RemoveNoOpPadPass,
    # It reads the kernels the passes above leave (a pad removed is one layout-aware kernel fewer).
    LayoutForKernelsPass,
    # Last: the constants the rewrites above (and upstream's) replaced are left without users.
    RemoveDeadConstantsPass,
)

#: The out-variant graph ``to_executorch`` is about to plan, on its tensor specs, inside ExecuTorch's
#: ``MemoryPlanningPass`` (:mod:`armgen.model.passes.before_planning` says why there).
BEFORE_PLANNING: tuple[BeforePlanningRewrite, ...] = (
    # First: it moves a convolution's horizontal padding into the cortex_m::pad in front of it, so
    # it needs that pad, which the next rewrite removes.
    regroup_strided_conv_inputs,
    # Leaves the convolutions regrouped above (and their pads) alone.
    fold_pads_into_convolutions,
)


def _compact_constants(pte: bytes) -> bytes:
    """One EValue per distinct constant argument: less method-allocator RAM
    (:func:`armgen.model.compact_program.compact_program`, looked up when called)."""
    return compaction.compact_program(pte)[0]


#: The emitted ``.pte`` bytes (``pte = step(pte)``).
AFTER_EMIT: tuple[Callable[[bytes], bytes], ...] = (
    # Last: it renumbers the values the emitter wrote.
    _compact_constants,
)

# ---- Ethos-U -------------------------------------------------------------------------------------

#: The float ATen graph from ``torch.export``, before PT2E with EthosUQuantizer.
BEFORE_QUANTIZATION_ETHOS_U: tuple[type, ...] = (
    # EthosUQuantizer (1.5.1) annotates no string-padded convolution either: without this pass a
    # padding='same' convolution with odd totals stays a float CPU kernel between two delegates.
    SamePaddingToExplicitPass,
)

#: The edge program after partitioning and boundary quantization (``edge.transform``).
AFTER_PARTITION_ETHOS_U: tuple[type, ...] = (
    # Quantize/dequantize left outside the delegate as cortex_m:: ops, as upstream does; after
    # QuantizeInputs/QuantizeOutputs (see above).
    ReplaceQuantNodesPass,
)


def build(pass_cls: type, **available: Any) -> Any:
    """An instance of ``pass_cls`` given those of ``available`` its constructor names (e.g.
    ``exported_program``, ``backend``, ``example_inputs``); the rest take their defaults."""
    names = inspect.signature(pass_cls).parameters
    return pass_cls(**{k: v for k, v in available.items() if k in names})
