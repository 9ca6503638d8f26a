"""Size stage: ELF (+ linker map) + memory regions -> :class:`ElfSizeReport`; budgets -> violations.

The stage is a pure function of its inputs: it reads the ELF with pyelftools and, when given, the
GNU ld map file the build wrote (``-Wl,-Map=...``). It never prints and never writes files; the CLI
(:mod:`armgen.cli.size_cmd`) renders tables, JSON and the SVG.

Accounting (all figures are bytes):

* Every allocated section of non-zero size has a *run* placement: the memory it occupies at its VMA
  while the firmware runs. A section with file contents whose LMA differs from its VMA (``.data``
  with ``AT> FLASH``) also has an *image* placement: its initial values at the LMA, copied at boot.
  LMA comes from the program headers (``p_paddr - p_vaddr`` of the segment holding the section).
* With a board, each placement is assigned to the memory region that contains it by address;
  placements in non-volatile regions (flash, MRAM) count as flash use, the others as RAM use. So
  ``.data`` counts in both; code run from ITCM (boards that boot from RAM) counts as RAM.
* Without a board the regions are unknown: sections that are writable (``SHF_WRITE``) or take no file
  space (``SHT_NOBITS``, i.e. ``.bss``/NOLOAD) count as RAM, the others as flash, and image
  placements as flash (the fallback of Zephyr's ``size_report``).
* Attribution to components follows :data:`COMPONENT_RULES` (ordered, first match wins) over the
  input sections of the map file; without a map, over symbols grouped by DWARF compile unit, or
  over symbols alone. Whatever no rule claims - linker fill, alignment, veneers - is the
  ``unattributed`` component, so components always add up exactly to the totals.
* Zephyr images (``zephyr.elf``): the writable sections Zephyr's linker scripts put in its ROM group
  (``rom_start``, ``sw_isr_table``, ``ctors``, ``init_array`` ...; :data:`ZEPHYR_ROM_SECTIONS`) count
  as read-only data; the kernel's stacks and heaps (:data:`ZEPHYR_STACKS`, :data:`ZEPHYR_HEAPS`) are
  found by symbol inside ``.noinit`` and listed in :attr:`ElfSizeReport.stacks`; Zephyr's own archives
  are the ``zephyr_kernel`` component, the application library ``libapp.a`` is ``app``.

Budgets (:class:`SizeBudgets`) come from the board, the project's ``armgen.toml`` ``[budgets]`` and
a ``--budget`` file, in that order (see :func:`resolve_budgets`); :func:`check_budgets` returns the
list of :class:`Violation`\\ s, empty when the ELF is within budget.
"""

from __future__ import annotations

import bisect
import re
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from armgen.boards import parse_size as parse_board_size
from armgen.errors import SizeError

if TYPE_CHECKING:  # pragma: no cover - typing only
    from armgen.boards import Board, MemoryRegion

#: Version of the JSON layout written by :meth:`ElfSizeReport.to_dict`.
SCHEMA_VERSION = 1

Memory = Literal["flash", "ram"]
Role = Literal["code", "rodata", "model", "data", "pools", "stack", "fill"]
Attribution = Literal["map", "dwarf", "symbols"]

UNATTRIBUTED = "unattributed"

# --------------------------------------------------------------------------------------------------
# Components: rules as data
# --------------------------------------------------------------------------------------------------


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


# --------------------------------------------------------------------------------------------------
# Report records
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Placement:
    """Where one section's bytes sit.

    Attributes:
        section: ELF section name.
        what: ``"run"`` (memory the section occupies at its VMA) or ``"image"`` (its initial values at
            its LMA, copied to the VMA at boot).
        address: start address (VMA for run, LMA for image). size: bytes.
        memory: ``"flash"`` or ``"ram"``: which total it counts in.
        region: name of the board region holding it, or None (no board, or in no region).
    """

    section: str
    what: Literal["run", "image"]
    address: int
    size: int
    memory: Memory
    region: str | None


@dataclass(frozen=True)
class SectionSize:
    """One allocated ELF section.

    Attributes:
        name, type (``PROGBITS``, ``NOBITS``, ``ARM_EXIDX``, ...), flags (``"AX"``, ``"WA"``, ``"A"``).
        vma, lma: run and load addresses. size: bytes.
        role: what the section is: code, rodata, model, data, pools or stack (stack and heap).
        components: ``(component, bytes)`` pairs, sorted by component; they sum to ``size``.
        placements: run placement, plus the image placement when LMA differs from VMA.
    """

    name: str
    type: str
    flags: str
    vma: int
    lma: int
    size: int
    role: Role
    components: tuple[tuple[str, int], ...]
    placements: tuple[Placement, ...]

    @property
    def flash(self) -> int:
        """Bytes of this section counted as flash use."""
        return sum(p.size for p in self.placements if p.memory == "flash")

    @property
    def ram(self) -> int:
        """Bytes of this section counted as RAM use."""
        return sum(p.size for p in self.placements if p.memory == "ram")


@dataclass(frozen=True)
class RegionUse:
    """Fill of one board memory region.

    Attributes:
        name, kind, base, size, reserved: as in :class:`armgen.boards.MemoryRegion` (bytes).
        usable: ``size - reserved``. volatile: RAM kind. used: bytes placed in the region.
        components: ``(component, bytes)`` sorted by component, summing to ``used``.
        sections: names of the sections with a placement here (``".data (image)"`` for LMA copies).
    """

    name: str
    kind: str
    base: int
    size: int
    reserved: int
    usable: int
    volatile: bool
    used: int
    components: tuple[tuple[str, int], ...]
    sections: tuple[str, ...]

    @property
    def percent(self) -> float:
        """``used`` as a percentage of ``usable`` (0 for an empty region)."""
        return 100.0 * self.used / self.usable if self.usable > 0 else 0.0


@dataclass(frozen=True)
class ComponentSize:
    """Bytes of one component. flash/ram: as counted in the totals (``.data`` counts in both)."""

    name: str
    flash: int
    ram: int


@dataclass(frozen=True)
class PoolSize:
    """One ``armgen_pool_<name>`` array: name (without prefix), bytes, address, section, region."""

    name: str
    size: int
    address: int
    section: str
    region: str | None


@dataclass(frozen=True)
class StackSize:
    """One stack or heap the firmware reserves.

    Attributes:
        name: what it is: ``"main"``, ``"ISR"``, ``"idle"`` ... for stacks (:data:`ZEPHYR_STACKS`; a bare-metal
            ``.stack`` section is ``"main"``), ``"kernel heap"``, ``"libc malloc arena"``, ``"heap"``.
        kind: ``"stack"`` or ``"heap"``. symbol: the ELF symbol (Zephyr) or section name (``.stack``).
        size: bytes. address: start. section: ELF section holding it. region: board region or None.
    """

    name: str
    kind: Literal["stack", "heap"]
    symbol: str
    size: int
    address: int
    section: str
    region: str | None


