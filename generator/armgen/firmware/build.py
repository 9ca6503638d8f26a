"""Project + workspace -> ELF + linker map: a real cross-compile with CMake, Ninja and arm-none-eabi-gcc.

Bare metal: ``cmake -G Ninja`` with the project's toolchain file (``cmake/arm-none-eabi-gcc.cmake``,
Debian's ``arm-none-eabi-gcc``), the workspace's ExecuTorch, CMSIS-NN (and for the Ethos-U path the
hal_ethos_u driver and CMSIS_6 headers), ``flatc`` from the installed ``executorch`` wheel and the
running Python for ExecuTorch's code generators; then ``ninja`` in ``PROJECT/build``. The ELF and
its map file land in ``PROJECT/build/<name>.elf`` / ``.map`` (named in ``armgen.toml``).

Progress goes to a callback (``configure``, ``compile N/M``, ``link``); every tool line is kept in
``build/armgen-build.log``. On failure the first compiler/linker error and its file are in the
:class:`~armgen.errors.BuildError` message. At the end the size stage runs (:mod:`armgen.firmware.size`) when
it is installed, against the board and the project's budgets.

The stage never prints; the CLI (:mod:`armgen.cli.build_cmd`) shows progress and results.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from armgen.errors import BuildError, NoWorkspaceError, ProjectError, ToolchainError, WorkspaceError
from armgen.firmware.build_log import first_build_error, first_cmake_error, lto_undefined_symbols
from armgen.firmware.compiler_cache import ccache_enabled, ccache_env, ccache_launcher
from armgen.firmware.stack import example_main_unchanged, stack_emulator
from armgen.firmware.toolchain import (  # noqa: F401 - re-exported: where callers have found them
    TOOLCHAIN_PACKAGES,
    ZEPHYR_LIBC_PACKAGES,
    find_toolchain,
    gcc_cpu_wrapper,
    zephyr_libc_args,
    zephyr_toolchain_env,
)
from armgen.paths import workspace_dir
from armgen.project.record import ProjectRecord, load_project

#: Parallel jobs: the machine's two cores are shared, so at most 2.
DEFAULT_JOBS = 2

Progress = Callable[[str, int, int, str], None]
"""progress(phase, done, total, detail): phase is ``configure``, ``compile``, ``link`` or ``size``."""

#: Sub-directory of ``build/`` that holds ``armgen run``'s variant of the firmware (see :func:`build_project`).
RUN_INPUT_DIR = "run-input"
_NINJA_LINE = re.compile(r"^\[(\d+)/(\d+)\]\s+(.*)$")


@dataclass(frozen=True)
class BuildResult:
    """A finished build.

    Attributes:
        project: the record. elf / map: output paths. seconds: wall time of configure + build.
        steps: Ninja edges run (0 when already up to date). compiled: translation units compiled.
        log: the full tool log. size: the size stage's report (None when armgen.firmware.size is absent or
            was skipped). violations: budget violations (empty when within budget).
        stack: with ``[memory] stack = "auto"``, how the stack was sized
            (:class:`armgen.firmware.stack.StackSizing`; Zephyr: ``zephyr_stack.ZephyrStackSizing``); else None.
        workspace: the workspace root used. warnings: e.g. a workspace ExecuTorch version that
            differs from the one the program was made with (same file identifier).
    """

    project: ProjectRecord
    elf: Path
    map: Path
    seconds: float
    steps: int
    compiled: int
    log: Path
    workspace: Path
    size: Any = None
    #: the resolved size budgets (board, then armgen.toml [budgets]; ``SizeBudgets``), None unsized
    budgets: Any = None
    violations: tuple[Any, ...] = ()
    warnings: tuple[str, ...] = ()
    stack: Any = None


def resolve_workspace(explicit: Path | str | None = None, *, ethos_u: bool = False) -> Path:
    """Return the workspace root to build against.

    Uses :func:`armgen.workspace.find_workspace` (``explicit``, ``$ARMGEN_WORKSPACE`` or the default
    location). A directory that was not made by ``armgen workspace init`` but holds the sources a
    firmware build needs at the usual paths is accepted too.

    Raises:
        WorkspaceError: no workspace, or one without the sources this build needs (hint: how to make one).
    """
    root = Path(explicit).expanduser().absolute() if explicit else workspace_dir()
    needed = ["modules/lib/executorch/CMakeLists.txt", "modules/lib/cmsis-nn/CMakeLists.txt"]
    if ethos_u:
        needed += ["modules/hal/ethos_u", "modules/hal/cmsis_6/CMSIS/Core/Include"]
    try:
        from armgen.workspace import find_workspace

        ws = find_workspace(root)
        root = ws.root
    except ImportError:  # pragma: no cover - workspace stage is part of armgen
        pass
    except WorkspaceError:
        if not all((root / n).exists() for n in needed):
            raise
    missing = [n for n in needed if not (root / n).exists()]
    if missing:
        raise WorkspaceError(
            f"the workspace at {root} lacks {', '.join(missing)}",
            hint=f"run `armgen workspace init {root}`",
        )
    return root


def check_program_compatibility(record: ProjectRecord, ws: Path) -> tuple[str, ...]:
    """Check the project's program against the workspace's runtime (identifier and version from the
    program's report; see :func:`armgen.workspace.check_file_identifier`) and the runtime for armgen's patches
    (:func:`armgen.workspace.patches.missing_patch_warnings`).

    Returns:
        warnings (tuple of one-line strings).

    Raises:
        WorkspaceError: the identifiers differ.
    """
    from armgen.model.program_report import ProgramReport
    from armgen.workspace import Workspace, check_file_identifier
    from armgen.workspace.patches import missing_patch_warnings

    patches = missing_patch_warnings(Workspace(ws))  # armgen's runtime patches (modules/patches/)
    report_path = record.model_path("report")
    try:
        pte_id, made_with = ProgramReport.identity(report_path)
    except (OSError, ValueError, KeyError):
        return (f"cannot read {report_path}; the program's file identifier was not checked", *patches)
    return (*check_file_identifier(Workspace(ws), pte_id, "the program", made_with), *patches)


def flatc_path() -> Path | None:
    """``flatc`` shipped in the executorch wheel (same version as the pinned flatbuffers headers)."""
    import importlib.util

    spec = importlib.util.find_spec("executorch")
    for loc in (spec.submodule_search_locations or []) if spec else []:
        path = Path(loc) / "data" / "bin" / "flatc"
        if path.is_file():
            return path
    return None


def build_project(
    project: Path | str | None = None,
    *,
    workspace: Path | str | None = None,
    jobs: int = DEFAULT_JOBS,
    progress: Progress | None = None,
    size: bool = True,
    rebuild: bool = False,
    run_input: bool = False,
) -> BuildResult:
    """Configure (first time) and build the project; then size the ELF against its budgets.

    Args:
        project: project directory (default: current directory). workspace: explicit workspace.
        jobs: parallel compile jobs. progress: callback, see :data:`Progress`.
        size: run the size stage at the end when :mod:`armgen.firmware.size` exists.
        rebuild: delete ``build/`` first (a clean build).
        run_input: build ``armgen run``'s variant instead of the product image. Bare metal: the
            target ``<name>_run`` of the product's own build tree (``build/<name>-run.elf``; it
            shares the product's objects and runtime libraries, so it compiles main.cpp and links;
            projects written before that get ``build/run-input/`` as Zephyr does). Zephyr (one image
            per build directory): ``build/run-input/`` (:data:`RUN_INPUT_DIR`), with
            ``-DARMGEN_RUN_INPUT=ON`` (semihosting consoles read ``input.bin``; the product image has
            neither that code nor its buffer). Both go through ccache (:mod:`armgen.firmware.compiler_cache`).

    Returns:
        BuildResult.

    Raises:
        ProjectError: not a project. ToolchainError: a tool is missing. WorkspaceError: no usable
        workspace. BuildError: configure, compile or link failed (first error and its file in the
        message; the full log path in the hint).
    """
    record = load_project(project)
    if record.rtos == "zephyr" and record.stack_auto and not run_input:
        return _build_zephyr_stack_auto(record, workspace, jobs=jobs, progress=progress, size=size, rebuild=rebuild)
    if record.rtos == "zephyr":
        return _build_zephyr(record, workspace, jobs=jobs, progress=progress, size=size, rebuild=rebuild,
                             run_input=run_input)
    if record.rtos != "baremetal":
        raise ProjectError(f"{record.path}: unknown rtos '{record.rtos}'")
    tools = find_toolchain()
    ws = resolve_workspace(workspace, ethos_u=record.backend == "ethos-u")
    _frontend_cmsis_dsp(record, ws)
    warnings = check_program_compatibility(record, ws)
    progress = progress or (lambda *a: None)

    auto_stack = record.stack_auto and not run_input
    emulator = stack_emulator(record.board_spec) if auto_stack else None
    shared = run_input and _has_run_target(record)
    build_dir, log_path = _prepare_build_dir(record, rebuild, run_input and not shared)
    if shared:
        log_path = build_dir / "armgen-build-run.log"
    start = time.monotonic()
    # In the shared tree the run image links with the record's stack (a stand-in's tree is only built by
    # `run`: it must follow `update --stack-size`); with stack = "auto" it keeps what `build` sized.
    stack = "" if (record.stack_auto or (run_input and not shared)) else str(record.memory.get("stack", ""))
    sizing = None
    # stack = "auto" measures `armgen run`'s image (armgen's main: yours may never return), built beside it
    harness = auto_stack and _measures_harness(record)
    both: tuple[str, ...] = (str(record.name), f"{record.name}_run")
    targets: tuple[str, ...] = (f"{record.name}_run",) if shared else both if harness else ()
    with open(log_path, "w") as log:
        counter = _NinjaProgress(progress)
        _configure_and_build(record, ws, tools, build_dir, log, log_path, counter, progress, jobs,
                             run_input and not shared, stack, targets=targets,
                             product=not shared or not record.stack_auto)
        if auto_stack:
            sizing = _size_stack(record, ws, tools, build_dir, log, log_path, counter, progress, jobs, emulator,
                                 harness)
    result = _finish(record, ws, start, counter, log_path, warnings, progress, size, build_dir,
                     run_variant=shared)
    return dataclasses.replace(result, stack=sizing)


def _build_zephyr_stack_auto(record: ProjectRecord, workspace: Path | str | None, *, rebuild: bool,
                             **kw: Any) -> BuildResult:
    """Zephyr with ``stack = "auto"``: size the stacks on `armgen run`'s image
    (:func:`armgen.firmware.zephyr_stack.size_zephyr_stacks`), then build the product image with them."""
    from armgen.firmware.zephyr_stack import size_zephyr_stacks

    if rebuild and record.build_dir.is_dir():
        shutil.rmtree(record.build_dir)  # once: build/run-input/ and stack.json are inside build/
    run_image = partial(_build_zephyr, record, workspace, jobs=kw["jobs"], progress=kw["progress"], size=False,
                        rebuild=False, run_input=True)  # -> BuildResult of build/run-input/
    sizing = size_zephyr_stacks(record, run_image, kw["progress"] or (lambda *a: None))
    return dataclasses.replace(_build_zephyr(record, workspace, rebuild=False, **kw), stack=sizing)


def _frontend_cmsis_dsp(record: ProjectRecord, ws: Path) -> Path | None:
    """The workspace's CMSIS-DSP for a project with an audio front end (None without one), checked before CMake.

    Raises:
        WorkspaceError: the workspace has none (:func:`armgen.workspace.layout.require_cmsis_dsp`).
    """
    if record.frontend is None:
        return None
    from armgen.workspace.layout import Workspace, require_cmsis_dsp

    return require_cmsis_dsp(Workspace(ws), f"project {record.name} has an audio front end "
                             f"({record.frontend.get('kind', 'mfcc')})", record.zephyr_release)


def _measures_harness(record: ProjectRecord) -> bool:
    """``stack = "auto"`` measures `armgen run`'s image (the main is the user's; there is a run image)."""
    return _has_run_target(record) and not example_main_unchanged(record.root, record.files)


def _has_run_target(record: ProjectRecord) -> bool:
    """Whether the bare-metal project's CMakeLists.txt defines ``<name>_run`` in the product's tree."""
    try:
        return f"armgen_image({record.name}_run " in (record.root / "CMakeLists.txt").read_text()
    except OSError:
        return False


def _configure_and_build(
    record: ProjectRecord, ws: Path, tools: dict[str, Path], build_dir: Path, log: Any, log_path: Path,
    counter: _NinjaProgress, progress: Progress, jobs: int, run_input: bool, stack: str,
    targets: tuple[str, ...] = (), product: bool = True,
) -> None:
    """Configure when the build tree is new, the workspace changed or the stack differs (the stack only
    when building for the product, ``product``); then ninja (``targets``, or the default targets).

    Raises:
        BuildError: configure or build failed.
    """
    launcher = str(ccache_launcher() or "")  # ccache when on PATH (armgen.firmware.compiler_cache)
    env = ccache_env(os.environ, record.root)
    if (not (build_dir / "build.ninja").is_file() or _workspace_changed(build_dir, ws)
            or (product and _cached(build_dir, "ARMGEN_STACK_SIZE") != stack)
            or (_cached(build_dir, "CMAKE_C_COMPILER_LAUNCHER") or "") != launcher):
        progress("configure", 0, 1, str(build_dir))
        cmd = [
            str(tools["cmake"]),
            "-G", "Ninja",
            f"-DCMAKE_MAKE_PROGRAM={tools['ninja']}",
            "-S", str(record.root),
            "-B", str(build_dir),
            f"-DARMGEN_WORKSPACE={ws}",
            f"-DPYTHON_EXECUTABLE={sys.executable}",
            f"-DARMGEN_RUN_INPUT={'ON' if run_input else 'OFF'}",
            f"-DARMGEN_STACK_SIZE={stack}",
            f"-DCMAKE_C_COMPILER_LAUNCHER={launcher}", f"-DCMAKE_CXX_COMPILER_LAUNCHER={launcher}",
        ]
        flatc = flatc_path()
        if flatc is not None:
            cmd.append(f"-DFLATC_EXECUTABLE={flatc}")
        lines = _run(cmd, record.root, log, None, env=env)
        if lines is None:
            raise BuildError(
                "cmake configure failed: " + first_cmake_error(log_path),
                hint=f"full log: {log_path}",
            )
        progress("configure", 1, 1, "done")

    cmd = [str(tools["ninja"]), "-C", str(build_dir), f"-j{max(1, jobs)}", *targets]
    if _run(cmd, record.root, log, counter, env=env) is None:
        raise BuildError(first_build_error(log_path), hint=f"full log: {log_path}")


def _cached(build_dir: Path, name: str) -> str | None:
    """A variable's value in ``build_dir/CMakeCache.txt`` (None when unset or no cache)."""
    try:
        text = (build_dir / "CMakeCache.txt").read_text()
    except OSError:
        return None
    m = re.search(rf"^{re.escape(name)}:[A-Z]+=(.*)$", text, re.MULTILINE)
    return m.group(1) if m else None


