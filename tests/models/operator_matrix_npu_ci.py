"""The operator-matrix rows CI checks on the Ethos-U path (tests/model/test_npu_host.py), as one model.

All 60 rows compile for the U55 and the U85 and run within 1 LSB on the TOSA reference model
(benchmarks/operator_matrix_npu.py); CI keeps the rows whose Ethos-U lowering is not a plain
convolution: string padding, depth multiplier, 1-D layers and pools the NPU leaves on the CPU,
transposed convolutions (the U55 takes stride 3 padding 2 to the CPU), ceil-mode and dilated max pools,
LUT activations, softmax, permute, a cat of two scales, upsampling.
"""

from armgen.model.operator_matrix import ROWS, matrix_model

KEYS = ("r03", "r09", "r12", "r15", "r16", "r20", "r32", "r33", "r44", "r45", "r53", "r55", "r57", "r58", "r59")

model, example_inputs = matrix_model([r for r in ROWS if r.key in KEYS])
