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
import shlex
from pathlib import Path
from typing import Any

import click
from rich.table import Table

from armgen.cli._console import err_console, out_console
from armgen.cli.group import main
from armgen.errors import ArmgenError, ProjectError, RunError
from armgen.project.record import RECORD_FILE, ProjectRecord, read_record


# ---- project record -----------------------------------------------------------------------------
def _read_record(project: Path) -> ProjectRecord:
    toml_path = project / RECORD_FILE
    if not toml_path.is_file():
        raise ProjectError(
            f"{project} is not an armgen project (no {RECORD_FILE})",
            hint="pass a project directory made by `armgen new`, e.g. armgen run ./kws",
        )
    return read_record(toml_path, required=("name", "board"))


def _report_path(record: ProjectRecord) -> Path:
    path = record.model_path("report")
    if not path.is_file():
        raise ProjectError(
            f"{path}: program report not found",
            hint="armgen.toml [model] report must name the <name>.report.json written by `armgen compile`",
        )
    return path


def _cortex_m_hint(record: ProjectRecord, board_name: str) -> str:
    model = record.model
    source = model.source if model is not None else ""
    if source.startswith("sample:"):
        source = source[len("sample:") :]
    args = f" --model {source}" if source and not source.endswith(".pte") else ""
    # the record's weights are a file, or the words UNTRAINED_WEIGHTS, which are no --weights argument
    from armgen.pipeline import UNTRAINED_WEIGHTS

    if model is not None and model.weights and model.weights != UNTRAINED_WEIGHTS:
        args += f" --weights {shlex.quote(model.weights)}"
    name = f"{record.name}_cpu"
    # The same RTOS as this project (a board's default may differ), and for Zephyr the bare-metal
    # stand-in, which needs no Zephyr workspace (issue 27: the hint's own command failed without one).
    args += f" --rtos {record.rtos}" if record.rtos else ""
    run_args = " --baremetal-standin" if record.rtos == "zephyr" else ""
    return (
        f"run the Cortex-M build of the same model instead: "
        f"armgen new {name} --board {board_name} --backend cortex-m{args} && armgen run {name}{run_args}"
    )


# ---- build for the QEMU stand-in ----------------------------------------------------------------
def _qemu_elf(
    project: Path, record: ProjectRecord, board: Any, emulator: Any, *, rebuild: bool, baremetal_standin: bool
) -> tuple[Path, str, str | None]:
    """The ELF to run, its kind (``zephyr``/``baremetal``) and its Zephyr board target.

    - a project whose board is the QEMU machine: its own image (bare metal or Zephyr);
    - a Zephyr project on a real board: the stand-in application ``armgen new`` rendered into
      ``standin/<QEMU board>/`` (armgen.toml ``standin``), built with west;
    - a bare-metal project on a real board, or ``--baremetal-standin``: the same program planned,
      rendered and built bare metal for the stand-in board under ``build/<stand-in>/<name>/``
      (armgen.pipeline.build_baremetal_standin).
    Ninja makes a second call cheap (about 1 s when nothing changed).

    Raises:
        RunError: a Zephyr project without a stand-in application (the hint says why and what to do).
    """
    from armgen.firmware import build as build_stage  # lazy: the build stage pulls in cmake/ninja wrappers
    from armgen.pipeline import build_baremetal_standin

    def progress(stage: str, done: int, total: int, what: str) -> None:
        if stage == "configure" and done == 0:
            err_console.print(f"  configuring {what}", highlight=False, markup=False)
        elif stage == "link":
            err_console.print(f"  [{done}/{total}] {what}", highlight=False, markup=False)

    zephyr = record.rtos == "zephyr" and not baremetal_standin
    if emulator.board == board.name and (zephyr or (record.rtos or "baremetal") == "baremetal"):
        result = build_stage.build_project(project, progress=progress, rebuild=rebuild, size=False, run_input=True)
    elif zephyr:
        standin = record.standin
        if not standin or not (project / standin / RECORD_FILE).is_file():
            raise RunError(
                f"project {record.name} has no Zephyr stand-in application for QEMU {emulator.qemu_machine} "
                f"(board {emulator.board} is not in Zephyr {record.zephyr_release}, or the project "
                "predates stand-ins)",
                hint="run the program bare metal on the stand-in: armgen run --baremetal-standin, "
                "or take this armgen in with armgen update",
            )
        result = build_stage.build_project(project / standin, progress=progress, rebuild=rebuild, size=False,
                                           run_input=True)
    else:
        result = build_baremetal_standin(project, emulator.board, progress=progress, rebuild=rebuild)
    rec = result.project
    kind = "zephyr" if rec.rtos == "zephyr" else "baremetal"
    return Path(result.elf), kind, rec.zephyr_target if kind == "zephyr" else None


def _is_ethos_u(record: ProjectRecord, report: Any) -> bool:
    return (record.backend or report.backend) == "ethos-u" or any(
        d.backend_id == "EthosUBackend" for d in report.delegates)