@dataclass(frozen=True)
class Misplacement:
    """A section placement outside every region, in a reserved area, or in a region of the wrong kind."""

    section: str
    what: Literal["run", "image"]
    address: int
    size: int
    region: str | None
    reason: str

    @property
    def message(self) -> str:
        """One line for users."""
        label = self.section if self.what == "run" else f"{self.section} (load image)"
        return f"section {label} at 0x{self.address:08x} ({self.size} B) {self.reason}"


@dataclass(frozen=True)
class ElfSizeReport:
    """What an ELF uses, per section, region and component (all sizes in bytes).

    Attributes:
        elf: path of the ELF. map: path of the map file used, or None.
        board: board name or None. regions_known: False when no board was given (fallback classes).
        attribution: ``"map"``, ``"dwarf"`` or ``"symbols"``: how components were found.
        flash, ram: totals. sections: allocated sections by address.
        regions: board regions by base (empty without a board).
        components: every component with flash or RAM use, in :data:`COMPONENT_LABELS` order.
        pools: ``armgen_pool_*`` arrays. stack, heap: bytes of all stacks / heaps in ``stacks``.
        misplaced: placements outside regions or in the wrong kind of region, and pools outside the
            region ``armgen.toml`` names for them.
        notes: sentences about fallbacks (no board, no map, stale map).
        stacks: every stack and heap found (bare metal: the ``.stack``/``.heap`` sections; Zephyr: the
            kernel stacks and heaps of :data:`ZEPHYR_STACKS` / :data:`ZEPHYR_HEAPS`), by address.
    """

    elf: str
    map: str | None
    board: str | None
    regions_known: bool
    attribution: Attribution
    flash: int
    ram: int
    sections: tuple[SectionSize, ...]
    regions: tuple[RegionUse, ...]
    components: tuple[ComponentSize, ...]
    pools: tuple[PoolSize, ...]
    stack: int
    heap: int
    misplaced: tuple[Misplacement, ...]
    notes: tuple[str, ...] = ()
    stacks: tuple[StackSize, ...] = ()

    def component(self, name: str) -> ComponentSize:
        """The component called ``name`` (zero-sized when absent)."""
        for c in self.components:
            if c.name == name:
                return c
        return ComponentSize(name, 0, 0)

    def section(self, name: str) -> SectionSize:
        """The section called ``name``.

        Raises:
            KeyError: no allocated section of that name.
        """
        for s in self.sections:
            if s.name == name:
                return s
        raise KeyError(name)

    def region(self, name: str) -> RegionUse:
        """The region called ``name``.

        Raises:
            KeyError: no such region.
        """
        for r in self.regions:
            if r.name == name:
                return r
        raise KeyError(name)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict (dump with ``sort_keys=True`` for deterministic output)."""
        return {
            "schema_version": SCHEMA_VERSION,
            "elf": self.elf,
            "map": self.map,
            "board": self.board,
            "regions_known": self.regions_known,
            "attribution": self.attribution,
            "flash": self.flash,
            "ram": self.ram,
            "stack": self.stack,
            "heap": self.heap,
            "sections": [
                {
                    "name": s.name,
                    "type": s.type,
                    "flags": s.flags,
                    "vma": s.vma,
                    "lma": s.lma,
                    "size": s.size,
                    "role": s.role,
                    "flash": s.flash,
                    "ram": s.ram,
                    "components": dict(s.components),
                    "placements": [
                        {k: v for k, v in asdict(p).items() if k != "section"} for p in s.placements
                    ],
                }
                for s in self.sections
            ],
            "regions": [
                {
                    "name": r.name,
                    "kind": r.kind,
                    "base": r.base,
                    "size": r.size,
                    "reserved": r.reserved,
                    "usable": r.usable,
                    "volatile": r.volatile,
                    "used": r.used,
                    "components": dict(r.components),
                    "sections": list(r.sections),
                }
                for r in self.regions
            ],
            "components": {c.name: {"flash": c.flash, "ram": c.ram} for c in self.components},
            "pools": [asdict(p) for p in self.pools],
            "stacks": [asdict(x) for x in self.stacks],
            "misplaced": [asdict(m) for m in self.misplaced],
            "notes": list(self.notes),
        }


# --------------------------------------------------------------------------------------------------
# ELF reading
# --------------------------------------------------------------------------------------------------

_SHF_WRITE = 0x1
_SHF_ALLOC = 0x2
_SHF_EXECINSTR = 0x4
_SHF_TLS = 0x400


@dataclass(frozen=True)
class _RawSection:
    name: str
    type: str
    flags: int
    vma: int
    lma: int
    size: int
    nobits: bool
    align: int = 1


@dataclass(frozen=True)
class _Symbol:
    name: str
    address: int
    size: int
    type: str


@dataclass
class _Elf:
    sections: list[_RawSection]
    symbols: list[_Symbol]
    cu_paths: list[tuple[int, int, str]] | None  # (start, end, path) address ranges by CU
    linker_symbols: dict[str, int] = field(default_factory=dict)  # _LINKER_SYMBOLS -> value


#: Untyped symbols the linker script defines that sizing reads: Zephyr's ROM group bounds (linker.ld).
_LINKER_SYMBOLS = ("__rom_region_start", "__rom_region_end")


def _open_elf(path: Path) -> _Elf:
    """Read the allocated sections, symbols and (when present) DWARF CU ranges of an Arm ELF.

    Raises:
        SizeError: missing file, not an ELF, not a 32-bit Arm ELF, or no section headers.
    """
    from elftools.common.exceptions import ELFError
    from elftools.elf.elffile import ELFFile

    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise SizeError(f"{path}: no such file", hint="build the firmware first (armgen build)") from None
    except IsADirectoryError:
        raise SizeError(f"{path} is a directory without armgen.toml, not an ELF file") from None
    except OSError as exc:
        raise SizeError(f"cannot read {path}: {exc.strerror}") from None
    if data[:4] != b"\x7fELF":
        raise SizeError(f"{path} is not an ELF file (no ELF magic bytes)")
    import io

    try:
        elf = ELFFile(io.BytesIO(data))
        machine = elf["e_machine"]
        if machine != "EM_ARM" or elf.elfclass != 32:
            raise SizeError(
                f"{path} is an ELF for {machine.removeprefix('EM_')} ({elf.elfclass}-bit), not 32-bit Arm",
                hint="pass the firmware ELF built with arm-none-eabi-gcc",
            )
        if elf["e_shnum"] == 0 or elf["e_shoff"] == 0:
            raise SizeError(
                f"{path} has no section headers (stripped with --strip-section-headers or similar)",
                hint="size the unstripped ELF the build wrote",
            )
        sections = _elf_sections(elf)
        symbols, linker_symbols = _elf_symbols(elf)
        cu_paths = _dwarf_cu_ranges(elf) if elf.has_dwarf_info() else None
    except ELFError as exc:
        raise SizeError(f"{path} is not a valid ELF file: {exc}") from None
    sections.sort(key=lambda s: (s.vma, s.name))
    symbols.sort(key=lambda s: (s.address, s.name))
    return _Elf(sections, symbols, cu_paths, linker_symbols)


def _elf_sections(elf: Any) -> list[_RawSection]:
    """The allocated sections with size (not .tbss), each with its load address from the PT_LOAD
    segment that holds its file bytes (LMA = VMA for NOBITS)."""
    segments = [
        (s["p_vaddr"], s["p_paddr"], s["p_memsz"], s["p_offset"], s["p_filesz"])
        for s in elf.iter_segments()
        if s["p_type"] == "PT_LOAD"
    ]
    sections: list[_RawSection] = []
    for sec in elf.iter_sections():
        flags = sec["sh_flags"]
        size = sec["sh_size"]
        if not flags & _SHF_ALLOC or size == 0:
            continue
        nobits = sec["sh_type"] == "SHT_NOBITS"
        if nobits and flags & _SHF_TLS:
            continue  # .tbss takes no memory of its own
        vma = sec["sh_addr"]
        lma = vma
        if not nobits:
            off = sec["sh_offset"]
            for p_vaddr, p_paddr, p_memsz, p_offset, p_filesz in segments:
                if p_vaddr <= vma and vma + size <= p_vaddr + p_memsz and p_offset <= off < p_offset + max(
                    p_filesz, 1
                ):
                    lma = p_paddr + (vma - p_vaddr)
                    break
        sections.append(
            _RawSection(
                name=sec.name,
                type=str(sec["sh_type"]).removeprefix("SHT_"),
                flags=flags,
                vma=vma,
                lma=lma,
                size=size,
                nobits=nobits,
                align=max(1, int(sec["sh_addralign"])),
            )
        )
    return sections


def _elf_symbols(elf: Any) -> tuple[list[_Symbol], dict[str, int]]:
    """Functions and objects of ``.symtab`` (Thumb bit cleared), and the linker symbols armgen reads."""
    symbols: list[_Symbol] = []
    linker_symbols: dict[str, int] = {}
    symtab = elf.get_section_by_name(".symtab")
    if symtab is not None and hasattr(symtab, "iter_symbols"):
        for sym in symtab.iter_symbols():
            stype = sym["st_info"]["type"]
            if stype in ("STT_FUNC", "STT_OBJECT") and sym.name:
                addr = sym["st_value"] & ~1 if stype == "STT_FUNC" else sym["st_value"]
                symbols.append(_Symbol(sym.name, addr, sym["st_size"], stype))
            elif stype == "STT_NOTYPE" and sym.name in _LINKER_SYMBOLS:
                linker_symbols[sym.name] = sym["st_value"]
    return symbols, linker_symbols


def _dwarf_cu_ranges(elf: Any) -> list[tuple[int, int, str]] | None:
    """Address ranges of each DWARF compile unit, from ``.debug_aranges`` (None when absent)."""
    try:
        dwarf = elf.get_dwarf_info()
        aranges = dwarf.get_aranges()
        if aranges is None:
            return None
        names: dict[int, str] = {}
        out: list[tuple[int, int, str]] = []
        for entry in aranges.entries:
            off = entry.info_offset
            if off not in names:
                cu = dwarf.get_CU_at(off)
                die = cu.get_top_DIE()
                name = die.attributes.get("DW_AT_name")
                comp_dir = die.attributes.get("DW_AT_comp_dir")
                p = name.value.decode(errors="replace") if name else ""
                if comp_dir and not p.startswith("/"):
                    p = comp_dir.value.decode(errors="replace") + "/" + p
                names[off] = p
            if entry.length:
                out.append((entry.begin_addr, entry.begin_addr + entry.length, names[off]))
        out.sort()
        return out
    except Exception:  # noqa: BLE001 - broken debug info only loses the DWARF fallback
        return None


# --------------------------------------------------------------------------------------------------
# Map file
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class MapInput:
    """One input-section line of a GNU ld map: where it went and which file it came from.

    Attributes:
        output_section: ELF section it was placed in. input_section: e.g. ``.text.main``, ``*fill*``.
        address (VMA), size: bytes. archive: archive file name or None. obj: object file name (the
        member for archives) or None for linker-made bytes (fill, stubs). size_before: the
        ``(size before relaxing)`` figure ld prints under lines whose size it changed (merged
        SHF_MERGE string sections), else None.
    """

    output_section: str
    input_section: str
    address: int
    size: int
    archive: str | None
    obj: str | None
    size_before: int | None = None


@dataclass(frozen=True)
class LinkerMap:
    """Parsed GNU ld map: output sections ``{name: (vma, size)}`` and their input sections."""

    outputs: dict[str, tuple[int, int]]
    inputs: tuple[MapInput, ...]


_HEX = r"0x([0-9a-fA-F]+)"
_OUT_FULL = re.compile(rf"^(\S+)\s+{_HEX}\s+{_HEX}(?:\s+load address {_HEX})?\s*$")
_OUT_NAME = re.compile(r"^([^\s*(][^\s(]*)\s*$")
_IN_FULL = re.compile(rf"^ (\S+)\s+{_HEX}\s+{_HEX}(?:\s+(.*?))?\s*$")
_IN_NAME = re.compile(r"^ ([^\s*(]\S*|\*fill\*)\s*$")
_ADDR_SIZE = re.compile(rf"^\s+{_HEX}\s+{_HEX}(?:\s+load address {_HEX})?(?:\s+(.*?))?\s*$")
_BEFORE_RELAXING = re.compile(rf"^\s+{_HEX} \(size before relaxing\)\s*$")
_MEMBER = re.compile(r"^(.*?)\((.*)\)$")
_KEYWORDS = {"LOAD", "OUTPUT", "START", "END", "INPUT", "GROUP", "OUTPUT_FORMAT", "OUTPUT_ARCH"}


def _split_file(text: str | None) -> tuple[str | None, str | None]:
    if not text or text == "linker stubs":
        return None, None
    m = _MEMBER.match(text)
    if m and m.group(1):
        return Path(m.group(1)).name, Path(m.group(2)).name
    return None, Path(text).name


def parse_map(text: str) -> LinkerMap:
    """Parse the ``Linker script and memory map`` part of a GNU ld ``-Map`` file.

    Args:
        text: the map file's text.

    Returns:
        Output sections with VMA and size, and every input-section line (including ``*fill*``)
        with its address, size and archive/object file names.

    Raises:
        SizeError: the text has no ``Linker script and memory map`` heading (not a GNU ld map).
    """
    lines = text.splitlines()
    try:
        start = next(i for i, line in enumerate(lines) if line.startswith("Linker script and memory map"))
    except StopIteration:
        raise SizeError("not a GNU ld map file (no 'Linker script and memory map' heading)") from None
    outputs: dict[str, tuple[int, int]] = {}
    inputs: list[MapInput] = []
    current: str | None = None
    pending_out: str | None = None
    pending_in: str | None = None
    for line in lines[start + 1 :]:
        if not line.strip():
            pending_in = None
            continue
        if pending_out is not None:
            m = _ADDR_SIZE.match(line)
            if m:
                outputs.setdefault(pending_out, (int(m.group(1), 16), int(m.group(2), 16)))
                current = pending_out
                pending_out = None
                continue
            pending_out = None
        if pending_in is not None:
            m = _ADDR_SIZE.match(line)
            pending_name, pending_in = pending_in, None
            if m and current is not None:
                archive, obj = _split_file(m.group(4))
                inputs.append(
                    MapInput(current, pending_name, int(m.group(1), 16), int(m.group(2), 16), archive, obj)
                )
                continue
        m = _BEFORE_RELAXING.match(line)
        if m:
            if inputs and current is not None:
                inputs[-1] = replace(inputs[-1], size_before=int(m.group(1), 16))
            continue
        if not line.startswith(" "):
            word = line.split()[0]
            if word in _KEYWORDS or "(" in word:
                current = None
                continue
            m = _OUT_FULL.match(line)
            if m:
                current = m.group(1)
                outputs.setdefault(current, (int(m.group(2), 16), int(m.group(3), 16)))
                continue
            m = _OUT_NAME.match(line)
            if m:
                pending_out = m.group(1)
                current = None
            continue
        if current is None:
            continue
        m = _IN_FULL.match(line)
        if m and not m.group(1).startswith("0x"):
            archive, obj = _split_file(m.group(4))
            inputs.append(MapInput(current, m.group(1), int(m.group(2), 16), int(m.group(3), 16), archive, obj))
            continue
        m = _IN_NAME.match(line)
        if m:
            pending_in = m.group(1)
    return LinkerMap(outputs, tuple(inputs))


# --------------------------------------------------------------------------------------------------
# Sizing
# --------------------------------------------------------------------------------------------------


def _zephyr_rom_read_only(sec: _RawSection, elf: _Elf) -> bool:
    """A writable section that is read-only data in Zephyr's ROM group (see :data:`ZEPHYR_ROM_SECTIONS`)."""
    start = elf.linker_symbols.get("__rom_region_start")
    end = elf.linker_symbols.get("__rom_region_end")
    if start is None or end is None or sec.nobits or not sec.flags & _SHF_WRITE:
        return False
    return start <= sec.vma and sec.vma + sec.size <= end and re.fullmatch(ZEPHYR_ROM_SECTIONS, sec.name) is not None


