"""Boards as data: one YAML file per board in ``boards/``, loaded into a frozen :class:`Board`.

CONTRACT (used by spec/render/build/size/run): field names below are stable.
The loader, schema validation and the board files themselves are filled in by the boards work.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

RegionKind = Literal["flash", "mram", "itcm", "dtcm", "sram", "ddr"]
RegionUse = Literal["code", "rodata", "model", "data", "pools", "stack"]

#: Kinds whose contents survive power-off: flash use counts here, RAM use does not.
NON_VOLATILE_KINDS: frozenset[str] = frozenset({"flash", "mram"})
#: Speed order used to place pools: earlier is faster (first region that fits wins).
SPEED_ORDER: tuple[str, ...] = ("dtcm", "itcm", "sram", "ddr", "mram", "flash")


@dataclass(frozen=True)
class Cpu:
    """The Cortex-M core and how to compile for it.

    Attributes:
        core: e.g. ``"cortex-m55"``.
        fpu: ``"none"``, ``"single"`` or ``"double"``.
        dsp: has the DSP extension.
        mve: Helium: ``"none"``, ``"int"`` or ``"float"``.
        clock_hz: core clock in Hz.
        et_target: ExecuTorch Cortex-M target string (``CortexMTargetConfig``), e.g. ``"cortex-m85"``.
        gcc_mcpu / gcc_mfpu / gcc_float_abi: GCC flags (M85 is compiled as ``cortex-m55`` with
            Debian's GCC 12.2, which does not know ``-mcpu=cortex-m85``). ``gcc_mfpu`` is None for ``auto``.
    """

    core: str
    fpu: Literal["none", "single", "double"]
    dsp: bool
    mve: Literal["none", "int", "float"]
    clock_hz: int
    et_target: str
    gcc_mcpu: str
    gcc_mfpu: str | None
    gcc_float_abi: Literal["soft", "softfp", "hard"]


@dataclass(frozen=True)
class Npu:
    """An Ethos-U NPU the board can delegate to.

    Attributes:
        type: ``"ethos-u55"``, ``"ethos-u65"`` or ``"ethos-u85"``.
        macs: MACs per cycle (128, 256, ...).
        vela_accelerator: Vela ``--accelerator-config``, e.g. ``"ethos-u55-256"``.
        vela_system_config / vela_memory_mode: Vela system config and memory mode names.
        vela_config_file: optional ``.ini`` with vendor system configs (None: Vela's built-in ``vela.ini``).
        base_address: NPU register base as the CPU sees it.
        irq: NPU interrupt number.
    """

    type: str
    macs: int
    vela_accelerator: str
    vela_system_config: str
    vela_memory_mode: str
    vela_config_file: str | None
    base_address: int
    irq: int


@dataclass(frozen=True)
class MemoryRegion:
    """One region of the board's memory map.

    Attributes:
        name: linker MEMORY name, e.g. ``"DTCM"``.
        kind: flash, mram, itcm, dtcm, sram or ddr.
        base: CPU address. size: bytes.
        reserved: bytes at the region's start the application may not use (e.g. Alif's 0x8000 MRAM
            load offset); the usable window is ``[base + reserved, base + size)``.
        npu_address: where the NPU sees ``base`` (None when the NPU cannot reach this region).
        uses: what may be placed there.
    """

    name: str
    kind: RegionKind
    base: int
    size: int
    reserved: int
    npu_address: int | None
    uses: frozenset[str]

    @property
    def volatile(self) -> bool:
        """True for RAM kinds (contents lost at power-off)."""
        return self.kind not in NON_VOLATILE_KINDS

    @property
    def usable(self) -> int:
        """Bytes the application may use: ``size - reserved``."""
        return self.size - self.reserved


@dataclass(frozen=True)
class ZephyrTarget:
    """How Zephyr knows this board.

    Attributes:
        target: hardware-model-v2 board target, e.g. ``"ensemble_e8_dk/ae822fa0e5597ls0/rtss_hp"``.
        release: Zephyr release that supports it, e.g. ``"v4.4.0"``; ``vendor_fork`` names a fork if any.
        ethos_u_kconfig_prefix: ``"ETHOS_U"`` (upstream >= 4.2) or ``"ARM_ETHOS_U"`` (older, vendor).
        flash_load_offset: ``CONFIG_FLASH_LOAD_OFFSET`` in bytes (0 for none).
        console: devicetree node label of the console UART, e.g. ``"uart4"``.
        hal_modules: extra west projects the board needs (e.g. ``("hal_stm32",)``).
    """

    target: str
    release: str
    vendor_fork: str | None
    ethos_u_kconfig_prefix: str
    flash_load_offset: int
    console: str
    hal_modules: tuple[str, ...]


@dataclass(frozen=True)
class Baremetal:
    """Bare-metal facts.

    Attributes:
        console: ``"semihosting"`` (emulators) or ``"uart"``.
        uart_kind: ``"cmsdk"``, ``"ns16550"``, ``"stm32"`` or None.
        uart_base: UART register base, or None.
        vector_table: address the vector table must sit at (start of the code region).
    """

    console: Literal["semihosting", "uart"]
    uart_kind: str | None
    uart_base: int | None
    vector_table: int


@dataclass(frozen=True)
class Emulator:
    """The QEMU machine that runs this board's CPU path.

    Attributes:
        board: name of the armgen board that is the stand-in (itself for QEMU boards).
        qemu_machine: ``-machine`` value, e.g. ``"mps3-an547"``. qemu_cpu: ``-cpu`` value.
        note: e.g. "Cortex-M85 runs as Cortex-M55 on an547".
    """

    board: str
    qemu_machine: str
    qemu_cpu: str
    note: str | None = None


@dataclass(frozen=True)
class Budgets:
    """Default size limits in bytes (region sizes less reserved areas unless stated)."""

    flash: int
    ram: int


@dataclass(frozen=True)
class Board:
    """One board, validated.

    Attributes:
        name: file stem, e.g. ``"alif_e8_hp"``. description: one line.
        cpu, npu (None without NPU), regions (memory map, sorted by base), zephyr (None when Zephyr
        has no target), baremetal, budgets, emulator (None when no QEMU stand-in exists).
        source: the file it was loaded from.
    """

    name: str
    description: str
    cpu: Cpu
    npu: Npu | None
    regions: tuple[MemoryRegion, ...]
    zephyr: ZephyrTarget | None
    baremetal: Baremetal
    budgets: Budgets
    emulator: Emulator | None
    source: str

    def region(self, name: str) -> MemoryRegion:
        """Return the region called ``name``.

        Raises:
            KeyError: when the board has no such region.
        """
        for r in self.regions:
            if r.name == name:
                return r
        raise KeyError(name)
