"""The method allocator: how many bytes ``Method::init`` takes from it, replayed from the program.

The method allocator is not described by the ``.pte``'s memory plan: ExecuTorch's ``Method::init``
(runtime/executor/method.cpp, tensor_parser_portable.cpp, tensor_parser_exec_aten.cpp) carves these
out of it during ``load_method``, in this order, each start aligned to the type's ``alignof``
(``MemoryAllocator::allocate``); sizes are ``sizeof`` on 32-bit Arm with arm-none-eabi-gcc 12 and
ExecuTorch 1.5 (measured with the compiler, see the constants below):

=========================================  ==================================================
allocation                                 bytes (alignment)
=========================================  ==================================================
``EValue values[num_values]``              16 each (8)
``bool input_set[num_inputs]``             1 each (1)
per IntList value of n items               ``EValue*[n]`` 4n (4), ``int64_t[n]`` 8n (8),
                                           ``BoxedEvalueList<int64_t>`` 12 (4)
per BoolList / DoubleList / String value   ``ArrayRef`` 8 (4)
per Tensor value of d dims                 dynamic shape only: sizes 4d (4) + dim order d (1);
                                           strides 4d (4); ``TensorImpl`` 32 (4)
per TensorList of n items                  ``Tensor[n]`` 4n (4), ``EValue*[n]`` 4n (4), box 12 (4)
per OptionalTensorList of n items          ``EValue*[n]`` 4n (4), ``optional<Tensor>[n]`` 8n (4), box 12
``BackendDelegate delegates[n]``           40 each (8), then per delegate its
                                           ``CompileSpec[k]`` 12k (4) (EthosUBackend takes nothing
                                           else from it: its handle comes from the init-time heap)
``Chain chains[num_chains]``               16 each (4)
per chain of n instructions                ``OpFunction[n]`` 4n (4), ``InstructionArgs[n]`` 8n (4)
per kernel/delegate call of a args         ``EValue*[a]`` 4a (4)
per kernel call (operator lookup)          ``TensorMeta[a]`` 12a (4), then per tensor argument its
                                           dim order, d bytes (1) - from the temp allocator instead
                                           when that holds at least 28a bytes (then released)
=========================================  ==================================================

:func:`method_allocator_bound` replays exactly this sequence over the program's execution plan
(read from the ``.pte`` with ExecuTorch's own deserializer) and rounds up to 16 bytes. Measured
against the firmware's own report (``ARMGEN pool method ... used=``) on QEMU mps3-an547 the replay
is exact, so the pool exceeds the use by the rounding only (< 16 B): the four samples compiled for
cortex-m55 (2026-11-30) used 11,636 / 31,484 / 12,876 / 5,000 B (kws / vww / ic / ad) with the
operator-lookup scratch in the temp pool and 14,302 / 38,182 / 16,154 / 6,678 B without it, each
equal to the replay; kws for cortex-m4 on mps2-an386 used 11,580 B. Without a readable ``.pte`` a
coarser bound from ``report.stats`` alone is used
(:func:`method_allocator_bound_from_stats`: every non-tensor value counted as an int-list item).

The model stage records the result in the program report (:class:`armgen.model.program_report.
MethodAllocatorPlan`, see :func:`plan_method_allocator`); the project stage sizes the ``method`` and
``temp`` pools from it without reading the ``.pte`` again.
"""

from __future__ import annotations

import dataclasses

from armgen.errors import ProgramError
from armgen.model.program_report import MethodAllocatorPlan, ProgramReport, ProgramStats

#: Every pool and the ``.pte`` are aligned to this many bytes (ExecuTorch's default tensor alignment).
POOL_ALIGNMENT = 16

# ---- sizeof/alignof on arm-none-eabi (32-bit), ExecuTorch 1.5 (see the table above) -------------------
EVALUE_BYTES = 16
TENSOR_IMPL_BYTES = 32
BOXED_LIST_BYTES = 12
ARRAY_REF_BYTES = 8
BACKEND_DELEGATE_BYTES = 40
COMPILE_SPEC_BYTES = 12
CHAIN_BYTES = 16
INSTRUCTION_ARGS_BYTES = 8
TENSOR_META_BYTES = 12
#: ExecuTorch's kTensorDimensionLimit: resolve_operator uses the temp allocator only when it holds
#: (sizeof(TensorMeta) + kTensorDimensionLimit) bytes per argument.
TENSOR_DIMENSION_LIMIT = 16


