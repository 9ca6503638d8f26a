"""The operator matrix's firmware model in CI (tests/firmware/test_operator_matrix.py): every row of
armgen.model.operator_matrix as a branch, then a part of ExecuTorch's own Cortex-M operator cases (read
from the installed wheel, tests/models/executorch_cases.py) as more branches of the same program, so no
extra firmware build. The part: the cases that computed wrong answers or stopped on the device before
issue 40's fixes (transposed conv + activation, rank-4 permute, rank-4 broadcasts, broadcast add/mul/div,
ceil-mode and dilated max pools, a max pool after a permute, a view as the program output, depth multiplier 4). All
239 run in benchmarks/executorch_op_cases.py."""

import copy
import sys
from pathlib import Path

from torch import nn

from armgen.model.operator_matrix import ROWS, matrix_model

sys.path.insert(0, str(Path(__file__).resolve().parent))  # armgen loads this file by path
from executorch_cases import CasesModel, upstream_cases  # noqa: E402

UPSTREAM = (
    "conv_transpose.conv_transpose2d_relu", "conv_transpose.conv_transpose2d_hardtanh",
    "transpose.permute_nhwc_to_nchw", "transpose.permute_nchw_to_nhwc_neg_index",
    "maximum.broadcast_rank4", "minimum.broadcast_rank4", "add.broadcast_channels_1", "mul.broadcast_2",
    "div.broadcast_1", "div.self_rank_4", "max_pool2d.maxpool_3x3_s2_pad1_ceil", "max_pool2d.maxpool_dilation",
    "max_pool2d.maxpool_2x2_single_channel_view", "mean.spatial", "conv.depthwise_conv2d_multiplier_4",
    "linear.linear_rank4",
)

_rows, _row_inputs = matrix_model(ROWS)
_cases = [c for c in upstream_cases({n.split(".")[0] for n in UPSTREAM}) if c.name in UPSTREAM]
assert len(_cases) == len(UPSTREAM), sorted(set(UPSTREAM) - {c.name for c in _cases})


class MatrixAndUpstream(CasesModel):
    """The rows' branches (``r00``...: one output each, row order), then the cases' (``u00``...: their
    outputs flattened, UPSTREAM's file order); a branch's inputs side by side (CasesModel's forward)."""

    def __init__(self) -> None:
        nn.Module.__init__(self)
        self.arity = [len(r.inputs) for r in ROWS] + [len(c.inputs) for c in _cases]
        for key, branch in _rows.named_children():
            self.add_module(key, branch)
        for i, c in enumerate(_cases):  # a copy each: upstream reuses one module instance in several cases
            self.add_module(f"u{i:02d}", copy.deepcopy(c.model))


model = MatrixAndUpstream().eval()
example_inputs = (*_row_inputs, *(t for c in _cases for t in c.inputs))