def _size_stack(
    record: ProjectRecord, ws: Path, tools: dict[str, Path], build_dir: Path, log: Any, log_path: Path,
    counter: _NinjaProgress, progress: Progress, jobs: int, emulator: Any, harness: bool,
) -> Any:
    """``stack = "auto"``: :func:`armgen.firmware.stack.size_stack` on `armgen run`'s image (``harness``: your
    main may never return; both images relinked), or on the product image while it runs armgen's example main.

    Raises:
        BuildError / RunError: as :func:`armgen.firmware.stack.size_stack` raises them.
    """
    from armgen.firmware.stack import size_stack

    targets: tuple[str, ...] = (str(record.name), f"{record.name}_run") if harness else ()
    progress("stack", 0, 2, "measure")

    def relink(size: int) -> None:
        _configure_and_build(record, ws, tools, build_dir, log, log_path, counter, progress, jobs, False,
                             str(size), targets=targets)
        progress("stack", 1, 2, "check")

    sizing = size_stack(_outputs(record, build_dir, run_variant=harness)[0], emulator, relink, build_dir,
                        harness=harness)
    progress("stack", 2, 2, "done")
    return sizing


def _prepare_build_dir(record: ProjectRecord, rebuild: bool, run_input: bool = False) -> tuple[Path, Path]:
    """``PROJECT/build`` (or ``build/run-input``), emptied for a clean build or a foreign cache; its tool log."""
    build_dir = record.build_dir / RUN_INPUT_DIR if run_input else record.build_dir
    home = _cached(build_dir, "CMAKE_HOME_DIRECTORY")  # another source tree: a build/ carried along by mv / cp -a
    if (rebuild or (home is not None and Path(home).resolve() != record.root.resolve())) and build_dir.is_dir():
        shutil.rmtree(build_dir)
    build_dir.mkdir(parents=True, exist_ok=True)
    return build_dir, build_dir / "armgen-build.log"


