"""The activation lower bound (issue 43, item 4): the largest set of planned tensors live at one instruction.
Fast: a hand-made plan whose answer is known, and the committed program fixtures."""

from __future__ import annotations

from types import SimpleNamespace as NS

import pytest

from _programs import FIXTURES_DIR, program
from armgen.model.activation_bound import activation_lower_bound


class Tensor:  # the name the deserialized program's value kind has
    def __init__(self, sizes, planned=True, scalar="CHAR"):
        self.sizes, self.scalar_type = sizes, NS(name=scalar)
        self.allocation_info = NS(memory_id=1) if planned else None


class KernelCall:
    def __init__(self, *args):
        self.args = list(args)


def _plan():
    # values: 0 input A (100 B), 1 B (200 B), 2 output C (50 int32 = 200 B), 3 a constant weight (not planned)
    values = [NS(val=Tensor([100])), NS(val=Tensor([20, 10])), NS(val=Tensor([50], scalar="INT")),
              NS(val=Tensor([1000], planned=False))]
    code = [NS(instr_args=KernelCall(0, 3, 1)), NS(instr_args=KernelCall(1, 3, 2))]  # B = f(A, w); C = g(B, w)
    return NS(values=values, inputs=[0], outputs=[2], chains=[NS(instructions=code)])


def test_the_bound_is_the_largest_live_set_and_leaves_constants_out():
    bound = activation_lower_bound(_plan())
    # at 0: A + B = 300 B; at 1: B + C = 400 B (A is dead); the 1,000 B constant never counts
    assert (bound.bytes, bound.instruction, bound.tensors) == (400, 1, 2)


@pytest.mark.parametrize("key", sorted(p.name for p in FIXTURES_DIR.iterdir() if p.is_dir()))
def test_no_plan_beats_the_bound_and_the_report_carries_it(key):
    report, pte, _ = program(key)
    from executorch.exir._serialize._program import deserialize_pte_binary

    plan = deserialize_pte_binary(pte.read_bytes()).program.execution_plan[0]
    bound = activation_lower_bound(plan).bytes
    assert report.activation_lower_bound == bound
    assert 0 < bound <= sum(report.planned_buffers)
    if key == "kws-cortex-m55":  # ExecuTorch's plan of kws on the M55 is at the bound (TFLM's arena: the same)
        assert bound == sum(report.planned_buffers) == 20_464
