"""Program compaction: one EValue per distinct constant argument, none that nothing reads.

ExecuTorch's emitter writes a fresh value for every non-tensor argument of every kernel call: kws's
16 calls carry 134 ``Int`` values (114 of them repeats: strides of 1, zero points, activation limits)
and 34 ``IntList`` values (25 repeats). ``Method::init`` gives each value a 16-byte ``EValue`` from
the method allocator, and each int list two arrays (4-byte ``EValue*`` and 8-byte ``int64_t`` per
item; ``runtime/executor/method.cpp``, ``parse_values``), so repeats cost method-pool RAM.

The runtime only reads these values: a kernel gets its arguments as ``EValue&`` and the int-list
box (``BoxedEvalueList::get``) rebuilds its own ``int64_t`` array from the items on every call. So
values with equal content can be one value, provided nothing writes them. This pass, on the
deserialized program (ExecuTorch's own ``_serialize._program``), shares ``Int``, ``Bool``,
``Double``, ``Null`` and ``String`` values, ``IntList`` values of equal items and constant tensors
of equal metadata and data, never one that an instruction may write (the last argument of a kernel
call, every argument of a delegate call, a move's destination, a freed value) or a method
input/output, then drops non-tensor values nothing references and renumbers every reference
(instruction arguments, chain and plan inputs/outputs, list items). Planned tensors are never
touched.

Constant tensors: ExecuTorch's serializer already stores equal constant data once, so two tensors
with the same ``data_buffer_idx``, sizes, dim order and dtype differ only in their value index, and
each costs a 16-byte ``EValue``, a 32-byte ``TensorImpl`` and its strides in the method pool
(``runtime/executor/tensor_parser_portable.cpp``). The Cortex-M lowering makes many such twins (per-channel
shift tables of equal layers): 16 of kws's 84 constants, 42 of vww's 246, 12 of ic's 84. Kernels
only read constant tensors (their data is in the ``.pte``, in flash). The firmware's bit-exact
match with the host reference on the four samples is the check.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

#: Scalar value kinds whose equal instances are shared (int lists and constant tensors are too; see the
#: module docstring; planned tensors and tensor lists never are).
_SHARED_SCALARS = ("Int", "Bool", "Double", "Null", "String")


@dataclass(frozen=True)
class CompactionStats:
    """What :func:`compact_program` did: values before and after (all execution plans)."""

    values_before: int
    values_after: int


def compact_program(pte: bytes) -> tuple[bytes, CompactionStats]:
    """Share equal constant arguments and drop unread values in a serialized program.

    Args:
        pte: the ``.pte`` bytes ExecuTorch emitted.

    Returns:
        (the compacted ``.pte`` bytes, serialized again with ExecuTorch's serializer; the stats).
        A program with nothing to share comes back unchanged (the same bytes).
    """
    from executorch.exir._serialize._program import deserialize_pte_binary, serialize_pte_binary

    pte_file = deserialize_pte_binary(pte)
    before = after = 0
    for plan in pte_file.program.execution_plan:
        before += len(plan.values)
        after += _compact_plan(plan)
    if after == before:
        return pte, CompactionStats(before, after)
    return bytes(serialize_pte_binary(pte_file)), CompactionStats(before, after)


def _kind(value: Any) -> str:
    return type(value.val).__name__


def _is_constant_tensor(value: Any) -> bool:
    """A tensor whose data is in the program (``data_buffer_idx`` > 0) and that no memory plan
    places (``allocation_info`` None): a weight, bias or requantization table, read-only at run time."""
    t = value.val
    return _kind(value) == "Tensor" and t.allocation_info is None and t.data_buffer_idx > 0


def _written(plan: Any) -> set[int]:
    """Indices an instruction may write, or the method hands in or out: never shared."""
    written = set(plan.inputs) | set(plan.outputs)
    for chain in plan.chains:
        written |= set(chain.inputs) | set(chain.outputs)
        for ins in chain.instructions:
            args = ins.instr_args
            kind = type(args).__name__
            if kind == "KernelCall" and args.args:
                written.add(args.args[-1])
            elif kind == "DelegateCall":
                written |= set(args.args)
            elif kind == "MoveCall":
                written.add(args.move_to)
            elif kind == "FreeCall":
                written.add(args.value_index)
    return written


def _compact_plan(plan: Any) -> int:
    """Compact one execution plan in place; returns its new value count."""
    values = plan.values
    written = _written(plan)
    canon: dict[Any, int] = {}
    remap = list(range(len(values)))
    for i, v in enumerate(values):  # scalars first: list keys are built from their items' canonical values
        kind = _kind(v)
        if kind in _SHARED_SCALARS and i not in written:
            key: Any = (kind, repr(v.val))
            remap[i] = canon.setdefault(key, i)
    for i, v in enumerate(values):
        if _kind(v) == "IntList" and i not in written:
            key = ("IntList", tuple(remap[j] for j in v.val.items))
            remap[i] = canon.setdefault(key, i)
        elif _is_constant_tensor(v) and i not in written:
            # The serializer already stores equal data once (same data_buffer_idx); equal metadata
            # as well makes the two tensors one.
            remap[i] = canon.setdefault(("Tensor", repr(v.val)), i)

    # What is still referenced once repeats point at their first instance.
    used: set[int] = set(plan.inputs) | set(plan.outputs)
    for chain in plan.chains:
        used |= set(chain.inputs) | set(chain.outputs)
        for ins in chain.instructions:
            used |= {remap[j] for j in _references(ins.instr_args)}
    pending = list(used)
    while pending:
        i = pending.pop()
        v = values[i]
        if _kind(v) in ("IntList", "TensorList", "OptionalTensorList"):
            for j in v.val.items:
                r = remap[j] if j >= 0 else -1  # -1: None in an optional-tensor list
                if r >= 0 and r not in used:
                    used.add(r)
                    pending.append(r)
    keep = [i for i, v in enumerate(values) if remap[i] == i and (i in used or _kind(v) == "Tensor")]
    new_index = {old: new for new, old in enumerate(keep)}

    def index(old: int) -> int:
        return new_index[remap[old]]

    for i in keep:
        v = values[i]
        if _kind(v) in ("IntList", "TensorList", "OptionalTensorList"):
            v.val.items = [index(j) if j >= 0 else j for j in v.val.items]
    plan.inputs = [index(i) for i in plan.inputs]
    plan.outputs = [index(i) for i in plan.outputs]
    for chain in plan.chains:
        chain.inputs = [index(i) for i in chain.inputs]
        chain.outputs = [index(i) for i in chain.outputs]
        for ins in chain.instructions:
            _renumber(ins.instr_args, index)
    plan.values = [values[i] for i in keep]
    return len(keep)


def _references(args: Any) -> list[int]:
    """Value indices an instruction refers to."""
    kind = type(args).__name__
    if kind in ("KernelCall", "DelegateCall"):
        return list(args.args)
    if kind == "MoveCall":
        return [args.move_from, args.move_to]
    if kind == "JumpFalseCall":
        return [args.cond_value_index]
    if kind == "FreeCall":
        return [args.value_index]
    return []


def _renumber(args: Any, index: Any) -> None:
    kind = type(args).__name__
    if kind in ("KernelCall", "DelegateCall"):
        args.args = [index(j) for j in args.args]
    elif kind == "MoveCall":
        args.move_from, args.move_to = index(args.move_from), index(args.move_to)
    elif kind == "JumpFalseCall":
        args.cond_value_index = index(args.cond_value_index)
    elif kind == "FreeCall":
        args.value_index = index(args.value_index)