def _role(sec: _RawSection, pool_sections: set[str], rom_read_only: bool = False) -> Role:
    name = sec.name
    if name == ".armgen_model" or name.startswith(".armgen_model."):
        return "model"
    if name.startswith(".armgen_pool") or name in pool_sections:
        return "pools"
    if name in (".stack", ".heap"):
        return "stack"
    if sec.flags & _SHF_EXECINSTR:
        return "code"
    if (sec.flags & _SHF_WRITE and not rom_read_only) or sec.nobits:
        return "data"
    return "rodata"


def _flags(flags: int) -> str:
    return ("W" if flags & _SHF_WRITE else "") + ("A" if flags & _SHF_ALLOC else "") + (
        "X" if flags & _SHF_EXECINSTR else ""
    )


def _find_region(regions: tuple[MemoryRegion, ...], address: int, size: int) -> MemoryRegion | None:
    for r in regions:
        if r.base <= address < r.base + r.size:
            return r
    return None


def _attribute_map(
    sec: _RawSection, lmap: LinkerMap, rules: tuple[ComponentRule, ...], objects: Mapping[int, str] | None = None
) -> dict[str, int]:
    """Bytes of ``sec`` per component from the map's input-section lines, by address range.

    GNU ld merges SHF_MERGE|SHF_STRINGS sections (``.rodata.str1.*``): every merged input line keeps
    its own size but several start at the same address, so the lines overlap and their sizes add up
    to more than the output section. Each byte goes to the first line that claims it (bloaty's
    first-claimant rule). Lines are ordered by address; at one address a line whose printed size
    grew past its ``size before relaxing`` (a merged section whose strings all went into another
    one's; ld prints a neighbour's size for it) comes last, then map order. A line claims at most
    its size before merging. ``objects`` (``{address: name}`` of the ELF's data objects) gives the
    rules the symbol an input section starts with (Zephyr's stacks sit in ``.noinit."<file>".<n>``).
    Pieces are clipped to the section, so the result never exceeds ``sec.size``; the caller books
    the uncovered rest as unattributed.
    """
    end_of_sec = sec.vma + sec.size
    pieces = [
        (inp.address, i, inp)
        for i, inp in enumerate(lmap.inputs)
        if inp.output_section == sec.name and inp.size > 0
        and inp.address < end_of_sec and inp.address + inp.size > sec.vma
    ]
    pieces.sort(key=lambda t: (t[0], t[2].size > (t[2].size_before or t[2].size), t[1]))
    out: dict[str, int] = {}
    covered_to = sec.vma
    for _, _, inp in pieces:
        own = inp.size if inp.size_before is None else min(inp.size, inp.size_before)
        begin = max(inp.address, covered_to)
        end = min(inp.address + own, end_of_sec)
        if end <= begin:
            continue  # bytes already credited to an earlier (merged) line
        covered_to = end
        comp = classify(
            output_section=sec.name,
            input_section=inp.input_section,
            archive=inp.archive,
            obj=None if inp.archive else inp.obj,
            symbol=objects.get(inp.address) if objects and inp.obj else None,
            rules=rules,
        )
        out[comp] = out.get(comp, 0) + (end - begin)
    return out


