"""`armgen boards`: list the built-in boards, or show one board (built-in name, alias or YAML path).

Data goes to stdout (rich tables, or JSON with ``--json``); errors are BoardError (exit 2).
"""

from __future__ import annotations

import json

import click
from rich.markup import escape
from rich.table import Table

from armgen.boards import Board, board_aliases, board_to_dict, list_boards, load_board
from armgen.cli._console import out_console, print_table
from armgen.cli.group import main


def _bytes(n: int) -> str:
    """Human size: the largest unit that shows ``n`` exactly with at most two decimals."""
    units = (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10))
    for unit, scale in units:
        if n >= scale and (n * 100) % scale == 0:
            return f"{n / scale:.2f}".rstrip("0").rstrip(".") + f" {unit}"
    if n % 1024 == 0 and n < 10_000 * 1024:
        return f"{n // 1024} KiB"
    for unit, scale in units:
        if n >= scale:
            return f"{n / scale:.2f} {unit}"
    return f"{n} B"


def _say(text: str) -> None:
    """One line of board data: no markup (notes may hold brackets), wrapped only by the terminal."""
    out_console.print(text, markup=False, soft_wrap=True)


def _npu_text(board: Board) -> str:
    return board.npu.vela_accelerator if board.npu else "-"


def _cpu_text(board: Board) -> str:
    return f"{board.cpu.core} @ {board.cpu.clock_hz / 1e6:g} MHz"


def _summary(board: Board, aliases: list[str]) -> dict[str, object]:
    return {
        "name": board.name,
        "aliases": aliases,
        "description": board.description,
        "cpu": board.cpu.core,
        "clock_hz": board.cpu.clock_hz,
        "npu": board.npu.vela_accelerator if board.npu else None,
        "flash_bytes": board.budgets.flash,
        "ram_bytes": board.budgets.ram,
        "budget_reason": board.budgets.reason,
        "zephyr_targets": dict(board.zephyr.targets) if board.zephyr else None,
        "emulator": board.emulator.board if board.emulator else None,
    }


@main.group("boards", invoke_without_command=True)
@click.option("--json", "as_json", is_flag=True, help="Print the list as JSON.")
@click.pass_context
def boards(ctx: click.Context, as_json: bool) -> None:
    """List the built-in boards (name, CPU, NPU, flash, RAM, Zephyr target, QEMU stand-in).

    `armgen boards show NAME|PATH` prints one board with its memory map.
    """
    if ctx.invoked_subcommand is not None:
        return
    aliases_of: dict[str, list[str]] = {}
    for alias, target in board_aliases().items():
        aliases_of.setdefault(target, []).append(alias)
    loaded = [load_board(name) for name in list_boards()]
    if as_json:
        rows = [_summary(b, aliases_of.get(b.name, [])) for b in loaded]
        click.echo(json.dumps(rows, indent=2))
        return
    table = Table(title="armgen boards", title_justify="left")
    for col in ("board", "CPU", "NPU", "flash", "RAM", "Zephyr target", "QEMU stand-in"):
        table.add_column(col, justify="right" if col in ("flash", "RAM") else "left")
    for b in loaded:
        name = b.name + "".join(f"\n(alias {a})" for a in aliases_of.get(b.name, []))
        table.add_row(
            name,
            _cpu_text(b),
            _npu_text(b),
            _bytes(b.budgets.flash),
            _bytes(b.budgets.ram),
            "\n".join(f"{rel}: {tg}" for rel, tg in b.zephyr.targets) if b.zephyr else "-",
            b.emulator.board if b.emulator else "-",
        )
    print_table(table)


def _say_flash_and_watch(b: Board) -> None:
    """The board file's ``flash_and_watch`` in two lines: the tool (and Zephyr's default ``west flash``
    runner per release) and the console with its baud, per flavour."""
    fw = b.flash_and_watch
    if fw is None:
        _say("  flash      not stated (no flash_and_watch section)")
        return
    flash, watch = [], []
    for flavour, f, c in (("zephyr", fw.zephyr_flash, fw.zephyr_console),
                          ("bare metal", fw.baremetal_flash, fw.baremetal_console)):
        if f is None or c is None:
            continue
        runners = ", ".join(f"{rel} {r}" for rel, r in f.runners)
        flash.append(f"{flavour}: {f.tool}" + (f" (runner {runners})" if runners else ""))
        watch.append(f"{flavour}: {c.uart}, " + (f"{c.baud} baud" if c.baud else "no line rate"))
    _say(f"  flash      {'; '.join(flash)}")
    _say(f"  watch      {'; '.join(watch)}")


