"""The memory plan of one project: where the model, ``.data``/``.bss``, the stack, the heap and every pool go.

Pools (agreed names, see the brief): one ``planned_<i>`` per planned buffer (memory id i, from 1,
sized exactly ``report.planned_buffers[i-1]``), ``method`` (the method allocator, sized by
``report.method_allocator.method_pool``) and ``temp`` (the temp allocator, only when the program needs
one: ``report.temp_allocator_size`` bytes, the Vela scratch on the Ethos-U path, 0 on the Cortex-M path
where the CMSIS-NN scratch buffers are already planned tensors; raised to the operator-lookup scratch
whenever that shrinks the method pool by more than it costs, see
:func:`armgen.model.method_allocator.temp_pool_size`). Each pool is a 16-byte-aligned static
array in input section ``.armgen_pool.<name>`` placed in the fastest board region (board
``SPEED_ORDER``) that may hold pools, still has room, and (for pools the NPU touches: planned and
temp on the Ethos-U path) has an ``npu_address``.

:func:`plan_memory` is a pure function of the report, the board and the options (the Zephyr flavour
is handed to it as a :class:`ZephyrFlavour`); :func:`armgen.project.spec.make_spec` records its
result in the :class:`~armgen.project.spec.ProjectSpec`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

from armgen.boards import Board, MemoryRegion, speed_rank
from armgen.errors import ProjectError
from armgen.model.method_allocator import POOL_ALIGNMENT, pool_sizes
from armgen.model.program_report import ProgramReport
from armgen.project.options import Backend, Rtos, reads_input_file

#: Heap for one-time initialisation allocations (the Ethos-U delegate's execution handle, 40 B).
#: The firmware refuses any heap use after init. 0 on the Cortex-M path: nothing allocates.
DEFAULT_HEAP_SIZE = {"cortex-m": 0, "ethos-u": 1024}
#: Bytes held back in the data region for ``.data``/``.bss`` (runtime statics, kernel table, console).
DATA_RESERVE = 8 * 1024


@dataclass(frozen=True)
class PoolPlan:
    """One static memory pool of the firmware.

    Attributes:
        name: ``planned_<i>``, ``method`` or ``temp``. bytes: size (exact for planned buffers).
        region: board region name it is placed in. section: input section ``.armgen_pool.<name>``.
        kind: ``planned`` / ``method`` / ``temp``. memory_id: ExecuTorch memory id for planned pools
            (1..N; MethodMeta index = memory_id - 1), else None.
        npu: the NPU reads or writes this pool (it sits in an NPU-reachable region).
    """

    name: str
    bytes: int
    region: str
    section: str
    kind: Literal["planned", "method", "temp"]
    memory_id: int | None = None
    npu: bool = False

    @property
    def symbol(self) -> str:
        """C symbol of the pool array, e.g. ``armgen_pool_planned_1``."""
        return f"armgen_pool_{self.name}"


class ZephyrFlavour(Protocol):
    """What a Zephyr spec is given about its board in one Zephyr release (the Zephyr flavour;
    :func:`armgen.project.zephyr.zephyr_placement` makes one). The spec stage imports no Zephyr code."""

    @property
    def release(self) -> str:
        """The Zephyr release name (``"4.4"``, ``"3.7"``)."""
        ...

    @property
    def target(self) -> str:
        """The board's Zephyr board target in that release (e.g. ``mps3/corstone300/an547``)."""
        ...

    @property
    def default_sram(self) -> str:
        """The armgen region that is the board's devicetree ``zephyr,sram``."""
        ...

    def sram_region(self, board: Board, uses_npu: bool, pools: Sequence[PoolPlan]) -> str:
        """The region armgen makes ``zephyr,sram`` given the planned pools."""
        ...


@dataclass(frozen=True)
class MemoryPlan:
    """Where everything goes (region names), the pools, and bytes placed per region."""

    code_region: str
    model_region: str
    data_region: str
    stack_region: str
    pools: tuple[PoolPlan, ...]
    placed: dict[str, int]
    heap_size: int
    method_bound: int
    zephyr_release: str | None
    zephyr_target: str | None