def _execution_plan(pte: bytes):
    """``execution_plan[0]`` of a serialized program (:func:`armgen.model.pte_reader.deserialized_program`,
    one deserialized copy shared with the program report). Raises ProgramError when the bytes are not
    an ExecuTorch program.
    """
    from armgen.model.pte_reader import deserialized_program

    try:
        return deserialized_program(bytes(pte)).execution_plan[0]
    except Exception as exc:  # noqa: BLE001 - any parse failure means "not a program"
        raise ProgramError(f"cannot read the program: {exc}") from exc


def method_allocator_use(pte: bytes, temp_allocator_size: int = 0) -> int:
    """Bytes ``Method::init`` takes from the method allocator for this program (exact replay).

    Args:
        pte: the serialized program. temp_allocator_size: bytes of the temp pool the firmware
            passes (operator lookup scratch moves there when it is large enough).

    Returns:
        int: bytes, including alignment padding, for ``execution_plan[0]``.

    Raises:
        ProgramError: the bytes are not an ExecuTorch program.
    """
    return sum(method_allocator_breakdown(pte, temp_allocator_size).values())


def method_allocator_breakdown(pte: bytes, temp_allocator_size: int = 0) -> dict[str, int]:
    """:func:`method_allocator_use` by allocation kind, in bytes (alignment padding counted with
    the allocation it precedes).

    Kinds: ``evalues`` (one 16-byte ``EValue`` per value), ``input flags``, ``int lists``,
    ``other lists`` (bool/double lists, strings, tensor lists), ``constant tensors`` and ``planned
    tensors`` (``TensorImpl`` and strides; sizes and dim order of dynamic shapes), ``delegates``,
    ``chains``, ``instructions`` (``OpFunction`` and ``InstructionArgs`` per instruction, the
    argument pointer arrays) and ``operator lookup`` (kernel-call ``TensorMeta`` scratch left in the
    method pool). Kinds with no bytes are left out.

    Raises:
        ProgramError: the bytes are not an ExecuTorch program.
    """
    plan = _execution_plan(pte)
    values = plan.values
    cur = 0
    by_kind: dict[str, int] = {}

    def alloc(size: int, align: int, what: str) -> None:
        nonlocal cur
        start = cur
        cur = _round_up(cur, align) + size
        by_kind[what] = by_kind.get(what, 0) + cur - start

    alloc(EVALUE_BYTES * len(values), 8, "evalues")
    if plan.inputs:
        alloc(len(plan.inputs), 1, "input flags")
    for v in values:
        kind = type(v.val).__name__
        x = v.val
        if kind == "IntList":
            n = len(x.items)
            alloc(4 * n, 4, "int lists")
            alloc(8 * n, 8, "int lists")
            alloc(BOXED_LIST_BYTES, 4, "int lists")
        elif kind in ("BoolList", "DoubleList", "String"):
            alloc(ARRAY_REF_BYTES, 4, "other lists")
        elif kind == "Tensor":
            what = "planned tensors" if x.allocation_info is not None else "constant tensors"
            dim = len(x.sizes)
            if int(x.shape_dynamism) != 0:
                alloc(4 * dim, 4, what)
                alloc(dim, 1, what)
            alloc(4 * dim, 4, what)
            alloc(TENSOR_IMPL_BYTES, 4, what)
        elif kind == "TensorList":
            n = len(x.items)
            alloc(4 * n, 4, "other lists")
            alloc(4 * n, 4, "other lists")
            alloc(BOXED_LIST_BYTES, 4, "other lists")
        elif kind == "OptionalTensorList":
            n = len(x.items)
            alloc(4 * n, 4, "other lists")
            alloc(8 * n, 4, "other lists")
            alloc(BOXED_LIST_BYTES, 4, "other lists")
    alloc(BACKEND_DELEGATE_BYTES * len(plan.delegates), 8, "delegates")
    for d in plan.delegates:
        alloc(COMPILE_SPEC_BYTES * len(d.compile_specs), 4, "delegates")
    alloc(CHAIN_BYTES * len(plan.chains), 4, "chains")
    for chain in plan.chains:
        n = len(chain.instructions)
        alloc(4 * n, 4, "instructions")
        alloc(INSTRUCTION_ARGS_BYTES * n, 4, "instructions")
        for ins in chain.instructions:
            args = ins.instr_args
            kind = type(args).__name__
            if kind in ("KernelCall", "DelegateCall"):
                alloc(4 * len(args.args), 4, "instructions")
            if kind == "KernelCall":
                n_args = len(args.args)
                if temp_allocator_size >= (TENSOR_META_BYTES + TENSOR_DIMENSION_LIMIT) * n_args:
                    continue  # lookup scratch comes from the temp allocator and is released
                alloc(TENSOR_META_BYTES * n_args, 4, "operator lookup")
                for i in args.args:
                    if type(values[i].val).__name__ == "Tensor":
                        alloc(len(values[i].val.sizes), 1, "operator lookup")
    return {k: v for k, v in by_kind.items() if v}