class _NinjaProgress:
    """Turns Ninja's ``[done/total] what`` lines into progress calls and counts steps and compiles."""

    def __init__(self, progress: Progress) -> None:
        self.progress = progress
        self.steps = 0
        self.compiled = 0

    def __call__(self, line: str) -> None:
        m = _NINJA_LINE.match(line)
        if not m:
            return
        done, total, what = int(m.group(1)), int(m.group(2)), m.group(3)
        self.steps = done
        if what.startswith("Linking") and what.rstrip().endswith(".elf"):
            self.progress("link", done, total, what)
        else:
            if what.startswith("Building"):
                self.compiled += 1
            self.progress("compile", done, total, what)


def _finish(
    record: ProjectRecord, ws: Path, start: float, counter: _NinjaProgress, log_path: Path,
    warnings: tuple[str, ...], progress: Progress, size: bool, build_dir: Path, *, run_variant: bool = False,
) -> BuildResult:
    """The BuildResult of a finished build, sized when asked (``run_variant``: the ``<name>_run``
    image of the product's tree)."""
    elf, map_path = _outputs(record, build_dir, run_variant=run_variant)
    if not elf.is_file():
        raise BuildError(f"the build finished but {elf} is missing", hint=f"full log: {log_path}")
    result = BuildResult(
        project=record,
        elf=elf,
        map=map_path,
        seconds=time.monotonic() - start,
        steps=counter.steps,
        compiled=counter.compiled,
        log=log_path,
        workspace=ws,
        warnings=warnings,
    )
    return _size_stage(result, progress) if size else result


