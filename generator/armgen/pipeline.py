"""The flow of ``armgen new``: model -> program + report -> project spec -> rendered project on disk.

Each stage module owns its step (:mod:`armgen.model`, :mod:`armgen.project`); this module only
chains them, so the CLI stays a thin layer of options and output. Data moves forward only.
"""

from __future__ import annotations

import dataclasses
import os
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from armgen.errors import ModelError, ProjectError

Say = Callable[[str], None]


@dataclass(frozen=True)
class NewProject:
    """What :func:`new_project` made: the spec, the rendered files and where they were written."""

    spec: Any
    rendered: Any
    written: Any


def new_project(
    name: str, board_name: str, *, model: str | None, weights: str | None, rtos: str | None,
    calibration: str | None = None,
    zephyr_release: str | None, backend: str | None, out_dir: Path, stack_size: int | str | None, force: bool,
    say: Say, frontend: str | None = None, zephyr_development_tree: bool = False, render_only: bool = False,
    project_dir: Path | None = None, standin_choice: str = "auto", stream: int | None = None,
) -> NewProject:
    """Compile (or pick up) the program, plan the project and write it to ``out_dir/name``.

    ``render_only``: for ``armgen update``: the project exists (at ``project_dir``, default ``out_dir/name``;
    its directory may be named otherwise); render the new version (keeping its ``[budgets]``, paths relative
    to it) without writing anything (``written`` is None).

    The cheap checks (board, name, backend, RTOS, Zephyr release, stack size, an existing directory)
    come first: nothing is compiled or written for bad input. ``say`` gets the notes and warnings.
    ``calibration``: representative inputs for int8 calibration (see
    :func:`armgen.model.compile.compile_model`); not used for a ready ``.pte``. ``frontend``: an
    audio front end kind (``"mfcc"``) generated in C from the model source's ``FRONTEND``
    declaration (:mod:`armgen.model.frontend`). ``zephyr_development_tree``: write the project also for a
    board target only development trees of the Zephyr release have (the CLI sets it from
    ``$ARMGEN_ZEPHYR_TREE_OF_ANOTHER_RELEASE=1``; see :func:`armgen.project.zephyr.board_target`).
    ``standin_choice``: ``auto`` or ``baremetal``: the stand-in application `armgen run` uses, rendered with
    the project (:func:`armgen.project.run_plan.standin_rtos`). ``stream``: hops between inferences of a
    streaming wakeword firmware (``--stream``, lfbe front end, bare metal or Zephyr; :mod:`armgen.model.stream`),
    None for one-shot.

    Raises:
        BoardError, ProjectError, ModelError, ProgramError: as the stages raise them (one line each).
    """
    from armgen.boards import load_board
    from armgen.project.options import DEFAULT_STACK_SIZE, check_stack_auto, check_stack_size, resolve_options
    from armgen.project.render import render_project, write_project_result
    from armgen.project.spec import make_spec
    from armgen.project.staleness import file_sha256

    # Cheap checks first: nothing is compiled or written for bad input.
    board = load_board(board_name)
    backend, rtos = resolve_options(name, board, backend, rtos)
    stack_auto = stack_size == "auto"
    if stack_auto:
        check_stack_auto(board, rtos, zephyr_release)
    stack_size = check_stack_size(DEFAULT_STACK_SIZE if stack_size in (None, "auto") else int(stack_size))
    zephyr = None
    if rtos == "zephyr":
        from armgen.project.zephyr import development_target_warning, zephyr_placement

        # the board must be in that release: fail before compiling
        zephyr = zephyr_placement(board, zephyr_release, development_tree=zephyr_development_tree)
        warning = development_target_warning(board, zephyr.release_info)
        if warning:
            say(warning)
    elif zephyr_release is not None:
        raise ProjectError("--zephyr-release applies to Zephyr projects only", hint="add --rtos zephyr")
    if model is not None:
        from armgen.model.model_spec import check_model_spec

        check_model_spec(model)  # the model file exists (no torch imported): before the compile, not after
    audio = _frontend(frontend, model or name) if frontend is not None else None
    if stream is not None:
        audio = _streaming(audio, stream)
    if calibration is not None and not Path(calibration).expanduser().exists():
        raise ModelError(f"{calibration}: calibration data not found")  # before the compile, not after
    dest = project_dir.expanduser().resolve() if project_dir is not None else out_dir.expanduser().resolve() / name
    if dest.exists() and not force and not render_only:
        raise ProjectError(f"{dest} already exists", hint="choose another NAME or --out, or pass --force to replace it")
    if force:
        from armgen.project.record import check_replaceable

        check_replaceable(dest)  # a directory armgen did not make is never replaced: before compiling

    board_ref = board_name if not _looks_like_path(board_name) else str(Path(board_name).expanduser().resolve())
    with tempfile.TemporaryDirectory(prefix="armgen-new-") as tmp:
        report, pte_path, report_path, source, weights_used = _program(name, model, weights, calibration, board,
                                                                       backend, Path(tmp), say)
        # The record holds paths relative to the project (a team's clone is elsewhere), and the digests of
        # the source and weights files (armgen.project.staleness): schema 2.
        if weights is None and weights_used != UNTRAINED_WEIGHTS:
            # found by the sample's own lookup ($ARMGEN_MLPERF_DIR, the weights cache): a path of this machine
            # that a clone elsewhere could not follow; an update looks it up again the same way
            weights_used = None
        source_sha256 = file_sha256(source) if not source.startswith("sample:") else None
        weights_sha256 = file_sha256(weights_used)
        source, weights_used = _relative(source, dest), _relative(weights_used, dest)
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
            weights=weights_used,
            stack_size=stack_size,
            zephyr=zephyr,
            frontend=audio[0] if audio else None,
            class_labels=audio[1] if audio else (),
        )
        spec = dataclasses.replace(spec, source_sha256=source_sha256, weights_sha256=weights_sha256)
        if stack_auto:
            spec = dataclasses.replace(spec, stack_auto=True)
        if calibration is not None:
            spec = dataclasses.replace(spec, calibration=_relative(str(Path(calibration).expanduser().resolve()), dest))
        kept_budgets = _user_budgets(dest) if force or render_only else None
        if kept_budgets is not None:
            spec = dataclasses.replace(spec, budgets=kept_budgets)
        standin = _standin(spec, report, pte_path, report_path, source, weights_used, stack_size, say,
                           choice=standin_choice, development_tree=zephyr_development_tree)
        rendered = render_project(spec, standin)
        written = None if render_only else write_project_result(rendered, out_dir, force=force)

    return NewProject(spec, rendered, written)


