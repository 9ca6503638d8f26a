"""ProgramReport + Board + options -> :class:`ProjectSpec`: the resolved plan of one firmware project.

The spec stage decides everything the rendered project hard-codes: its name and flavour, where the
``.pte`` and each memory pool live, how large every pool is, which operators are registered, and the
budgets the size stage checks. It writes nothing; :mod:`armgen.project.render` turns a spec into files.
:func:`make_spec` is the entry; its parts live beside it:

    options        the project's options checked and defaulted (name, RTOS, backend, stack, front
                   end) and the check that the program suits the board
    memory_plan    the pools (``planned_<i>``, ``method``, ``temp``), their sizes and the regions the
                   model, data, stack, heap and pools are placed in

The method and temp pools are sized from the report's :class:`~armgen.model.program_report.
MethodAllocatorPlan`, the model stage's exact replay of ``Method::init`` (see
:mod:`armgen.model.method_allocator`); a spec is a pure function of the report, the board and the
options, and reads no file.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from armgen import __version__ as ARMGEN_VERSION
from armgen.boards import Board
from armgen.errors import ProjectError
from armgen.model.frontend import Frontend
from armgen.model.program_report import ProgramReport, TensorInfo
from armgen.project.memory_plan import (
    DATA_RESERVE,
    DEFAULT_HEAP_SIZE,
    PoolPlan,
    ZephyrFlavour,
    load_scratch_host,
    plan_memory,
)
from armgen.project.options import (
    DEFAULT_STACK_SIZE,
    MIN_STACK_SIZE,
    MODEL_SUFFIXES,
    Backend,
    Rtos,
    check_frontend,
    check_program_fits,
    check_stack_auto,
    check_stack_size,
    default_backend,
    default_rtos,
    reads_input_file,
    resolve_options,
    validate_name,
)

# The names that moved to .options and .memory_plan stay importable from here.
__all__ = [
    "DATA_RESERVE",
    "DEFAULT_HEAP_SIZE",
    "DEFAULT_STACK_SIZE",
    "MIN_STACK_SIZE",
    "MODEL_SUFFIXES",
    "Backend",
    "IoSpec",
    "PoolPlan",
    "ProjectSpec",
    "RegionUse",
    "Rtos",
    "ZephyrFlavour",
    "check_frontend",
    "check_stack_auto",
    "check_stack_size",
    "cmsis_nn_optimization",
    "default_backend",
    "default_rtos",
    "load_scratch_host",
    "make_spec",
    "portable_source_for",
    "reads_input_file",
    "resolve_options",
    "validate_name",
]


_CTYPES = {
    "int8": "int8_t",
    "uint8": "uint8_t",
    "int16": "int16_t",
    "int32": "int32_t",
    "float32": "float",
    "bool": "bool",
}


@dataclass(frozen=True)
class IoSpec:
    """One method input or output as the C API sees it.

    Attributes:
        index, dtype, shape, dim_order, nbytes: from the report. ctype: C element type.
        numel: element count. scale / zero_point: I/O quantization (None for float I/O).
    """

    index: int
    dtype: str
    ctype: str
    shape: tuple[int, ...]
    dim_order: tuple[int, ...]
    nbytes: int
    numel: int
    scale: float | None
    zero_point: int | None


@dataclass(frozen=True)
class RegionUse:
    """Bytes the spec places in one board region (model + pools + stack + heap + data reserve)."""

    name: str
    base: int
    usable: int
    placed: int

    @property
    def free(self) -> int:
        """Bytes left: ``usable - placed`` (may be negative only in error messages)."""
        return self.usable - self.placed


@dataclass(frozen=True)
class ProjectSpec:
    """Everything a generated project hard-codes, resolved and checked.

    Attributes:
        name: project name (C/CMake identifier). rtos / backend: flavour and delegate choice.
        board: the Board. board_ref: how the user named it (name, alias or path) for ``armgen.toml``.
        report: the ProgramReport. pte_path / report_path: source files copied into the project.
        reference_path: the report's ``.npz`` reference (sample input/output), None when absent.
        model_source / weights: what the program was compiled from (for the project record).
        pools: the memory-pool plan (planned pools by memory id, then method, then temp).
        code_region / model_region / data_region / stack_region: region names.
        stack_size / heap_size: bytes. method_allocator_bound: bytes (== the method pool size).
        selected_operators: ``ns::op.overload`` of non-prim ops, sorted (selected-ops YAML roots).
        prim_operators: prim ops of the program (registered through the selective prim-ops lib).
        kernel_libraries: sorted subset of ``cortex_m``, ``portable``, ``quantized``.
        portable_sources: ``kernels/portable/cpu/op_<x>.cpp`` file names the portable ops need.
        cortex_m_sources: ``backends/cortex_m/ops/op_<x>.cpp`` file names the cortex_m ops need.
        cmsis_nn_optimization: the compiler optimization flag CMSIS-NN is built with
            (:func:`cmsis_nn_optimization`).
        uses_npu: the program has an Ethos-U delegate. inputs / outputs: the C API's I/O.
        region_use: per-region bytes planned by this spec (sorted by base).
        budgets: ``{"flash": bytes, "ram": bytes}`` from the board.
        armgen_version / executorch_version: for the record.
        zephyr_release: the Zephyr release a Zephyr project is written for (``"3.7"``, ``"4.4"``;
            :mod:`armgen.project.zephyr`), None for bare metal. zephyr_target: the board's target in that
            release (``mps3/an547``), None for bare metal.
        stack_auto: ``armgen build`` sizes the stack from a measured run (``[memory] stack = "auto"``,
            :mod:`armgen.firmware.stack`); ``stack_size`` is then the size it measures with.
    """

    name: str
    rtos: Rtos
    backend: Backend
    board: Board
    board_ref: str
    report: ProgramReport
    pte_path: Path
    report_path: Path | None
    reference_path: Path | None
    model_source: str
    weights: str | None
    pools: tuple[PoolPlan, ...]
    code_region: str
    model_region: str
    data_region: str
    stack_region: str
    stack_size: int
    heap_size: int
    method_allocator_bound: int
    selected_operators: tuple[str, ...]
    prim_operators: tuple[str, ...]
    kernel_libraries: tuple[str, ...]
    portable_sources: tuple[str, ...]
    uses_npu: bool
    inputs: tuple[IoSpec, ...]
    outputs: tuple[IoSpec, ...]
    region_use: tuple[RegionUse, ...]
    budgets: dict[str, Any] = field(default_factory=dict)
    cortex_m_sources: tuple[str, ...] = ()
    cmsis_nn_optimization: str = "-Ofast"
    armgen_version: str = ARMGEN_VERSION
    executorch_version: str = ""
    zephyr_release: str | None = None
    zephyr_target: str | None = None
    frontend: Frontend | None = None
    class_labels: tuple[str, ...] = ()
    stack_auto: bool = False
    calibration: str | None = None
    source_sha256: str | None = None
    weights_sha256: str | None = None

    @property
    def target(self) -> str:
        """The compile target string of the program (e.g. ``cortex-m55``, ``ethos-u85-256``)."""
        return self.report.target

    @property
    def cpu(self) -> str:
        """The board's CPU core, e.g. ``cortex-m55``."""
        return self.board.cpu.core

    def pool(self, name: str) -> PoolPlan:
        """Return the pool called ``name``. Raises KeyError when absent."""
        for p in self.pools:
            if p.name == name:
                return p
        raise KeyError(name)

    @property
    def load_scratch(self) -> tuple[str, int] | None:
        """``(planned pool, bytes)`` that lends its start to the operator-lookup scratch while
        ``load_method`` runs, in place of a temp pool; None when the project has a temp pool or none
        is needed (:func:`load_scratch_host`)."""
        if any(p.kind == "temp" for p in self.pools):
            return None
        return load_scratch_host(self.report)