def _build_zephyr(
    record: ProjectRecord,
    workspace: Path | str | None,
    *,
    jobs: int,
    progress: Progress | None,
    size: bool,
    rebuild: bool,
    run_input: bool = False,
) -> BuildResult:
    """``west build -b <target>`` of a Zephyr project in the workspace's Zephyr tree.

    The workspace is the one of the project's Zephyr release (:func:`armgen.workspace.find_zephyr_workspace`:
    ``workspace``, ``$ARMGEN_WORKSPACE_ZEPHYR_<R>``, ``$ARMGEN_WORKSPACE``, the release's default location,
    the default workspace). West runs from the workspace (its ``.west``), with this Python (``-m west``):
    Zephyr's CMake then runs ExecuTorch's code generators with the Python that has ExecuTorch's codegen
    requirements, and ``flatc`` is the executorch wheel's.

    Raises:
        WorkspaceError: no Zephyr in the workspace, or another Zephyr release than the project's; a project with
            an audio front end and no CMSIS-DSP in the workspace.
        ToolchainError, BuildError: as :func:`build_project`.
    """
    from armgen.workspace import Workspace, check_zephyr_workspace, default_release, find_zephyr_workspace
    progress = progress or (lambda *a: None)
    explicit = Path(workspace) if workspace else None
    release = record.zephyr_release or default_release()
    try:
        ws_root = resolve_workspace(find_zephyr_workspace(release, explicit), ethos_u=record.backend == "ethos-u")
    except NoWorkspaceError as exc:
        # Nothing at all where a Zephyr build looks: the init that helps is the Zephyr one, not the bare-metal one.
        raise WorkspaceError(
            exc.message + f" (this is a Zephyr {release} project)",
            hint=f"run: armgen workspace init --zephyr --zephyr-release {release} (add --mirror/--url/--revision for "
            "mirrors), or build it with plain `west build` in a west workspace made from the project's west.yml",
        ) from exc
    tree_warnings = check_zephyr_workspace(Workspace(ws_root), record.zephyr_release or "")
    cmsis_dsp = _frontend_cmsis_dsp(record, ws_root)
    target = record.zephyr_target or ""
    if not target:
        raise ProjectError(f"{record.path}: no zephyr_target", hint="regenerate: armgen update")
    missing = [mod for mod in ("pykwalify", "packaging", "elftools", "yaml") if importlib.util.find_spec(mod) is None]
    if missing:
        raise ToolchainError(
            f"Zephyr's host Python packages are missing from {sys.executable}: {', '.join(missing)}",
            hint="pip install 'armgen[zephyr]' (Zephyr's scripts/requirements-base.txt has the full list)",
        )
    env = zephyr_toolchain_env()
    warnings = tree_warnings + check_program_compatibility(record, ws_root)
    build_dir, log_path = _prepare_build_dir(record, rebuild, run_input)
    env = ccache_env(gcc_cpu_wrapper(record, env, build_dir), record.root)  # armgen.firmware.compiler_cache
    start = time.monotonic()
    cmd = [sys.executable, "-m", "west", "build", "-b", target, "-d", str(build_dir), "-p", "auto",
           f"-o=-j{max(1, jobs)}", str(record.root), "--",
           f"-DPython3_EXECUTABLE={sys.executable}", f"-DPYTHON_EXECUTABLE={sys.executable}",
           f"-DARMGEN_RUN_INPUT={'ON' if run_input else 'OFF'}", *zephyr_libc_args(env),
           *([] if ccache_enabled() else ["-DUSE_CCACHE=0"])]
    if record.backend == "ethos-u":  # the driver the generated CMakeLists makes ExecuTorch's SDK view of
        cmd.append(f"-DARMGEN_ETHOS_U_DRIVER={Workspace(ws_root).ethos_u_dir}")
    if cmsis_dsp is not None:  # the MFCC front end's library (the generated CMakeLists compiles it)
        cmd.append(f"-DARMGEN_CMSIS_DSP={cmsis_dsp}")
    flatc = flatc_path()
    if flatc is not None:
        cmd.append(f"-DFLATC_EXECUTABLE={flatc}")
    configured = (build_dir / "build.ninja").is_file()
    # west re-runs CMake whenever it is given CMake arguments, and the re-run relinks the image (about
    # 30 s a call measured here): give them only when the tree is new or they changed.
    cmake_args = build_dir / "armgen-cmake-args.txt"
    wanted = "\n".join(cmd[cmd.index("--") + 1:]) + "\n"
    if configured and cmake_args.is_file() and cmake_args.read_text() == wanted:
        cmd = cmd[:cmd.index("--")]
    if not configured:
        progress("configure", 0, 1, str(build_dir))
    counter = _NinjaProgress(progress)
    with open(log_path, "w") as log:
        ok = _run(cmd, ws_root, log, counter, env=env) is not None
        if ok and "--" in cmd:
            cmake_args.write_text(wanted)
        if not ok:
            cmake_args.unlink(missing_ok=True)
            text = log_path.read_text(errors="replace")
            if not (build_dir / "build.ninja").is_file() or "CMake Error" in text:
                raise BuildError("west build: configure failed: " + first_cmake_error(log_path),
                                 hint=f"full log: {log_path}")
            missing = lto_undefined_symbols(log_path)
            if missing:
                raise BuildError(
                    f"west build: link failed: link-time optimised code calls {', '.join(missing)}, which the link "
                    "did not resolve: a C-library function must be named in ARMGEN_LTO_LIBC_SYMBOLS (CMakeLists.txt "
                    "says why)",
                    hint=f"in app.cmake: list(APPEND ARMGEN_LTO_LIBC_SYMBOLS {' '.join(missing)}), or CONFIG_LTO=n in "
                         f"prj.conf; full log: {log_path}")
            raise BuildError("west build: " + first_build_error(log_path), hint=f"full log: {log_path}")
    if not configured:
        progress("configure", 1, 1, "done")
    return _finish(record, ws_root, start, counter, log_path, warnings, progress, size, build_dir)


