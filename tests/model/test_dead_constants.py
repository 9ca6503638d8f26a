"""No dead constants (issue 43, item 1): every constant tensor of a program armgen compiles is read by an
instruction. Upstream's Cortex-M lowering left the weights, biases and requantization tables it replaced
in the program (kws/cortex-m55: 46 of 85 placeholders; 12,208 B of the .pte and 1,504 B of method pool);
armgen.model.passes.remove_dead_constants deletes them. Fast: the committed program fixtures, which the
slow tests/model/test_program_fixtures.py holds equal to what the compile stage makes now."""

from __future__ import annotations

from typing import Any

import pytest

from _programs import FIXTURES_DIR, program


def _constants_no_instruction_reads(pte: bytes) -> list[int]:
    """Value indices of constant tensors (data in the program, no memory plan) that no instruction, method
    input/output or list refers to."""
    from executorch.exir._serialize._program import deserialize_pte_binary

    from armgen.model.compact_program import _is_constant_tensor, _references

    dead: list[int] = []
    for plan in deserialize_pte_binary(pte).program.execution_plan:
        used: set[int] = set(plan.inputs) | set(plan.outputs)
        for chain in plan.chains:
            used |= set(chain.inputs) | set(chain.outputs)
            for ins in chain.instructions:
                used |= set(_references(ins.instr_args))
        lists: Any = [v.val.items for v in plan.values if type(v.val).__name__ in ("TensorList", "OptionalTensorList")]
        used |= {j for items in lists for j in items}
        dead += [i for i, v in enumerate(plan.values) if _is_constant_tensor(v) and i not in used]
    return dead


@pytest.mark.parametrize("key", sorted(p.name for p in FIXTURES_DIR.iterdir() if p.is_dir()))
def test_every_constant_tensor_of_a_compiled_program_is_read(key):
    _, pte, _ = program(key)
    assert _constants_no_instruction_reads(pte.read_bytes()) == []


def test_the_check_finds_a_dead_constant():
    """The check above can fail: a program whose constant tensor no instruction reads is caught."""
    from executorch.exir._serialize._program import deserialize_pte_binary, serialize_pte_binary

    _, pte, _ = program("kws-cortex-m55")
    pte_file = deserialize_pte_binary(pte.read_bytes())
    plan = pte_file.program.execution_plan[0]
    kernel = next(i.instr_args for c in plan.chains for i in c.instructions
                  if type(i.instr_args).__name__ == "KernelCall" and any(
                      type(plan.values[a].val).__name__ == "Tensor" and plan.values[a].val.allocation_info is None
                      and plan.values[a].val.data_buffer_idx > 0 for a in i.instr_args.args))
    weight = next(a for a in kernel.args if type(plan.values[a].val).__name__ == "Tensor"
                  and plan.values[a].val.allocation_info is None and plan.values[a].val.data_buffer_idx > 0)
    plan.values.append(plan.values[weight])  # a second copy nothing refers to
    assert _constants_no_instruction_reads(bytes(serialize_pte_binary(pte_file))) == [len(plan.values) - 1]