def _user_budgets(dest: Path) -> dict[str, Any] | None:
    """The ``[budgets]`` table (with ``[budgets.growth]``) of an existing project's armgen.toml, which
    ``armgen new --force`` keeps: budgets are the user's once the project exists (the board's defaults
    are only the first version). None when there is no readable record or no such table."""
    from armgen.errors import ArmgenError
    from armgen.project.record import read_record

    try:
        record = read_record(dest / "armgen.toml", required=())
    except ArmgenError:
        return None
    if not isinstance(record.budgets, dict):
        return None
    kept = dict(record.budgets)
    # armgen before 0.1.0's explicit board budgets wrote the regions' whole capacity as flash/ram: that
    # was the board's default, not the user's, and would shadow the board's budgets for ever.
    try:
        from armgen.boards import default_budgets, load_board

        capacity = default_budgets(load_board(str(record.board_spec)).regions)
    except ArmgenError:  # an unreadable board keeps the table as it is
        return kept
    for key in ("flash", "ram"):
        if kept.get(key) == getattr(capacity, key):
            del kept[key]
    return kept


def _standin(spec, report, pte_path, report_path, source, weights, stack_size, say: Say, *, choice: str = "auto",
             development_tree: bool = False):
    """The spec of the stand-in application `armgen run` uses (armgen.project.run_plan.standin_rtos): the same
    program for the board's QEMU machine (same CPU), Zephyr when that machine is in the project's Zephyr
    release, else bare metal. None when the project runs itself, on the host or nowhere."""
    from armgen.boards import load_board
    from armgen.project.run_plan import runs_on_npu, standin_rtos
    from armgen.project.spec import make_spec
    from armgen.project.zephyr import zephyr_placement

    board = spec.board
    npu = runs_on_npu(spec.backend, report)
    rtos = standin_rtos(board, spec.rtos, npu, spec.zephyr_release, choice)
    if npu and choice == "baremetal":
        say("note: --standin baremetal does not apply to an Ethos-U program: `armgen run` checks it on the host "
            "(TOSA reference model), QEMU has no NPU")
    if rtos is None:
        return None
    qemu = load_board(board.emulator.board)
    if rtos == "baremetal" and spec.rtos == "zephyr" and choice == "auto":
        say(f"note: QEMU board {qemu.name} is not in Zephyr {spec.zephyr_release}: `armgen run` runs the program "
            f"in a bare-metal stand-in (standin/{qemu.name}/)")
    zephyr = (zephyr_placement(qemu, spec.zephyr_release, development_tree=development_tree) if rtos == "zephyr"
              else None)
    return make_spec(
        report, qemu, name=spec.name, pte_path=pte_path, report_path=report_path, board_ref=qemu.name,
        rtos="zephyr" if rtos == "zephyr" else "baremetal", backend=spec.backend, model_source=source, weights=weights,
        stack_size=stack_size, zephyr=zephyr, allow_cpu_mismatch=True, frontend=spec.frontend,
        class_labels=spec.class_labels,
    )