@boards.command("show")
@click.argument("board")
@click.option("--json", "as_json", is_flag=True, help="Print the whole validated board as JSON.")
def show(board: str, as_json: bool) -> None:
    """Show one board: BOARD is a built-in name, an alias (alif_e8) or a path to a board .yaml."""
    b = load_board(board)
    if as_json:
        click.echo(json.dumps(board_to_dict(b), indent=2))
        return
    c = b.cpu
    out_console.print(f"[bold]{escape(b.name)}[/]: {escape(b.description)}", soft_wrap=True)
    _say(f"  file       {b.source}")
    fpu = f"{c.fpu} FPU" if c.fpu != "none" else "no FPU"
    ext = ", ".join(x for x in (fpu, "DSP" if c.dsp else "", f"MVE-{c.mve}" if c.mve != "none" else "") if x)
    _say(f"  cpu        {_cpu_text(b)} ({ext}); ExecuTorch target {c.et_target}")
    gcc = f"-mcpu={c.gcc_mcpu}" + (f" -mfpu={c.gcc_mfpu}" if c.gcc_mfpu else "") + f" -mfloat-abi={c.gcc_float_abi}"
    _say(f"  gcc        {gcc}")
    if b.npu:
        n = b.npu
        cfg = n.vela_config_file or "Vela built-in Arm/vela.ini"
        _say(
            f"  npu        {n.type} {n.macs} MACs @ {n.base_address:#010x} irq {n.irq}; Vela {n.vela_accelerator},"
            f" {n.vela_system_config} / {n.vela_memory_mode} ({cfg})"
        )
    else:
        _say("  npu        none")
    flash, ram = b.budgets.flash, b.budgets.ram
    _say(f"  budgets    flash {_bytes(flash)} ({flash} B), RAM {_bytes(ram)} ({ram} B)")
    _say(f"             {b.budgets.reason}")
    if b.zephyr:
        z = b.zephyr
        targets = ", ".join(f"{tg} (Zephyr {rel})" for rel, tg in z.targets)
        line = f"{targets}; console {z.console}"
        if z.flash_load_offset:
            line += f"; load offset {z.flash_load_offset:#x}"
        if z.hal_modules:
            line += f"; modules {', '.join(z.hal_modules)}"
        _say(f"  zephyr     {line}")
        if z.vendor_fork:
            _say(f"  vendor     {z.vendor_fork}" + (f": {z.vendor_target}" if z.vendor_target else ""))
        if z.note:
            _say(f"             {z.note}")
    else:
        _say("  zephyr     none")
    bm = b.baremetal
    console = bm.console if bm.console == "semihosting" else f"{bm.uart_kind} UART @ {bm.uart_base:#010x}"
    _say(f"  bare metal console {console}; vector table {bm.vector_table:#010x}")
    if b.emulator:
        e = b.emulator
        who = "itself" if e.board == b.name else e.board
        _say(f"  emulator   {who}: qemu-system-arm -machine {e.qemu_machine} -cpu {e.qemu_cpu}")
        if e.note:
            _say(f"             {e.note}")
    else:
        _say("  emulator   none")
    _say_flash_and_watch(b)

    table = Table(title="memory map", title_justify="left")
    for col in ("region", "kind", "base", "end", "size", "reserved", "NPU address", "uses"):
        table.add_column(col, justify="right" if col in ("size", "reserved") else "left")
    for r in b.regions:
        table.add_row(
            r.name,
            r.kind,
            f"{r.base:#010x}",
            f"{r.base + r.size - 1:#010x}",
            _bytes(r.size),
            _bytes(r.reserved) if r.reserved else "-",
            f"{r.npu_address:#010x}" if r.npu_address is not None else ("not reachable" if b.npu else "-"),
            ", ".join(u for u in ("code", "rodata", "model", "data", "pools", "stack") if u in r.uses) or "(none)",
        )
    print_table(table)
    notes = [f"{r.name}: {r.note}" for r in b.regions if r.note]
    for note in notes:
        _say(f"  note  {note}")
