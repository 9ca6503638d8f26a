"""Boards as data: one YAML file per board in ``boards/``, loaded into a frozen :class:`Board`.

CONTRACT (used by spec/render/build/size/run): field names of :mod:`armgen.boards.model` are stable.

Loading (:func:`load_board`) runs in two steps:

1. structure: the YAML is checked against ``boards/schema.json`` (JSON Schema 2020-12, with the
   ``jsonschema`` package): missing, unknown or mistyped fields are reported with their path;
2. meaning: regions sorted by base and must not overlap; ``reserved <= size``; the ExecuTorch target
   must be one ``CortexMTargetConfig.from_target_string`` accepts; the Vela accelerator, system
   config and memory mode must build a real Vela ``ArchitectureFeatures``; budgets must not exceed
   what the regions offer; the vector table must sit in a code region; the emulator stand-in must
   be a QEMU board; ``zephyr.devicetree`` (schema_version 2) must name the board's own Zephyr
   targets and regions.

Budgets (bytes) are stated by every built-in board file (``budgets: flash, ram, reason``; a user's
file may leave them out, then flash counts every flash region and RAM the on-chip RAM regions), at
most what the regions offer (:func:`default_budgets`):

* ``flash`` <= sum of ``usable`` (size - reserved) over non-volatile regions (kind flash or mram)
  that may hold ``code``, ``rodata`` or ``model``;
* ``ram`` <= sum of ``usable`` over volatile regions that may hold ``data``, ``pools`` or ``stack``.

The built-in boards leave external memory windows (kind ``ddr``) out of ``ram``: a budget that
counts 256 MiB of DDR cannot be exceeded, so it checks nothing.

QEMU machines (and the Corstone FVPs) have no flash: the simulator loads the image into RAM. Their
code RAM (an385/an386/an500 code SSRAM, an547/Corstone-300 ITCM, Corstone-320 BROM/ISRAM) is
given kind ``flash`` so that budgets and the size report stay meaningful; this mirrors Zephyr,
whose devicetrees choose ``zephyr,flash`` = that RAM. Each such region says so in its ``note``.

The package, along its seams: :mod:`~armgen.boards.model` (the dataclasses),
:mod:`~armgen.boards.sizes` (the size grammar and the speed order), :mod:`~armgen.boards.schema`
(YAML and structure), :mod:`~armgen.boards.checks` (meaning), :mod:`~armgen.boards.load` (names,
aliases, paths -> Board). Import from :mod:`armgen.boards`.
"""

from armgen.boards.checks import default_budgets, vela_system_configs
from armgen.boards.load import (
    ALIASES_FILE,
    board_aliases,
    board_from_data,
    board_to_dict,
    list_boards,
    load_board,
)
from armgen.boards.model import (
    NON_VOLATILE_KINDS,
    Baremetal,
    Board,
    Budgets,
    ConsoleFact,
    Cpu,
    DtRegion,
    DtsFacts,
    Emulator,
    FlashAndWatch,
    FlashFact,
    MemoryRegion,
    Npu,
    RegionKind,
    RegionUse,
    UartSetup,
    ZephyrTarget,
)
from armgen.boards.schema import SCHEMA_FILE, SCHEMA_VERSION, SCHEMA_VERSIONS
from armgen.boards.sizes import SPEED_ORDER, parse_size, parse_size_or_percent, speed_rank
from armgen.paths import BOARDS_DIR

__all__ = [
    "ALIASES_FILE", "BOARDS_DIR", "NON_VOLATILE_KINDS", "SCHEMA_FILE", "SCHEMA_VERSION", "SCHEMA_VERSIONS",
    "SPEED_ORDER", "Baremetal", "Board", "Budgets", "ConsoleFact", "Cpu", "DtRegion", "DtsFacts", "Emulator",
    "FlashAndWatch", "FlashFact", "MemoryRegion",
    "Npu", "RegionKind", "RegionUse", "UartSetup", "ZephyrTarget", "board_aliases", "board_from_data",
    "board_to_dict", "default_budgets", "list_boards", "load_board", "parse_size", "parse_size_or_percent",
    "speed_rank", "vela_system_configs",
]