# ---- helpers --------------------------------------------------------------------------------------
def _outputs(record: ProjectRecord, build_dir: Path, *, run_variant: bool = False) -> tuple[Path, Path]:
    """The ELF and map the record names (absolute paths; load_project checked both keys exist), in
    ``build_dir`` (the record's paths are under ``build/``: a run variant in its own dir has them under
    that dir; ``run_variant`` in the product's tree: ``<stem>-run.elf`` and ``<stem>-run.map``)."""
    assert record.elf_path is not None and record.map_path is not None
    if run_variant:
        elf, map_path = record.elf_path, record.map_path
        return (elf.with_name(f"{elf.stem}-run{elf.suffix}"),
                map_path.with_name(f"{map_path.stem}-run{map_path.suffix}"))
    if build_dir == record.build_dir:
        return record.elf_path, record.map_path
    return (build_dir / record.elf_path.relative_to(record.build_dir),
            build_dir / record.map_path.relative_to(record.build_dir))


def _run(
    cmd: list[str], cwd: Path, log: Any, on_line: Callable[[str], None] | None, env: dict[str, str] | None = None
) -> list[str] | None:
    """Run a tool, tee its output into the log; return its lines, or None on a non-zero exit."""
    log.write("$ " + " ".join(cmd) + "\n")
    log.flush()
    env = dict(os.environ if env is None else env)
    env.setdefault("NINJA_STATUS", "[%f/%t] ")
    # Running ExecuTorch's generators from its source tree must not shadow the wheel.
    env.pop("PYTHONPATH", None)
    try:
        proc = subprocess.Popen(
            cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, errors="replace"
        )
    except OSError as exc:
        raise ToolchainError(f"cannot run {cmd[0]}: {exc.strerror}") from None
    lines: list[str] = []
    assert proc.stdout is not None
    for line in proc.stdout:
        log.write(line)
        line = line.rstrip("\n")
        lines.append(line)
        if on_line is not None:
            on_line(line)
    rc = proc.wait()
    log.write(f"# exit status {rc}\n")
    log.flush()
    return lines if rc == 0 else None


