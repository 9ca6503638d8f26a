"""Loading boards: built-in names, aliases and paths -> a validated, frozen :class:`Board`."""

from __future__ import annotations

import dataclasses
import difflib
import os
import re
from pathlib import Path
from typing import Any

from armgen.boards.checks import (
    check_baremetal,
    check_budgets,
    check_cpu,
    check_devicetree,
    check_npu,
    check_regions,
)
from armgen.boards.model import (
    Baremetal,
    Board,
    ConsoleFact,
    Cpu,
    DtRegion,
    DtsFacts,
    Emulator,
    FlashAndWatch,
    FlashFact,
    MemoryRegion,
    Npu,
    UartSetup,
    ZephyrTarget,
)
from armgen.boards.schema import check_schema, read_yaml
from armgen.boards.sizes import size_field
from armgen.errors import BoardError
from armgen.paths import BOARDS_DIR

#: File of built-in board aliases (``alias: board``), beside the board files.
ALIASES_FILE = "aliases.yaml"
_BOARD_NAME_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_-]*$")


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
    data = read_yaml(path)
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
    check_schema(data, source)
    return _build(data, name=name, source=source, base_dir=base_dir or Path.cwd())


def board_to_dict(board: Board) -> dict[str, Any]:
    """Return the board as JSON-ready data (sets become sorted lists; addresses stay integers)."""

    def conv(value: Any) -> Any:
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            return {f.name: conv(getattr(value, f.name)) for f in dataclasses.fields(value)}
        if isinstance(value, dict):
            return {str(k): conv(v) for k, v in value.items()}
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


def _looks_like_path(text: str) -> bool:
    return (
        text.endswith((".yaml", ".yml"))
        or os.sep in text
        or (os.altsep is not None and os.altsep in text)
        or Path(text).is_file()
    )


def _load_file(path: Path) -> Board:
    name = path.stem
    data = read_yaml(path)
    if not _BOARD_NAME_RE.match(name):
        raise BoardError(
            f"{path}: board name '{name}' (the file name) must start with a letter and hold only letters, "
            "digits, '_' or '-'"
        )
    return board_from_data(data, name=name, source=str(path), base_dir=path.parent.resolve())


def _build(d: dict[str, Any], *, name: str, source: str, base_dir: Path) -> Board:
    cpu = Cpu(**d["cpu"])
    check_cpu(cpu, source)

    npu = None
    if d.get("npu") is not None:
        n = dict(d["npu"])
        cfg = n.get("vela_config_file")
        if cfg is not None:
            p = Path(cfg).expanduser()
            n["vela_config_file"] = str(p if p.is_absolute() else (base_dir / p).resolve())
        else:
            n["vela_config_file"] = None
        if n.get("clock_enable") is not None:
            n["clock_enable"] = (int(n["clock_enable"][0]), int(n["clock_enable"][1]))
        npu = Npu(**n)
        check_npu(npu, source)

    regions = []
    for i, r in enumerate(d["regions"]):
        label = f"regions[{i}]({r['name']})"
        region = MemoryRegion(
            name=r["name"],
            kind=r["kind"],
            base=r["base"],
            size=size_field(r["size"], source, f"{label}.size"),
            reserved=size_field(r.get("reserved", 0), source, f"{label}.reserved"),
            npu_address=r.get("npu_address"),
            uses=frozenset(r["uses"]),
            note=r.get("note"),
        )
        regions.append(region)
    regions_t = tuple(sorted(regions, key=lambda r: (r.base, r.name)))
    check_regions(regions_t, npu, source)

    zephyr = _zephyr(d["zephyr"], regions_t, source) if d.get("zephyr") is not None else None

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
        caches=bool(bm.get("caches", False)),
    )
    check_baremetal(baremetal, regions_t, source, cpu.core)

    budgets = check_budgets(d.get("budgets"), regions_t, source)
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
        flash_and_watch=_flash_and_watch(d.get("flash_and_watch"), zephyr, source),
    )