def _attribute_symbols(
    sec: _RawSection, elf: _Elf, rules: tuple[ComponentRule, ...], use_dwarf: bool
) -> dict[str, int]:
    out: dict[str, int] = {}
    section_comp = classify(output_section=sec.name, rules=[r for r in rules if r.output_section])
    if section_comp != UNATTRIBUTED:
        return {section_comp: sec.size}
    cu = elf.cu_paths or []
    starts = [c[0] for c in cu]
    covered_to = sec.vma
    for sym in elf.symbols:
        if sym.size == 0 or not (sec.vma <= sym.address < sec.vma + sec.size):
            continue
        begin = max(sym.address, covered_to)
        end = min(sym.address + sym.size, sec.vma + sec.size)
        if end <= begin:
            continue  # alias of bytes already counted
        covered_to = end
        comp = classify(symbol=sym.name, rules=[r for r in rules if r.symbol])
        if comp == UNATTRIBUTED and use_dwarf and cu:
            i = bisect.bisect_right(starts, sym.address) - 1
            if i >= 0 and cu[i][0] <= sym.address < cu[i][1]:
                comp = classify(source=cu[i][2], rules=[r for r in rules if r.source])
        out[comp] = out.get(comp, 0) + (end - begin)
    return out


def _map_mismatch(elf: _Elf, lmap: LinkerMap) -> str | None:
    for sec in elf.sections:
        got = lmap.outputs.get(sec.name)
        if got is None:
            return f"section {sec.name} is not in the map"
        if got != (sec.vma, sec.size):
            return (
                f"section {sec.name} is 0x{got[1]:x} B at 0x{got[0]:08x} in the map "
                f"but 0x{sec.size:x} B at 0x{sec.vma:08x} in the ELF"
            )
    return None


