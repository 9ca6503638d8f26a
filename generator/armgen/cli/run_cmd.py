"""`armgen run`: build (or reuse) a project's firmware for its board's QEMU stand-in, run it, check it;
an Ethos-U program runs on the host instead (delegates in the TOSA reference model, armgen.firmware.tosa_run).

Exit codes: 0 every check passed, or (an Ethos-U program on the host) every output more than 1 LSB
from the quantized reference is within 1 LSB of the exact reference and the report names the cause
(EXPLAINED, armgen.firmware.tosa_run); 1 the run finished but a check failed (an output more than 1 LSB
from the reference and not explained, degenerate outputs, an instruction count that does not repeat); 2 the run could
not be made or ended badly (hard fault, ExecuTorch error, timeout, pool or stack overflow, an Ethos-U
program on --on qemu, a TOSA graph the reference model refuses, no QEMU stand-in, bad input).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click
from rich.table import Table

from armgen.cli._console import err_console, out_console
from armgen.cli.group import main
from armgen.errors import ArmgenError, ProjectError, RunError
from armgen.project.record import RECORD_FILE, ProjectRecord, read_record
from armgen.project.run_plan import what_a_run_checks


# ---- project record -----------------------------------------------------------------------------
def _read_record(project: Path) -> ProjectRecord:
    if not project.is_dir():
        raise ProjectError(f"{project}: no such directory", hint="pass a project directory made by `armgen new`")
    toml_path = project / RECORD_FILE
    if not toml_path.is_file():
        raise ProjectError(
            f"{project} is not an armgen project (no {RECORD_FILE})",
            hint="pass a project directory made by `armgen new`, e.g. armgen run ./kws",
        )
    return read_record(toml_path, required=("name", "board"))


def _cpu_line(report: Any, board: Any, emu: Any) -> str:
    """What the report says about the CPU the program runs on."""
    program_cpu = report.cpu or board.cpu.core
    if program_cpu == emu.qemu_cpu:
        cpu_line = f"cpu: {program_cpu} program on QEMU's {emu.qemu_cpu}"
    else:
        cpu_line = (
            f"cpu: the {program_cpu} program runs on QEMU's {emu.qemu_cpu} ({emu.qemu_machine}); QEMU 7.2 "
            f"has no {program_cpu}, so this run checks the {emu.qemu_cpu} variant"
        )
    if emu.board != board.name:
        cpu_line += f"; firmware linked for the stand-in board {emu.board}"
    return cpu_line


# ---- output ---------------------------------------------------------------------------------------
def _fmt_bytes(n: int | None) -> str:
    return "-" if n is None else f"{n:,}"


def _print_report(rr: Any, record: ProjectRecord, board: Any, cpu_line: str, checks: str) -> None:
    say = lambda text="": out_console.print(text, markup=False, highlight=False, soft_wrap=True)  # noqa: E731
    say(f"program {rr.program} on QEMU {rr.machine} (-cpu {rr.qemu_cpu}), board {board.name}")
    say(f"firmware: {rr.firmware}" + (f" image for Zephyr board {rr.zephyr_board}" if rr.zephyr_board else " image")
        + f" ({rr.elf})")
    say(cpu_line)
    if rr.cpu_note:
        say(f"note: {rr.cpu_note}")
    second = " + 1 run with a second input" if rr.alternate_checked else ""
    say(f"input: {rr.input_source}; {rr.runs} run(s){second}")
    if rr.reference_source:
        say(f"reference: {rr.reference_source}")
    say(f"checks: {checks}")

    t = Table(title="outputs vs reference")
    for col in ("output", "values", "max |diff|", "max diff (LSB)", "saturated"):
        t.add_column(col, justify="left" if col == "output" else "right")
    for o in rr.outputs:
        t.add_row(
            str(o.index), str(len(o.values)),
            "-" if o.max_abs_diff is None else f"{o.max_abs_diff:.6g}",
            "-" if o.max_lsb_diff is None else f"{o.max_lsb_diff:g}",
            "yes" if o.saturated else "no",
        )  # fmt: skip
    out_console.print(t)

    t = Table(title="memory pools (bytes, from the firmware)")
    for col in ("pool", "reserved", "used", "reserved - used"):
        t.add_column(col, justify="left" if col == "pool" else "right")
    for p in rr.pools:
        t.add_row(p.name, _fmt_bytes(p.reserved), _fmt_bytes(p.used), f"{p.reserved - p.used:,}")
    if rr.stack is not None:
        t.add_row("stack (high-water)", _fmt_bytes(rr.stack.reserved), _fmt_bytes(rr.stack.used),
                  f"{rr.stack.reserved - rr.stack.used:,}")  # fmt: skip
    for name, use in rr.kernel_stacks.items():  # Zephyr, stack = "auto": the ISR and idle stacks
        t.add_row(f"{name.upper() if name == 'isr' else name} stack (high-water)", _fmt_bytes(use.reserved),
                  _fmt_bytes(use.used), f"{use.reserved - use.used:,}")
    out_console.print(t)

    if rr.ticks is not None:
        repeat = "repeats exactly" if len(set(rr.ticks_per_run)) == 1 else "DIFFERS"
        say(
            f"instructions: {rr.instructions:,} ({rr.ticks:,} SysTick ticks at {rr.systick_hz / 1e6:g} MHz, "
            f"{1e9 / rr.systick_hz:g} instructions per tick; {repeat} over {len(rr.ticks_per_run)} runs)"
            if rr.systick_hz
            else f"ticks: {rr.ticks:,} (SysTick rate of {rr.machine} unknown)"
        )
        say(f"  {rr.icount_note}")
    for f in rr.findings:
        say(f"{f.severity}: {f.subject}: {f.message}")
    if rr.max_lsb_diff is not None:
        verdict = "PASS" if rr.passed else "FAIL"
        untrained = any(f.subject == "weights" for f in rr.findings)
        # A FAIL within 1 LSB failed on another check (degenerate outputs, a count that differs): name it.
        failed = sorted({f.subject for f in rr.errors}) if not rr.passed else []
        say(f"{verdict}{' (' + ', '.join(failed) + ')' if failed else ''}: max difference {rr.max_abs_diff:.6g} "
            f"({rr.max_lsb_diff:g} LSB; allowed 1 LSB)"
            + ("; the weights are UNTRAINED: the outputs mean nothing" if untrained else ""))
    else:
        say("FAIL: no reference to compare with")


@main.command("run")
@click.argument("project", required=False, default=".", type=click.Path(file_okay=False, path_type=Path))
@click.option("--input", "input_file", type=click.Path(dir_okay=False, path_type=Path),
              help="Input tensor(s): .npy, .npz (input_<i>) or .pt; for a project with an audio front "
                   "end (armgen new --frontend), a WAV file (resampled to the front end's rate). "
                   "Default: the sample's deterministic input (a synthetic clip with a front end).")  # fmt: skip
@click.option("--emulator", type=click.Choice(["qemu"]), default="qemu", show_default=True, help="Emulator to run on.")
@click.option("--timeout", type=click.FloatRange(min=0.1), default=120.0, show_default=True,
              help="Wall-clock seconds per QEMU run (a streaming run: at least 600).")  # fmt: skip
@click.option("--repeat", type=click.IntRange(1, 100), default=2, show_default=True,
              help="Runs with the same input; the instruction count must repeat exactly.")  # fmt: skip
@click.option("--rebuild", is_flag=True, help="Rebuild the firmware even when an up-to-date ELF exists.")
@click.option("--on", "run_on", type=click.Choice(["qemu", "tosa-reference"]), default=None,
              help="Where to run: qemu (the firmware, Cortex-M programs) or tosa-reference (an Ethos-U "
                   "program on the host: its delegates in the TOSA reference model, its CPU ops with the "
                   "host kernels; not the NPU). Default: qemu, tosa-reference for Ethos-U programs.")
@click.option("--truth", "truth_file", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="A streaming project (armgen new --stream): score the firmware's and the host reference's "
                   "detections by MLPerf Tiny's rules against this JSON, detection windows as build_long_wav.py "
                   "writes them, or a recipe like short_wav_easy10s_spec.json (each word's start + 1 s).")
@click.option("--json", "as_json", is_flag=True, help="Print the run report as JSON on stdout.")
@click.pass_context
def run_command(
    ctx: click.Context,
    project: Path,
    input_file: Path | None,
    emulator: str,
    timeout: float,
    repeat: int,
    rebuild: bool,
    run_on: str | None,
    truth_file: Path | None,
    as_json: bool,
) -> None:
    """Run PROJECT's firmware on QEMU and check its outputs against the reference.

    Builds (or reuses) the project for the board's QEMU stand-in (same CPU, the stand-in's memory
    map, semihosting console), runs it under -icount shift=0, compares the dequantized outputs with
    the reference (the lowered program run on the host with the cortex_m host kernels; pass: every
    output within 1 LSB), checks they are not degenerate, and reports pool and stack use and an
    instruction count (not silicon cycles).

    An Ethos-U program cannot run on QEMU (no NPU model): it runs on the host instead (--on
    tosa-reference), its delegated partitions in the TOSA reference model and its CPU ops with the host
    reference kernels, checked against its own quantized reference; the report says what did not run.
    """
    from armgen.cli.update_cmd import say_if_stale
    from armgen.pipeline import run_project

    say_if_stale(project)
    project = project.resolve()
    record = _read_record(project)
    truth = _truth(record, truth_file, input_file) if truth_file is not None else None

    def progress(stage: str, done: int, total: int, what: str) -> None:
        if stage == "configure" and done == 0:
            err_console.print(f"  configuring {what}", highlight=False, markup=False)
        elif stage == "link":
            err_console.print(f"  [{done}/{total}] {what}", highlight=False, markup=False)

    run = run_project(record, on=run_on, input_file=input_file, timeout=timeout, repeat=repeat, rebuild=rebuild,
                      progress=progress, truth=truth,
                      say=lambda line: err_console.print(line, highlight=False, markup=False, soft_wrap=True))
    if run.kind == "tosa-reference":
        _print_tosa(run, as_json)
        return
    cpu_line = _cpu_line(run.report, run.board, run.emulator)
    if run.kind == "stream":
        _print_stream(run, cpu_line, as_json)
        return
    if run.kind == "audio":
        _print_audio(run, record, cpu_line, as_json)
        return
    rr = run.result
    if as_json:
        data = rr.to_dict()
        data["cpu"] = cpu_line
        data["checks"] = what_a_run_checks(run.plan)
        click.echo(json.dumps(data, indent=2, sort_keys=True))
    else:
        _print_report(rr, record, run.board, cpu_line, what_a_run_checks(run.plan))

    overflow = [f for f in rr.errors if f.subject.startswith(("pool", "stack"))]
    if overflow:
        raise RunError(f"{overflow[0].subject}: {overflow[0].message}", hint="regenerate the project from its .pte")
    if not rr.passed:
        first = rr.errors[0] if rr.errors else None
        why = f"{first.subject}: {first.message}" if first else "no reference to compare the outputs with"
        raise ArmgenError(f"run check failed: {why}", exit_code=1)


def _truth(record: ProjectRecord, truth_file: Path, input_file: Path | None) -> Any:
    """``--truth`` read before anything is built (:func:`armgen.model.stream_score.load_truth`).

    Raises:
        RunError: the project does not stream, no ``--input`` recording, or the file is in neither format.
    """
    from armgen.model.stream_score import load_truth

    if record.frontend is None or not record.frontend.get("stream"):
        raise RunError(f"--truth scores a streaming wakeword project; {record.name} is not one",
                       hint="armgen new sww --frontend lfbe --stream makes one")
    if input_file is None:
        raise RunError("--truth needs the recording it describes", hint="add --input long.wav")
    return load_truth(truth_file)


def _print_tosa(run: Any, as_json: bool) -> None:
    """The host run of an Ethos-U program (armgen.firmware.tosa_run).

    Raises:
        ArmgenError (exit 1): a check failed.
    """
    from armgen.firmware.tosa_run import describe

    rr = run.result
    if as_json:
        click.echo(json.dumps(rr.to_dict(), indent=2, sort_keys=True))
    else:
        for line in describe(rr):
            out_console.print(line, markup=False, highlight=False, soft_wrap=True)
    if rr.outcome == "fail":
        first = next(f for f in rr.findings if f.severity == "error")
        raise ArmgenError(f"run check failed on the TOSA reference model: {first.subject}: {first.message}",
                          exit_code=1)


def _print_stream(run: Any, cpu_line: str, as_json: bool) -> None:
    """A recording through a streaming project (armgen.firmware.stream_run).

    Raises:
        ArmgenError (exit 1): a check failed.
    """
    from armgen.firmware.stream_run import describe, duty_cycle

    rr, board = run.result, run.board
    duty = duty_cycle(rr, board.cpu.clock_hz)
    if as_json:
        click.echo(json.dumps(rr.to_dict() | {"cpu": cpu_line, "duty_cycle": duty}, indent=2, sort_keys=True))
    else:
        image = "Zephyr image" if rr.firmware == "zephyr" else "bare-metal image"
        head = f"program {run.report.name} streaming, {image} on QEMU {rr.machine}, board {board.name}\n{cpu_line}"
        out_console.print(head, markup=False, highlight=False, soft_wrap=True)
        for line in describe(rr):
            out_console.print(line, markup=False, highlight=False, soft_wrap=True)
        if duty is not None:
            verdict = "keeps up" if duty["keeps_up"] else f"CANNOT keep up: {board.name} is too slow for this model"
            out_console.print(
                f"duty cycle at {board.name}'s {board.cpu.clock_hz / 1e6:g} MHz: {duty['mean']:.3f} of each 32 ms "
                f"hop (largest hop {duty['largest']:.3f}; one instruction per cycle, a lower bound): {verdict}",
                markup=False, highlight=False, soft_wrap=True)
    if not rr.passed:
        first = next(f for f in rr.findings if f.severity == "error")
        raise ArmgenError(f"run check failed: {first.subject}: {first.message}", exit_code=1)


def _print_audio(run: Any, record: ProjectRecord, cpu_line: str, as_json: bool) -> None:
    """The run of a project with an audio front end: one clip through the firmware's front end and network,
    features and outputs checked (armgen.firmware.audio_run).

    Raises:
        ArmgenError (exit 1): a check failed.
    """
    from armgen.model.frontend import frontend_from_record

    assert record.frontend is not None
    frontend = frontend_from_record(record.frontend)
    rr, report, board = run.result, run.report, run.board
    if as_json:
        data = rr.to_dict()
        data["cpu"] = cpu_line
        click.echo(json.dumps(data, indent=2, sort_keys=True))
    else:
        say = lambda text="": out_console.print(text, markup=False, highlight=False, soft_wrap=True)  # noqa: E731
        image = "Zephyr image" if rr.firmware == "zephyr" else "bare-metal image"
        say(f"program {report.name} with its {frontend.kind} front end, {image} on QEMU {rr.machine}, "
            f"board {board.name}")
        say(cpu_line)
        say(f"input: {rr.input_source} ({rr.clip_samples} samples at {frontend.sample_rate} Hz)")
        say(f"heard: {rr.label} (score {rr.score:.3f}); the host pipeline + lowered program: {rr.host_label}")
        say(f"features vs host pipeline: max {rr.features_max_lsb} LSB ({rr.features_off} of "
            f"{frontend.num_frames * frontend.frame_features} values differ; allowed 1 LSB)")
        for o in rr.outputs:
            say(f"output {o.index} vs the host network on the firmware's features: "
                f"max {o.max_lsb_diff:g} LSB" if o.max_lsb_diff is not None else f"output {o.index}: no reference")
        fe_i, net_i = rr.frontend_instructions, rr.network_instructions
        if fe_i is not None and net_i is not None:
            say(f"instructions: front end {fe_i:,}, network {net_i:,} (QEMU -icount shift=0; not silicon cycles)")
        for f in rr.findings:
            say(f"{f.severity}: {f.subject}: {f.message}")
        say("PASS" if rr.passed else "FAIL")
    if not rr.passed:
        first = next(f for f in rr.findings if f.severity == "error")
        raise ArmgenError(f"run check failed: {first.subject}: {first.message}", exit_code=1)
