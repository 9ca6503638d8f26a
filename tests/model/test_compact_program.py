"""Program compaction (armgen.model.compact_program): every kernel call sees the same arguments,
fewer values, less method-allocator RAM. The firmware's bit-exact runs (tests/firmware/test_run.py, the four
samples on QEMU) run compacted programs."""

from __future__ import annotations

from pathlib import Path

import pytest

from armgen.model.compact_program import compact_program
from armgen.model.method_allocator import method_allocator_breakdown, method_allocator_use

MLP = Path(__file__).parents[1] / "models" / "mlp.py"


def _calls(pte: bytes) -> list[tuple]:
    """Each kernel call as (operator, the content of each argument): what the runtime hands the kernel."""
    from executorch.exir._serialize._program import deserialize_pte_binary

    plan = deserialize_pte_binary(pte).program.execution_plan[0]
    values = plan.values

    def content(i: int):
        v = values[i].val
        kind = type(v).__name__
        if kind == "Tensor":
            return ("Tensor", tuple(v.sizes), v.data_buffer_idx, repr(v.allocation_info), v.scalar_type)
        if kind == "IntList":
            return ("IntList", tuple(values[j].val.int_val for j in v.items))
        return (kind, repr(v))

    calls = []
    for ins in plan.chains[0].instructions:
        a = ins.instr_args
        if type(a).__name__ == "KernelCall":
            calls.append((plan.operators[a.op_index].name, tuple(content(i) for i in a.args)))
    return calls


@pytest.mark.slow
@pytest.mark.parametrize("model", ["kws", str(MLP)])
def test_compaction_keeps_every_argument_and_shrinks_the_method_pool(model, tmp_path, monkeypatch):
    import armgen.model.compact_program as cp
    from armgen.model.compile import compile_model

    monkeypatch.setattr(cp, "compact_program", lambda pte: (pte, cp.CompactionStats(0, 0)))
    emitted = compile_model(model, "cortex-m4", out_dir=tmp_path).pte_path.read_bytes()  # as ExecuTorch emits it
    compacted, stats = compact_program(emitted)
    assert stats.values_after < stats.values_before
    assert _calls(compacted) == _calls(emitted)
    saved = method_allocator_use(emitted) - method_allocator_use(compacted)
    print(f"\n{Path(model).stem}: {stats.values_before} -> {stats.values_after} values, method pool -{saved} B")
    assert saved >= 16 * (stats.values_before - stats.values_after)  # an EValue is 16 B
    again, stats2 = compact_program(compacted)
    assert again == compacted and stats2.values_before == stats2.values_after  # nothing left to share

    # Constant twins (same data, same metadata) are one value; planned tensors are all kept.
    def tensors(pte: bytes) -> tuple[list[str], int]:
        from executorch.exir._serialize._program import deserialize_pte_binary

        vals = [v.val for v in deserialize_pte_binary(pte).program.execution_plan[0].values]
        ts = [t for t in vals if type(t).__name__ == "Tensor"]
        return [repr(t) for t in ts if t.allocation_info is None and t.data_buffer_idx > 0], \
            sum(t.allocation_info is not None for t in ts)

    (c_before, p_before), (c_after, p_after) = tensors(emitted), tensors(compacted)
    assert sorted(set(c_after)) == sorted(set(c_before)) and len(c_after) == len(set(c_after))
    assert p_after == p_before
    # The breakdown by kind is the same replay: its parts add up to the total.
    parts = method_allocator_breakdown(compacted)
    assert sum(parts.values()) == method_allocator_use(compacted)
    from executorch.exir._serialize._program import deserialize_pte_binary

    n_values = len(deserialize_pte_binary(compacted).program.execution_plan[0].values)  # the replay's method
    assert parts["constant tensors"] > 0 and parts["evalues"] == 16 * n_values
