"""The flow of ``armgen new``: model -> program + report -> project spec -> rendered project on disk.

Each stage module owns its step (:mod:`armgen.model`, :mod:`armgen.project`); this module only
chains them, so the CLI stays a thin layer of options and output. Data moves forward only.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
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
    project_dir: Path | None = None,
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
        check_stack_auto(board, rtos)
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
    audio = _frontend(frontend, model or name, rtos) if frontend is not None else None
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
        standin = _zephyr_standin(spec, report, pte_path, report_path, source, weights_used, stack_size, say,
                                  development_tree=zephyr_development_tree)
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


def _zephyr_standin(spec, report, pte_path, report_path, source, weights, stack_size, say: Say, *,
                    development_tree: bool = False):
    """The spec of the stand-in Zephyr application `armgen run` uses for a Zephyr project on a real
    board: the same program on the board's QEMU machine (same CPU), when that machine is in the
    project's Zephyr release and the program runs on the CPU. None otherwise (then `armgen run` says
    why, or runs a bare-metal stand-in with --baremetal-standin)."""
    from armgen.boards import load_board
    from armgen.project.spec import make_spec
    from armgen.project.zephyr import zephyr_placement

    board = spec.board
    if spec.rtos != "zephyr" or spec.uses_npu or board.emulator is None or board.emulator.board == board.name:
        return None
    qemu = load_board(board.emulator.board)
    if qemu.zephyr is None or spec.zephyr_release not in qemu.zephyr.releases:
        say(f"note: no Zephyr stand-in: QEMU board {qemu.name} is not in Zephyr {spec.zephyr_release}; "
             "`armgen run --baremetal-standin` runs the program bare metal")
        return None
    return make_spec(
        report, qemu, name=spec.name, pte_path=pte_path, report_path=report_path, board_ref=qemu.name,
        rtos="zephyr", backend=spec.backend, model_source=source, weights=weights,
        stack_size=stack_size, zephyr=zephyr_placement(qemu, spec.zephyr_release, development_tree=development_tree),
        allow_cpu_mismatch=True,
    )


def _frontend(kind: str, source: str, rtos: str) -> tuple[Any, tuple[str, ...]]:
    """The front end ``source`` declares, checked before anything is compiled: (front end, class labels).

    Raises:
        ProjectError: an unknown kind, a Zephyr project, a source that declares none or another kind.
        ModelError: the declaration is malformed (see :func:`armgen.model.frontend.frontend_from_declaration`).
    """
    from armgen.model.frontend import FRONTEND_KINDS, frontend_from_declaration
    from armgen.model.model_source import declared_frontend
    from armgen.project.options import check_frontend_rtos

    if kind not in FRONTEND_KINDS:
        raise ProjectError(f"--frontend {kind!r} is not one of: {', '.join(FRONTEND_KINDS)}")
    check_frontend_rtos(rtos)
    decl, labels = declared_frontend(source)
    if decl is None:
        raise ProjectError(f"{source} declares no front end (a module-level FRONTEND = {{'kind': '{kind}', ...}})",
                           hint="see samples/kws.py for the MLPerf Tiny KWS declaration")
    fe = frontend_from_declaration(decl, source)
    if fe.kind != kind:
        raise ProjectError(f"{source} declares a {fe.kind} front end, not {kind}")
    return fe, labels


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
    if model is None:
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


def _cleanup(path: Path) -> None:  # pragma: no cover - helper kept for symmetry with write_project
    shutil.rmtree(path, ignore_errors=True)


def build_baremetal_standin(
    project: Path | str | None, board: str, *, workspace: Path | str | None = None, jobs: int | None = None,
    progress: Any = None, rebuild: bool = False,
) -> Any:
    """Build a project's program for another board (its QEMU stand-in) as a bare-metal project.

    The project's ``.pte`` and report are planned (spec) and rendered for ``board`` into
    ``PROJECT/build/<board>/<name>/`` (a complete bare-metal project of its own) and built there:
    the spec and render stages run again, chained here, so the build stage never reaches back.
    The program must fit that board's CPU (CMSIS-NN scratch sizes are planned per CPU).

    Returns:
        armgen.firmware.build.BuildResult of the stand-in.

    Raises:
        ProjectError: the project has no report/.pte, or the program does not fit ``board``;
        and everything :func:`armgen.firmware.build.build_project` raises.
    """
    from armgen.boards import load_board
    from armgen.firmware.build import DEFAULT_JOBS, build_project
    from armgen.project.record import load_project
    from armgen.project.render import render_project, write_project
    from armgen.project.spec import make_spec

    record = load_project(project)
    pte, report_path = record.model_path("pte"), record.model_path("report")
    if not pte.is_file() or not report_path.is_file():
        raise ProjectError(f"{record.root}: the program ({pte.name}, {report_path.name}) is missing from model/")
    report = _load_report(pte, report_path)
    target_board = load_board(board)
    spec = make_spec(
        report, target_board, name=str(record.name), pte_path=pte, report_path=report_path, rtos="baremetal",
        backend=report.backend, model_source=record.model.source if record.model else "", allow_cpu_mismatch=True,
    )
    sub = write_project(render_project(spec), record.build_dir / target_board.name, force=True)
    return build_project(sub, workspace=workspace, jobs=jobs or DEFAULT_JOBS, progress=progress, rebuild=rebuild,
                         size=False, run_input=True)