def _frontend(kind: str, source: str) -> tuple[Any, tuple[str, ...]]:
    """The front end ``source`` declares, checked before anything is compiled: (front end, class labels).

    Raises:
        ProjectError: an unknown kind, a source that declares none or another kind.
        ModelError: the declaration is malformed (see :func:`armgen.model.frontend.frontend_from_declaration`).
    """
    from armgen.model.frontend import FRONTEND_KINDS, frontend_from_declaration
    from armgen.model.model_source import declared_frontend

    if kind not in FRONTEND_KINDS:
        raise ProjectError(f"--frontend {kind!r} is not one of: {', '.join(FRONTEND_KINDS)}")
    decl, labels = declared_frontend(source)
    if decl is None:
        raise ProjectError(f"{source} declares no front end (a module-level FRONTEND = {{'kind': '{kind}', ...}})",
                           hint="see samples/kws.py (mfcc) or samples/sww.py (lfbe) for the MLPerf Tiny declarations")
    fe = frontend_from_declaration(decl, source)
    if fe.kind != kind:
        raise ProjectError(f"{source} declares a {fe.kind} front end, not {kind}")
    return fe, labels


def _streaming(audio: tuple[Any, tuple[str, ...]] | None, every: int) -> tuple[Any, tuple[str, ...]]:
    """The front end made to stream, inference every ``every`` hops (bare metal, or Zephyr 3.7 and 4.1: the
    harness main, the front end and the semihosting input are the same generated C).

    Raises:
        ProjectError: no lfbe front end.
    """
    if audio is None or audio[0].kind != "lfbe":
        raise ProjectError("--stream needs the log-mel front end", hint="add --frontend lfbe (the sww sample)")
    return dataclasses.replace(audio[0], stream=True, infer_every=every), audio[1]


def _relative(path: str | None, project: Path) -> str | None:
    """``path`` relative to the project directory when it is an absolute path (POSIX, ``..`` where it lies
    outside); other values (``sample:kws``, :data:`UNTRAINED_WEIGHTS`, None) unchanged."""
    if not path or not Path(path).is_absolute():
        return path
    return Path(os.path.relpath(path, project)).as_posix()


def _looks_like_path(text: str) -> bool:
    return "/" in text or text.endswith((".yaml", ".yml")) or Path(text).is_file()


