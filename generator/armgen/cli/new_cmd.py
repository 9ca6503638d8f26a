"""`armgen new NAME --board BOARD`: compile a model and write a firmware project for a board."""

from __future__ import annotations

import os
from pathlib import Path

import click
from rich.table import Table

from armgen.cli._console import err_console, out_console, print_table
from armgen.cli.group import main, offline_option
from armgen.workspace import OTHER_RELEASE_ENV


class _StackSize(click.ParamType):
    """``--stack-size``: bytes, or ``auto``."""

    name = "bytes|auto"

    def convert(self, value: object, param: click.Parameter | None, ctx: click.Context | None) -> int | str:
        if isinstance(value, int) or value == "auto":
            return value
        try:
            return int(str(value), 0)
        except ValueError:
            self.fail(f"{value!r} is neither bytes nor 'auto'", param, ctx)


def _say(text: str) -> None:
    err_console.print(text, highlight=False, markup=False, soft_wrap=True)


@main.command("new")
@click.argument("name")
@click.option("--board", "board_name", required=True, help="Board name, alias or path to a board .yaml file.")
@click.option("--model", default=None,
              help="Model: .py / .py:attr / .pt2, or a compiled .pte with its .report.json beside it. "
                   "Default: the built-in sample NAME.")
@click.option("--weights", default=None, help="Trained .tflite for a built-in sample (float; int8 for sww).")
@click.option("--calibration", default=None, metavar="PATH",
              help="Representative inputs for int8 calibration: a directory, .npz or .pt (as `armgen compile` "
                   "takes them; default: the sample's generator, or the model's example inputs).")
@click.option("--rtos", type=click.Choice(["zephyr", "baremetal"]), default=None,
              help="Default: zephyr for boards Zephyr supports, baremetal for QEMU machines.")
@click.option("--zephyr-release", default=None, metavar="RELEASE",
              help="Zephyr release a Zephyr project is written for: 4.4 (default), 4.1 or 3.7 (LTS); "
                   "see modules/zephyr/releases.yaml.")
@click.option("--backend", type=click.Choice(["cortex-m", "ethos-u"]), default=None,
              help="Default: ethos-u when the board has an NPU, cortex-m otherwise.")
@click.option("--out", "out_dir", type=click.Path(file_okay=False, path_type=Path), default=Path("."),
              show_default=True, help="Parent directory of the project.")
@click.option("--stack-size", type=_StackSize(), default=None, metavar="BYTES|auto",
              help="Main stack in bytes, a multiple of 8 (default 8192), or 'auto': `armgen build` runs the "
                   "image on the board's QEMU machine and sizes the stack to its high-water mark x 1.25 "
                   "(QEMU boards; Zephyr: the main, ISR and idle stacks, into armgen-stacks.conf). `armgen run` "
                   "prints the high-water mark.")
@click.option("--force", is_flag=True,
              help="Replace an existing armgen project directory (one holding armgen.toml; any other directory is "
                   "refused): every file armgen generates is overwritten (edits to them are lost); build/ and files "
                   "armgen does not generate (your own) are kept.")
@click.option("--frontend", type=click.Choice(["mfcc", "lfbe"]), default=None,
              help="Generate the model's audio front end in C (its source's FRONTEND declaration: kws's MLPerf "
                   "Tiny MFCC, sww's log-mel filterbank energies, lfbe) on CMSIS-DSP: the firmware takes 16-bit PCM.")
@click.option("--stream", is_flag=True,
              help="With --frontend lfbe (bare metal or Zephyr): a streaming wakeword firmware. `armgen run --input "
                   "long.wav` feeds the recording in blocks through a ring buffer, one 32 ms frame per hop, inference "
                   "every --infer-every hops, the reference's 0.95 threshold and 1 s debouncing; each detection "
                   "printed with its time beside the host's.")
@click.option("--infer-every", type=click.IntRange(1, 30), default=None, metavar="HOPS",
              help="With --stream: hops between inferences (default 1, every hop as MLPerf Tiny's evaluate.py).")
@click.option("--standin", "standin_choice", type=click.Choice(["auto", "baremetal"]), default="auto",
              show_default=True,
              help="The stand-in application `armgen run` builds for the board's QEMU machine, rendered with the "
                   "project: auto (Zephyr when that machine is in the project's Zephyr release, else bare metal) "
                   "or baremetal (runs without a Zephyr workspace).")