def plan_memory(
    report: ProgramReport, board: Board, rtos: Rtos, backend: Backend, stack_size: int,
    zephyr: ZephyrFlavour | None, uses_npu: bool,
) -> MemoryPlan:
    """Place the model, .data/.bss, the stack and heap, and every pool (see :func:`armgen.project.spec.make_spec`).

    Raises:
        ProjectError: the model or a pool fits no region (naming the region and the shortfall).
    """
    regions = {r.name: r for r in board.regions}
    placed: dict[str, int] = {r.name: 0 for r in board.regions}
    code_region = _code_region(board)
    # Zephyr's Ethos-U driver passes CPU addresses to the NPU unchanged (no ethosu_address_remap), so
    # there the NPU's buffers need a region it sees at its own address (not Alif's TCM aliases). The
    # bare-metal npu.c remaps through every alias the board gives (armgen.boards.npu.remap_windows).
    npu_reach = _npu_reach_rule(rtos)
    # The .pte: a non-volatile region first (read in place), then the fastest that fits; the NPU
    # reads weights and command stream from it in place, so it must be NPU-reachable when delegated.
    model_region = _place(
        "the model (.pte)" + (", whose command stream and weights the NPU reads in place," if uses_npu else ""),
        _round_up(report.pte_size, POOL_ALIGNMENT),
        [r for r in board.regions if "model" in r.uses and (not uses_npu or npu_reach(r))],
        placed,
        prefer_non_volatile=True,
    )
    # .data/.bss: runtime statics plus, on semihosting consoles, the buffer `armgen run` hands a
    # new input over in (input.bin: all inputs, in .bss).
    input_buffer = sum(t.nbytes for t in report.inputs) if reads_input_file(board, rtos) else 0
    heap_size = DEFAULT_HEAP_SIZE[backend]
    requests, method_bound = _pool_requests(report, uses_npu)
    planner = _PoolPlanner(board, dict(placed), requests, npu_reach,
                           DATA_RESERVE + _round_up(input_buffer, POOL_ALIGNMENT), stack_size + heap_size)

    if zephyr is not None:
        # On Zephyr .data/.bss, the main stack and the kernel heap live in the region chosen as
        # zephyr,sram; the Zephyr flavour picks that region (the NPU pools' region when delegated, else
        # the board's devicetree default). Decide it here, once, so armgen.toml, the summary, the README
        # and the overlay all read the same region from the spec.
        ram, placed, pool_plan = _zephyr_ram(planner, board, regions, zephyr, uses_npu)
        data_region = stack_region = ram
    else:
        data_region = _fastest([r for r in board.regions if "data" in r.uses and r.volatile], "data")
        stack_region = _fastest([r for r in board.regions if "stack" in r.uses and r.volatile], "stack")
        placed, pool_plan = planner.plan(data_region, stack_region)

    return MemoryPlan(
        code_region=code_region.name,
        model_region=model_region.name,
        data_region=data_region.name,
        stack_region=stack_region.name,
        pools=pool_plan,
        placed=placed,
        heap_size=heap_size,
        method_bound=method_bound,
        zephyr_release=zephyr.release if zephyr is not None else None,
        zephyr_target=zephyr.target if zephyr is not None else None,
    )


def _npu_reach_rule(rtos: Rtos) -> Callable[[MemoryRegion], bool]:
    """Where the NPU may touch memory: at the region's own address on Zephyr (its driver does no
    address remap), through any alias on bare metal (the generated ``ethosu_address_remap``
    translates the CPU address of every buffer the driver hands the NPU; ``templates/baremetal/
    project/src/platform/npu.c.j2``)."""
    if rtos == "zephyr":
        return lambda r: r.npu_address == r.base
    return lambda r: r.npu_address is not None