#: The project record's ``[model] weights`` of a sample compiled without trained weights.
UNTRAINED_WEIGHTS = "untrained (fixed-seed weights)"


def _weights_entry(report: Any, weights: Path | str | None) -> str | None:
    """The record's ``[model] weights``: the trained file's absolute path, :data:`UNTRAINED_WEIGHTS`, or None."""
    if getattr(report, "untrained_weights", False):
        return UNTRAINED_WEIGHTS
    return str(Path(weights).expanduser().resolve()) if weights else None


def _program(name, model, weights, calibration, board, backend, tmp: Path, say: Say):
    """Compile (or pick up) the program: (report, pte path, report path, source description, the record's
    weights entry)."""
    if model is not None and model.lower().endswith(".pte"):
        if calibration is not None:
            raise ProjectError("--calibration does not apply to a compiled .pte (it is already quantized)",
                               hint="pass the model source with --model to calibrate it")
        pte = Path(model).expanduser().resolve()
        report_path = pte.with_name(pte.stem + ".report.json")
        if not pte.is_file():
            raise ModelError(f"{pte}: model file not found")
        if not report_path.is_file():
            raise ProjectError(
                f"{report_path} not found next to {pte.name}",
                hint="compile with `armgen compile` (it writes the report), or pass the model source",
            )
        report = _load_report(pte, report_path)
        return report, pte, report_path, str(pte), _weights_entry(report, weights)

    from armgen.model.compile import compile_model
    from armgen.model.model_source import sample_names

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
    say(f"compiling {source} for {target} ...")
    result = compile_model(source, target, out_dir=tmp / "program", weights=weights, calibration=calibration,
                           name=name, **kwargs)
    # Warnings first, as `armgen compile` prints them: the untrained-weights one must come before the int8
    # quality note, whose figures it qualifies.
    for warning in result.report.warnings:  # same warnings `armgen compile` prints (e.g. calibration data)
        say(f"warning: {warning}")
    for note in result.notes:
        say(f"note: {note}")
    if model is None or (model in sample_names() and not Path(model).is_file()):
        # a built-in sample by name (a ./kws directory, the project of the README's first command, is no model)
        desc = f"sample:{source}"
    else:
        desc = str(Path(source).expanduser().resolve()) if Path(source).exists() else source
    return result.report, result.pte_path, result.report_path, desc, _weights_entry(result.report, result.weights)


def _load_report(pte: Path, report_path: Path) -> Any:
    """The program report beside a ``.pte``, with the method-allocator replay (added by the model stage
    for reports written before it was recorded).

    Raises:
        ProjectError: the report cannot be read or is not a program report.
    """
    from armgen.model.method_allocator import with_method_allocator
    from armgen.model.program_report import ProgramReport

    try:
        return with_method_allocator(ProgramReport.load(report_path), pte.read_bytes())
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ProjectError(f"{report_path}: not a program report ({exc})") from exc



# ---- `armgen run`: the run plan carried out ---------------------------------------------------------
@dataclass(frozen=True)
class ProjectRun:
    """What :func:`run_project` did.

    Attributes:
        kind: ``qemu`` (tensors), ``audio`` (a clip through the front end) or ``tosa-reference``.
        result: :class:`armgen.firmware.run.RunReport`, :class:`armgen.firmware.audio_run.AudioRunReport` or
            :class:`armgen.firmware.tosa_run.TosaRunReport`. board: the project's board. emulator: the QEMU
            machine (None on the host). report: the program report. plan: the run plan carried out.
        labels: the output classes' names (() when unknown).
    """

    kind: str
    result: Any
    board: Any
    emulator: Any
    report: Any
    plan: Any
    labels: tuple[str, ...] = ()


