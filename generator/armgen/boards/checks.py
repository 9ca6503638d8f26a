"""What a board means, checked after its structure: regions, CPU, NPU (through Vela), bare metal, budgets.

Each check raises :class:`~armgen.errors.BoardError` naming the file and the field.
"""

from __future__ import annotations

import contextlib
import difflib
import functools
import io
import os
from pathlib import Path
from typing import Any

from armgen.boards.model import Baremetal, Budgets, Cpu, MemoryRegion, Npu, ZephyrTarget
from armgen.boards.sizes import size_field
from armgen.errors import BoardError

_CODE_USES = frozenset({"code", "rodata", "model"})
_RAM_USES = frozenset({"data", "pools", "stack"})
#: GCC 12.2 (Debian arm-none-eabi) values armgen accepts; M85 is compiled as cortex-m55.
_GCC_MCPU = frozenset(
    {"cortex-m0", "cortex-m0plus", "cortex-m3", "cortex-m4", "cortex-m7", "cortex-m23", "cortex-m33",
     "cortex-m35p", "cortex-m55"}
)
_GCC_MFPU = frozenset({"fpv4-sp-d16", "fpv5-sp-d16", "fpv5-d16", "auto"})


def check_cpu(cpu: Cpu, source: str) -> None:
    """Check the CPU: an ExecuTorch Cortex-M target equal to the core, GCC flags Debian's GCC 12.2
    knows, and FPU / MVE / float ABI that agree.

    Raises:
        BoardError: naming the ``cpu.`` field.
    """
    from executorch.backends.cortex_m.target_config import CortexMTargetConfig

    try:
        CortexMTargetConfig.from_target_string(cpu.et_target)
    except ValueError as exc:
        raise BoardError(f"{source}: cpu.et_target: {exc}") from None
    if cpu.et_target != cpu.core:
        raise BoardError(f"{source}: cpu.et_target '{cpu.et_target}' does not match cpu.core '{cpu.core}'")
    if cpu.gcc_mcpu not in _GCC_MCPU:
        m85 = cpu.gcc_mcpu == "cortex-m85"
        hint = "Debian's GCC 12.2 has no -mcpu=cortex-m85: compile M85 as cortex-m55" if m85 else None
        raise BoardError(
            f"{source}: cpu.gcc_mcpu '{cpu.gcc_mcpu}' is not one of: {', '.join(sorted(_GCC_MCPU))}", hint=hint
        )
    if cpu.gcc_mfpu is not None and cpu.gcc_mfpu not in _GCC_MFPU:
        raise BoardError(
            f"{source}: cpu.gcc_mfpu '{cpu.gcc_mfpu}' is not one of: {', '.join(sorted(_GCC_MFPU))} (or null)"
        )
    if cpu.fpu == "none" and cpu.gcc_float_abi == "hard":
        raise BoardError(f"{source}: cpu.gcc_float_abi is 'hard' but cpu.fpu is 'none'")
    if cpu.mve != "none" and cpu.core not in ("cortex-m55", "cortex-m85"):
        raise BoardError(f"{source}: cpu.mve is '{cpu.mve}' but {cpu.core} has no MVE (Helium): only cortex-m55/m85 do")
    if cpu.mve == "float" and cpu.fpu == "none":
        raise BoardError(f"{source}: cpu.mve is 'float' but cpu.fpu is 'none'")


