"""Compile a built-in sample to an int8 ExecuTorch program WITHOUT the Cortex-M passes.

The comparison point for "CMSIS-NN lowering vs portable kernels" (issue 8): the same PT2E int8
quantization and edge lowering as armgen's compile stage, but no `CortexMPassManager`, so the program
runs on ExecuTorch's portable + quantized kernels (``benchlib.portable_lowering`` says how). bench.py's
portable comparison runs this script. Usage:

    python benchmarks/portable_lowering.py SAMPLE TARGET OUT_DIR NAME
"""

from __future__ import annotations

import sys
from pathlib import Path

from benchlib.portable_lowering import compile_without_cortex_m_passes


def main(argv: list[str]) -> int:
    sample, target, out_dir, name = argv
    res = compile_without_cortex_m_passes(sample, target, Path(out_dir), name)
    ops = sorted({o.name for o in res.report.operators}) if hasattr(res.report, "operators") else []
    print(res.pte_path)
    print("operators:", ", ".join(ops))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
