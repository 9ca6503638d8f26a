"""Boards as data: one YAML file per board in ``boards/``, loaded into a frozen :class:`Board`.

CONTRACT (used by spec/render/build/size/run): field names below are stable.

Loading (:func:`load_board`) runs in two steps:

1. structure: the YAML is checked against ``boards/schema.json`` (JSON Schema 2020-12, with the
   ``jsonschema`` package): missing, unknown or mistyped fields are reported with their path;
2. meaning: regions sorted by base and must not overlap; ``reserved <= size``; the ExecuTorch target
   must be one ``CortexMTargetConfig.from_target_string`` accepts; the Vela accelerator, system
   config and memory mode must build a real Vela ``ArchitectureFeatures``; budgets must not exceed
   what the regions offer; the vector table must sit in a code region; the emulator stand-in must
   be a QEMU board.

Budgets (bytes), when a board file does not give them, are derived from the regions:

* ``flash`` = sum of ``usable`` (size - reserved) over non-volatile regions (kind flash or mram)
  that may hold ``code``, ``rodata`` or ``model``;
* ``ram`` = sum of ``usable`` over volatile regions that may hold ``data``, ``pools`` or ``stack``.

QEMU machines (and the Corstone FVPs) have no flash: the simulator loads the image into RAM. Their
code RAM (an385/an386/an500 code SSRAM, an547/Corstone-300 ITCM, Corstone-320 BROM/ISRAM) is
given kind ``flash`` so that budgets and the size report stay meaningful; this mirrors Zephyr,
whose devicetrees choose ``zephyr,flash`` = that RAM. Each such region says so in its ``note``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import difflib
import functools
import io
import json
import os
import re
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any, Literal

from armgen.errors import BoardError
from armgen.paths import BOARDS_DIR

RegionKind = Literal["flash", "mram", "itcm", "dtcm", "sram", "ddr"]
RegionUse = Literal["code", "rodata", "model", "data", "pools", "stack"]

#: Kinds whose contents survive power-off: flash use counts here, RAM use does not.
NON_VOLATILE_KINDS: frozenset[str] = frozenset({"flash", "mram"})
#: Speed order used to place pools: earlier is faster (first region that fits wins).
SPEED_ORDER: tuple[str, ...] = ("dtcm", "itcm", "sram", "ddr", "mram", "flash")


def speed_rank(region: MemoryRegion) -> tuple[int, int]:
    """Sort key of a region by speed: its kind's place in :data:`SPEED_ORDER` (unknown kinds last),
    then its base address. ``sorted(regions, key=speed_rank)[0]`` is the fastest."""
    kind = SPEED_ORDER.index(region.kind) if region.kind in SPEED_ORDER else len(SPEED_ORDER)
    return kind, region.base


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
    """

    targets: tuple[tuple[str, str], ...]
    flash_load_offset: int
    console: str
    hal_modules: tuple[str, ...]
    vendor_fork: str | None = None
    vendor_target: str | None = None
    note: str | None = None

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
    """

    console: Literal["semihosting", "uart"]
    uart_kind: str | None
    uart_base: int | None
    vector_table: int
    uart_setup: UartSetup | None = None
    exit: Literal["semihosting", "loop"] = "loop"


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


# ---------------------------------------------------------------------------------------------
# Loader
# ---------------------------------------------------------------------------------------------

#: The board-file format this armgen reads (``schema_version:`` in every board file).
SCHEMA_VERSION = 1
#: File of built-in board aliases (``alias: board``), beside the board files.
ALIASES_FILE = "aliases.yaml"
SCHEMA_FILE = "schema.json"

_CODE_USES = frozenset({"code", "rodata", "model"})
_RAM_USES = frozenset({"data", "pools", "stack"})
_SIZE_UNITS = {"": 1, "b": 1, "kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "kb": 1000, "mb": 1000**2}
_SIZE_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([A-Za-z]*)\s*$")
_BOARD_NAME_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_-]*$")
#: GCC 12.2 (Debian arm-none-eabi) values armgen accepts; M85 is compiled as cortex-m55.
_GCC_MCPU = frozenset(
    {"cortex-m0", "cortex-m0plus", "cortex-m3", "cortex-m4", "cortex-m7", "cortex-m23", "cortex-m33",
     "cortex-m35p", "cortex-m55"}
)
_GCC_MFPU = frozenset({"fpv4-sp-d16", "fpv5-sp-d16", "fpv5-d16", "auto"})


def list_boards() -> list[str]:
    """Return the names of the built-in boards (file stems in ``boards/``), sorted.

    Aliases are not included (see :func:`board_aliases`).
    """
    if not BOARDS_DIR.is_dir():
        return []
    return sorted(p.stem for p in BOARDS_DIR.glob("*.yaml") if p.name != ALIASES_FILE)


def board_aliases() -> dict[str, str]:
    """Return the built-in aliases, ``{alias: board name}`` (from ``boards/aliases.yaml``).

    Raises:
        BoardError: when the aliases file is not a mapping of names to existing boards.
    """
    path = BOARDS_DIR / ALIASES_FILE
    if not path.is_file():
        return {}
    data = _read_yaml(path)
    if data is None:
        return {}
    boards = set(list_boards())
    if not isinstance(data, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in data.items()):
        raise BoardError(f"{path}: expected a mapping of alias names to board names")
    for alias, target in data.items():
        if target not in boards:
            raise BoardError(f"{path}: alias '{alias}' points to unknown board '{target}'")
        if alias in boards:
            raise BoardError(f"{path}: alias '{alias}' hides the board file of the same name")
    return dict(sorted(data.items()))


def load_board(name_or_path: str | os.PathLike[str]) -> Board:
    """Load and validate one board: a built-in name, an alias, or a path to a YAML file.

    A value is taken as a path when it ends in ``.yaml``/``.yml``, contains a path separator, or
    names an existing file; otherwise it is looked up among the built-in boards and aliases
    (``alif_e8`` -> ``alif_e8_hp``). The board's name is the file's stem.

    Returns:
        Board: frozen, regions sorted by base, budgets filled in (see the module docstring).

    Raises:
        BoardError: unknown name (with the closest names as hint), unreadable file, YAML syntax
            error, a missing/unknown/mistyped field (message names file and field), overlapping
            regions, ``reserved`` > ``size``, a budget above what the regions offer, an ExecuTorch
            target or a Vela accelerator/system config/memory mode that the installed ExecuTorch or
            Vela does not know.
    """
    text = os.fspath(name_or_path)
    if _looks_like_path(text):
        return _load_file(Path(text).expanduser())
    boards = list_boards()
    if text in boards:
        return _load_file(BOARDS_DIR / f"{text}.yaml")
    aliases = board_aliases()
    if text in aliases:
        return _load_file(BOARDS_DIR / f"{aliases[text]}.yaml")
    close = difflib.get_close_matches(text, boards + list(aliases), n=3, cutoff=0.5)
    hint = f"did you mean {', '.join(close)}? " if close else ""
    raise BoardError(
        f"unknown board '{text}'",
        hint=hint + "`armgen boards` lists the built-in boards; a path to a board .yaml file works too",
    )


def board_from_data(data: Any, *, name: str, source: str = "<data>", base_dir: Path | None = None) -> Board:
    """Validate already-parsed board data (e.g. ``yaml.safe_load`` of a string) into a Board.

    Args:
        data: the parsed YAML document. name: the board name. source: file name used in messages.
        base_dir: directory that relative paths (``npu.vela_config_file``) are resolved against.

    Raises:
        BoardError: as :func:`load_board`.
    """
    _check_schema(data, source)
    return _build(data, name=name, source=source, base_dir=base_dir or Path.cwd())


def board_to_dict(board: Board) -> dict[str, Any]:
    """Return the board as JSON-ready data (sets become sorted lists; addresses stay integers)."""

    def conv(value: Any) -> Any:
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            return {f.name: conv(getattr(value, f.name)) for f in dataclasses.fields(value)}
        if isinstance(value, (frozenset, set)):
            return sorted(value)
        if isinstance(value, (tuple, list)):
            return [conv(v) for v in value]
        return value

    out = conv(board)
    for region, r in zip(out["regions"], board.regions, strict=False):
        region["usable"] = r.usable
        region["volatile"] = r.volatile
    return out


# --------------------------------------------------------------------------- file and schema


def _looks_like_path(text: str) -> bool:
    return (
        text.endswith((".yaml", ".yml"))
        or os.sep in text
        or (os.altsep is not None and os.altsep in text)
        or Path(text).is_file()
    )


def _read_yaml(path: Path) -> Any:
    import yaml

    try:
        raw = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise BoardError(
            f"board file not found: {path}", hint="give a built-in board name or an existing .yaml path"
        ) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise BoardError(f"cannot read board file {path}: {exc}") from None
    try:
        return yaml.safe_load(raw)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise BoardError(f"{path}:{where}: invalid YAML: {problem}") from None


def _load_file(path: Path) -> Board:
    name = path.stem
    data = _read_yaml(path)
    if not _BOARD_NAME_RE.match(name):
        raise BoardError(
            f"{path}: board name '{name}' (the file name) must start with a letter and hold only letters, "
            "digits, '_' or '-'"
        )
    return board_from_data(data, name=name, source=str(path), base_dir=path.parent.resolve())


@functools.lru_cache(maxsize=1)
def _validator() -> Any:
    import jsonschema

    schema = json.loads((BOARDS_DIR / SCHEMA_FILE).read_text(encoding="utf-8"))
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema)


def _field_path(error: Any, data: Any) -> str:
    """``regions[2](DTCM).size`` style path of a jsonschema error."""
    parts: list[str] = []
    node = data
    for key in error.absolute_path:
        if isinstance(key, int):
            label = f"[{key}]"
            try:
                node = node[key]
                if isinstance(node, dict) and isinstance(node.get("name"), str):
                    label += f"({node['name']})"
            except (IndexError, KeyError, TypeError):
                pass
            parts.append(label)
        else:
            parts.append(("." if parts else "") + str(key))
            with contextlib.suppress(KeyError, TypeError):
                node = node[key]
    return "".join(parts)


def _describe(error: Any, data: Any) -> str:
    where = _field_path(error, data)
    prefix = f"{where}: " if where else ""
    kind = error.validator
    value = error.instance
    if kind == "required":
        missing = [f for f in error.validator_value if not isinstance(value, dict) or f not in value]
        return f"{prefix}missing field '{missing[0] if missing else '?'}'"
    if kind == "additionalProperties":
        known = sorted(error.schema.get("properties", {}))
        extra = sorted(k for k in value if k not in known)
        field = extra[0] if extra else "?"
        close = difflib.get_close_matches(field, known, n=1, cutoff=0.6)
        also = f" (did you mean '{close[0]}'?)" if close else ""
        return f"{prefix}unknown field '{field}'{also}; known fields: {', '.join(known)}"
    if kind == "type":
        want = error.validator_value
        want = " or ".join(want) if isinstance(want, list) else want
        desc = error.schema.get("description")
        return f"{prefix}expected {want}, got {type(value).__name__} {value!r}" + (f" ({desc})" if desc else "")
    if kind == "enum":
        allowed = ", ".join("null" if v is None else str(v) for v in error.validator_value)
        close = difflib.get_close_matches(str(value), [str(v) for v in error.validator_value if v is not None], n=1)
        also = f" (did you mean '{close[0]}'?)" if close else ""
        return f"{prefix}{value!r} is not one of: {allowed}{also}"
    if kind == "const" and where == "schema_version":
        return f"schema_version: this armgen reads schema_version {SCHEMA_VERSION}, the file has {value!r}"
    if kind in ("pattern", "oneOf", "minimum", "maximum"):
        desc = error.schema.get("description")
        if kind == "oneOf":
            desc = "; ".join(s.get("description", "") for s in error.schema["oneOf"] if isinstance(s, dict)) or None
            desc = desc or "an address (integer) or null"
        return f"{prefix}{value!r} is not valid" + (f": expected {desc}" if desc else f" ({error.message})")
    return f"{prefix}{error.message}"


def _check_schema(data: Any, source: str) -> None:
    if not isinstance(data, dict):
        raise BoardError(f"{source}: a board file must be a YAML mapping (got {type(data).__name__})")
    if "schema_version" not in data:
        raise BoardError(
            f"{source}: missing field 'schema_version'",
            hint=f"add `schema_version: {SCHEMA_VERSION}` at the top (copy a file from {BOARDS_DIR})",
        )
    errors = sorted(_validator().iter_errors(data), key=lambda e: (list(map(str, e.absolute_path)), e.validator))
    if errors:
        first = _describe(errors[0], data)
        hint = None
        if len(errors) > 1:
            hint = f"{len(errors) - 1} more problem(s): " + "; ".join(_describe(e, data) for e in errors[1:4])
        raise BoardError(f"{source}: {first}", hint=hint)


# --------------------------------------------------------------------------- meaning


def parse_size(value: int | str) -> int:
    """Return bytes for an int or a string such as ``"512 KiB"``, ``"5.5 MiB"``, ``"64 KB"``, ``"100"``:
    armgen's one size grammar (board files, budgets). Units, case-insensitive: ``B``, ``KiB`` (1024),
    ``MiB``, ``GiB``, ``KB`` (1000), ``MB``; decimals only where the result is a whole number of bytes.

    Raises:
        ValueError: a boolean, a negative size, an unknown unit or a fraction of a byte; the message
            says which ("negative ...", "not a size: ...", "not a whole number of bytes: ...").
    """
    if isinstance(value, bool):
        raise ValueError(f"not a size: {value!r}")
    if isinstance(value, int):
        if value < 0:
            raise ValueError(f"negative ({value})")
        return value
    text = str(value)
    if text.strip().startswith("-"):
        raise ValueError(f"negative ({value!r})")
    m = _SIZE_RE.match(text)
    unit = m.group(2).lower() if m else ""
    if not m or unit not in _SIZE_UNITS:
        raise ValueError(f"not a size: {value!r} (use bytes, B, KiB, MiB, GiB, KB or MB)")
    n = Fraction(m.group(1)) * _SIZE_UNITS[unit]
    if n.denominator != 1:
        raise ValueError(f"not a whole number of bytes: {value!r}")
    return int(n)


def _size(value: Any, source: str, where: str) -> int:
    try:
        return parse_size(value)
    except ValueError as exc:
        raise BoardError(f"{source}: {where}: {exc}") from None


def _build(d: dict[str, Any], *, name: str, source: str, base_dir: Path) -> Board:
    cpu = Cpu(**d["cpu"])
    _check_cpu(cpu, source)

    npu = None
    if d.get("npu") is not None:
        n = dict(d["npu"])
        cfg = n.get("vela_config_file")
        if cfg is not None:
            p = Path(cfg).expanduser()
            n["vela_config_file"] = str(p if p.is_absolute() else (base_dir / p).resolve())
        else:
            n["vela_config_file"] = None
        npu = Npu(**n)
        _check_npu(npu, source)

    regions = []
    for i, r in enumerate(d["regions"]):
        label = f"regions[{i}]({r['name']})"
        region = MemoryRegion(
            name=r["name"],
            kind=r["kind"],
            base=r["base"],
            size=_size(r["size"], source, f"{label}.size"),
            reserved=_size(r.get("reserved", 0), source, f"{label}.reserved"),
            npu_address=r.get("npu_address"),
            uses=frozenset(r["uses"]),
            note=r.get("note"),
        )
        regions.append(region)
    regions_t = tuple(sorted(regions, key=lambda r: (r.base, r.name)))
    _check_regions(regions_t, npu, source)

    zephyr = None
    if d.get("zephyr") is not None:
        z = dict(d["zephyr"])
        z["flash_load_offset"] = _size(z["flash_load_offset"], source, "zephyr.flash_load_offset")
        z["hal_modules"] = tuple(z.get("hal_modules", ()))
        z["targets"] = tuple(sorted((str(k), str(v)) for k, v in z["targets"].items()))
        zephyr = ZephyrTarget(**z)
        if zephyr.vendor_target and not zephyr.vendor_fork:
            raise BoardError(f"{source}: zephyr.vendor_target is set but zephyr.vendor_fork is not")

    bm = d["baremetal"]
    setup = bm.get("uart_setup")
    baremetal = Baremetal(
        console=bm["console"],
        uart_kind=bm.get("uart_kind"),
        uart_base=bm.get("uart_base"),
        vector_table=bm["vector_table"],
        uart_setup=UartSetup(
            clock_hz=setup["clock_hz"], baud=setup["baud"], enable=tuple((int(a), int(b)) for a, b in setup["enable"]),
            tx_gpio=setup["tx_pin"]["gpio"], tx_pin=setup["tx_pin"]["pin"], tx_af=setup["tx_pin"]["af"],
            source=setup.get("source", ""),
        ) if setup else None,
        exit=bm.get("exit") or ("semihosting" if bm["console"] == "semihosting" else "loop"),
    )
    _check_baremetal(baremetal, regions_t, source)

    budgets = _budgets(d.get("budgets"), regions_t, source)
    emulator = _emulator(d.get("emulator"), name, cpu, source)

    return Board(
        name=name,
        description=d["description"],
        cpu=cpu,
        npu=npu,
        regions=regions_t,
        zephyr=zephyr,
        baremetal=baremetal,
        budgets=budgets,
        emulator=emulator,
        source=source,
    )


def _check_cpu(cpu: Cpu, source: str) -> None:
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


def _check_npu(npu: Npu, source: str) -> None:
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


def _check_regions(regions: tuple[MemoryRegion, ...], npu: Npu | None, source: str) -> None:
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


def _check_baremetal(bm: Baremetal, regions: tuple[MemoryRegion, ...], source: str) -> None:
    if bm.console == "uart" and (bm.uart_base is None or bm.uart_kind is None):
        raise BoardError(f"{source}: baremetal.console is 'uart' but uart_kind/uart_base are not both set")
    if (bm.uart_kind or "").startswith("stm32") and bm.uart_setup is None:
        raise BoardError(f"{source}: baremetal.uart_kind {bm.uart_kind} needs baremetal.uart_setup "
                         "(clock_hz, baud, enable, tx_pin) for its driver")
    if not any("code" in r.uses and r.base <= bm.vector_table < r.base + r.size for r in regions):
        raise BoardError(
            f"{source}: baremetal.vector_table {bm.vector_table:#x} is not inside a region that holds code"
        )


def default_budgets(regions: tuple[MemoryRegion, ...]) -> Budgets:
    """Budgets derived from regions (bytes): see the module docstring for the rule."""
    flash = sum(r.usable for r in regions if not r.volatile and _CODE_USES & r.uses)
    ram = sum(r.usable for r in regions if r.volatile and _RAM_USES & r.uses)
    return Budgets(flash=flash, ram=ram)


def _budgets(raw: dict[str, Any] | None, regions: tuple[MemoryRegion, ...], source: str) -> Budgets:
    limit = default_budgets(regions)
    raw = raw or {}
    flash = _size(raw["flash"], source, "budgets.flash") if "flash" in raw else limit.flash
    ram = _size(raw["ram"], source, "budgets.ram") if "ram" in raw else limit.ram
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
    return Budgets(flash=flash, ram=ram)


def _emulator(raw: dict[str, Any] | None, name: str, cpu: Cpu, source: str) -> Emulator | None:
    if raw is None:
        return None
    note = raw.get("note")
    if "qemu_machine" in raw or "qemu_cpu" in raw:
        if "board" in raw and raw["board"] != name:
            raise BoardError(
                f"{source}: emulator: give either 'board' (a QEMU stand-in) or 'qemu_machine'/'qemu_cpu' "
                "(this board is a QEMU machine), not both"
            )
        for key in ("qemu_machine", "qemu_cpu"):
            if key not in raw:
                raise BoardError(f"{source}: emulator: missing field '{key}'")
        return Emulator(board=name, qemu_machine=raw["qemu_machine"], qemu_cpu=raw["qemu_cpu"], note=note)
    if "board" not in raw:
        raise BoardError(f"{source}: emulator: missing field 'board' (or 'qemu_machine' and 'qemu_cpu')")
    stand_in_name = raw["board"]
    if stand_in_name not in list_boards():
        close = difflib.get_close_matches(stand_in_name, list_boards(), n=2, cutoff=0.5)
        raise BoardError(
            f"{source}: emulator.board '{stand_in_name}' is not a built-in board",
            hint=f"did you mean {' or '.join(close)}?" if close else "it must name a built-in qemu_* board",
        )
    stand_in = load_board(stand_in_name)
    if stand_in.emulator is None or stand_in.emulator.board != stand_in.name:
        raise BoardError(f"{source}: emulator.board '{stand_in_name}' is not a QEMU machine board")
    return Emulator(
        board=stand_in.name,
        qemu_machine=stand_in.emulator.qemu_machine,
        qemu_cpu=stand_in.emulator.qemu_cpu,
        note=note,
    )