@functools.lru_cache(maxsize=64)
def _vela_check(accelerator: str, system_config: str, memory_mode: str, config_file: str | None) -> str | None:
    """Build Vela's ArchitectureFeatures; return Vela's error text or None when it accepts."""
    from ethosu.vela.architecture_features import CONFIG_FILES_PATH, ArchitectureFeatures
    from ethosu.vela.errors import VelaError

    files = [config_file] if config_file else [os.path.join(CONFIG_FILES_PATH, "Arm", "vela.ini")]
    try:
        with contextlib.redirect_stdout(io.StringIO()):  # Vela prints "Info:"/"Warning:" lines
            ArchitectureFeatures(
                vela_config_files=files,
                accelerator_config=accelerator,
                system_config=system_config,
                memory_mode=memory_mode,
                max_blockdep=ArchitectureFeatures.MAX_BLOCKDEP,
                verbose_config=False,
                arena_cache_size=None,
            )
    except VelaError as exc:
        return exc.error_msg
    except (KeyError, ValueError) as exc:  # a malformed .ini value (e.g. an unknown port name)
        return f"{type(exc).__name__}: {exc}"
    return None


def vela_system_configs(config_file: str | None = None) -> tuple[list[str], list[str]]:
    """Return (system configs, memory modes) defined in a Vela .ini (default: Vela's Arm/vela.ini)."""
    from configparser import ConfigParser

    from ethosu.vela.architecture_features import CONFIG_FILES_PATH

    parser = ConfigParser()
    parser.read(config_file or os.path.join(CONFIG_FILES_PATH, "Arm", "vela.ini"))
    systems = [s.split(".", 1)[1] for s in parser.sections() if s.startswith("System_Config.")]
    modes = [s.split(".", 1)[1] for s in parser.sections() if s.startswith("Memory_Mode.")]
    return systems, modes


def check_npu(npu: Npu, source: str) -> None:
    """Check the NPU against the installed Vela: a known accelerator equal to ``<type>-<macs>``, and a
    system config and memory mode that build Vela's ``ArchitectureFeatures`` (from the board's .ini
    or Vela's built-in ``Arm/vela.ini``).

    Raises:
        BoardError: naming the ``npu.`` field, with the configs the .ini defines in the hint.
    """
    from ethosu.vela.architecture_features import Accelerator

    known = Accelerator.member_list()
    if npu.vela_accelerator not in known:
        close = difflib.get_close_matches(npu.vela_accelerator, known, n=2, cutoff=0.6)
        raise BoardError(
            f"{source}: npu.vela_accelerator '{npu.vela_accelerator}' is not a Vela accelerator config",
            hint=(f"did you mean {' or '.join(close)}? " if close else "") + "Vela 5.1 knows: " + ", ".join(known),
        )
    expected = f"{npu.type}-{npu.macs}"
    if npu.vela_accelerator != expected:
        raise BoardError(
            f"{source}: npu.vela_accelerator '{npu.vela_accelerator}' does not match npu.type/npu.macs ({expected})"
        )
    if npu.vela_config_file is not None and not Path(npu.vela_config_file).is_file():
        raise BoardError(f"{source}: npu.vela_config_file not found: {npu.vela_config_file}")
    problem = _vela_check(npu.vela_accelerator, npu.vela_system_config, npu.vela_memory_mode, npu.vela_config_file)
    if problem is not None:
        systems, modes = vela_system_configs(npu.vela_config_file)
        ini = npu.vela_config_file or "Vela's built-in Arm/vela.ini"
        raise BoardError(
            f"{source}: npu: Vela rejects {npu.vela_accelerator} / system config '{npu.vela_system_config}'"
            f" / memory mode '{npu.vela_memory_mode}': {problem}",
            hint=f"{ini} defines system configs {', '.join(systems)}; memory modes {', '.join(modes)}",
        )