@dataclass(frozen=True)
class _PoolRequest:
    """A pool to place: name, bytes, kind, memory id (planned buffers) and whether the NPU uses it."""

    name: str
    bytes: int
    kind: str
    memory_id: int | None
    npu: bool


def _pool_requests(report: ProgramReport, uses_npu: bool) -> tuple[list[_PoolRequest], int]:
    """The pools the program needs (planned buffers, method, temp) and the method-allocator bound."""
    requests = [
        _PoolRequest(f"planned_{i}", int(size), "planned", i, uses_npu)
        for i, size in enumerate(report.planned_buffers, start=1)
    ]
    method_bound, temp_size = pool_sizes(report)
    requests.append(_PoolRequest("method", method_bound, "method", None, False))
    if temp_size > 0 and load_scratch_host(report) is None:
        # The NPU reads and writes the Vela scratch; the lookup scratch alone is CPU-only.
        requests.append(_PoolRequest("temp", temp_size, "temp", None, uses_npu and report.temp_allocator_size > 0))
    return requests, method_bound


def load_scratch_host(report: ProgramReport) -> tuple[str, int] | None:
    """The planned pool whose start holds the operator-lookup scratch during ``load_method``.

    ExecuTorch's ``Method::resolve_operator`` takes the kernel-lookup scratch (``TensorMeta`` lists)
    from the temp allocator and resets it after each operator; on the Cortex-M path nothing else
    uses that allocator. When the program also leaves planned memory untouched until its first
    execute (:attr:`~armgen.model.program_report.MethodAllocatorPlan.temp_load_only`), the firmware
    hands the temp allocator the start of the largest planned pool for ``load_method`` and an empty
    one afterwards, which is what TFLite Micro does with its arena's head during ``Prepare``. Saves
    the temp pool's bytes (kws: 448 B).

    Returns:
        ``(pool name, scratch bytes)``, or None: keep a temp pool (Vela scratch, mutable buffers,
        delegates, a kernel that takes temp memory while it runs such as portable ``topk``, a report
        without the replay, or no planned pool large enough).
    """
    plan = report.method_allocator
    if plan is None or not plan.temp_load_only or plan.temp_pool <= 0:
        return None
    sizes = list(report.planned_buffers)
    if not sizes or max(sizes) < plan.temp_pool:
        return None
    return f"planned_{sizes.index(max(sizes)) + 1}", plan.temp_pool


@dataclass(frozen=True)
class _PoolPlanner:
    """Places the pools once data, stack and heap are reserved (largest first, fastest region).

    Attributes:
        board. after_model: bytes already placed per region (the model). requests: the pools.
        npu_reach: where the NPU may touch memory. data_reserve / stack_reserve: bytes for .data/.bss
            (with the input.bin buffer) and for stack + heap.
    """

    board: Board
    after_model: dict[str, int]
    requests: list[_PoolRequest]
    npu_reach: Callable[[MemoryRegion], bool]
    data_reserve: int
    stack_reserve: int

    def plan(
        self, data_region: MemoryRegion, stack_region: MemoryRegion
    ) -> tuple[dict[str, int], tuple[PoolPlan, ...]]:
        """Bytes placed per region and the pools (planned by memory id, then method, then temp).

        Raises:
            ProjectError: a region is short for stack, heap and data, or a pool fits nowhere.
        """
        placed = dict(self.after_model)
        placed[data_region.name] += self.data_reserve
        placed[stack_region.name] += self.stack_reserve
        for reg in (data_region, stack_region):
            if placed[reg.name] > reg.usable:
                raise ProjectError(
                    f"region {reg.name} is short by {placed[reg.name] - reg.usable} bytes for stack, heap and data",
                    hint="choose a smaller stack or a board with more RAM",
                )
        pools: dict[str, PoolPlan] = {}
        # Largest first so the big buffers get first pick of the fast regions they can fit.
        for req in sorted(self.requests, key=lambda w: (-w.bytes, w.name)):
            candidates = [
                r for r in self.board.regions
                if "pools" in r.uses and r.volatile and (not req.npu or self.npu_reach(r))
            ]
            if not candidates:
                raise ProjectError(
                    f"board '{self.board.name}' has no region for pool {req.name}"
                    + (" that the NPU can reach" if req.npu else ""),
                    hint="add a region with `uses: [pools]` (and npu_address) to the board file",
                )
            what = f"pool {req.name}" + (", which the NPU reads and writes," if req.npu else "")
            region = _place(what, _round_up(req.bytes, POOL_ALIGNMENT), candidates, placed)
            pools[req.name] = PoolPlan(
                name=req.name,
                bytes=req.bytes,
                region=region.name,
                section=f".armgen_pool.{req.name}",
                kind=req.kind,  # type: ignore[arg-type]
                memory_id=req.memory_id,
                npu=req.npu,
            )
        order = [r.name for r in self.requests if r.kind == "planned"] + ["method", "temp"]
        return placed, tuple(pools[n] for n in order if n in pools)