def operator_lookup_scratch(pte: bytes) -> int:
    """Temp-allocator bytes that keep every kernel's operator-lookup scratch out of the method pool.

    ``Method::resolve_operator`` (runtime/executor/method.cpp, ExecuTorch 1.5) takes its
    ``TensorMeta[a]`` list and the dim orders from the temp allocator, and resets it afterwards, when
    that allocator's size is at least ``(sizeof(TensorMeta) + kTensorDimensionLimit) * a`` =
    28a bytes for a kernel call of ``a`` arguments; otherwise they stay in the method pool for the
    life of the method.

    Args:
        pte: the serialized program.

    Returns:
        int: bytes (a multiple of :data:`POOL_ALIGNMENT`): 28 x the most arguments of any kernel
        call, 0 for a program without kernel calls.

    Raises:
        ProgramError: the bytes are not an ExecuTorch program.
    """
    plan = _execution_plan(pte)
    most = max(
        (
            len(i.instr_args.args)
            for c in plan.chains
            for i in c.instructions
            if type(i.instr_args).__name__ == "KernelCall"
        ),
        default=0,
    )
    return _round_up((TENSOR_META_BYTES + TENSOR_DIMENSION_LIMIT) * most, POOL_ALIGNMENT)


def temp_pool_size(vela_scratch: int, pte: bytes) -> int:
    """Bytes of the temp pool: the program's own temp need, or the lookup scratch when that saves RAM.

    The temp pool always holds ``vela_scratch`` (``ProgramReport.temp_allocator_size``: the Vela
    scratch on the Ethos-U path, 0 on the Cortex-M path).
    When it is smaller than :func:`operator_lookup_scratch`, it is raised to that size only if the
    method pool then shrinks by more than the temp pool grows (measured on the MLPerf Tiny samples
    for cortex-m55 by the replay: kws 14,304 B method pool -> 11,648 B + 448 B temp pool, 2,208 B
    less; vww 6,256 B less; ic 2,848 B; ad 1,312 B).

    Args:
        vela_scratch: bytes of the program's own temp-allocator need. pte: the serialized program.

    Returns:
        int: bytes, a multiple of :data:`POOL_ALIGNMENT`; 0 means no temp pool.

    Raises:
        ProgramError: ``pte`` is not an ExecuTorch program.
    """
    own = _round_up(vela_scratch, POOL_ALIGNMENT)
    lookup = operator_lookup_scratch(pte)
    if own >= lookup:
        return own
    without = _round_up(method_allocator_use(pte, own), POOL_ALIGNMENT) + own
    with_lookup = _round_up(method_allocator_use(pte, lookup), POOL_ALIGNMENT) + lookup
    return lookup if with_lookup < without else own


def method_allocator_bound_from_stats(stats: ProgramStats) -> int:
    """A coarser upper bound in bytes from a report's ``stats`` alone (no ``.pte``), rounded up to 16.

    Every value that is not a tensor is counted as if it were an int-list item (4 + 8 bytes plus
    a 12-byte box and padding per item), every kernel argument as a tensor of 8 dims.
    """
    s = stats
    other = max(0, s.num_values - s.num_tensors)
    total = (
        EVALUE_BYTES * s.num_values
        + _round_up(s.num_inputs, 8)
        + (TENSOR_IMPL_BYTES + 4) * s.num_tensors
        + 9 * s.num_tensor_dims
        + (4 + 8 + BOXED_LIST_BYTES + 4) * other
        + (4 + 4 + BOXED_LIST_BYTES) * s.num_tensor_lists
        + 8 * s.num_tensor_list_items
        + (BACKEND_DELEGATE_BYTES + 8 * COMPILE_SPEC_BYTES) * s.num_delegate_calls
        + CHAIN_BYTES * s.num_chains
        + (4 + INSTRUCTION_ARGS_BYTES) * s.num_instructions
        + (4 + TENSOR_META_BYTES + 8) * s.num_kernel_call_args
        + 4 * s.num_delegate_call_args
        + 64
    )
    return _round_up(total, POOL_ALIGNMENT)


