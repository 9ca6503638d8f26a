"""ProgramReport + Board + options -> :class:`ProjectSpec`: the resolved plan of one firmware project.

The spec stage decides everything the rendered project hard-codes: its name and flavour, where the
``.pte`` and each memory pool live, how large every pool is, which operators are registered, and the
budgets the size stage checks. It writes nothing; :mod:`armgen.project.render` turns a spec into files.

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

The method and temp pools are sized from the report's :class:`~armgen.model.program_report.
MethodAllocatorPlan`, the model stage's exact replay of ``Method::init`` (see
:mod:`armgen.model.method_allocator`); a spec is a pure function of the report, the board and the
options, and reads no file.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, Protocol

from armgen import __version__ as ARMGEN_VERSION
from armgen.boards import Board, MemoryRegion, speed_rank
from armgen.errors import ProjectError
from armgen.model.frontend import MfccFrontend
from armgen.model.method_allocator import POOL_ALIGNMENT, pool_sizes
from armgen.model.program_report import ProgramReport, TensorInfo

Rtos = Literal["baremetal", "zephyr"]
Backend = Literal["cortex-m", "ethos-u"]

#: Default main stack in bytes (the hand-made DS-CNN build peaked at about 1.9 KB without logging).
DEFAULT_STACK_SIZE = 8 * 1024
#: Heap for one-time initialisation allocations (the Ethos-U delegate's execution handle, 40 B).
#: The firmware refuses any heap use after init. 0 on the Cortex-M path: nothing allocates.
DEFAULT_HEAP_SIZE = {"cortex-m": 0, "ethos-u": 1024}
#: Bytes held back in the data region for ``.data``/``.bss`` (runtime statics, kernel table, console).
DATA_RESERVE = 8 * 1024

#: File suffixes of the models `armgen new --model` takes (a NAME ending in one is a misplaced model).
MODEL_SUFFIXES = (".py", ".pt2", ".pte", ".pt", ".onnx", ".tflite")

_C_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_C_KEYWORDS = frozenset(
    [
        "auto", "break", "case", "char", "const", "continue", "default", "do", "double", "else", "enum",
        "extern", "float", "for", "goto", "if", "inline", "int", "long", "register", "restrict", "return",
        "short", "signed", "sizeof", "static", "struct", "switch", "typedef", "union", "unsigned", "void",
        "volatile", "while", "class", "namespace", "new", "delete", "template", "this", "main",
    ]
)

_CTYPES = {
    "int8": "int8_t",
    "uint8": "uint8_t",
    "int16": "int16_t",
    "int32": "int32_t",
    "float32": "float",
    "bool": "bool",
}


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
    budgets: dict[str, int] = field(default_factory=dict)
    cortex_m_sources: tuple[str, ...] = ()
    cmsis_nn_optimization: str = "-Ofast"
    armgen_version: str = ARMGEN_VERSION
    executorch_version: str = ""
    zephyr_release: str | None = None
    zephyr_target: str | None = None
    frontend: MfccFrontend | None = None
    class_labels: tuple[str, ...] = ()
    stack_auto: bool = False

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


#: Smallest main stack ``--stack-size`` accepts (bytes): start-up, ``main`` and one kernel call.
MIN_STACK_SIZE = 512


def check_stack_auto(board: Board, rtos: str) -> None:
    """Refuse ``--stack-size auto`` where ``armgen build`` cannot measure the image it builds.

    Raises:
        ProjectError: a Zephyr project (its main stack is Kconfig's ``CONFIG_MAIN_STACK_SIZE``; not
            sized by measurement yet), or a board whose own image does not run on QEMU.
    """
    if rtos == "zephyr":
        raise ProjectError("--stack-size auto: bare metal only for now (Zephyr's main stack is "
                           "CONFIG_MAIN_STACK_SIZE)", hint="give --stack-size in bytes")
    emulator = board.emulator
    if emulator is None or emulator.board != board.name:
        raise ProjectError(
            f"--stack-size auto: board '{board.name}' does not run on QEMU, so its image cannot be measured",
            hint="give --stack-size in bytes (armgen run on a QEMU board of the same CPU prints the high-water mark)",
        )


def check_stack_size(stack_size: int) -> int:
    """Validate a main-stack size: bytes, a multiple of 8 (AAPCS stack alignment), at least 512.

    Returns:
        int: ``stack_size`` unchanged.

    Raises:
        ProjectError: not a multiple of 8 or below :data:`MIN_STACK_SIZE`.
    """
    if stack_size < MIN_STACK_SIZE or stack_size % 8:
        raise ProjectError(
            f"stack size {stack_size} B: must be a multiple of 8 and at least {MIN_STACK_SIZE} B",
            hint="size it from the high-water mark `armgen run` prints, with some headroom",
        )
    return stack_size


def validate_name(name: str) -> str:
    """Check that ``name`` is a C and CMake identifier usable as a directory name.

    Returns:
        str: the name unchanged.

    Raises:
        ProjectError: for an empty name, a model file name (the hint shows ``--model``), path
            separators or ``..`` (escaping ``--out``), characters outside ``[A-Za-z0-9_]``, a leading
            digit, a C keyword, or more than 64 characters.
    """
    if not name:
        raise ProjectError("project name is empty")
    if name.lower().endswith(MODEL_SUFFIXES) or ".py:" in name:
        # `armgen new model.py --board B`: the model file was given where the project name goes.
        stem = re.sub(r"[^A-Za-z0-9_]", "_", Path(name.split(":")[0]).stem) or "model"
        raise ProjectError(
            f"'{name}' looks like a model file, not a project name",
            hint=f"name the project and pass the model with --model: armgen new {stem} --model {name} --board BOARD",
        )
    if "/" in name or "\\" in name or name in (".", "..") or ".." in name:
        raise ProjectError(
            f"project name '{name}' is a path; it must name one directory inside --out",
            hint="use --out DIR to choose where the project goes and a plain identifier as NAME",
        )
    if not _C_IDENT.match(name) or len(name) > 64:
        raise ProjectError(
            f"project name '{name}' is not a C/CMake identifier",
            hint="use letters, digits and '_' only, starting with a letter or '_' (at most 64 characters)",
        )
    if name in _C_KEYWORDS:
        raise ProjectError(f"project name '{name}' is a C/C++ keyword", hint="choose another name")
    return name


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


def reads_input_file(board: Board, rtos: str) -> bool:
    """True when the firmware reads ``armgen run``'s ``input.bin`` through semihosting: bare metal
    on a semihosting console (the QEMU boards), and Zephyr on a board that is a QEMU machine."""
    if rtos == "zephyr":
        return board.emulator is not None and board.emulator.board == board.name
    return board.baremetal.console == "semihosting"


def default_rtos(board: Board) -> Rtos:
    """Zephyr for boards Zephyr supports that are not QEMU machines; bare metal otherwise."""
    is_qemu = board.emulator is not None and board.emulator.board == board.name
    if board.zephyr is not None and not is_qemu:
        return "zephyr"
    return "baremetal"


def default_backend(board: Board) -> Backend:
    """Ethos-U when the board has an NPU, Cortex-M (CMSIS-NN) otherwise."""
    return "ethos-u" if board.npu is not None else "cortex-m"


def resolve_options(name: str, board: Board, backend: str | None, rtos: str | None) -> tuple[Backend, Rtos]:
    """Check NAME and fill in the board's default backend and RTOS: the cheap checks of ``new``.

    Returns:
        ``(backend, rtos)``, e.g. ``("ethos-u", "zephyr")`` for alif_e8 with no options.

    Raises:
        ProjectError: NAME is not a C/CMake identifier; an unknown backend or RTOS; Ethos-U asked for
            a board without NPU.
    """
    validate_name(name)
    chosen_backend: Backend
    chosen_rtos: Rtos
    if backend is None:
        chosen_backend = default_backend(board)
    elif backend in ("cortex-m", "ethos-u"):
        chosen_backend = backend  # type: ignore[assignment]  # narrowed by the check
    else:
        raise ProjectError(f"unknown backend '{backend}' (cortex-m or ethos-u)")
    if rtos is None:
        chosen_rtos = default_rtos(board)
    elif rtos in ("baremetal", "zephyr"):
        chosen_rtos = rtos  # type: ignore[assignment]  # narrowed by the check
    else:
        raise ProjectError(f"unknown RTOS '{rtos}' (baremetal or zephyr)")
    if chosen_backend == "ethos-u" and board.npu is None:
        raise ProjectError(
            f"board '{board.name}' has no Ethos-U NPU, so backend 'ethos-u' cannot be used",
            hint="use --backend cortex-m (CMSIS-NN kernels on the CPU)",
        )
    return chosen_backend, chosen_rtos


def make_spec(
    report: ProgramReport, board: Board, *, name: str, pte_path: Path, report_path: Path | None = None,
    board_ref: str | None = None, rtos: Rtos | None = None, backend: Backend | None = None,
    model_source: str | None = None, weights: str | None = None, stack_size: int = DEFAULT_STACK_SIZE,
    executorch_version: str | None = None, allow_cpu_mismatch: bool = False, zephyr: ZephyrFlavour | None = None,
    frontend: MfccFrontend | None = None, class_labels: tuple[str, ...] = (),
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
        frontend: an audio front end generated in C in front of the model (bare metal; the program
            must take one int8 input of ``num_frames x num_mfcc`` elements). class_labels: the
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
    _check_program_fits(report, board, backend, Path(pte_path), allow_cpu_mismatch)
    if rtos == "zephyr" and zephyr is None:
        raise ProjectError(f"a Zephyr project for board '{board.name}' needs the board's Zephyr target",
                           hint="give make_spec zephyr=armgen.project.zephyr.zephyr_placement(board, release)")
    if frontend is not None:
        check_frontend(frontend, report, rtos)
    uses_npu = any(d.backend_id == "EthosUBackend" for d in report.delegates)
    mem = _plan_memory(report, board, rtos, backend, stack_size, zephyr if rtos == "zephyr" else None, uses_npu)
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


def check_frontend_rtos(rtos: str) -> None:
    """The front end is generated for bare-metal projects only, for now.

    Raises:
        ProjectError: ``rtos`` is not ``baremetal``.
    """
    if rtos != "baremetal":
        raise ProjectError("--frontend is generated for bare-metal projects only (not yet for Zephyr)",
                           hint="add --rtos baremetal")


def check_frontend(frontend: MfccFrontend, report: ProgramReport, rtos: str) -> None:
    """Check an audio front end can feed the program.

    Raises:
        ProjectError: a Zephyr project (:func:`check_frontend_rtos`); a program that does not take one
            quantized int8 input of ``num_frames x num_mfcc`` elements.
    """
    check_frontend_rtos(rtos)
    want = frontend.num_frames * frontend.num_mfcc
    ins = report.inputs
    if len(ins) != 1 or ins[0].dtype != "int8" or ins[0].scale is None or ins[0].zero_point is None:
        raise ProjectError(f"the {frontend.kind} front end writes one quantized int8 input; program "
                           f"{report.name} takes {len(ins)} input(s) of {', '.join(t.dtype for t in ins)}")
    numel = math.prod(ins[0].shape)
    if numel != want:
        raise ProjectError(f"the {frontend.kind} front end makes {frontend.num_frames} x {frontend.num_mfcc} = {want} "
                           f"values; program {report.name}'s input {'x'.join(map(str, ins[0].shape))} has {numel}")


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
class _MemoryPlan:
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


def _plan_memory(
    report: ProgramReport, board: Board, rtos: Rtos, backend: Backend, stack_size: int,
    zephyr: ZephyrFlavour | None, uses_npu: bool,
) -> _MemoryPlan:
    """Place the model, .data/.bss, the stack and heap, and every pool (see :func:`make_spec`).

    Raises:
        ProjectError: the model or a pool fits no region (naming the region and the shortfall).
    """
    regions = {r.name: r for r in board.regions}
    placed: dict[str, int] = {r.name: 0 for r in board.regions}
    code_region = _code_region(board)
    # Zephyr's Ethos-U driver passes CPU addresses to the NPU unchanged (no ethosu_address_remap), so
    # there the NPU's buffers need a region it sees at its own address (not Alif's TCM aliases).
    npu_reach = _npu_reach_rule(rtos)
    # The .pte: a non-volatile region first (read in place), then the fastest that fits; the NPU
    # reads weights and command stream from it in place, so it must be NPU-reachable when delegated.
    model_region = _place(
        "the model (.pte)",
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

    return _MemoryPlan(
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


def _check_program_fits(
    report: ProgramReport, board: Board, backend: Backend, pte_path: Path, allow_cpu_mismatch: bool
) -> None:
    """The program's backend, NPU configuration and CPU agree with the board (see :func:`make_spec`).

    Raises:
        ProjectError: naming what differs and the compile command that fixes it.
    """
    if report.backend != backend:
        # `armgen compile` picks the backend from --target (cortex-m* or ethos-u*); it has no --backend.
        again = board.npu.vela_accelerator if backend == "ethos-u" and board.npu is not None else board.cpu.et_target
        raise ProjectError(
            f"program '{report.name}' was compiled for backend '{report.backend}', not '{backend}'",
            hint=f"compile again: armgen compile {report.name} --target {again} (or armgen new without --model)",
        )
    if backend == "ethos-u" and board.npu is not None and report.target != board.npu.vela_accelerator:
        # A Vela command stream only runs on the NPU configuration it was compiled for (the driver
        # checks the product and MAC count at init), so this holds for emulator stand-ins too.
        raise ProjectError(
            f"{pte_path.name} was compiled for {report.target}, but board {board.name} has an "
            f"{board.npu.vela_accelerator}",
            hint=f"compile again: armgen compile {report.name} --target {board.npu.vela_accelerator} "
            "(or armgen new without --model)",
        )
    if backend == "cortex-m" and not allow_cpu_mismatch and report.cpu != board.cpu.et_target:
        raise ProjectError(
            f"program '{report.name}' was compiled for {report.cpu}, but board '{board.name}' has a "
            f"{board.cpu.et_target} (CMSIS-NN scratch buffers are planned per CPU)",
            hint=f"compile again: armgen compile {report.name} --target {board.cpu.et_target} "
            "(or armgen new without --model)",
        )


def _npu_reach_rule(rtos: Rtos) -> Callable[[MemoryRegion], bool]:
    """Where the NPU may touch memory: at the region's own address on Zephyr (its driver does no
    address remap), through any alias on bare metal."""
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
            region = _place(f"pool {req.name}", _round_up(req.bytes, POOL_ALIGNMENT), candidates, placed)
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


def _round4(n: int) -> int:
    return _round_up(n, 4)


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
