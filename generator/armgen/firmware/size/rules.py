"""Components as data: the ordered attribution rules and :func:`classify`.

A component is a key such as ``runtime_core`` or ``cmsis_nn`` (:data:`COMPONENT_LABELS`). The
attribution in :mod:`armgen.firmware.size.attribution` asks :func:`classify` for each input section
of the linker map (or each symbol / DWARF compile unit without a map); the first rule of
:data:`COMPONENT_RULES` that matches wins, and what no rule claims is :data:`UNATTRIBUTED`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

UNATTRIBUTED = "unattributed"
#: Components an operator's kernel and its helpers live in: the report lists their input files
#: (:attr:`ElfSizeReport.objects`) and a comparison finds an operator's kernel bytes there.
KERNEL_COMPONENTS = ("portable_kernels", "quantized_kernels", "cortex_m_kernels", "cmsis_nn")


@dataclass(frozen=True)
class ComponentRule:
    """One attribution rule; all given patterns must match (``re.fullmatch``, ``source``: ``re.search``).

    Attributes:
        component: component key (used in budgets, JSON and the SVG).
        input_section: pattern on the input section name from the map (``.text.foo``).
        output_section: pattern on the output (ELF) section name.
        archive: pattern on the archive file name (``libexecutorch_core.a``), map entries only.
        object: pattern on an object file name that is *not* inside an archive (``main.c.obj``).
        symbol: pattern on a symbol name (fallback without a map).
        source: pattern searched in a DWARF compile unit's path (fallback without a map).
    """

    component: str
    input_section: str | None = None
    output_section: str | None = None
    archive: str | None = None
    object: str | None = None
    symbol: str | None = None
    source: str | None = None


#: Human-readable names of the component keys, in display order.
COMPONENT_LABELS: dict[str, str] = {
    "runtime_core": "ExecuTorch runtime core",
    "kernel_registration": "kernel registration (selected ops)",
    "portable_kernels": "portable kernels",
    "quantized_kernels": "quantized kernels",
    "cortex_m_kernels": "cortex_m kernels",
    "cmsis_nn": "CMSIS-NN",
    "ethos_u_delegate": "Ethos-U delegate",
    "ethos_u_driver": "Ethos-U driver",
    "model": "model (.pte)",
    "pools": "memory pools",
    "stack_heap": "stack and heap",
    "app": "application",
    "zephyr_kernel": "Zephyr kernel, arch, drivers",
    "libc": "C/C++ libraries",
    "other_libraries": "other libraries",
    UNATTRIBUTED: "unattributed (fill, alignment, linker stubs)",
}

_LIBC = (
    r"lib(c|c_nano|g|g_nano|m|m_nano|stdc\+\+|stdc\+\+_nano|supc\+\+|supc\+\+_nano|gcc|gcov"
    r"|rdimon|rdimon_nano|rdpmon|nosys)\.a"
)
_CRT = r"(crt.*|.*-crt0.*|crt0.*)\.o"
#: GNU ld's LTO partitions (``/tmp/ccXXXXXX.ltrans0.ltrans.o``; ``-flto-partition``).
_LTRANS = r".*\.ltrans[0-9]*\.ltrans\.o"
#: The part of a -ffunction-sections/-fdata-sections input section name before the symbol.
_IN_SECTION = r"\.(text|rodata|data|bss)(\.(unlikely|startup|hot|exit))?\."
#: CMSIS-DSP's functions and tables (the MFCC front end's real FFT, magnitude and dot product), which
#: CMSIS-NN's ``arm_`` prefix would otherwise claim.
_CMSIS_DSP = (
    r"(arm_.*_(f16|f32|f64|q15|q31)|arm_(r|c)fft.*|arm_bitreversal.*|armBitRev.*|twiddleCoef.*|armRecipTable.*)(\..*)?"
)
#: ExecuTorch's runtime namespaces (mangled), its flatbuffers schema and flatcc.
_LTO_RUNTIME = r"(_Z[A-Z]*(10executorch|5torch8executor|3c10|21executorch_flatbuffer|11flatbuffers)|flatcc_).*"

# Zephyr (checked against v3.7.1). Each ``zephyr_library()`` is an archive named after its directory
# under ZEPHYR_BASE with "/" -> "__" (cmake/modules/extensions.cmake, zephyr_library_get_current_dir_lib_name):
# arch/arm/core/cortex_m -> libarch__arm__core__cortex_m.a, lib/libc/picolibc -> liblib__libc__picolibc.a.
# libzephyr.a and libkernel.a are zephyr/CMakeLists.txt's and kernel/CMakeLists.txt's; the application
# is the ``app`` library (libapp.a). Objects linked outside archives: the generated isr_tables.c and
# device_deps.c (zephyr/CMakeLists.txt, zephyr_final), offsets.c (arch/*/core/offsets) and
# misc/empty_file.c.
_ZEPHYR_ARCHIVES = (
    r"libzephyr\.a|libkernel\.a|lib(arch|boards|drivers|soc|lib|subsys|misc|isr_tables|offsets)(__.*)?\.a"
)
_ZEPHYR_OBJECTS = r"(isr_tables|device_deps|dev_handles|offsets|empty_file)\.c\.obj"

#: Zephyr's kernel stacks, by symbol: kernel/init.c (z_main_stack, z_interrupt_stacks, z_idle_stacks:
#: CONFIG_MAIN_STACK_SIZE, CONFIG_ISR_STACK_SIZE, CONFIG_IDLE_STACK_SIZE), kernel/system_work_q.c
#: (sys_work_q_stack) and subsys/logging/log_core.c (logging_stack). They sit in ``.noinit`` input
#: sections named after the source file (``.noinit."WEST_TOPDIR/zephyr/kernel/init.c".0``), so the
#: symbol, not the section name, says what they are. Values: the name used in reports.
ZEPHYR_STACKS: dict[str, str] = {
    "z_main_stack": "main",
    "z_interrupt_stacks": "ISR",
    "z_idle_stacks": "idle",
    "sys_work_q_stack": "system workqueue",
    "logging_stack": "logging",
}
#: Zephyr's heaps, by symbol: kernel/mempool.c ``K_HEAP_DEFINE(_system_heap, K_HEAP_MEM_POOL_SIZE)``
#: (include/zephyr/kernel.h Z_HEAP_DEFINE_IN_SECT: buffer ``kheap__system_heap`` in .noinit, k_heap
#: ``_system_heap``; present when CONFIG_HEAP_MEM_POOL_SIZE > 0) and lib/libc/common/source/stdlib/malloc.c
#: (arena ``malloc_arena``, CONFIG_COMMON_LIBC_MALLOC_ARENA_SIZE > 0; heap ``z_malloc_heap``).
#: Values: the name used in reports, None for control blocks (attributed, not listed as a heap).
ZEPHYR_HEAPS: dict[str, str | None] = {
    "kheap__system_heap": "kernel heap",
    "_system_heap": None,
    "malloc_arena": "libc malloc arena",
    "z_malloc_heap": None,
}
_STACK_HEAP_SYMBOLS = "|".join(re.escape(n) for n in (*ZEPHYR_STACKS, *ZEPHYR_HEAPS))

#: Zephyr output sections that sit in ROM but that GNU ld marks writable (SHF_WRITE), because one of
#: their input sections is, although nothing writes them at run time: they are read-only data in flash.
#: All are placed between GROUP_START(ROMABLE_REGION) and GROUP_END(ROMABLE_REGION) of
#: include/zephyr/arch/arm/cortex_m/scripts/linker.ld, i.e. inside __rom_region_start..__rom_region_end:
#:
#: * ``rom_start`` (linker.ld; arch/arm/core/vector_table.ld and include/zephyr/linker/
#:   irq-vector-table-section.ld): ``_irq_vector_table`` is a non-const array (arch/common/isr_tables.c,
#:   scripts/build/gen_isr_tables_parser_carrays.py).
#: * ``sw_isr_table``, ``shared_sw_isr_table`` (include/zephyr/linker/common-rom/
#:   common-rom-kernel-devices.ld): non-const ``_sw_isr_table`` (without CONFIG_DYNAMIC_INTERRUPTS).
#: * ``ctors``, ``init_array`` (common-rom/common-rom-init.ld): ``.ctors``/``.init_array`` are "aw" by
#:   the ELF ABI.
#: * ``tdata`` (include/zephyr/linker/thread-local-storage.ld): the TLS initial image.
#: * ``app_shmem_regions``, ``_static_thread_data_area`` (common-rom-kernel-devices.ld: non-const
#:   ``struct z_app_region`` / K_THREAD_DEFINE's ``_static_thread_data``), ``ztest``
#:   (common-rom/common-rom-ztest.ld: non-const ``ztest_unit_test``), and any other ROM iterable section
#:   ``<type>_area`` (include/zephyr/linker/iterable_sections.h ITERABLE_SECTION_ROM).
#:
#: Only sections inside Zephyr's ROM group (the ``__rom_region_start``/``__rom_region_end`` symbols of
#: linker.ld) qualify, so RAM iterable sections (``k_heap_area`` ...) and non-Zephyr images keep the
#: "writable in non-volatile memory" check.
ZEPHYR_ROM_SECTIONS = (
    r"rom_start|sw_isr_table|shared_sw_isr_table|ctors|init_array|tdata|app_shmem_regions|ztest|device_deps"
    r"|initlevel|zephyr_dbg_info|symtab|.+_area"
)

#: Ordered attribution rules: the first rule that matches an input section (map) or symbol wins.
#: Archive names are those of ExecuTorch's CMake targets (``executorch_core``, ``portable_kernels``,
#: ``cortex_m_kernels`` ... in pytorch/executorch CMakeLists.txt), CMSIS-NN's ``cmsis-nn`` and
#: hal_ethos_u's ``ethosu_core_driver``. Names the build gives its own selected-ops registration
#: libraries (``*_ops_lib``) land in ``kernel_registration`` unless a kernel family claims them.
COMPONENT_RULES: tuple[ComponentRule, ...] = (
    # Agreed firmware names first: they sit in the application's own objects.
    ComponentRule("model", input_section=r"\.armgen_model(\..*)?"),
    ComponentRule("model", symbol=r"armgen_model_pte"),
    ComponentRule("pools", input_section=r"\.armgen_pool\..*|\.(bss|noinit)\.armgen_pool_.*"),
    ComponentRule("pools", output_section=r"\.armgen_pool(s|\..*)?"),
    ComponentRule("pools", symbol=r"armgen_pool_.*"),
    ComponentRule("stack_heap", output_section=r"\.stack|\.heap"),
    ComponentRule("stack_heap", input_section=r"\.(stack|heap)(\..*)?"),
    # Zephyr's kernel stacks and heaps (ZEPHYR_STACKS, ZEPHYR_HEAPS): by the symbol at the start of
    # the input section, before the archive rules would give them to zephyr_kernel.
    ComponentRule("stack_heap", symbol=_STACK_HEAP_SYMBOLS),
    # ExecuTorch, CMSIS-NN, Ethos-U archives.
    ComponentRule("ethos_u_delegate", archive=r"libexecutorch_delegate_ethos_u\.a"),
    ComponentRule("ethos_u_driver", archive=r"libethosu_core_driver\.a|libethosu_.*\.a"),
    ComponentRule(
        "runtime_core",
        archive=r"libexecutorch(_core)?\.a|libextension_.*\.a|libflatccrt\.a|libbundled_program\.a",
    ),
    ComponentRule(
        "portable_kernels",
        archive=r"lib(armgen_)?portable_kernels\.a|libportable_ops_lib\.a|liboptimized_.*\.a|libkernels_util_all_deps\.a",
    ),
    ComponentRule("quantized_kernels", archive=r"lib(armgen_)?quantized_kernels\.a|libquantized_ops_lib\.a"),
    # armgen's own kernel archives (templates/*: armgen_<x>_kernels); its armgen_<x>_ops_lib archives
    # only hold the generated registration and fall to kernel_registration below.
    ComponentRule("cortex_m_kernels", archive=r"lib(armgen_)?cortex_m_kernels\.a|libcortex_m_ops_lib\.a"),
    ComponentRule("cmsis_nn", archive=r"libcmsis[-_]nn\.a"),
    ComponentRule("kernel_registration", archive=r"lib.*_ops_lib(_impl)?\.a"),
    # Link-time optimized images (-flto, the bare-metal default): the code of every LTO archive comes
    # out of ld's ltrans objects, so the archive is gone from the map; -ffunction-sections keeps the
    # function's (mangled) name in its input section, and the namespace tells whose it is.
    *(
        ComponentRule(component, object=_LTRANS, input_section=_IN_SECTION + symbol)
        for component, symbol in (
            ("ethos_u_delegate", r"_Z[A-Z]*10executorch8backends3arm.*"),
            ("ethos_u_driver", r"ethosu_.*"),
            ("cortex_m_kernels", r"_Z[A-Z]*8cortex_m.*"),
            ("kernel_registration", r"_Z[A-Z]*5torch8executor8function.*"),
            ("portable_kernels", r"_Z[A-Z]*5torch8executor6native.*"),
            ("runtime_core", _LTO_RUNTIME),
            ("other_libraries", _CMSIS_DSP),
            ("cmsis_nn", r"arm_.*"),
        )
    ),
    ComponentRule("libc", archive=_LIBC),
    ComponentRule("libc", object=_CRT),
    ComponentRule("zephyr_kernel", archive=_ZEPHYR_ARCHIVES),
    ComponentRule("zephyr_kernel", object=_ZEPHYR_OBJECTS),
    ComponentRule("app", archive=r"libapp\.a"),  # Zephyr's application library (zephyr_library "app")
    ComponentRule("other_libraries", archive=r".*"),
    ComponentRule("app", object=r".*"),
    # DWARF compile-unit paths (no map file).
    ComponentRule("ethos_u_delegate", source=r"/backends/arm/runtime/"),
    ComponentRule("ethos_u_driver", source=r"ethos_u|ethosu|core_driver"),
    ComponentRule("cortex_m_kernels", source=r"/backends/cortex_m/"),
    ComponentRule("portable_kernels", source=r"/kernels/(portable|optimized)/"),
    ComponentRule("quantized_kernels", source=r"/kernels/quantized/"),
    ComponentRule("cmsis_nn", source=r"(?i)cmsis[-_]nn"),
    ComponentRule("runtime_core", source=r"/executorch/(runtime|extension|schema)/"),
    # Zephyr's tree (its lib/libc/ glue included, as liblib__libc__*.a in the map) and generated sources.
    ComponentRule("zephyr_kernel", source=r"/zephyr/(kernel|arch|boards|drivers|soc|lib|subsys|misc)/"),
    ComponentRule("zephyr_kernel", source=r"/zephyr/(isr_tables|device_deps|dev_handles)\.c$"),
    ComponentRule("libc", source=r"newlib|picolibc|libgcc|libstdc\+\+|libsupc\+\+"),
    ComponentRule("app", source=r".*"),
)


def _match(pattern: str | None, value: str | None, search: bool = False) -> bool | None:
    """None when the rule does not constrain this field; else whether ``value`` matches."""
    if pattern is None:
        return None
    if value is None:
        return False
    return bool(re.search(pattern, value) if search else re.fullmatch(pattern, value))


def classify(
    *,
    output_section: str | None = None,
    input_section: str | None = None,
    archive: str | None = None,
    obj: str | None = None,
    symbol: str | None = None,
    source: str | None = None,
    rules: Iterable[ComponentRule] = COMPONENT_RULES,
) -> str:
    """Return the component key of the first rule in ``rules`` that matches, else ``"unattributed"``.

    ``archive`` and ``obj`` are file names (no directory); an object inside an archive is given as
    ``archive`` only. A rule with an ``object`` pattern never matches archive members.
    """
    for rule in rules:
        checks = [
            _match(rule.output_section, output_section),
            _match(rule.input_section, input_section),
            _match(rule.archive, archive),
            _match(rule.object, obj),
            _match(rule.symbol, symbol),
            _match(rule.source, source, search=True),
        ]
        given = [c for c in checks if c is not None]
        if given and all(given):
            return rule.component
    return UNATTRIBUTED
