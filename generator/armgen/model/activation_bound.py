"""The lower bound of a program's activation memory: what any memory plan of its graph needs.

At each instruction of the execution plan, the memory-planned tensors that are live (written at or before
it, read at or after it; the method's inputs from the start, its outputs to the end) must all be in memory
at once, each whole; CMSIS-NN's scratch buffers are planned tensors of the calls that use them, so they
count at their call. The largest such sum over the instructions is a bound no plan of this instruction
order can beat (ExecuTorch's planner, TFLite Micro's or a perfect one); the planned buffers
(``ProgramReport.planned_buffers``) are what ExecuTorch's planner achieved. Their difference is what a
better placement could still save; getting below the bound takes a different graph (fused operators,
operators computed in row bands) or a different order.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from armgen.model.tensors import DTYPE_NAMES, DTYPE_SIZES


@dataclass(frozen=True)
class ActivationBound:
    """The activation lower bound of one execution plan.

    Attributes:
        bytes: the largest sum of live planned-tensor bytes at one instruction (exact tensor sizes, no
            alignment). instruction: the index of that instruction in the plan's first chain.
        tensors: how many planned tensors are live there.
    """

    bytes: int
    instruction: int
    tensors: int


def _nbytes(tensor: Any) -> int:
    dtype = DTYPE_NAMES.get(getattr(tensor.scalar_type, "name", str(tensor.scalar_type)), "")
    return math.prod(int(s) for s in tensor.sizes) * DTYPE_SIZES.get(dtype, 1)


def _planned(value: Any) -> bool:
    t = value.val
    return type(t).__name__ == "Tensor" and t.allocation_info is not None and t.allocation_info.memory_id > 0


def activation_lower_bound(plan: Any) -> ActivationBound:
    """The bound of ``plan`` (an ExecuTorch ``ExecutionPlan`` as its serializer deserializes it).

    Returns:
        ActivationBound (bytes 0 when nothing is planned).
    """
    values = plan.values
    instructions = [ins for chain in plan.chains for ins in chain.instructions]
    end = max(len(instructions) - 1, 0)
    first: dict[int, int] = {}
    last: dict[int, int] = {}

    def touch(index: int, at: int) -> None:
        if index < 0 or index >= len(values):
            return
        kind = type(values[index].val).__name__
        if kind in ("TensorList", "OptionalTensorList"):
            for item in values[index].val.items:
                touch(item, at)
            return
        if _planned(values[index]):
            first[index] = min(first.get(index, at), at)
            last[index] = max(last.get(index, at), at)

    for i in plan.inputs:
        touch(i, 0)
    for at, ins in enumerate(instructions):
        args = ins.instr_args
        kind = type(args).__name__
        refs = list(args.args) if kind in ("KernelCall", "DelegateCall") else (
            [args.move_from, args.move_to] if kind == "MoveCall" else [])
        for r in refs:
            touch(r, at)
    for o in plan.outputs:
        touch(o, end)
    best = ActivationBound(0, 0, 0)
    for at in range(len(instructions)):
        live = [v for v in first if first[v] <= at <= last[v]]
        total = sum(_nbytes(values[v].val) for v in live)
        if total > best.bytes:
            best = ActivationBound(total, at, len(live))
    return best