def size_elf(
    elf_path: str | Path, board: Board | None = None, map_path: str | Path | None = None,
    rules: tuple[ComponentRule, ...] = COMPONENT_RULES, *, pools: Iterable[Mapping[str, Any]] | None = None,
) -> ElfSizeReport:
    """Size an Arm ELF: per section, per board region and per component.

    Args:
        elf_path: the firmware ELF (32-bit Arm, with section headers).
        board: memory map to assign sections to; None: regions unknown, classes by section flags.
        map_path: GNU ld map of the same link (``-Wl,-Map=``) for attribution; None: DWARF compile
            units when the ELF has ``.debug_aranges``, else symbols (model, pools, stack/heap only).
        rules: ordered attribution rules (default :data:`COMPONENT_RULES`).
        pools: the project's ``[[pools]]`` tables from ``armgen.toml`` (keys name, bytes, region,
            section). With a board, a pool (``armgen_pool_<name>``) outside its ``region``, or in a
            region whose uses lack ``pools``, is misplaced; a pool missing from the ELF, or of other
            bytes or input section than recorded, is a note. None: not checked.

    Zephyr images: the writable sections of Zephyr's ROM group (:data:`ZEPHYR_ROM_SECTIONS`) count as
    read-only data; the kernel stacks and heaps (:data:`ZEPHYR_STACKS`, :data:`ZEPHYR_HEAPS`) are
    ``stack_heap`` and listed in ``stacks``.

    Returns:
        An :class:`ElfSizeReport`; all sizes in bytes, components summing exactly to the totals.

    Raises:
        SizeError: the ELF is missing, not an ELF, not 32-bit Arm, has no section headers; the map
            file is missing, unreadable or not a GNU ld map.
    """
    elf_path = Path(elf_path)
    elf = _open_elf(elf_path)
    notes: list[str] = []
    lmap, attribution = _load_map(elf, Path(map_path) if map_path is not None else None, notes)
    pool_syms = [s for s in elf.symbols if s.name.startswith("armgen_pool_") and s.type == "STT_OBJECT"]
    regions: tuple[MemoryRegion, ...] = tuple(sorted(board.regions, key=lambda r: r.base)) if board else ()
    if board is None:
        notes.append("no board: regions unknown; writable and NOBITS sections count as RAM, the rest as flash")

    objects: dict[int, str] = {}  # start address -> largest data object there (for map attribution)
    for sym in sorted(elf.symbols, key=lambda x: (-x.size, x.name)):
        if sym.type == "STT_OBJECT" and sym.size > 0:
            objects.setdefault(sym.address, sym.name)
    where = _Where(elf, regions)
    misplaced: list[Misplacement] = []
    pool_sections = _pool_sections(elf, pool_syms)
    sections = [
        _size_section(sec, elf, lmap, rules, objects, attribution, where, pool_sections, misplaced)
        for sec in elf.sections
    ]
    sections += _alignment_fill(sections, {s.name: s.align for s in elf.sections})
    pool_list = sorted(
        (
            PoolSize(s.name.removeprefix("armgen_pool_"), s.size, s.address, where.holder_of(s.address),
                     where.region_of(s.address, s.size))
            for s in pool_syms
        ),
        key=lambda p: (p.address, p.name),
    )  # fmt: skip
    if pools is not None:
        _check_record_pools(pools, pool_list, regions, lmap, misplaced, notes)
    stacks = _stacks(sections, elf, where)
    return ElfSizeReport(
        elf=str(elf_path),
        map=str(map_path) if lmap is not None and map_path is not None else None,
        board=board.name if board else None,
        regions_known=board is not None,
        attribution=attribution,
        flash=sum(s.flash for s in sections),
        ram=sum(s.ram for s in sections),
        sections=tuple(sections),
        regions=_region_uses(regions, sections),
        components=_component_totals(sections),
        pools=tuple(pool_list),
        stack=sum(x.size for x in stacks if x.kind == "stack"),
        heap=sum(x.size for x in stacks if x.kind == "heap"),
        misplaced=tuple(misplaced),
        notes=tuple(notes),
        stacks=stacks,
    )


def _load_map(elf: _Elf, map_path: Path | None, notes: list[str]) -> tuple[LinkerMap | None, Attribution]:
    """The linker map of this link (None when absent or stale) and the attribution it allows.

    Raises:
        SizeError: the map cannot be read or is not a GNU ld map.
    """
    lmap: LinkerMap | None = None
    if map_path is not None:
        try:
            text = map_path.read_text(errors="replace")
        except OSError as exc:
            raise SizeError(f"cannot read map file {map_path}: {exc.strerror}") from None
        try:
            lmap = parse_map(text)
        except SizeError as exc:
            raise SizeError(f"{map_path}: {exc.message}") from None
        why = _map_mismatch(elf, lmap)
        if why:
            notes.append(f"map file {map_path} does not belong to this ELF ({why}); attribution by symbols")
            lmap = None
    if lmap is not None:
        return lmap, "map"
    if elf.cu_paths:
        if map_path is None:
            notes.append(
                "no linker map: components from DWARF compile units (code only) and armgen_* symbol names"
            )
        return None, "dwarf"
    if map_path is None:
        notes.append("no linker map and no DWARF: components from symbol names only")
    return None, "symbols"


def _pool_sections(elf: _Elf, pool_syms: list[_Symbol]) -> set[str]:
    """Output sections that hold only armgen pools (not Zephyr's or the C runtime's bss/noinit)."""
    pool_sections: set[str] = set()
    for sym in pool_syms:
        for sec in elf.sections:
            if sec.vma <= sym.address < sec.vma + sec.size and all(
                p.address >= sec.vma and p.address + p.size <= sec.vma + sec.size for p in pool_syms
            ) and sec.name not in (".bss", ".data", ".noinit", "bss", "datas", "noinit"):  # Zephyr: no dot
                pool_sections.add(sec.name)
    return pool_sections


@dataclass(frozen=True)
class _Where:
    """Which section and board region an address lies in."""

    elf: _Elf
    regions: tuple[MemoryRegion, ...]

    def holder_of(self, address: int) -> str:
        sec = next((x for x in self.elf.sections if x.vma <= address < x.vma + max(x.size, 1)), None)
        return sec.name if sec else ""

    def region_of(self, address: int, size: int) -> str | None:
        region = _find_region(self.regions, address, size) if self.regions else None
        return region.name if region else None


