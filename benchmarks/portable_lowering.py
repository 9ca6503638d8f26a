"""Compile a built-in sample to an int8 ExecuTorch program WITHOUT the Cortex-M passes.

The comparison point for "CMSIS-NN lowering vs portable kernels" (issue 8): the same PT2E int8
quantization (CortexMQuantizer, same calibration) and the same edge lowering
(`to_edge_transform_and_lower`, ExecuTorch's default EdgeCompileConfig: the Cortex-M config would
preserve aten.linear for its passes, which has no portable kernel), but no `CortexMPassManager`, so the
program keeps `quantized_decomposed::quantize/dequantize_per_tensor` around ATen float operators
and runs on ExecuTorch's portable + quantized kernels. Inputs stay in the default NCHW memory format
(the channels_last conversion belongs to the Cortex-M flow; portable kernels reject mixed dim orders).

armgen compile has no switch for this, so this helper swaps armgen.model.compile._lower_cortex_m for a
copy without the pass manager and otherwise runs armgen's compile stage unchanged (same report,
reference data and file names). Usage:

    python benchmarks/portable_lowering.py SAMPLE TARGET OUT_DIR NAME
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any


def lower_without_cortex_m_passes(qep: Any, cpu: str) -> tuple[Any, list, list]:
    import armgen.model.compile as c
    from executorch.backends.transforms.remove_clone_ops import RemoveCloneOpsTransform
    from executorch.exir import EdgeCompileConfig, to_edge_transform_and_lower

    edge = to_edge_transform_and_lower(
        qep,
        transform_passes=[RemoveCloneOpsTransform()],
        compile_config=EdgeCompileConfig(_check_ir_validity=False),
    )
    ins, outs = c._boundary_qparams(edge.exported_program())
    edge = c._quantize_io(edge, ins, outs)
    return edge, ins, outs


def quantize_contiguous(model, example, calib, backend, target, system_config, memory_mode, vela_config_file):
    """PT2E with CortexMQuantizer as armgen's compile stage does, but in the default (NCHW) memory
    format: the portable kernels need one dim order for activations and weights, and the
    channels_last conversion is part of the Cortex-M flow, not of the portable one."""
    import torch
    import armgen.model.compile as c
    from executorch.backends.cortex_m.quantizer.quantizer import CortexMQuantizer
    from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e

    example = tuple(t.contiguous() for t in example)
    calib = [tuple(t.contiguous() for t in s) for s in calib]
    graph = c._export(model, example, "float model").module(check_guards=False)
    prepared = prepare_pt2e(graph, CortexMQuantizer())
    with torch.no_grad():
        for sample in calib:
            prepared(*sample)
    converted = convert_pt2e(prepared)
    return converted, c._export(converted, example, "quantized model")


def main(argv: list[str]) -> int:
    sample, target, out_dir, name = argv
    import armgen.model.compile as c

    c._lower_cortex_m = lower_without_cortex_m_passes
    c._quantize = quantize_contiguous
    res = c.compile_model(sample, target, out_dir=Path(out_dir), name=name)
    ops = sorted({o.name for o in res.report.operators}) if hasattr(res.report, "operators") else []
    print(res.pte_path)
    print("operators:", ", ".join(ops))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
