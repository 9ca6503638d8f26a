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

The JSON of ``armgen size --json`` is described by ``size_report.schema.json`` (JSON Schema 2020-12,
shipped in the wheel): :func:`report_schema`, :func:`validate_report`.

Modules, in the order data flows through them:

    rules        components as data: :data:`COMPONENT_RULES`, :func:`classify`, Zephyr's names
    records      the report's dataclasses (:class:`ElfSizeReport` and its parts)
    elf          the pyelftools reader: sections, symbols, DWARF compile-unit ranges
    linker_map   the GNU ld map: :func:`parse_map`, :func:`find_map`
    attribution  per-section components, placements, fill, regions, stacks, pool checks
    analyse      :func:`size_elf`
    budgets      :class:`SizeBudgets`, :func:`resolve_budgets`, :func:`check_budgets`
    compare      :func:`compare_reports`
    schema       the JSON Schema of the ``--json`` document
    plot         the SVG of each region's fill
"""

from armgen.firmware.size.analyse import size_elf
from armgen.firmware.size.budgets import (
    ComponentBudget,
    SizeBudgets,
    Violation,
    budgets_from_board,
    check_budgets,
    load_budget_file,
    parse_budget_table,
    parse_size,
    resolve_budgets,
)
from armgen.firmware.size.compare import Delta, SizeComparison, compare_reports
from armgen.firmware.size.linker_map import LinkerMap, MapInput, find_map, parse_map
from armgen.firmware.size.records import (
    SCHEMA_VERSION,
    Attribution,
    ComponentSize,
    ElfSizeReport,
    Memory,
    Misplacement,
    Placement,
    PoolSize,
    RegionUse,
    Role,
    SectionSize,
    StackSize,
)
from armgen.firmware.size.rules import (
    COMPONENT_LABELS,
    COMPONENT_RULES,
    UNATTRIBUTED,
    ZEPHYR_HEAPS,
    ZEPHYR_ROM_SECTIONS,
    ZEPHYR_STACKS,
    ComponentRule,
    classify,
)
from armgen.firmware.size.schema import SCHEMA_FILE, report_schema, validate_report

__all__ = [
    "COMPONENT_LABELS",
    "COMPONENT_RULES",
    "SCHEMA_FILE",
    "SCHEMA_VERSION",
    "UNATTRIBUTED",
    "ZEPHYR_HEAPS",
    "ZEPHYR_ROM_SECTIONS",
    "ZEPHYR_STACKS",
    "Attribution",
    "ComponentBudget",
    "ComponentRule",
    "ComponentSize",
    "Delta",
    "ElfSizeReport",
    "LinkerMap",
    "MapInput",
    "Memory",
    "Misplacement",
    "Placement",
    "PoolSize",
    "RegionUse",
    "Role",
    "SectionSize",
    "SizeBudgets",
    "SizeComparison",
    "StackSize",
    "Violation",
    "budgets_from_board",
    "check_budgets",
    "classify",
    "compare_reports",
    "find_map",
    "load_budget_file",
    "parse_budget_table",
    "parse_map",
    "parse_size",
    "report_schema",
    "resolve_budgets",
    "size_elf",
    "validate_report",
]