def _size_section(
    sec: _RawSection,
    elf: _Elf,
    lmap: LinkerMap | None,
    rules: tuple[ComponentRule, ...],
    objects: dict[int, str],
    attribution: Attribution,
    where: _Where,
    pool_sections: set[str],
    misplaced: list[Misplacement],
) -> SectionSize:
    """One section: its role, components (gaps as ``unattributed``) and placements (run address, and
    the load image when LMA differs); placement problems go to ``misplaced``."""
    regions = where.regions
    has_nv = any(not r.volatile for r in regions)
    rom_read_only = _zephyr_rom_read_only(sec, elf)
    role = _role(sec, pool_sections, rom_read_only)
    if lmap is not None:
        comps = _attribute_map(sec, lmap, rules, objects)
    else:
        comps = _attribute_symbols(sec, elf, rules, use_dwarf=attribution == "dwarf")
    rest = sec.size - sum(comps.values())  # >= 0: both attributions clip overlaps
    if rest > 0:
        comps[UNATTRIBUTED] = comps.get(UNATTRIBUTED, 0) + rest
    writable = (bool(sec.flags & _SHF_WRITE) and not rom_read_only) or sec.nobits
    wanted: list[tuple[Literal["run", "image"], int]] = [("run", sec.vma)]
    if not sec.nobits and sec.lma != sec.vma:
        wanted.append(("image", sec.lma))
    placements: list[Placement] = []
    for what, addr in wanted:
        fallback: Memory = "flash" if what == "image" or not writable else "ram"
        region = _find_region(regions, addr, sec.size) if regions else None
        memory: Memory = fallback if region is None else ("ram" if region.volatile else "flash")
        placements.append(Placement(sec.name, what, addr, sec.size, memory, region.name if region else None))
        if not regions:
            continue
        reason = _placement_problem(region, what, addr, sec.size, role, writable, has_nv)
        if reason:
            misplaced.append(Misplacement(sec.name, what, addr, sec.size, region.name if region else None, reason))
    return SectionSize(
        name=sec.name,
        type=sec.type,
        flags=_flags(sec.flags),
        vma=sec.vma,
        lma=sec.lma,
        size=sec.size,
        role=role,
        components=tuple(sorted((k, v) for k, v in comps.items() if v)),
        placements=tuple(placements),
    )


def _alignment_fill(sections: list[SectionSize], align: Mapping[str, int]) -> list[SectionSize]:
    """The padding the linker leaves before a section to align it, as sections of their own.

    Placements of one memory class and region (the flash image and RAM separately) are walked by
    address; a gap before a placement that is smaller than that section's alignment (``sh_addralign``)
    is alignment fill: the bytes are taken, nothing else can use them. It is counted in the totals as
    :data:`UNATTRIBUTED` (role ``fill``), so the parts add up to the occupied span. Larger gaps are
    free space the linker script leaves on purpose (a region's own start, an ``ALIGN`` of a later
    block) and are not counted.
    """
    groups: dict[tuple[str, str | None], list[Placement]] = {}
    for s in sections:
        for p in s.placements:
            groups.setdefault((p.memory, p.region), []).append(p)
    fill: list[SectionSize] = []
    for placements in groups.values():
        placements.sort(key=lambda p: (p.address, p.size))
        end: int | None = None
        for p in placements:
            gap = p.address - end if end is not None else 0
            if end is not None and 0 < gap < align.get(p.section, 1):
                name = f"(fill before {p.section})"
                fill.append(SectionSize(
                    name=name, type="FILL", flags="", vma=end, lma=end, size=gap, role="fill",
                    components=((UNATTRIBUTED, gap),),
                    placements=(Placement(name, p.what, end, gap, p.memory, p.region),),
                ))
            end = p.address + p.size if end is None else max(end, p.address + p.size)
    return fill


def _region_uses(regions: tuple[MemoryRegion, ...], sections: list[SectionSize]) -> tuple[RegionUse, ...]:
    """Bytes, components and sections placed in each board region."""
    out: list[RegionUse] = []
    for r in regions:
        comp: dict[str, int] = {}
        names: list[str] = []
        used = 0
        for s in sections:
            for p in s.placements:
                if p.region != r.name:
                    continue
                used += p.size
                names.append(s.name if p.what == "run" else f"{s.name} (image)")
                for k, v in s.components:
                    comp[k] = comp.get(k, 0) + v
        out.append(
            RegionUse(
                name=r.name,
                kind=r.kind,
                base=r.base,
                size=r.size,
                reserved=r.reserved,
                usable=r.usable,
                volatile=r.volatile,
                used=used,
                components=tuple(sorted(comp.items())),
                sections=tuple(names),
            )
        )
    return tuple(out)


def _component_totals(sections: list[SectionSize]) -> tuple[ComponentSize, ...]:
    """Flash and RAM per component over every placement, in :data:`COMPONENT_LABELS` order."""
    totals: dict[str, list[int]] = {}
    for s in sections:
        for p in s.placements:
            for k, v in s.components:
                t = totals.setdefault(k, [0, 0])
                t[0 if p.memory == "flash" else 1] += v
    order = list(COMPONENT_LABELS)
    return tuple(
        ComponentSize(k, v[0], v[1])
        for k, v in sorted(totals.items(), key=lambda kv: (order.index(kv[0]) if kv[0] in order else len(order), kv[0]))
    )


def _stacks(sections: list[SectionSize], elf: _Elf, where: _Where) -> tuple[StackSize, ...]:
    """The bare-metal ``.stack``/``.heap`` sections and Zephyr's kernel stacks and heaps, by address."""
    stacks: list[StackSize] = []
    for s in sections:
        if s.name in (".stack", ".heap"):
            kind: Literal["stack", "heap"] = "stack" if s.name == ".stack" else "heap"
            stacks.append(StackSize("main" if kind == "stack" else "heap", kind, s.name, s.size, s.vma, s.name,
                                    s.placements[0].region))  # fmt: skip
    seen: set[str] = set()
    for sym in elf.symbols:
        label = ZEPHYR_STACKS.get(sym.name) or ZEPHYR_HEAPS.get(sym.name)
        if label is None or sym.type != "STT_OBJECT" or sym.size == 0 or sym.name in seen:
            continue
        seen.add(sym.name)
        kind = "stack" if sym.name in ZEPHYR_STACKS else "heap"
        stacks.append(StackSize(label, kind, sym.name, sym.size, sym.address, where.holder_of(sym.address),
                                where.region_of(sym.address, sym.size)))  # fmt: skip
    stacks.sort(key=lambda x: (x.address, x.name))
    return tuple(stacks)


def _check_record_pools(
    record: Iterable[Mapping[str, Any]],
    found: list[PoolSize],
    regions: tuple[MemoryRegion, ...],
    lmap: LinkerMap | None,
    misplaced: list[Misplacement],
    notes: list[str],
) -> None:
    """Compare ``armgen.toml``'s ``[[pools]]`` with the pools of the ELF (see :func:`size_elf`)."""
    by_name = {p.name: p for p in found}
    for entry in record:
        if not isinstance(entry, Mapping) or not isinstance(entry.get("name"), str):
            continue
        name = entry["name"]
        p = by_name.get(name)
        if p is None:
            notes.append(f"pool {name} of armgen.toml is not in the ELF (no armgen_pool_{name} symbol): not checked")
            continue
        want_bytes = entry.get("bytes")
        if isinstance(want_bytes, int) and want_bytes != p.size:
            notes.append(f"pool {name} is {p.size} B in the ELF but armgen.toml reserves {want_bytes} B (stale build?)")
        want_section = entry.get("section")
        if lmap is not None and isinstance(want_section, str):
            got = next((i.input_section for i in lmap.inputs if i.address == p.address and i.size > 0 and i.obj), None)
            if got is not None and got != want_section:
                notes.append(f"pool {name} is in input section {got}, armgen.toml says {want_section}")
        if not regions:
            continue
        want_region = entry.get("region")
        region = next((r for r in regions if r.name == p.region), None)
        if isinstance(want_region, str) and p.region != want_region:
            reason = f"holds pool {name}, which armgen.toml places in {want_region}"
        elif region is not None and region.uses and "pools" not in region.uses:
            reason = f"holds pool {name} but {region.name} takes only {', '.join(sorted(region.uses))}"
        else:
            continue
        misplaced.append(Misplacement(p.section, "run", p.address, p.size, p.region, reason))


