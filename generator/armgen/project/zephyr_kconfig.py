"""Kconfig of a generated Zephyr application: ``prj.conf``'s sections and the pools' Kconfig symbols.

The Zephyr core symbols armgen writes are listed in :data:`ZEPHYR_CORE_SYMBOLS` with the Zephyr file that
declares each; the tests check every ``CONFIG_`` line of a generated project against it.
"""

from __future__ import annotations

from typing import Any

from armgen.boards import Board
from armgen.project.spec import ProjectSpec

#: Zephyr core Kconfig symbols armgen writes, with the Zephyr file that declares each (v4.4.0).
#: The tests check every ``CONFIG_`` line of a generated project against this table, the
#: project's own Kconfig and ExecuTorch's ``zephyr/Kconfig``.
ZEPHYR_CORE_SYMBOLS: dict[str, str] = {
    "CPP": "lib/cpp/Kconfig",
    "STD_CPP17": "lib/cpp/Kconfig",
    "FPU": "arch/Kconfig",
    "FP_HARDABI": "arch/arm/core/Kconfig",
    "MAIN_STACK_SIZE": "kernel/Kconfig",
    "HEAP_MEM_POOL_SIZE": "kernel/Kconfig",
    "INIT_STACKS": "kernel/Kconfig",
    "THREAD_STACK_INFO": "kernel/Kconfig",
    "CACHE_MANAGEMENT": "arch/Kconfig",
    "DCACHE": "arch/Kconfig",
    "ICACHE": "arch/Kconfig",
    "FLASH_LOAD_OFFSET": "Kconfig.zephyr",
    "SPEED_OPTIMIZATIONS": "Kconfig.zephyr",
    "CBPRINTF_NANO": "lib/os/Kconfig.cbprintf",
    "PICOLIBC_IO_FLOAT": "lib/libc/picolibc/Kconfig",
    "BOOT_BANNER": "kernel/Kconfig",
    "TIMESLICING": "kernel/Kconfig",
    "UART_INTERRUPT_DRIVEN": "drivers/serial/Kconfig",
    "LTO": "Kconfig.zephyr",
    "ISR_TABLES_LOCAL_DECLARATION": "arch/Kconfig",
    "COMMON_LIBC_MALLOC_ARENA_SIZE": "lib/libc/common/Kconfig",
    "SYS_CLOCK_HW_CYCLES_PER_SEC": "kernel/Kconfig",
    "HW_STACK_PROTECTION": "arch/Kconfig (v3.7.1 and v4.1.99)",
    "STACK_SENTINEL": "subsys/debug/Kconfig (v3.7.1 and v4.1.99)",
    "ETHOS_U": "modules/hal_ethos_u/Kconfig (renamed from ARM_ETHOS_U in v4.2, migration guide 4.2)",
    "ETHOS_U_DCACHE": "drivers/misc/ethos_u/Kconfig",
    "ARM_ETHOS_U": "modules/hal_ethos_u/Kconfig before v4.2 and vendor forks (alifsemi/zephyr_alif)",
}
# NPU configuration choices (modules/hal_ethos_u/Kconfig; ExecuTorch's samples use ETHOS_U55_256).
for _prefix in ("ETHOS_U", "ARM_ETHOS_U"):
    for _npu in ("55_64", "55_128", "55_256", "65_128", "65_256", "65_512",
                 "85_128", "85_256", "85_512", "85_1024", "85_2048"):
        ZEPHYR_CORE_SYMBOLS[f"{_prefix}{_npu}"] = "modules/hal_ethos_u/Kconfig (NPU configuration choice)"


#: Cores whose Zephyr port has the ARMv8-M stack-limit registers (PSPLIM/MSPLIM): Zephyr's
#: arch/arm/core/Kconfig (v3.7.1 and v4.1.99) selects CPU_CORTEX_M_HAS_SPLIM for ARMV8_M_MAINLINE, and
#: ARCH_HAS_STACK_PROTECTION with it, so HW_STACK_PROTECTION becomes BUILTIN_STACK_GUARD.
SPLIM_CORES = frozenset({"cortex-m33", "cortex-m35p", "cortex-m55", "cortex-m85"})