def _run_tosa_reference(record: ProjectRecord, report: Any, report_path: Path, input_file: Path | None,
                        as_json: bool) -> None:
    """`armgen run --on tosa-reference`: the Ethos-U program on the host (armgen.firmware.tosa_run).

    Raises:
        RunError: not an Ethos-U program, bad input. ModelError: the TOSA reference model refuses a
            graph, or the program was compiled without its TOSA graphs. ArmgenError (exit 1): a check failed.
    """
    from armgen.firmware.host_io import load_input_file
    from armgen.firmware.tosa_run import describe, run_on_tosa_reference

    if not _is_ethos_u(record, report):
        raise RunError(f"project {record.name} has no Ethos-U delegate: there is no TOSA graph to run",
                       hint="run it on QEMU: armgen run (--on qemu)")
    inputs = load_input_file(input_file, report.inputs) if input_file is not None else None
    err_console.print(f"running {record.name} on the host: TOSA reference model + host kernels...", highlight=False)
    rr = run_on_tosa_reference(report, report_dir=report_path.parent, inputs=inputs,
                               input_source=str(input_file) if input_file else None,
                               classifier=bool(_class_labels(record)))
    if as_json:
        click.echo(json.dumps(rr.to_dict(), indent=2, sort_keys=True))
    else:
        for line in describe(rr):
            out_console.print(line, markup=False, highlight=False, soft_wrap=True)
    if rr.outcome == "fail":
        first = next(f for f in rr.findings if f.severity == "error")
        raise ArmgenError(f"run check failed on the TOSA reference model: {first.subject}: {first.message}",
                          exit_code=1)


def _class_labels(record: ProjectRecord) -> tuple[str, ...]:
    """The output classes' names: the record's, else a built-in sample's ``CLASS_LABELS`` (() for others)."""
    from armgen.model.model_source import declared_frontend, sample_names

    model = record.model
    if model is None:
        return ()
    if model.labels:
        return tuple(model.labels)
    name = model.source.removeprefix("sample:")
    return declared_frontend(name)[1] if model.source.startswith("sample:") and name in sample_names() else ()


def _runnable_emulator(record: ProjectRecord, board: Any, report: Any) -> Any:
    """The board's QEMU stand-in, when the program can run on it.

    Raises:
        RunError: an Ethos-U program (QEMU has no NPU model), or a board without a QEMU stand-in.
    """
    backend = record.backend or report.backend
    if backend == "ethos-u" or any(d.backend_id == "EthosUBackend" for d in report.delegates):
        raise RunError(
            f"project {record.name} delegates to the Ethos-U NPU, and QEMU has no Ethos-U model: "
            "it cannot run in an emulator",
            hint=_cortex_m_hint(record, board.name) if board.emulator else
            f"board {board.name} has no QEMU stand-in either; run it on the board or its FVP",
        )
    if board.emulator is None:
        raise RunError(
            f"board {board.name} has no QEMU stand-in (no `emulator:` in {board.source})",
            hint="`armgen boards` shows which boards run on QEMU",
        )
    return board.emulator


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


def _print_report(rr: Any, record: ProjectRecord, board: Any, cpu_line: str) -> None:
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
              help="Wall-clock seconds per QEMU run.")  # fmt: skip
@click.option("--repeat", type=click.IntRange(1, 100), default=2, show_default=True,
              help="Runs with the same input; the instruction count must repeat exactly.")  # fmt: skip
@click.option("--rebuild", is_flag=True, help="Rebuild the firmware even when an up-to-date ELF exists.")
@click.option("--baremetal-standin", is_flag=True,
              help="For a Zephyr project: run the program in a bare-metal build for the QEMU stand-in "
                   "instead of the Zephyr image.")