_ROLE_USE = {"code": "code", "rodata": "rodata", "model": "model", "data": "data", "pools": "pools", "stack": "stack"}


def _placement_problem(
    region: MemoryRegion | None,
    what: str,
    address: int,
    size: int,
    role: Role,
    writable: bool,
    has_nv: bool,
) -> str | None:
    """Why a placement is wrong, or None. See :func:`size_elf` for the rules."""
    if region is None:
        return "is in no memory region of the board"
    end = region.base + region.size
    if address + size > end:
        return f"runs past the end of {region.name} (0x{end:08x}) by {address + size - end} B"
    if address < region.base + region.reserved:
        return f"overlaps the reserved first {region.reserved} B of {region.name}"
    if what == "run" and writable and not region.volatile:
        return f"is writable but {region.name} is non-volatile {region.kind}"
    if what == "image":
        if region.volatile and has_nv:
            return f"is the initial image but {region.name} is volatile {region.kind} (lost at reset)"
        if region.uses and region.volatile and not region.uses & {"code", "rodata", "model"}:
            return f"is the initial image but {region.name} takes only {', '.join(sorted(region.uses))}"
        return None
    use = _ROLE_USE[role]
    if not region.uses:
        return f"is in {region.name}, which the board lists for the memory map only (no uses)"
    if use not in region.uses:
        return f"holds {use} but {region.name} takes only {', '.join(sorted(region.uses))}"
    return None


# --------------------------------------------------------------------------------------------------
# Budgets
# --------------------------------------------------------------------------------------------------

def parse_size(value: object, key: str, source: str) -> int:
    """Parse a budget size, an int (bytes) or a string ``"<number> <unit>"``, with armgen's one size
    grammar (:func:`armgen.boards.parse_size`: ``B``, ``KiB``, ``MiB``, ``GiB``, ``KB``, ``MB``).

    Raises:
        SizeError: negative, fractional, boolean or unparseable values, naming ``key`` and ``source``.
    """
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise SizeError(f"{source}: budget '{key}' must be bytes (int) or a string like \"512 KiB\", not {value!r}")
    try:
        return parse_board_size(value)
    except ValueError as exc:
        raise SizeError(f"{source}: budget '{key}' is {exc}") from None


@dataclass(frozen=True)
class ComponentBudget:
    """Ceilings for one component in bytes: ``total`` (flash + RAM), ``flash``, ``ram`` (None: unset)."""

    total: int | None = None
    flash: int | None = None
    ram: int | None = None


@dataclass(frozen=True)
class SizeBudgets:
    """Resolved size limits in bytes (None / absent: not checked).

    Attributes:
        flash, ram: totals (:attr:`ElfSizeReport.flash` / ``ram``).
        regions: ``{region name: bytes}`` for a region's ``used``.
        components: ``{component key: ComponentBudget}``.
        sources: ``{key: file or "board <name>"}`` saying where each limit came from.
    """

    flash: int | None = None
    ram: int | None = None
    regions: Mapping[str, int] = field(default_factory=dict)
    components: Mapping[str, ComponentBudget] = field(default_factory=dict)
    sources: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Violation:
    """One budget overrun or misplaced section.

    Attributes:
        kind: ``"flash"``, ``"ram"``, ``"region"``, ``"component"`` or ``"placement"``.
        name: what overran (``"flash"``, a region or component name, a section name).
        used, limit: bytes (0 for placements). over: ``used - limit`` in bytes.
        message: one line for users.
    """

    kind: Literal["flash", "ram", "region", "component", "placement"]
    name: str
    used: int
    limit: int
    over: int
    message: str


_BUDGET_KEYS = ("flash", "ram", "regions", "components")


def budgets_from_board(board: Board) -> SizeBudgets:
    """Default budgets of a board: ``Budgets.flash``/``ram`` and each region's usable size (bytes)."""
    src = f"board {board.name}"
    regions = {r.name: r.usable for r in board.regions}
    sources = {"flash": src, "ram": src} | {f"regions.{r}": src for r in regions}
    return SizeBudgets(board.budgets.flash, board.budgets.ram, regions, {}, sources)


def parse_budget_table(
    table: Mapping[str, Any], source: str, board: Board | None = None, base: SizeBudgets | None = None
) -> SizeBudgets:
    """Apply a ``[budgets]`` TOML table on top of ``base``.

    Args:
        table: the contents of ``[budgets]`` (keys flash, ram, regions, components).
        source: file name used in messages.
        board: known regions for checking ``regions`` keys (None: region budgets are an error).
        base: budgets to override key by key (None: empty).

    Raises:
        SizeError: unknown key, bad or negative size, unknown region, a region budget larger than the
            region's usable size, or a region budget without a board.
    """
    base = base or SizeBudgets()
    flash, ram = base.flash, base.ram
    regions = dict(base.regions)
    components = dict(base.components)
    sources = dict(base.sources)
    for key in table:
        if key not in _BUDGET_KEYS:
            raise SizeError(f"{source}: unknown key 'budgets.{key}' (known: {', '.join(_BUDGET_KEYS)})")
    if "flash" in table:
        flash = parse_size(table["flash"], "budgets.flash", source)
        sources["flash"] = source
    if "ram" in table:
        ram = parse_size(table["ram"], "budgets.ram", source)
        sources["ram"] = source
    reg = table.get("regions", {})
    if not isinstance(reg, Mapping):
        raise SizeError(f"{source}: 'budgets.regions' must be a table")
    for name, value in reg.items():
        key = f"budgets.regions.{name}"
        if board is None:
            raise SizeError(f"{source}: '{key}' needs a board to know region {name}", hint="pass --board NAME")
        try:
            region = board.region(name)
        except KeyError:
            known = ", ".join(r.name for r in board.regions)
            raise SizeError(
                f"{source}: unknown key '{key}': board {board.name} has no region {name} (regions: {known})"
            ) from None
        n = parse_size(value, key, source)
        if n > region.usable:
            raise SizeError(
                f"{source}: '{key}' = {n} B is larger than region {name} "
                f"({region.usable} B usable of {region.size} B)"
            )
        regions[name] = n
        sources[f"regions.{name}"] = source
    comp = table.get("components", {})
    if not isinstance(comp, Mapping):
        raise SizeError(f"{source}: 'budgets.components' must be a table")
    for name, value in comp.items():
        key = f"budgets.components.{name}"
        if name not in COMPONENT_LABELS:
            raise SizeError(f"{source}: unknown key '{key}' (components: {', '.join(COMPONENT_LABELS)})")
        if isinstance(value, Mapping):
            for sub in value:
                if sub not in ("total", "flash", "ram"):
                    raise SizeError(f"{source}: unknown key '{key}.{sub}' (known: total, flash, ram)")
            cb = ComponentBudget(
                *(parse_size(value[k], f"{key}.{k}", source) if k in value else None for k in ("total", "flash", "ram"))
            )
        else:
            cb = ComponentBudget(total=parse_size(value, key, source))
        components[name] = cb
        sources[f"components.{name}"] = source
    return SizeBudgets(flash, ram, regions, components, sources)