def cmsis_nn_optimization(board: Board) -> str:
    """The optimization flag for CMSIS-NN (its CMake cache variable ``CMSIS_OPTIMIZATION_LEVEL``).

    CMSIS-NN's own default is ``-Ofast``. That is kept for cores with Helium (MVE), where it is the
    faster choice; cores without MVE get ``-O2``, which TFLite Micro's Makefile also uses and which
    is both faster and smaller there. Measured with armgen on QEMU (2026-11-30, GCC 12.2,
    CMSIS-NN dbf45dbf), instructions per inference and flash, ``-O2`` against ``-Ofast``:
    mps2-an386 (Cortex-M4) kws 8,326,160 vs 8,480,560 and 2,048 B less; vww 24,228,600 vs
    24,850,960 and 2,048 B less; ic 29,889,160 vs 29,901,080 and 896 B less (the gain is
    ``arm_depthwise_conv_3x3_s8``); mps3-an547 (Cortex-M55) kws 1,837,438 vs 1,809,219, 1,504 B less.

    Returns:
        str: ``"-Ofast"`` or ``"-O2"``.
    """
    return "-Ofast" if board.cpu.mve != "none" else "-O2"


def portable_source_for(op: str) -> str:
    """File name of the portable kernel source that implements ``ns::name.overload``.

    ExecuTorch names each portable (and cortex_m) kernel source after the operator's base name
    (``aten::add.out`` -> ``op_add.cpp``, ``dim_order_ops::_clone_dim_order.out`` ->
    ``op__clone_dim_order.cpp``, ``cortex_m::quantized_conv2d.out`` -> ``op_quantized_conv2d.cpp``);
    the generated CMake checks the files exist in the workspace and falls back to the whole
    kernel library otherwise.
    """
    base = op.split("::", 1)[-1].split(".", 1)[0]
    return f"op_{base}.cpp"