def method_allocator_bound(pte: bytes, vela_scratch: int = 0) -> int:
    """Bytes to reserve for the method allocator: the exact replay rounded up to 16 bytes.

    Args:
        pte: the serialized program. vela_scratch: the program's own temp need in bytes; the
            firmware's temp pool is :func:`temp_pool_size` bytes.

    Returns:
        int: bytes, a multiple of :data:`POOL_ALIGNMENT`.

    Raises:
        ProgramError: ``pte`` is not an ExecuTorch program.
    """
    return _round_up(method_allocator_use(pte, temp_pool_size(vela_scratch, pte)), POOL_ALIGNMENT)


def plan_method_allocator(pte: bytes, vela_scratch: int = 0) -> MethodAllocatorPlan:
    """The method and temp pools of a program, from the exact replay (what the report records).

    Args:
        pte: the serialized program. vela_scratch: the program's own temp need in bytes.

    Raises:
        ProgramError: ``pte`` is not an ExecuTorch program.
    """
    temp = temp_pool_size(vela_scratch, pte)
    use = method_allocator_use(pte, temp)
    return MethodAllocatorPlan(method_pool=_round_up(use, POOL_ALIGNMENT), temp_pool=temp, method_use=use,
                               temp_load_only=temp > 0 and vela_scratch == 0 and planned_memory_idle_at_load(pte))


#: Operators whose kernels take temp memory while the method executes (``ctx.allocate_temp``): in
#: ExecuTorch 1.5 only the portable ``topk`` (``kernels/portable/cpu/op_topk.cpp``); cortex_m and
#: quantized kernels take none. A program with one keeps its temp pool.
RUNTIME_TEMP_OPERATORS = frozenset({"aten::topk"})


def planned_memory_idle_at_load(pte: bytes) -> bool:
    """Whether ``Method::init`` leaves every memory-planned buffer untouched and nothing needs the temp
    allocator once the method runs (no operator of :data:`RUNTIME_TEMP_OPERATORS`).

    It writes into planned memory only for a planned tensor that has initial values: a mutable
    buffer whose data is in the program (``data_buffer_idx`` > 0, copied by ExecuTorch's
    ``getTensorDataPtr``) or in an external ``.ptd`` (``extra_tensor_info``, ``load_data_into``).
    Delegates are excluded as well: a backend's ``init`` may keep pointers into planned memory.
    Source: ``runtime/executor/tensor_parser_exec_aten.cpp`` and ``method.cpp`` (ExecuTorch 1.5).

    Raises:
        ProgramError: ``pte`` is not an ExecuTorch program.
    """
    plan = _execution_plan(pte)
    if plan.delegates or any(op.name in RUNTIME_TEMP_OPERATORS for op in plan.operators):
        return False
    for v in plan.values:
        t = v.val
        if type(t).__name__ != "Tensor" or t.allocation_info is None:
            continue
        if t.data_buffer_idx != 0 or (t.extra_tensor_info is not None and t.extra_tensor_info.fully_qualified_name):
            return False
    return True


def with_method_allocator(report: ProgramReport, pte: bytes) -> ProgramReport:
    """``report`` with its :class:`MethodAllocatorPlan` (for reports written before it was recorded).

    Raises:
        ProgramError: ``pte`` is not an ExecuTorch program.
    """
    if report.method_allocator is not None:
        return report
    return dataclasses.replace(report, method_allocator=plan_method_allocator(pte, report.temp_allocator_size))


def pool_sizes(report: ProgramReport) -> tuple[int, int]:
    """``(method pool, temp pool)`` in bytes for ``report``: the recorded replay, or, for a report
    without one, the coarser :func:`method_allocator_bound_from_stats` and the program's own temp need."""
    plan = report.method_allocator
    if plan is not None:
        return plan.method_pool, plan.temp_pool
    return (method_allocator_bound_from_stats(report.stats),
            _round_up(report.temp_allocator_size, POOL_ALIGNMENT))


def _round_up(n: int, a: int) -> int:
    return (n + a - 1) // a * a