def _workspace_changed(build_dir: Path, ws: Path) -> bool:
    cache = build_dir / "CMakeCache.txt"
    try:
        for line in cache.read_text(errors="replace").splitlines():
            if line.startswith("ARMGEN_WORKSPACE:"):
                return Path(line.split("=", 1)[1]) != ws
    except OSError:
        return True
    return True


def _size_stage(result: BuildResult, progress: Progress) -> BuildResult:
    """Size the ELF and check budgets when the size stage is available (it is optional here)."""
    try:
        from armgen.firmware import size as size_mod
    except ImportError:
        return result
    if not hasattr(size_mod, "size_elf"):
        return result
    from dataclasses import replace

    from armgen.boards import load_board

    progress("size", 0, 1, str(result.elf))
    record = result.project
    board = load_board(str(record.board_spec))
    report = size_mod.size_elf(result.elf, board, result.map if result.map.is_file() else None,
                               pools=[p.as_dict() for p in record.pools])
    violations: tuple[Any, ...] = ()
    if hasattr(size_mod, "check_budgets") and hasattr(size_mod, "resolve_budgets"):
        budgets = size_mod.resolve_budgets(board, record.budgets, str(record.path))
        violations = tuple(size_mod.check_budgets(report, budgets))
    else:
        budgets = None
    progress("size", 1, 1, "done")
    return replace(result, size=report, violations=violations, budgets=budgets)