@click.option("--on", "run_on", type=click.Choice(["qemu", "tosa-reference"]), default=None,
              help="Where to run: qemu (the firmware, Cortex-M programs) or tosa-reference (an Ethos-U "
                   "program on the host: its delegates in the TOSA reference model, its CPU ops with the "
                   "host kernels; not the NPU). Default: qemu, tosa-reference for Ethos-U programs.")
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
    baremetal_standin: bool,
    run_on: str | None,
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
    from armgen.boards import load_board
    from armgen.cli.update_cmd import say_if_stale

    say_if_stale(project)
    from armgen.firmware.host_io import load_input_file
    from armgen.firmware.run import run_firmware
    from armgen.model.program_report import ProgramReport

    project = project.resolve()
    record = _read_record(project)
    board = load_board(str(record.board_spec))
    report_path = _report_path(record)
    try:
        report = ProgramReport.load(report_path)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ProjectError(f"{report_path}: not a readable program report ({exc})") from None
    from armgen.project.intermediates import restore_intermediates

    restore_intermediates(record, report, lambda line: err_console.print(line, highlight=False, soft_wrap=True))

    if run_on == "tosa-reference" or (run_on is None and _is_ethos_u(record, report)):
        _run_tosa_reference(record, report, report_path, input_file, as_json)
        return
    emu = _runnable_emulator(record, board, report)
    cpu_line = _cpu_line(report, board, emu)

    if record.frontend is not None:
        _run_audio(project, record, board, report, report_path, emu, cpu_line, input_file, timeout, rebuild,
                   as_json)
        return
    inputs = load_input_file(input_file, report.inputs) if input_file is not None else None

    err_console.print(f"building {record.name} for QEMU {emu.qemu_machine}...", highlight=False)
    elf, firmware, zephyr_board = _qemu_elf(project, record, board, emu, rebuild=rebuild,
                                            baremetal_standin=baremetal_standin)
    err_console.print(f"running {firmware} image {elf.name} on qemu-system-arm -machine {emu.qemu_machine} "
                      f"-cpu {emu.qemu_cpu}...",
                      highlight=False)  # fmt: skip
    rr = run_firmware(
        elf, report, emu, report_dir=report_path.parent, inputs=inputs,
        input_source=str(input_file) if input_file else None, timeout=timeout, repeat=repeat,
        log_dir=elf.parent / "run", firmware=firmware, zephyr_board=zephyr_board,
        reference_cache=elf.parent / "run" / "reference-cache",
    )
    if as_json:
        data = rr.to_dict()
        data["cpu"] = cpu_line
        click.echo(json.dumps(data, indent=2, sort_keys=True))
    else:
        _print_report(rr, record, board, cpu_line)

    overflow = [f for f in rr.errors if f.subject.startswith(("pool", "stack"))]
    if overflow:
        raise RunError(f"{overflow[0].subject}: {overflow[0].message}", hint="regenerate the project from its .pte")
    if not rr.passed:
        first = rr.errors[0] if rr.errors else None
        why = f"{first.subject}: {first.message}" if first else "no reference to compare the outputs with"
        raise ArmgenError(f"run check failed: {why}", exit_code=1)


def _run_audio(project: Path, record: ProjectRecord, board: Any, report: Any, report_path: Path, emu: Any,
               cpu_line: str, input_file: Path | None, timeout: float, rebuild: bool, as_json: bool) -> None:
    """`armgen run` for a project with an audio front end: one clip (a WAV file, or a synthetic one)
    through the firmware's front end and network; features and outputs checked (armgen.firmware.audio_run).

    Raises:
        ModelError: an unreadable audio file. RunError: a tensor file (.npy, .npz, .pt) given as the clip.
        RunError / ArmgenError: as for any run (exit 2 / 1).
    """
    from armgen.firmware.audio_run import run_audio, synthetic_clip
    from armgen.model.frontend import frontend_from_record, read_wav

    assert record.frontend is not None
    frontend = frontend_from_record(record.frontend)
    if input_file is not None and input_file.suffix.lower() in (".npy", ".npz", ".pt"):
        # read as WAV it would fail with scipy's "File format b'\\x93NUM' not understood"
        raise RunError(f"{input_file}: project {record.name} has an audio front end ({frontend.kind}): --input "
                       "takes a WAV clip, not a tensor",
                       hint="pass a .wav file, or leave out --input for the synthetic clip")
    if input_file is not None:
        pcm, source = read_wav(input_file, frontend.sample_rate), str(input_file)
    else:
        pcm, source = synthetic_clip(frontend), "synthetic clip (a chirp; pass --input word.wav)"
    err_console.print(f"building {record.name} for QEMU {emu.qemu_machine}...", highlight=False)
    elf, _, _ = _qemu_elf(project, record, board, emu, rebuild=rebuild, baremetal_standin=False)
    labels = record.model.labels if record.model is not None else ()
    rr = run_audio(elf, report, emu, frontend, pcm, report_dir=report_path.parent, labels=labels,
                   input_source=source, timeout=timeout, log_path=elf.parent / "run" / "qemu-audio.log")
    if as_json:
        data = rr.to_dict()
        data["cpu"] = cpu_line
        click.echo(json.dumps(data, indent=2, sort_keys=True))
    else:
        say = lambda text="": out_console.print(text, markup=False, highlight=False, soft_wrap=True)  # noqa: E731
        say(f"program {report.name} with its {frontend.kind} front end on QEMU {rr.machine}, board {board.name}")
        say(cpu_line)
        say(f"input: {rr.input_source} ({rr.clip_samples} samples at {frontend.sample_rate} Hz)")
        say(f"heard: {rr.label} (score {rr.score:.3f}); the host pipeline + lowered program: {rr.host_label}")
        say(f"features vs host pipeline: max {rr.features_max_lsb} LSB ({rr.features_off} of "
            f"{frontend.num_frames * frontend.num_mfcc} values differ; allowed 1 LSB)")
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
