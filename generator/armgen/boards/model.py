"""The board data model: frozen dataclasses, one per part of a board file (field names are stable).

CONTRACT (used by spec/render/build/size/run): field names below are stable.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from armgen.errors import BoardError

RegionKind = Literal["flash", "mram", "itcm", "dtcm", "sram", "ddr"]
RegionUse = Literal["code", "rodata", "model", "data", "pools", "stack"]

#: Kinds whose contents survive power-off: flash use counts here, RAM use does not.
NON_VOLATILE_KINDS: frozenset[str] = frozenset({"flash", "mram"})

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
        secure / privileged: the bus attributes the driver gives the NPU's accesses
            (``ethosu_init(..., secure_enable, privilege_enable)``); the firmware runs secure and
            privileged, so both default to True.
        clock_enable: ``(register address, bit)`` the start-up sets before the NPU's first register
            access (Alif: the RTSS ``CLK_ENA`` register, bit 0), or None when the NPU's clock runs
            from reset (the Corstone FVPs).
    """

    type: str
    macs: int
    vela_accelerator: str
    vela_system_config: str
    vela_memory_mode: str
    vela_config_file: str | None
    base_address: int
    irq: int
    secure: bool = True
    privileged: bool = True
    clock_enable: tuple[int, int] | None = None


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
        uses: what may be placed there (subset of ``code``, ``rodata``, ``model``, ``data``,
            ``pools``, ``stack``); empty for regions listed for the memory map only.
        note: free text from the board file (why a kind was chosen, what is not used), or None.
            (Added by the boards work; defaults to None.)
    """

    name: str
    kind: RegionKind
    base: int
    size: int
    reserved: int
    npu_address: int | None
    uses: frozenset[str]
    note: str | None = None

    @property
    def volatile(self) -> bool:
        """True for RAM kinds (contents lost at power-off)."""
        return self.kind not in NON_VOLATILE_KINDS

    @property
    def usable(self) -> int:
        """Bytes the application may use: ``size - reserved``."""
        return self.size - self.reserved


@dataclass(frozen=True)
class DtRegion:
    """A board region as Zephyr's devicetree knows it.

    Attributes:
        label: devicetree node label (``&label`` in overlays).
        memory_region: the node's ``zephyr,memory-region`` name (the linker MEMORY region), or None
            when the node has no such property (then armgen cannot place sections there by name).
    """

    label: str
    memory_region: str | None


@dataclass(frozen=True)
class DtsFacts:
    """What a Zephyr board target's devicetree already has (board file ``zephyr.devicetree``).

    Attributes:
        regions: armgen region name -> :class:`DtRegion` (regions the devicetree has a node for).
        flash: armgen region that is ``zephyr,flash``; sram: the one that is ``zephyr,sram``.
        has_npu_node: the DTS already has an enabled ``arm,ethos-u`` node.
        source: where these facts were read (Zephyr files and release).
    """

    regions: dict[str, DtRegion] = field(hash=False)  # the other fields hash: a Board stays hashable
    flash: str
    sram: str
    has_npu_node: bool
    source: str


@dataclass(frozen=True)
class ZephyrTarget:
    """How Zephyr knows this board, per Zephyr release.

    Attributes:
        targets: ``(release, board target)`` pairs sorted by release: the hardware-model-v2 board
            target in each Zephyr release that has the board, e.g. ``(("3.7", "mps3/an547"),
            ("4.4", "mps3/corstone300/an547"))``. Alif E8 is new in 4.4, so it has only ``"4.4"``.
        flash_load_offset: ``CONFIG_FLASH_LOAD_OFFSET`` in bytes (0 for none).
        console: devicetree node label of the console UART, e.g. ``"uart4"``.
        hal_modules: extra west projects the board needs (e.g. ``("hal_stm32",)``).
        vendor_fork: a vendor's Zephyr fork that also supports the board, if any.
        vendor_target: the board target in ``vendor_fork``, when it differs.
        note: caveats, e.g. "Zephyr runs this board on FVP only".
        devicetree: ``(board target, DtsFacts)`` pairs sorted by target: what each target's devicetree
            already has (board files of schema_version 2; empty for schema 1 and targets without facts).
        development_only: ``(release, reason)`` pairs: releases of ``targets`` whose tag lacks the
            target, which only development trees of that line have (Corstone-320's mps4 is new in
            4.2.0; the 4.1.99 snapshot has it). See :meth:`development_note`.
        disable_nodes: ``(node label, reason)`` pairs sorted by label: nodes the generated overlay
            disables because the board's devicetree enables them and armgen's application does not use
            them (nucleo_h743zi's ``mac``: Zephyr reserves 16 KiB of SRAM3 for Ethernet DMA while it
            is enabled).
    """

    targets: tuple[tuple[str, str], ...]
    flash_load_offset: int
    console: str
    hal_modules: tuple[str, ...]
    vendor_fork: str | None = None
    vendor_target: str | None = None
    note: str | None = None
    devicetree: tuple[tuple[str, DtsFacts], ...] = ()
    development_only: tuple[tuple[str, str], ...] = ()
    disable_nodes: tuple[tuple[str, str], ...] = ()

    def development_note(self, release: str) -> str | None:
        """Why Zephyr ``release``'s tag lacks this board's target (None: the tag has it)."""
        return dict(self.development_only).get(release)

    def target(self, release: str) -> str:
        """The board target in Zephyr ``release``.

        Raises:
            BoardError: the release does not have this board (the message names the releases that do).
        """
        for rel, target in self.targets:
            if rel == release:
                return target
        have = ", ".join(rel for rel, _ in self.targets) or "none"
        raise BoardError(f"Zephyr {release} has no target for this board (releases that have it: {have})")

    @property
    def releases(self) -> tuple[str, ...]:
        """The Zephyr releases that have this board."""
        return tuple(rel for rel, _ in self.targets)

    def devicetree_facts(self, target: str) -> DtsFacts | None:
        """The devicetree facts the board file gives for board target ``target``, or None."""
        return dict(self.devicetree).get(target)


@dataclass(frozen=True)
class UartSetup:
    """What a generated UART driver does before the first character (the STM32 USARTs).

    Attributes:
        clock_hz: the UART's kernel clock in Hz as armgen's start-up leaves it (the reset clock tree:
            armgen does not program a PLL), from which the baud divisor is computed.
        baud: bits per second. enable: clock-enable bits as ``(register address, bit)`` (RCC).
        tx_gpio / tx_pin / tx_af: GPIO port base, pin number and alternate function of the TX pin.
        source: where the register facts come from (reference manual, CMSIS device header).
    """

    clock_hz: int
    baud: int
    enable: tuple[tuple[int, int], ...]
    tx_gpio: int
    tx_pin: int
    tx_af: int
    source: str = ""

    @property
    def divisor(self) -> int:
        """The baud-rate register value: ``clock_hz / baud`` rounded (16x oversampling, OVER8 = 0)."""
        return (self.clock_hz + self.baud // 2) // self.baud


@dataclass(frozen=True)
class Baremetal:
    """Bare-metal facts.

    Attributes:
        console: ``"semihosting"`` (emulators) or ``"uart"``.
        uart_kind: ``"cmsdk"``, ``"ns16550"``, ``"stm32_usart_v1"`` (F1/F2/F4 USART: SR, DR, BRR, CR1),
            ``"stm32_usart_v2"`` (F0/F3/F7/H7 USART: CR1, BRR, ISR, TDR) or None.
        uart_base: UART register base, or None.
        vector_table: address the vector table must sit at (start of the code region).
        uart_setup: clocks, pin and baud for the STM32 USART drivers (None for the others).
        exit: ``"semihosting"`` (a semihosting exit, emulators) or ``"loop"`` (wfi forever).
        caches: the start-up enables the CPU's instruction and data caches (``CCR.IC``/``CCR.DC``)
            after ``.data``/``.bss`` are set up, as the vendor's own start-up does (False: they stay
            as reset leaves them, off on Armv8.1-M). The Ethos-U hooks keep NPU buffers coherent
            either way (:mod:`armgen.boards.npu`).
    """

    console: Literal["semihosting", "uart"]
    uart_kind: str | None
    uart_base: int | None
    vector_table: int
    uart_setup: UartSetup | None = None
    exit: Literal["semihosting", "loop"] = "loop"
    caches: bool = False


@dataclass(frozen=True)
class Emulator:
    """The QEMU machine that runs this board's CPU path.

    Attributes:
        board: name of the armgen board that is the stand-in (itself for QEMU boards).
        qemu_machine: ``-machine`` value, e.g. ``"mps3-an547"``. qemu_cpu: ``-cpu`` value.
        note: e.g. "Cortex-M85 runs as Cortex-M55 on an547".
        systick_hz: the rate SysTick counts at on that machine (processor clock, SYST_CSR.CLKSOURCE=1), in Hz:
            the QEMU board file's ``cpu.clock_hz`` (its source is cited there: QEMU 7.2 hw/arm/mps2.c, mps2-tz.c,
            stm32f405_soc.c). The one place armgen keeps it (:func:`armgen.firmware.qemu.instructions_from_ticks`).
    """

    board: str
    qemu_machine: str
    qemu_cpu: str
    note: str | None = None
    systick_hz: int | None = None


@dataclass(frozen=True)
class FlashFact:
    """How an image gets onto the board, or into its simulator (board file ``flash_and_watch``).

    Attributes:
        tool: what does it, e.g. ``"west flash"``, ``"OpenOCD"``, ``"FVP_Corstone_SSE-300_Ethos-U55"``.
        commands: shell lines, in order; ``{elf}``, ``{bin}`` and ``{name}`` stand for the image's
            ELF, its raw binary and the project name (the README fills them in).
        source: where these facts were read (file and commit, or URL).
        runners: for ``west flash``: ``(Zephyr release, default runner)`` pairs sorted by release (the
            runner the board's ``board.cmake`` sets first); empty otherwise.
        note: caveats, or None.
    """

    tool: str
    commands: tuple[str, ...]
    source: str
    runners: tuple[tuple[str, str], ...] = ()
    note: str | None = None

    def runner(self, release: str | None) -> str | None:
        """The default ``west flash`` runner in Zephyr ``release`` (None when not stated)."""
        return dict(self.runners).get(release) if release is not None else None


@dataclass(frozen=True)
class ConsoleFact:
    """Where the firmware's console comes out (board file ``flash_and_watch``).

    Attributes:
        uart: the UART (or semihosting) carrying the console, e.g. ``"USART3"``.
        baud: bits per second, or None where no line rate applies (emulators, FVPs).
        source: where these facts were read (file and commit, or URL).
        where: pins, connector or host side (``/dev/ttyACM0``, stdout, an FVP terminal), or None.
        note: caveats, or None.
    """

    uart: str
    baud: int | None
    source: str
    where: str | None = None
    note: str | None = None


@dataclass(frozen=True)
class FlashAndWatch:
    """How to put the image on the board and which console to watch, per flavour.

    Attributes:
        zephyr_flash / zephyr_console: for Zephyr projects (None for a board without Zephyr).
        baremetal_flash / baremetal_console: for bare-metal projects.
        not_checked: facts that could not be verified, said in words (shown in the README).
    """

    baremetal_flash: FlashFact
    baremetal_console: ConsoleFact
    zephyr_flash: FlashFact | None = None
    zephyr_console: ConsoleFact | None = None
    not_checked: tuple[str, ...] = ()


@dataclass(frozen=True)
class Budgets:
    """The image's size limits in bytes, as the board file states them (``budgets:``), and why.

    ``reason`` says which regions count and which do not (e.g. a DDR window left out: a budget that
    counts 256 MiB of external memory cannot be exceeded, so it checks nothing).
    """

    flash: int
    ram: int
    reason: str = ""


@dataclass(frozen=True)
class Board:
    """One board, validated.

    Attributes:
        name: file stem, e.g. ``"alif_e8_hp"``. description: one line.
        cpu, npu (None without NPU), regions (memory map, sorted by base), zephyr (None when Zephyr
        has no target), baremetal, budgets, emulator (None when no QEMU stand-in exists).
        source: the file it was loaded from.
        flash_and_watch: how to flash the image and which console to watch (None when the board
            file does not say).
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
    flash_and_watch: FlashAndWatch | None = None

    def region(self, name: str) -> MemoryRegion:
        """Return the region called ``name``.

        Raises:
            KeyError: when the board has no such region.
        """
        for r in self.regions:
            if r.name == name:
                return r
        raise KeyError(name)