def run_project(
    record: Any, *, on: str | None = None, input_file: Path | None = None, timeout: float = 120.0, repeat: int = 2,
    rebuild: bool = False, progress: Any = None, say: Say = lambda line: None, truth: Any = None,
) -> ProjectRun:
    """Carry out the project's run plan (``armgen.toml [run]``, :mod:`armgen.project.run_plan`): build the run
    image of the project or of its stand-in (armgen's harness main; :func:`armgen.firmware.build.build_project`
    with ``run_input``) and run it on QEMU, or run an Ethos-U program on the host. Nothing is planned or
    rendered here except, for a record without ``[run]`` (older armgen), a plan that needs no rendering (said
    in one note).

    Args:
        record: the project's :class:`armgen.project.record.ProjectRecord`. on: ``qemu`` or ``tosa-reference``
            to override the plan (None: the plan's). input_file: tensors (.npy/.npz/.pt) or, with a front
            end, a WAV clip. timeout: wall-clock seconds per QEMU run. repeat: runs of the same input.
        rebuild: build the run image clean. progress: the build's progress callback. say: notes.
        truth: a streaming project's :class:`armgen.model.stream_score.Truth` (``--truth``), or None.

    Raises:
        ProjectError: no readable program report. RunError: the plan cannot run here (an Ethos-U program on
            QEMU, no QEMU machine, a record without a plan that needs a stand-in), bad input, or the run ended
            badly. ModelError: the TOSA reference model refuses a graph. ToolchainError/BuildError: as the build
            raises them.
    """
    from armgen.boards import load_board
    from armgen.errors import RunError, WorkspaceError
    from armgen.firmware.host_io import load_input_file
    from armgen.model.program_report import ProgramReport
    from armgen.project.intermediates import restore_intermediates
    from armgen.project.run_plan import plan_from_record, runs_on_npu

    board = load_board(str(record.board_spec))
    report_path = record.model_path("report")
    if not report_path.is_file():
        raise ProjectError(f"{report_path}: program report not found", hint="armgen.toml [model] report must name "
                           "the <name>.report.json written by `armgen compile`")
    try:
        report = ProgramReport.load(report_path)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ProjectError(f"{report_path}: not a readable program report ({exc})") from None
    plan = record.run
    if record.run_error:
        raise ProjectError(record.run_error, hint=f"armgen update {record.root} plans it again")
    if plan is None:
        plan = plan_from_record(record, board, report)
        if plan is None:
            raise RunError(f"project {record.name} was written before run plans and runs in a stand-in "
                           "application armgen has not rendered", hint=f"armgen update {record.root} renders it")
        say(f"note: armgen.toml has no [run] plan (an older armgen wrote it): {plan.on}, {plan.why}")
    restore_intermediates(record, report, say)
    labels = _class_labels(record)
    npu = runs_on_npu(record.backend or report.backend, report)
    if on == "tosa-reference" or (on is None and plan.on == "tosa-reference"):
        if not npu:
            raise RunError(f"project {record.name} has no Ethos-U delegate: there is no TOSA graph to run",
                           hint="run it on QEMU: armgen run (--on qemu)")
        from armgen.firmware.tosa_run import run_on_tosa_reference

        inputs, source = _npu_inputs(record, report, input_file, say)
        say(f"running {record.name} on the host: TOSA reference model + host kernels...")
        host = run_on_tosa_reference(report, report_dir=report_path.parent, inputs=inputs,
                                     input_source=source, classifier=bool(labels))
        return ProjectRun("tosa-reference", host, board, None, report, plan, labels)
    if plan.on == "tosa-reference":
        raise RunError(f"project {record.name} delegates to the Ethos-U NPU, and QEMU has no Ethos-U model: "
                       "it cannot run in an emulator",
                       hint=_cortex_m_hint(record, board.name) if board.emulator else
                       f"board {board.name} has no QEMU stand-in either; run it on the board or its FVP")
    if plan.on == "none":
        raise RunError(plan.why, hint="`armgen boards` shows which boards run on QEMU")
    emulator = load_board(str(plan.emulator)).emulator
    if emulator is None or emulator.board != plan.emulator:
        raise RunError(f"{record.path}: [run] emulator {plan.emulator} is not a QEMU machine board",
                       hint=f"armgen update {record.root} plans it again")
    if plan.standin and not (record.root / str(plan.image) / "armgen.toml").is_file():
        raise RunError(f"the stand-in application {plan.image}/ `armgen run` builds is missing",
                       hint=f"armgen update {record.root} renders it again")
    pcm = source = None
    if record.frontend is not None:
        pcm, source = _clip(record, input_file)
        inputs = None
        if record.frontend.get("stream") and input_file is not None:
            from armgen.firmware.stream_run import check_recording
            from armgen.model.frontend import frontend_from_record

            check_recording(frontend_from_record(record.frontend), pcm, str(source), truth)  # type: ignore[arg-type]
    else:
        inputs = load_input_file(input_file, report.inputs) if input_file is not None else None
    from armgen.firmware import build as build_stage  # lazy: cmake/ninja wrappers

    say(f"building {record.name} for QEMU {emulator.qemu_machine}...")
    try:
        built = build_stage.build_project(record.root / str(plan.image), progress=progress, rebuild=rebuild,
                                          size=False, run_input=True)
    except WorkspaceError as exc:
        if not (plan.standin and plan.firmware == "zephyr"):
            raise
        raise WorkspaceError(exc.message, hint=f"{exc.hint + '; or ' if exc.hint else ''}run a bare-metal "
                             f"stand-in, which needs no Zephyr workspace: armgen update {record.root} --standin "
                             "baremetal") from None
    elf, firmware = Path(built.elf), built.project.rtos or "baremetal"
    if pcm is not None and record.frontend is not None and record.frontend.get("stream"):
        from armgen.firmware.stream_run import reference_tflite, run_stream
        from armgen.model.frontend import frontend_from_record

        fe = frontend_from_record(record.frontend)
        say(f"streaming {pcm.size / fe.sample_rate:.1f} s of audio through the firmware on QEMU, then checking every "
            "frame and window on the host (measured on a 2-core Xeon: 26 s for 10 s of audio, 7.5 min for 4 min)...")
        streamed = run_stream(elf, report, emulator, fe, pcm,  # type: ignore[arg-type]
                              report_dir=report_path.parent, input_source=str(source), tflite=reference_tflite(record),
                              timeout=max(timeout, 600.0), log_path=elf.parent / "run" / "qemu-stream.log",
                              truth=truth, firmware=firmware)
        return ProjectRun("stream", streamed, board, emulator, report, plan, labels)
    if pcm is not None:
        from armgen.firmware.audio_run import run_audio
        from armgen.model.frontend import frontend_from_record

        assert record.frontend is not None
        audio = run_audio(elf, report, emulator, frontend_from_record(record.frontend), pcm,
                          report_dir=report_path.parent, labels=labels, input_source=str(source), timeout=timeout,
                          log_path=elf.parent / "run" / "qemu-audio.log", firmware=firmware)
        return ProjectRun("audio", audio, board, emulator, report, plan, labels)
    from armgen.firmware.run import run_firmware

    say(f"running {firmware} image {elf.name} on qemu-system-arm -machine {emulator.qemu_machine} "
        f"-cpu {emulator.qemu_cpu}...")
    result = run_firmware(
        elf, report, emulator, report_dir=report_path.parent, inputs=inputs,
        input_source=str(input_file) if input_file else None, timeout=timeout, repeat=repeat,
        log_dir=elf.parent / "run", firmware=firmware,
        zephyr_board=built.project.zephyr_target if firmware == "zephyr" else None,
        reference_cache=elf.parent / "run" / "reference-cache",
    )
    return ProjectRun("qemu", result, board, emulator, report, plan, labels)


