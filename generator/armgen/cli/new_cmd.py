"""`armgen new NAME --board BOARD`: compile a model and write a firmware project for a board."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import click
from rich.table import Table

from armgen.cli import main
from armgen.cli._console import err_console, out_console
from armgen.errors import ModelError, ProjectError


def _say(text: str) -> None:
    err_console.print(text, highlight=False, markup=False, soft_wrap=True)


@main.command("new")
@click.argument("name")
@click.option("--board", "board_name", required=True, help="Board name, alias or path to a board .yaml file.")
@click.option("--model", default=None,
              help="Model: .py / .py:attr / .pt2, or a compiled .pte with its .report.json beside it. "
                   "Default: the built-in sample NAME.")
@click.option("--weights", default=None, help="Trained float .tflite for a built-in sample.")
@click.option("--rtos", type=click.Choice(["zephyr", "baremetal"]), default=None,
              help="Default: zephyr for boards Zephyr supports, baremetal for QEMU machines.")
@click.option("--zephyr-release", default=None, metavar="RELEASE",
              help="Zephyr release a Zephyr project is written for: 4.4 (default) or 3.7 (LTS); "
                   "see modules/zephyr/releases.yaml.")
@click.option("--backend", type=click.Choice(["cortex-m", "ethos-u"]), default=None,
              help="Default: ethos-u when the board has an NPU, cortex-m otherwise.")
@click.option("--out", "out_dir", type=click.Path(file_okay=False, path_type=Path), default=Path("."),
              show_default=True, help="Parent directory of the project.")
@click.option("--stack-size", type=int, default=None, metavar="BYTES",
              help="Main stack in bytes, a multiple of 8 (default 8192). `armgen run` prints the high-water "
                   "mark to size it from.")
@click.option("--force", is_flag=True,
              help="Replace an existing project directory: every file armgen generates is overwritten "
                   "(edits to them are lost); build/ and files armgen does not generate (your own) are kept.")
def new_cmd(
    name: str,
    board_name: str,
    model: str | None,
    weights: str | None,
    rtos: str | None,
    zephyr_release: str | None,
    backend: str | None,
    out_dir: Path,
    stack_size: int | None,
    force: bool,
) -> None:
    """Create NAME/ under --out: a firmware project with exact static pools and selective ops.

    Without --model, NAME picks the built-in sample of that name (kws, vww, ic, ad).
    """
    from armgen.boards import load_board
    from armgen.render import render_project, write_project_result
    from armgen.spec import DEFAULT_STACK_SIZE, check_stack_size, make_spec, resolve_options

    # Cheap checks first: nothing is compiled or written for bad input.
    board = load_board(board_name)
    backend, rtos = resolve_options(name, board, backend, rtos)
    stack_size = check_stack_size(DEFAULT_STACK_SIZE if stack_size is None else stack_size)
    if rtos == "zephyr":
        from armgen.zephyr import board_target
        from armgen.zephyr import zephyr_release as find_release

        release = find_release(zephyr_release)
        board_target(board, release)  # the board must be in that release: fail before compiling
        zephyr_release = release.name
    elif zephyr_release is not None:
        raise ProjectError("--zephyr-release applies to Zephyr projects only", hint="add --rtos zephyr")
    dest = out_dir.expanduser().resolve() / name
    if dest.exists() and not force:
        raise ProjectError(f"{dest} already exists", hint="choose another NAME or --out, or pass --force to replace it")

    board_ref = board_name if not _looks_like_path(board_name) else str(Path(board_name).expanduser().resolve())
    with tempfile.TemporaryDirectory(prefix="armgen-new-") as tmp:
        report, pte_path, report_path, source = _program(name, model, weights, board, backend, Path(tmp))
        spec = make_spec(
            report,
            board,
            name=name,
            pte_path=pte_path,
            report_path=report_path,
            board_ref=board_ref,
            rtos=rtos,
            backend=backend,
            model_source=source,
            weights=str(Path(weights).expanduser().resolve()) if weights else None,
            stack_size=stack_size,
            zephyr_release=zephyr_release,
        )
        standin = _zephyr_standin(spec, report, pte_path, report_path, source, weights, stack_size)
        rendered = render_project(spec, standin)
        written = write_project_result(rendered, out_dir, force=force)
        project = written.path

    _say(f"created {project} ({len(rendered.files)} files): {spec.rtos} project for {board.name}, "
         f"backend {spec.backend}, program {report.name} ({report.pte_size} B)")
    if written.kept:
        n = len(written.kept)
        _say(f"kept {n} file{'s' if n != 1 else ''} armgen does not generate: {', '.join(written.kept)}")
    table = Table(title=f"memory pools of {name}", title_justify="left")
    for col in ("pool", "bytes", "region", "section"):
        table.add_column(col, justify="right" if col == "bytes" else "left")
    for p in spec.pools:
        table.add_row(p.name, f"{p.bytes:,}", p.region, p.section)
    table.add_row(".pte", f"{report.pte_size:,}", spec.model_region, ".armgen_model")
    table.add_row("stack", f"{spec.stack_size:,}", spec.stack_region, ".stack")
    out_console.print(table)
    _say(f"operators: {', '.join(spec.selected_operators) or 'none (all delegated)'}")
    _say(f"next: armgen build {project}")


def _zephyr_standin(spec, report, pte_path, report_path, source, weights, stack_size):
    """The spec of the stand-in Zephyr application `armgen run` uses for a Zephyr project on a real
    board: the same program on the board's QEMU machine (same CPU), when that machine is in the
    project's Zephyr release and the program runs on the CPU. None otherwise (then `armgen run` says
    why, or runs a bare-metal stand-in with --baremetal-standin)."""
    from armgen.boards import load_board
    from armgen.spec import make_spec

    board = spec.board
    if spec.rtos != "zephyr" or spec.uses_npu or board.emulator is None or board.emulator.board == board.name:
        return None
    qemu = load_board(board.emulator.board)
    if qemu.zephyr is None or spec.zephyr_release not in qemu.zephyr.releases:
        _say(f"note: no Zephyr stand-in: QEMU board {qemu.name} is not in Zephyr {spec.zephyr_release}; "
             "`armgen run --baremetal-standin` runs the program bare metal")
        return None
    return make_spec(
        report, qemu, name=spec.name, pte_path=pte_path, report_path=report_path, board_ref=qemu.name,
        rtos="zephyr", backend=spec.backend, model_source=source,
        weights=str(Path(weights).expanduser().resolve()) if weights else None,
        stack_size=stack_size, zephyr_release=spec.zephyr_release, allow_cpu_mismatch=True,
    )


def _looks_like_path(text: str) -> bool:
    return "/" in text or text.endswith((".yaml", ".yml")) or Path(text).is_file()


def _program(name, model, weights, board, backend, tmp: Path):
    """Compile (or pick up) the program: (report, pte path, report path, source description)."""
    from armgen.program_report import ProgramReport

    if model is not None and model.lower().endswith(".pte"):
        pte = Path(model).expanduser().resolve()
        report_path = pte.with_name(pte.stem + ".report.json")
        if not pte.is_file():
            raise ModelError(f"{pte}: model file not found")
        if not report_path.is_file():
            raise ProjectError(
                f"{report_path} not found next to {pte.name}",
                hint="compile with `armgen compile` (it writes the report), or pass the model source",
            )
        try:
            report = ProgramReport.load(report_path)
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise ProjectError(f"{report_path}: not a program report ({exc})") from exc
        return report, pte, report_path, str(pte)

    from armgen.compile import compile_model
    from armgen.model_source import sample_names

    if model is None and name not in sample_names():
        raise ProjectError(
            f"'{name}' is not a built-in sample ({', '.join(sample_names())})",
            hint="pass --model FILE to make a project from your own model",
        )
    source = model or name
    if backend == "ethos-u":
        npu = board.npu
        target, kwargs = npu.vela_accelerator, {
            "cpu": board.cpu.et_target,
            "system_config": npu.vela_system_config,
            "memory_mode": npu.vela_memory_mode,
            "vela_config_file": npu.vela_config_file,
        }
    else:
        target, kwargs = board.cpu.et_target, {}
    _say(f"compiling {source} for {target} ...")
    result = compile_model(source, target, out_dir=tmp / "program", weights=weights, name=name, **kwargs)
    for note in result.notes:
        _say(f"note: {note}")
    for warning in result.report.warnings:  # same warnings `armgen compile` prints (e.g. calibration data)
        _say(f"warning: {warning}")
    if model is None:
        desc = f"sample:{source}"
    else:
        desc = str(Path(source).expanduser().resolve()) if Path(source).exists() else source
    return result.report, result.pte_path, result.report_path, desc


def _cleanup(path: Path) -> None:  # pragma: no cover - helper kept for symmetry with write_project
    shutil.rmtree(path, ignore_errors=True)