def _zephyr_ram(
    planner: _PoolPlanner, board: Board, regions: dict[str, MemoryRegion], zephyr: ZephyrFlavour, uses_npu: bool
) -> tuple[MemoryRegion, dict[str, int], tuple[PoolPlan, ...]]:
    """zephyr,sram (data, stack and heap in one region) and the pools planned around it.

    Raises:
        ProjectError: no region satisfies both the NPU pools and Zephyr's single RAM region.
    """
    ram = regions.get(zephyr.default_sram) or _fastest(
        [r for r in board.regions if "data" in r.uses and r.volatile], "data")
    placed, pool_plan = planner.plan(ram, ram)
    sram = zephyr.sram_region(board, uses_npu, pool_plan)
    if sram != ram.name:
        ram = regions[sram]
        placed, pool_plan = planner.plan(ram, ram)
        again = zephyr.sram_region(board, uses_npu, pool_plan)
        if again != sram:
            raise ProjectError(
                f"no consistent zephyr,sram region: with stack and data in {sram} the NPU pools move to {again}",
                hint="give the NPU-reachable RAM regions more room in the board file, or choose a smaller stack",
            )
    return ram, placed, pool_plan


# ---- helpers -----------------------------------------------------------------------------------
def _round_up(n: int, a: int) -> int:
    return (n + a - 1) // a * a


def _fastest(candidates: list[MemoryRegion], use: str) -> MemoryRegion:
    if not candidates:
        raise ProjectError(f"the board has no RAM region that may hold {use}")
    return sorted(candidates, key=speed_rank)[0]


def _code_region(board: Board) -> MemoryRegion:
    vt = board.baremetal.vector_table
    for r in board.regions:
        if "code" in r.uses and r.base <= vt < r.base + r.size:
            return r
    raise ProjectError(f"board '{board.name}': no code region holds the vector table at {vt:#x}")


def _place(
    what: str,
    size: int,
    candidates: list[MemoryRegion],
    placed: dict[str, int],
    *,
    prefer_non_volatile: bool = False,
) -> MemoryRegion:
    """Put ``size`` bytes into the first candidate (by speed) with room; raise naming the shortfall."""
    if not candidates:
        raise ProjectError(f"the board has no region that may hold {what}")
    key = (lambda r: (0 if not r.volatile else 1, *speed_rank(r))) if prefer_non_volatile else speed_rank
    ordered = sorted(candidates, key=key)
    for r in ordered:
        if r.usable - placed[r.name] >= size:
            placed[r.name] += size
            return r
    best = max(ordered, key=lambda r: (r.usable - placed[r.name], -r.base))
    free = best.usable - placed[best.name]
    raise ProjectError(
        f"{what} needs {size} bytes but fits no region: {best.name} (the largest, {free} bytes free of "
        f"{best.usable}) is short by {size - free} bytes",
        hint="pick a board with more memory, or a smaller model",
    )