def _clip(record: Any, input_file: Path | None) -> tuple[Any, str]:
    """The audio clip of a run: a WAV file, or a synthetic one; (int16 PCM, where it came from).

    Raises:
        RunError: a tensor file given as the clip. ModelError: an unreadable WAV file.
    """
    from armgen.errors import RunError
    from armgen.firmware.audio_run import synthetic_clip
    from armgen.model.frontend import frontend_from_record, read_wav, wav_conversion

    frontend = frontend_from_record(record.frontend)
    if input_file is not None and input_file.suffix.lower() in (".npy", ".npz", ".pt"):
        # read as WAV it would fail with scipy's "File format b'\\x93NUM' not understood"
        raise RunError(f"{input_file}: project {record.name} has an audio front end ({frontend.kind}): --input "
                       "takes a WAV clip, not a tensor",
                       hint="pass a .wav file, or leave out --input for the synthetic clip")
    if input_file is not None:
        pcm = read_wav(input_file, frontend.sample_rate)
        converted = wav_conversion(input_file, frontend.sample_rate)
        return pcm, str(input_file) + (f" ({converted})" if converted else "")
    return synthetic_clip(frontend), "synthetic clip (a chirp; pass --input word.wav)"


def _npu_inputs(record: Any, report: Any, input_file: Path | None, say: Say) -> tuple[Any, str | None]:
    """The inputs of a host run of an Ethos-U program: tensors from ``input_file``, or, for a project with an
    audio front end and a WAV file, the host front end's int8 features of its clip (for a streaming project: of
    the recording's last window; the stream itself needs the firmware, which QEMU runs on the CPU path only).

    Raises:
        RunError / ModelError: as :func:`armgen.firmware.host_io.load_input_file` and :func:`_clip` raise them.
    """
    from armgen.firmware.host_io import load_input_file

    if input_file is None:
        return None, None
    if record.frontend is None or input_file.suffix.lower() in (".npy", ".npz", ".pt"):
        return load_input_file(input_file, report.inputs), str(input_file)
    from armgen.firmware.audio_run import clip_for, host_features
    from armgen.model.frontend import frontend_from_record

    fe = frontend_from_record(record.frontend)
    pcm, source = _clip(record, input_file)
    if record.frontend.get("stream"):
        say(f"note: the TOSA reference model checks one window (the recording's last {fe.clip_samples:,} samples): "
            "streaming needs the firmware (armgen new --backend cortex-m runs the stream on QEMU)")
    return [host_features(fe, clip_for(fe, pcm), report)], f"{source}: the host {fe.kind} front end's features"