@offline_option()
def new_cmd(
    name: str,
    board_name: str,
    model: str | None,
    weights: str | None,
    calibration: str | None,
    rtos: str | None,
    zephyr_release: str | None,
    backend: str | None,
    out_dir: Path,
    stack_size: int | str | None,
    force: bool,
    frontend: str | None,
    stream: bool,
    infer_every: int | None,
    standin_choice: str,
    offline: bool,
) -> None:
    """Create NAME/ under --out: a firmware project with exact static pools and selective ops.

    Without --model, NAME picks the built-in sample of that name (kws, vww, ic, ad, sww).
    """
    from armgen.errors import ProjectError
    from armgen.model.pretrained import offline_mode
    from armgen.pipeline import new_project

    if infer_every is not None and not stream:
        raise ProjectError("--infer-every applies to a streaming project only", hint="add --stream")
    if force and (out_dir / name / "armgen.toml").is_file():
        _say(f"note: {out_dir / name} is an armgen project: `armgen update {out_dir / name}` takes a new model or "
             "armgen in and keeps your edits; --force replaces every file armgen generates")
    with offline_mode(offline):
        made = new_project(
            name, board_name, model=model, weights=weights, calibration=calibration, rtos=rtos,
            zephyr_release=zephyr_release, backend=backend, out_dir=out_dir, stack_size=stack_size, force=force,
            say=_say, frontend=frontend, zephyr_development_tree=os.environ.get(OTHER_RELEASE_ENV) == "1",
            standin_choice=standin_choice, stream=(infer_every or 1) if stream else None,
        )
    spec, rendered, written = made.spec, made.rendered, made.written
    project, report, board = written.path, spec.report, spec.board

    _say(f"created {project} ({len(rendered.files)} files): {spec.rtos} project for {board.name}, "
         f"backend {spec.backend}, program {report.name} ({report.pte_size} B)")
    shown = [k for k in written.kept if not k.startswith(".git/")]
    if shown or len(shown) != len(written.kept):
        n = len(shown)
        _say(f"kept {n} file{'s' if n != 1 else ''} armgen does not generate: {', '.join(shown) or '-'}"
             + (" (and .git/)" if len(shown) != len(written.kept) else ""))
    table = Table(title=f"memory pools of {name}", title_justify="left")
    for col in ("pool", "bytes", "region", "section"):
        table.add_column(col, justify="right" if col == "bytes" else "left")
    for p in spec.pools:
        table.add_row(p.name, f"{p.bytes:,}", p.region, p.section)
    table.add_row(".pte", f"{report.pte_size:,}", spec.model_region, ".armgen_model")
    table.add_row("stack", f"{spec.stack_size:,}" + (" (auto: sized by armgen build)" if spec.stack_auto else ""),
                  spec.stack_region, ".stack")
    print_table(table)
    if report.activation_lower_bound is not None and report.planned_buffers:
        planned = sum(report.planned_buffers)
        _say(f"activations: planned {planned:,} B; lower bound {report.activation_lower_bound:,} B (the planned "
             "tensors live at once at the busiest instruction: no plan of this graph needs less)")
    if report.placement:
        from armgen.cli.compile_cmd import npu_layer_tables, npu_total_line, placement_table

        print_table(placement_table(report))
        for npu_table in npu_layer_tables(report):
            print_table(npu_table)
        if total := npu_total_line(report, board.name):
            out_console.print(total, markup=False, highlight=False, soft_wrap=True)
    _say(f"operators: {', '.join(spec.selected_operators) or 'none (all delegated)'}")
    fe = spec.frontend
    if fe is not None:
        _say(f"front end: {fe.kind}, {fe.clip_samples} samples at {fe.sample_rate} Hz -> {fe.num_frames} x "
             f"{fe.frame_features} int8 (src/frontend/, CMSIS-DSP); try: armgen run {project} --input "
             + ("long.wav" if getattr(fe, "stream", False) else "word.wav"))
        if getattr(fe, "stream", False):
            _say(f"streaming: a frame every {fe.frame_step} samples, inference every {fe.infer_every} hop(s), "
                 f"threshold {fe.threshold}, debounce {fe.debounce_samples} samples")
    _say(f"next: armgen build {project}")
