"""armgen's compile stage WITHOUT the Cortex-M passes: the program of "CMSIS-NN lowering vs portable kernels".

The same PT2E int8 quantization (CortexMQuantizer, same calibration) and the same edge lowering
(`to_edge_transform_and_lower`, ExecuTorch's default EdgeCompileConfig: the Cortex-M config would
preserve aten.linear for its passes, which has no portable kernel), but no `CortexMPassManager`, so the
program keeps `quantized_decomposed::quantize/dequantize_per_tensor` around ATen float operators
and runs on ExecuTorch's portable + quantized kernels. Inputs stay in the default NCHW memory format
(the channels_last conversion belongs to the Cortex-M flow; portable kernels reject mixed dim orders).

armgen compile has no switch for this, so :func:`compile_without_cortex_m_passes` swaps
armgen.model.compile._lower_cortex_m and _quantize for the two functions here and otherwise runs armgen's
compile stage unchanged (same report, reference data and file names).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any


def lower_without_cortex_m_passes(qep: Any, cpu: str) -> tuple[Any, list[Any], list[Any]]:
    """Edge lowering with ExecuTorch's default config and armgen's I/O quantization, no Cortex-M pass manager."""
    from executorch.backends.transforms.remove_clone_ops import RemoveCloneOpsTransform
    from executorch.exir import EdgeCompileConfig, to_edge_transform_and_lower

    import armgen.model.compile as c

    edge = to_edge_transform_and_lower(
        qep,
        transform_passes=[RemoveCloneOpsTransform()],
        compile_config=EdgeCompileConfig(_check_ir_validity=False),
    )
    ins, outs = c._boundary_qparams(edge.exported_program())
    edge = c._quantize_io(edge, ins, outs)
    return edge, ins, outs


def quantize_contiguous(model: Any, example: Any, calib: Any, backend: Any, target: Any, system_config: Any,
                        memory_mode: Any, vela_config_file: Any, int8_reference: Any = None) -> tuple[Any, Any]:
    """PT2E with CortexMQuantizer as armgen's compile stage does, but in the default (NCHW) memory
    format: the portable kernels need one dim order for activations and weights, and the
    channels_last conversion is part of the Cortex-M flow, not of the portable one. ``int8_reference`` (sww's
    .tflite quantization) is not adopted here: the portable comparison keeps calibration's."""
    import torch
    from executorch.backends.cortex_m.quantizer.quantizer import CortexMQuantizer
    from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e

    import armgen.model.compile as c

    example = tuple(t.contiguous() for t in example)
    calib = [tuple(t.contiguous() for t in s) for s in calib]
    graph = c._export(model, example, "float model").module(check_guards=False)
    prepared = prepare_pt2e(graph, CortexMQuantizer())
    with torch.no_grad():
        for sample in calib:
            prepared(*sample)
    converted = convert_pt2e(prepared)
    return converted, c._export(converted, example, "quantized model")


def compile_without_cortex_m_passes(sample: str, target: str, out_dir: Path, name: str) -> Any:
    """armgen.model.compile.compile_model with the two swaps above; its result (``.pte_path``, ``.report``)."""
    import armgen.model.compile as c

    c._lower_cortex_m = lower_without_cortex_m_passes
    c._quantize = quantize_contiguous
    return c.compile_model(sample, target, out_dir=out_dir, name=name)