def check_regions(regions: tuple[MemoryRegion, ...], npu: Npu | None, source: str) -> None:
    """Check the memory map (regions sorted by base): unique names, ``0 < size``, ``reserved <= size``,
    inside 4 GiB, no overlaps, somewhere for code and for data, NPU-reachable pools with an NPU.

    Raises:
        BoardError: naming the region(s).
    """
    names: set[str] = set()
    for r in regions:
        label = f"region {r.name}"
        if r.name in names:
            raise BoardError(f"{source}: two regions are called '{r.name}'")
        names.add(r.name)
        if r.size <= 0:
            raise BoardError(f"{source}: {label}: size must be > 0")
        if r.reserved > r.size:
            raise BoardError(f"{source}: {label}: reserved ({r.reserved:#x}) is larger than size ({r.size:#x})")
        if r.base + r.size > 1 << 32:
            raise BoardError(f"{source}: {label}: {r.base:#x} + {r.size:#x} runs past the 4 GiB address space")
        if r.npu_address is not None and npu is None:
            raise BoardError(f"{source}: {label}: npu_address is set but the board has no npu")
    for a, b in zip(regions, regions[1:], strict=False):
        if b.base < a.base + a.size:
            raise BoardError(
                f"{source}: regions {a.name} [{a.base:#010x}, {a.base + a.size:#010x}) and "
                f"{b.name} [{b.base:#010x}, {b.base + b.size:#010x}) overlap"
            )
    if not any("code" in r.uses for r in regions):
        raise BoardError(f"{source}: no region may hold code (add 'code' to one region's uses)")
    if not any(_RAM_USES & r.uses for r in regions if r.volatile):
        raise BoardError(f"{source}: no RAM region may hold data, pools or stack")
    if npu is not None and not any("pools" in r.uses and r.npu_address is not None for r in regions):
        raise BoardError(f"{source}: the board has an NPU but no region that holds pools has an npu_address")
    _check_npu_view(regions, source)


def _check_npu_view(regions: tuple[MemoryRegion, ...], source: str) -> None:
    """The NPU's view of the regions (``npu_address`` .. + size) stays in 4 GiB and is one-to-one: two
    regions the NPU sees at overlapping addresses would make the remap ambiguous.

    Raises:
        BoardError: naming the region(s).
    """
    seen = sorted((r for r in regions if r.npu_address is not None), key=lambda r: (r.npu_address, r.name))
    for r in seen:
        assert r.npu_address is not None
        if r.npu_address + r.size > 1 << 32:
            raise BoardError(f"{source}: region {r.name}: npu_address {r.npu_address:#x} + size {r.size:#x} "
                             "runs past the NPU's 4 GiB address space")
    for a, b in zip(seen, seen[1:], strict=False):
        assert a.npu_address is not None and b.npu_address is not None
        if b.npu_address < a.npu_address + a.size:
            raise BoardError(
                f"{source}: regions {a.name} and {b.name} overlap as the NPU sees them "
                f"(npu_address {a.npu_address:#010x} + {a.size:#x} and {b.npu_address:#010x})",
                hint="each region needs its own npu_address window",
            )


#: Cores whose caches are invalidated by hardware at reset, so the start-up may just turn them on
#: (Cortex-M55 TRM; hal_alif common/src/system.c SystemInit relies on it). Others need an
#: invalidate loop armgen's start-up does not have.
_CACHE_AUTO_INVALIDATE_CORES = frozenset({"cortex-m55"})


def check_baremetal(bm: Baremetal, regions: tuple[MemoryRegion, ...], source: str, core: str = "") -> None:
    """Check the bare-metal facts: a UART console has its kind and base, an STM32 USART its setup,
    the vector table lies in a region that holds code, and ``caches`` only on a core that invalidates
    its caches at reset (``core``: the board's ``cpu.core``).

    Raises:
        BoardError: naming the ``baremetal.`` field.
    """
    if bm.caches and core not in _CACHE_AUTO_INVALIDATE_CORES:
        raise BoardError(
            f"{source}: baremetal.caches is true but armgen's start-up can turn caches on only for "
            f"{', '.join(sorted(_CACHE_AUTO_INVALIDATE_CORES))} (cores that invalidate them at reset), not {core}",
            hint="set baremetal.caches: false",
        )
    if bm.console == "uart" and (bm.uart_base is None or bm.uart_kind is None):
        raise BoardError(f"{source}: baremetal.console is 'uart' but uart_kind/uart_base are not both set")
    if (bm.uart_kind or "").startswith("stm32") and bm.uart_setup is None:
        raise BoardError(f"{source}: baremetal.uart_kind {bm.uart_kind} needs baremetal.uart_setup "
                         "(clock_hz, baud, enable, tx_pin) for its driver")
    if not any("code" in r.uses and r.base <= bm.vector_table < r.base + r.size for r in regions):
        raise BoardError(
            f"{source}: baremetal.vector_table {bm.vector_table:#x} is not inside a region that holds code"
        )