def stack_guard(board: Board) -> tuple[str, list[str]]:
    """The prj.conf section that catches a main-stack overflow (comment, Kconfig lines).

    ARMv8-M mainline cores (:data:`SPLIM_CORES`): ``CONFIG_HW_STACK_PROTECTION`` (the stack-limit
    registers: a push below the limit faults at once). STM32 boards: the same, through the MPU guard
    (their SoCs select CPU_HAS_ARM_MPU and their defconfigs set ``CONFIG_ARM_MPU=y``: e.g. Zephyr
    v3.7.1 boards/st/stm32f4_disco/stm32f4_disco_defconfig). Other boards: ``CONFIG_STACK_SENTINEL``
    (a word at the stack's limit checked on every context switch and interrupt exit; software, so an
    overflow is caught late). Either ends in Zephyr's fatal error K_ERR_STACK_CHK_FAIL (reason 2),
    which the generated k_sys_fatal_error_handler prints as ``ARMGEN error ZephyrFatal``.
    """
    if board.cpu.core in SPLIM_CORES:
        return ("Stack overflow caught by hardware: the stack-limit registers of the "
                f"{board.cpu.core} (Zephyr's BUILTIN_STACK_GUARD). An overflow is fatal error 2 "
                "(K_ERR_STACK_CHK_FAIL), reported by src/platform/platform.c.", ["CONFIG_HW_STACK_PROTECTION=y"])
    if board.zephyr is not None and "hal_stm32" in board.zephyr.hal_modules:
        return ("Stack overflow caught by hardware: an MPU guard region below the stack (MPU_STACK_GUARD; "
                "the board's defconfig enables the MPU). An overflow is fatal error 2 (K_ERR_STACK_CHK_FAIL), "
                "reported by src/platform/platform.c.", ["CONFIG_HW_STACK_PROTECTION=y"])
    return ("Stack overflow caught in software: a sentinel word at the stack's limit, checked on context "
            "switches and interrupt exits (this board's Zephyr port has no stack guard armgen can rely "
            "on). An overflow is fatal error 2 (K_ERR_STACK_CHK_FAIL), reported by src/platform/platform.c.",
            ["CONFIG_STACK_SENTINEL=y"])