def _class_labels(record: Any) -> tuple[str, ...]:
    """The output classes' names: the record's, else a built-in sample's ``CLASS_LABELS`` (() for others)."""
    from armgen.model.model_source import declared_frontend, sample_names

    model = record.model
    if model is None:
        return ()
    if model.labels:
        return tuple(model.labels)
    name = model.source.removeprefix("sample:")
    return declared_frontend(name)[1] if model.source.startswith("sample:") and name in sample_names() else ()


def _cortex_m_hint(record: Any, board_name: str) -> str:
    """The commands that make and run the Cortex-M build of an Ethos-U project's model (same RTOS; a Zephyr
    one with a bare-metal stand-in, which needs no Zephyr workspace: issue 27)."""
    import shlex

    model = record.model
    source = model.source if model is not None else ""
    if source and not source.startswith("sample:"):
        source = str(record.resolve(source))  # the record's paths are relative to the project, not to the shell
    source = source.removeprefix("sample:")
    args = f" --model {shlex.quote(source)}" if source and not source.endswith(".pte") else ""
    # the record's weights are a file, or the words UNTRAINED_WEIGHTS, which are no --weights argument
    if model is not None and model.weights and model.weights != UNTRAINED_WEIGHTS:
        args += f" --weights {shlex.quote(str(record.resolve(model.weights)))}"
    name = f"{record.name}_cpu"
    args += f" --rtos {record.rtos}" if record.rtos else ""
    args += " --standin baremetal" if record.rtos == "zephyr" else ""
    return (f"run the Cortex-M build of the same model instead: "
            f"armgen new {name} --board {board_name} --backend cortex-m{args} && armgen run {name}")