def check_devicetree(zephyr: ZephyrTarget, regions: tuple[MemoryRegion, ...], source: str) -> None:
    """Check ``zephyr.devicetree``: each entry names one of the board's Zephyr targets, its regions are
    the board's, and its ``flash`` / ``sram`` are among them.

    Raises:
        BoardError: naming the target and the field.
    """
    targets = sorted({target for _, target in zephyr.targets})
    names = {r.name for r in regions}
    for target, facts in zephyr.devicetree:
        where = f"zephyr.devicetree.{target}"
        if target not in targets:
            raise BoardError(f"{source}: {where}: '{target}' is not one of the board's Zephyr targets "
                             f"({', '.join(targets)})")
        unknown = sorted(set(facts.regions) - names)
        if unknown:
            raise BoardError(f"{source}: {where}.regions: {', '.join(unknown)} is not a region of the board "
                             f"({', '.join(sorted(names))})")
        for key in ("flash", "sram"):
            value = getattr(facts, key)
            if value not in facts.regions:
                raise BoardError(f"{source}: {where}.{key}: '{value}' is not one of its regions "
                                 f"({', '.join(sorted(facts.regions))})")


def default_budgets(regions: tuple[MemoryRegion, ...]) -> Budgets:
    """The most the regions offer (bytes), the upper limit of a board's budgets: see the module docstring."""
    flash = sum(r.usable for r in regions if not r.volatile and _CODE_USES & r.uses)
    ram = sum(r.usable for r in regions if r.volatile and _RAM_USES & r.uses)
    return Budgets(flash=flash, ram=ram)


def check_budgets(raw: dict[str, Any] | None, regions: tuple[MemoryRegion, ...], source: str) -> Budgets:
    """The board's budgets in bytes: what the file's ``budgets:`` states (flash, ram and the reason;
    every built-in board states all three); a value it leaves out is derived from the regions (flash:
    all flash regions; RAM: the on-chip RAM regions, external memory of kind ``ddr`` left out, as a
    budget that counts a 256 MiB DDR window cannot be exceeded). Neither may exceed what the regions
    offer (:func:`default_budgets`).

    Raises:
        BoardError: a budget larger than the regions offer, or not a size.
    """
    limit = default_budgets(regions)
    raw = raw or {}
    on_chip = sum(r.usable for r in regions if r.volatile and r.kind != "ddr" and _RAM_USES & r.uses)
    flash = size_field(raw["flash"], source, "budgets.flash") if "flash" in raw else limit.flash
    ram = size_field(raw["ram"], source, "budgets.ram") if "ram" in raw else on_chip
    if flash > limit.flash:
        raise BoardError(
            f"{source}: budgets.flash ({flash} bytes) is larger than the flash regions offer ({limit.flash} bytes)",
            hint="flash regions = kind flash/mram that may hold code, rodata or model, less their reserved bytes",
        )
    if ram > limit.ram:
        raise BoardError(
            f"{source}: budgets.ram ({ram} bytes) is larger than the RAM regions offer ({limit.ram} bytes)",
            hint="RAM regions = volatile kinds that may hold data, pools or stack, less their reserved bytes",
        )
    reason = str(raw.get("reason") or "").strip() or (
        "derived from the regions: flash regions that may hold code, rodata or model; RAM regions that may "
        "hold data, pools or stack, external memory (kind ddr) left out")
    return Budgets(flash=flash, ram=ram, reason=reason)