def prj_conf(spec: ProjectSpec) -> list[tuple[str, list[str]]]:
    """``prj.conf`` for every board: ExecuTorch, C++, FPU, stack, speed, logging, kernel, heap."""
    board: Board = spec.board
    prj_conf: list[tuple[str, list[str]]] = [
        ("ExecuTorch (the Zephyr module in modules/lib/executorch).", ["CONFIG_EXECUTORCH=y"]),
        ("C++17 for the runtime and the model API.", ["CONFIG_CPP=y", "CONFIG_STD_CPP17=y"]),
        (
            "Selective operator registration: only model/selected_operators.yaml's kernels are built "
            "and registered (CMakeLists.txt), not ExecuTorch's whole portable library.",
            ["CONFIG_EXECUTORCH_BUILD_PORTABLE_OPS=n"],
        ),
    ]
    if board.cpu.fpu != "none" and board.cpu.gcc_float_abi == "hard":
        prj_conf.append((
            f"Hard-float ABI on the {board.cpu.core} FPU"
            + (" (also enables Helium builds of CMSIS-NN)" if board.cpu.mve != "none" else "") + ".",
            ["CONFIG_FPU=y", "CONFIG_FP_HARDABI=y"],
        ))
    prj_conf.append((
        f"Main stack: {spec.stack_size} bytes (armgen.toml [memory] stack), painted so the firmware can "
        "report its high-water mark.",
        [f"CONFIG_MAIN_STACK_SIZE={spec.stack_size}", "CONFIG_INIT_STACKS=y", "CONFIG_THREAD_STACK_INFO=y"],
    ))
    prj_conf.append(stack_guard(board))
    prj_conf.append((
        "Speed: Zephyr, the application and the ExecuTorch runtime at -O2 (Zephyr's default is -Os, "
        "ExecuTorch's module default -Os too: about 40 % more instructions per inference). CMSIS-NN "
        f"keeps its own level ({spec.cmsis_nn_optimization}, CMakeLists.txt).",
        ["CONFIG_SPEED_OPTIMIZATIONS=y", "CONFIG_EXECUTORCH_OPTIMIZE_FOR_SIZE=n"],
    ))
    prj_conf.append((
        "ExecuTorch's log messages and program verification off: the messages pull the C library's "
        "printf into the image (about 30 KB). For debugging, set CONFIG_EXECUTORCH_ENABLE_LOGGING=y "
        "(errors from load_method/execute then name the operator and the reason on the console).",
        ["CONFIG_EXECUTORCH_ENABLE_LOGGING=n", "CONFIG_EXECUTORCH_ENABLE_PROGRAM_VERIFICATION=n"],
    ))
    prj_conf.append((
        "A lean single-application kernel: printk through the console UART by polling, with the small "
        "formatter (armgen prints through its own, src/armgen/armgen_print.c); no boot banner, no time "
        "slicing, the C library's printf without floating point.",
        ["CONFIG_CBPRINTF_NANO=y", "CONFIG_PICOLIBC_IO_FLOAT=n", "CONFIG_BOOT_BANNER=n", "CONFIG_TIMESLICING=n",
         "CONFIG_UART_INTERRUPT_DRIVEN=n"],
    ))
    prj_conf.append((
        "Link-time optimisation of the whole image (kernel, ExecuTorch runtime, kernels, application), as the "
        "bare-metal build links: code only one caller uses is inlined and what nothing calls is dropped "
        "(kws on an547, Zephyr 3.7: 12,392 B less flash, 0.5 % fewer instructions). Zephyr's LTO needs the "
        "interrupt table declared where each interrupt is connected; both are experimental in Zephyr 3.7. "
        "CMakeLists.txt names the C-library functions the optimised code calls.",
        ["CONFIG_LTO=y", "CONFIG_ISR_TABLES_LOCAL_DECLARATION=y"],
    ))
    if spec.heap_size > 0:
        prj_conf.append((
            f"Kernel heap (k_malloc): {spec.heap_size} bytes, used once at boot by the Ethos-U driver for "
            "its mutex and semaphore. Any allocation after the model is initialised stops the firmware "
            "(src/platform/platform.c). Console output uses printk (no allocation).",
            [f"CONFIG_HEAP_MEM_POOL_SIZE={spec.heap_size}"],
        ))
    else:
        prj_conf.append((
            "No kernel heap: nothing allocates. armgen hands ExecuTorch a temp allocator, so its Zephyr "
            "PAL's et_pal_allocate (k_malloc) is never called; k_malloc/k_free and malloc are wrapped "
            "onto a guard that stops the firmware if anything does (src/platform/platform.c). Console "
            "output uses printk (no allocation).",
            ["CONFIG_HEAP_MEM_POOL_SIZE=0"],
        ))
    prj_conf.append((
        "No C-library malloc arena: nothing here calls malloc (the guard above stops the firmware if "
        "anything does after initialisation; before it, malloc returns NULL). Zephyr's default (-1) gives "
        "malloc all RAM left over and links a heap to manage it (kws on an547, Zephyr 3.7: 2,004 B of flash).",
        ["CONFIG_COMMON_LIBC_MALLOC_ARENA_SIZE=0"],
    ))
    return prj_conf


#: Kconfig prompt and help of each pool kind (the application's Kconfig).
_POOL_KCONFIG_TEXT = {
    "method": ("Method allocator pool in bytes",
               "armgen's bound on what Method::init and execution take from the method allocator."),
    "temp": ("Temp allocator pool in bytes",
             "Scratch the kernels and delegates ask for at run time (Vela scratch on the Ethos-U path)."),
}


def pool_kconfig(spec: ProjectSpec) -> list[dict[str, Any]]:
    """One Kconfig int symbol per pool (``ARMGEN_POOL_<NAME>_SIZE``), with prompt and help."""
    out = []
    for p in spec.pools:
        if p.kind == "planned":
            prompt = f"Planned buffer {p.memory_id} (memory id {p.memory_id}) in bytes"
            help_ = ("Size of the memory plan's buffer, exactly as the program asks (checked at init "
                     "against MethodMeta::memory_planned_buffer_size).")
        else:
            prompt, help_ = _POOL_KCONFIG_TEXT["method" if p.kind == "method" else "temp"]
        out.append({
            "symbol": f"ARMGEN_POOL_{p.name.upper()}_SIZE",
            "macro": f"ARMGEN_POOL_{p.name.upper()}_SIZE",
            "bytes": p.bytes,
            "pool": p,
            "prompt": prompt,
            "help": f"{help_} Placed in {p.region} ({p.section}).",
        })
    return out