def make_spec(
    report: ProgramReport, board: Board, *, name: str, pte_path: Path, report_path: Path | None = None,
    board_ref: str | None = None, rtos: Rtos | None = None, backend: Backend | None = None,
    model_source: str | None = None, weights: str | None = None, stack_size: int = DEFAULT_STACK_SIZE,
    executorch_version: str | None = None, allow_cpu_mismatch: bool = False, zephyr: ZephyrFlavour | None = None,
    frontend: Frontend | None = None, class_labels: tuple[str, ...] = (),
) -> ProjectSpec:
    """Plan a project: check the inputs agree, size and place every pool, pick the op libraries.

    Args:
        report: the compiled program's report; pte_path: its ``.pte``.
        board: the target board. name: project name (validated, see :func:`validate_name`).
        rtos / backend: None picks :func:`default_rtos` / :func:`default_backend`.
        stack_size: main stack in bytes.
        allow_cpu_mismatch: accept a Cortex-M program planned for another CPU than the board's
            (only for emulator stand-ins, e.g. a Cortex-M85 program on QEMU's Cortex-M55).
        zephyr: the board in the project's Zephyr release (required when the RTOS is Zephyr; see
            :func:`armgen.project.zephyr.zephyr_placement`).
        frontend: an audio front end generated in C in front of the model (bare metal or Zephyr; the program
            must take one int8 input of ``num_frames x frame_features`` elements). class_labels: the
            output classes' names (``armgen run`` prints the top one).

    Returns:
        ProjectSpec: frozen.

    Raises:
        ProjectError: bad name; Ethos-U asked for a board without NPU; the report's backend differs
            from the one asked for; an Ethos-U program compiled for another NPU configuration than
            the board's ``npu.vela_accelerator`` (e.g. ethos-u55-256 for an ethos-u85-256); the model or
            a pool fits no region (message names the region and the shortfall in bytes).
    """
    backend, rtos = resolve_options(name, board, backend, rtos)
    check_stack_size(stack_size)
    check_program_fits(report, board, backend, Path(pte_path), allow_cpu_mismatch)
    if rtos == "zephyr" and zephyr is None:
        raise ProjectError(f"a Zephyr project for board '{board.name}' needs the board's Zephyr target",
                           hint="give make_spec zephyr=armgen.project.zephyr.zephyr_placement(board, release)")
    if frontend is not None:
        check_frontend(frontend, report, rtos)
    uses_npu = report.uses_npu
    mem = plan_memory(report, board, rtos, backend, stack_size, zephyr if rtos == "zephyr" else None, uses_npu)
    report_dir = Path(report_path).parent if report_path else Path(pte_path).parent
    ref = report.files.get("reference")
    ops = [(f"{o.name}.{o.overload}", o.library) for o in report.operators]
    return ProjectSpec(
        name=name,
        rtos=rtos,
        backend=backend,
        board=board,
        board_ref=board_ref or board.name,
        report=report,
        pte_path=Path(pte_path),
        report_path=Path(report_path) if report_path else None,
        reference_path=(report_dir / ref) if ref and (report_dir / ref).is_file() else None,
        model_source=model_source or f"sample:{report.name}",
        weights=weights,
        pools=mem.pools,
        code_region=mem.code_region,
        model_region=mem.model_region,
        data_region=mem.data_region,
        stack_region=mem.stack_region,
        stack_size=stack_size,
        heap_size=mem.heap_size,
        method_allocator_bound=mem.method_bound,
        selected_operators=tuple(sorted(op for op, lib in ops if lib != "prim")),
        prim_operators=tuple(sorted(op for op, lib in ops if lib == "prim")),
        kernel_libraries=tuple(sorted({lib for _, lib in ops if lib in ("cortex_m", "portable", "quantized")})),
        portable_sources=tuple(sorted({portable_source_for(op) for op, lib in ops if lib == "portable"})),
        uses_npu=uses_npu,
        inputs=tuple(_io(t) for t in report.inputs),
        outputs=tuple(_io(t) for t in report.outputs),
        region_use=tuple(
            RegionUse(name=r.name, base=r.base, usable=r.usable, placed=mem.placed[r.name])
            for r in sorted(board.regions, key=lambda r: r.base)
            if mem.placed[r.name]
        ),
        budgets={"flash": board.budgets.flash, "ram": board.budgets.ram},
        cortex_m_sources=tuple(sorted({portable_source_for(op) for op, lib in ops if lib == "cortex_m"})),
        cmsis_nn_optimization=cmsis_nn_optimization(board),
        executorch_version=executorch_version or report.executorch_version,
        zephyr_release=mem.zephyr_release,
        zephyr_target=mem.zephyr_target,
        frontend=frontend,
        class_labels=tuple(class_labels),
    )


def _io(t: TensorInfo) -> IoSpec:
    numel = 1
    for d in t.shape:
        numel *= int(d)
    ctype = _CTYPES.get(t.dtype)
    if ctype is None:
        raise ProjectError(f"program I/O tensor {t.index} has dtype {t.dtype}, which armgen's C API does not handle")
    return IoSpec(
        index=t.index,
        dtype=t.dtype,
        ctype=ctype,
        shape=tuple(int(d) for d in t.shape),
        dim_order=tuple(int(d) for d in t.dim_order),
        nbytes=t.nbytes,
        numel=numel,
        scale=t.scale,
        zero_point=t.zero_point,
    )