def load_budget_file(path: str | Path, board: Board | None = None, base: SizeBudgets | None = None) -> SizeBudgets:
    """Read a budget TOML file (a ``[budgets]`` table, as in ``armgen.toml``) on top of ``base``.

    Raises:
        SizeError: missing/unreadable file, invalid TOML, no ``[budgets]`` table, other top-level keys,
            or any error of :func:`parse_budget_table`.
    """
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text())
    except FileNotFoundError:
        raise SizeError(f"budget file {path}: no such file") from None
    except OSError as exc:
        raise SizeError(f"cannot read budget file {path}: {exc.strerror}") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise SizeError(f"{path}: not valid TOML ({exc})") from None
    extra = sorted(k for k in data if k != "budgets")
    if extra:
        raise SizeError(f"{path}: unknown key '{extra[0]}' (a budget file holds only a [budgets] table)")
    if "budgets" not in data or not isinstance(data["budgets"], Mapping):
        raise SizeError(f"{path}: no [budgets] table")
    return parse_budget_table(data["budgets"], str(path), board, base)


def resolve_budgets(
    board: Board | None,
    project_budgets: Mapping[str, Any] | None = None,
    project_source: str = "armgen.toml",
    budget_file: str | Path | None = None,
) -> SizeBudgets:
    """Budgets in order of precedence: board defaults < project ``[budgets]`` < ``budget_file``.

    Raises:
        SizeError: see :func:`parse_budget_table` and :func:`load_budget_file`.
    """
    b = budgets_from_board(board) if board is not None else SizeBudgets()
    if project_budgets is not None:
        b = parse_budget_table(project_budgets, project_source, board, b)
    if budget_file is not None:
        b = load_budget_file(budget_file, board, b)
    return b


def check_budgets(report: ElfSizeReport, budgets: SizeBudgets) -> list[Violation]:
    """Compare a report with budgets; also turns each misplaced section into a violation.

    Component ceilings: ``total`` limits flash + RAM bytes of the component (``.data`` counts in both,
    as in the totals); ``flash``/``ram`` limit one side.

    Returns:
        Violations in a fixed order (placement, flash, ram, regions, components); empty when within budget.
    """
    out: list[Violation] = []
    for m in report.misplaced:
        out.append(Violation("placement", m.section, 0, 0, 0, m.message))

    def over(kind: Any, name: str, label: str, used: int, limit: int | None, src_key: str) -> None:
        if limit is not None and used > limit:
            src = budgets.sources.get(src_key, "budget")
            out.append(
                Violation(kind, name, used, limit, used - limit,
                          f"{label} over budget by {used - limit} B ({used} B used, {limit} B allowed by {src})")
            )

    over("flash", "flash", "flash", report.flash, budgets.flash, "flash")
    over("ram", "ram", "RAM", report.ram, budgets.ram, "ram")
    for name in sorted(budgets.regions):
        try:
            used = report.region(name).used
        except KeyError:
            continue
        over("region", name, f"region {name}", used, budgets.regions[name], f"regions.{name}")
    for name in sorted(budgets.components):
        c = report.component(name)
        cb = budgets.components[name]
        key = f"components.{name}"
        over("component", name, f"component {name}", c.flash + c.ram, cb.total, key)
        over("component", name, f"component {name} (flash)", c.flash, cb.flash, key)
        over("component", name, f"component {name} (RAM)", c.ram, cb.ram, key)
    return out


# --------------------------------------------------------------------------------------------------
# Compare
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Delta:
    """Old and new bytes of one item; ``delta = new - old``."""

    name: str
    old: int
    new: int

    @property
    def delta(self) -> int:
        """``new - old`` in bytes."""
        return self.new - self.old


@dataclass(frozen=True)
class SizeComparison:
    """Differences between two reports (old -> new), bytes.

    Attributes:
        flash, ram: total deltas. sections: per section (size). components_flash / components_ram:
        per component. regions: per region ``used``. Items present in one report only count as 0 in
        the other; every item of either report is listed, sorted by name.
    """

    old_elf: str
    new_elf: str
    flash: Delta
    ram: Delta
    sections: tuple[Delta, ...]
    components_flash: tuple[Delta, ...]
    components_ram: tuple[Delta, ...]
    regions: tuple[Delta, ...]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict."""

        def d(x: Delta) -> dict[str, int]:
            return {"old": x.old, "new": x.new, "delta": x.delta}

        return {
            "old_elf": self.old_elf,
            "new_elf": self.new_elf,
            "flash": d(self.flash),
            "ram": d(self.ram),
            "sections": {x.name: d(x) for x in self.sections},
            "components": {
                "flash": {x.name: d(x) for x in self.components_flash},
                "ram": {x.name: d(x) for x in self.components_ram},
            },
            "regions": {x.name: d(x) for x in self.regions},
        }


def _deltas(old: Mapping[str, int], new: Mapping[str, int]) -> tuple[Delta, ...]:
    return tuple(Delta(k, old.get(k, 0), new.get(k, 0)) for k in sorted(set(old) | set(new)))


def compare_reports(old: ElfSizeReport, new: ElfSizeReport) -> SizeComparison:
    """Per-section, per-component and per-region deltas between two reports (``new - old``, bytes)."""

    def sec_sizes(r: ElfSizeReport) -> dict[str, int]:
        out: dict[str, int] = {}
        for s in r.sections:
            out[s.name] = out.get(s.name, 0) + s.size
        return out

    return SizeComparison(
        old_elf=old.elf,
        new_elf=new.elf,
        flash=Delta("flash", old.flash, new.flash),
        ram=Delta("ram", old.ram, new.ram),
        sections=_deltas(sec_sizes(old), sec_sizes(new)),
        components_flash=_deltas({c.name: c.flash for c in old.components}, {c.name: c.flash for c in new.components}),
        components_ram=_deltas({c.name: c.ram for c in old.components}, {c.name: c.ram for c in new.components}),
        regions=_deltas({r.name: r.used for r in old.regions}, {r.name: r.used for r in new.regions}),
    )


def find_map(elf_path: str | Path) -> Path | None:
    """The map file next to an ELF: ``<stem>.map`` or ``<name>.map`` (None when neither exists)."""
    p = Path(elf_path)
    for cand in (p.with_suffix(".map"), p.with_name(p.name + ".map")):
        if cand.is_file():
            return cand
    return None
