"""Compile a built-in sample to an int8 ExecuTorch program WITHOUT the Cortex-M passes.

The comparison point for "CMSIS-NN lowering vs portable kernels" (issue 8): the same PT2E int8
quantization (CortexMQuantizer, same calibration) and the same edge lowering
(`to_edge_transform_and_lower`, ExecuTorch's default EdgeCompileConfig: the Cortex-M config would
preserve aten.linear for its passes, which has no portable kernel), but no `CortexMPassManager`, so the
program keeps `quantized_decomposed::quantize/dequantize_per_tensor` around ATen float operators
and runs on ExecuTorch's portable + quantized kernels.

armgen compile has no switch for this, so this helper swaps armgen.compile._lower_cortex_m for a
copy without the pass manager and otherwise runs armgen's compile stage unchanged (same report,
reference data and file names). Usage:

    python benchmarks/portable_lowering.py SAMPLE TARGET OUT_DIR NAME
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any


def lower_without_cortex_m_passes(qep: Any, cpu: str) -> tuple[Any, list, list]:
    import armgen.compile as c
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


def main(argv: list[str]) -> int:
    sample, target, out_dir, name = argv
    import armgen.compile as c

    c._lower_cortex_m = lower_without_cortex_m_passes
    res = c.compile_model(sample, target, out_dir=Path(out_dir), name=name)
    ops = sorted({o.name for o in res.report.operators}) if hasattr(res.report, "operators") else []
    print(res.pte_path)
    print("operators:", ", ".join(ops))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