def _zephyr(raw: dict[str, Any], regions: tuple[MemoryRegion, ...], source: str) -> ZephyrTarget:
    """The ``zephyr:`` section, with its devicetree facts (schema_version 2) checked against the
    board's targets and regions."""
    z = dict(raw)
    z["flash_load_offset"] = size_field(z["flash_load_offset"], source, "zephyr.flash_load_offset")
    z["hal_modules"] = tuple(z.get("hal_modules", ()))
    z["targets"] = tuple(sorted((str(k), str(v)) for k, v in z["targets"].items()))
    z["disable_nodes"] = tuple(sorted((str(k), str(v)) for k, v in (z.get("disable_nodes") or {}).items()))
    z["development_only"] = tuple(sorted((str(k), str(v)) for k, v in (z.get("development_only") or {}).items()))
    stray = sorted({rel for rel, _ in z["development_only"]} - {rel for rel, _ in z["targets"]})
    if stray:
        raise BoardError(f"{source}: zephyr.development_only names releases without a target: {', '.join(stray)}")
    z["devicetree"] = tuple(
        (str(target), DtsFacts(
            regions={str(name): DtRegion(r["label"], r["memory_region"]) for name, r in facts["regions"].items()},
            flash=facts["flash"], sram=facts["sram"], has_npu_node=facts["has_npu_node"], source=facts["source"],
        ))
        for target, facts in sorted((z.get("devicetree") or {}).items())
    )
    zephyr = ZephyrTarget(**z)
    if zephyr.vendor_target and not zephyr.vendor_fork:
        raise BoardError(f"{source}: zephyr.vendor_target is set but zephyr.vendor_fork is not")
    check_devicetree(zephyr, regions, source)
    return zephyr


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
        return Emulator(board=name, qemu_machine=raw["qemu_machine"], qemu_cpu=raw["qemu_cpu"], note=note,
                        systick_hz=cpu.clock_hz)
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
        systick_hz=stand_in.emulator.systick_hz,
    )


#: What a ``flash_and_watch`` command line may name: the image's ELF and raw binary, the project name.
FLASH_PLACEHOLDERS = ("elf", "bin", "name")


def _flash_and_watch(raw: dict[str, Any] | None, zephyr: ZephyrTarget | None, source: str) -> FlashAndWatch | None:
    """The ``flash_and_watch:`` section: a ``zephyr`` part exactly when the board has Zephyr targets,
    ``west flash`` runners for exactly the board's Zephyr releases, and command lines that name only
    ``{elf}``, ``{bin}`` and ``{name}``."""
    if raw is None:
        return None
    where = f"{source}: flash_and_watch"
    if (raw.get("zephyr") is None) != (zephyr is None):
        raise BoardError(f"{where}.zephyr must be given exactly when the board has a zephyr section")
    parts: dict[str, Any] = {}
    for flavour in ("baremetal", "zephyr"):
        part = raw.get(flavour)
        if part is None:
            continue
        f, c = part["flash"], part["console"]
        for cmd in f["commands"]:
            names = set(re.findall(r"\{(\w*)\}", cmd))
            if not names <= set(FLASH_PLACEHOLDERS):
                bad = sorted(names - set(FLASH_PLACEHOLDERS))
                raise BoardError(f"{where}.{flavour}.flash.commands: '{cmd}' names {bad}; "
                                 "only {elf}, {bin} and {name} are filled in")
        runners = tuple(sorted((str(k), str(v)) for k, v in (f.get("runners") or {}).items()))
        if flavour == "zephyr" and zephyr is not None and runners and {r for r, _ in runners} != set(zephyr.releases):
            raise BoardError(f"{where}.zephyr.flash.runners: give the runner for each of the board's Zephyr releases "
                             f"({', '.join(zephyr.releases)}), not {', '.join(r for r, _ in runners)}")
        parts[f"{flavour}_flash"] = FlashFact(tool=f["tool"], commands=tuple(f["commands"]), source=f["source"],
                                              runners=runners, note=f.get("note"))
        parts[f"{flavour}_console"] = ConsoleFact(uart=c["uart"], baud=c.get("baud"), source=c["source"],
                                                  where=c.get("where"), note=c.get("note"))
    return FlashAndWatch(**parts, not_checked=tuple(raw.get("not_checked") or ()))
