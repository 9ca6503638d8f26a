"""ProjectSpec -> the files of a firmware project, rendered in memory, then written atomically.

Templates live in ``templates/``: ``common/project/`` holds what every flavour shares (the model C
API, the pools, the example ``main``, the console formatter), ``<flavour>/project/`` the platform
layer and build files (``baremetal``; ``zephyr`` is added separately), ``common/partials/`` jinja2
partials either may include. Files ending in ``.j2`` are rendered with the spec's context (the
suffix is dropped); other files are copied byte for byte. Which files a project gets is decided here
(:func:`writes_template`: a bare-metal project gets the one console driver of its board, the NPU's
files only with an Ethos-U delegate, ...); a template that renders to nothing is an error (a template
bug). Generation is deterministic: no timestamps, sorted iteration, LF line endings.

:func:`render_project` returns ``{relative path: bytes}``; :func:`write_project` puts them on disk:
into a temporary directory beside the destination, then one rename. An existing destination is
refused unless ``force``; with ``force`` the old tree is swapped out atomically: generated files are
replaced (unchanged ones keep their modification times, so a rebuild after a model change recompiles
only what depends on the model), its ``build/`` directory and every file armgen does not generate
(the user's own) are carried over unchanged (:func:`write_project_result` lists them).
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import os
import re
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jinja2
import yaml

from armgen.boards.npu import dcache_windows, remap_windows
from armgen.errors import ProjectError
from armgen.et_errors import ERROR_CODES
from armgen.exit_codes import EXIT_CODES
from armgen.model.tensors import numpy_dtype, stored_shape, to_memory_order
from armgen.paths import TEMPLATES_DIR
from armgen.project.flash_watch import flash_watch_context
from armgen.project.intermediates import is_intermediate_path
from armgen.project.options import reads_input_file, validate_name
from armgen.project.ownership import BASE_DIR, user_owned
from armgen.project.record import ModelEntry, PoolEntry, ProjectRecord, check_replaceable
from armgen.project.spec import ProjectSpec

#: Values per line in generated C arrays.
_PER_LINE = 12


@dataclass(frozen=True)
class RenderedProject:
    """A project in memory: ``files`` maps POSIX relative paths to bytes (sorted by path)."""

    name: str
    files: dict[str, bytes]


#: Where a Zephyr project keeps the stand-in application `armgen run` builds for QEMU.
STANDIN_DIR = "standin"


def render_project(spec: ProjectSpec, standin: ProjectSpec | None = None) -> RenderedProject:
    """Render every file of the project described by ``spec``.

    Args:
        spec: the project. standin: the same program planned for the board's QEMU machine (same CPU), when
            `armgen run` needs one (:func:`armgen.project.run_plan.standin_rtos`); rendered as a complete
            project of its own under ``standin/<QEMU board>/``, whose run image ``armgen run`` builds and runs.

    Returns:
        RenderedProject: ``{relative path: bytes}``, sorted, deterministic for equal specs.

    Raises:
        ProjectError: unknown flavour (e.g. Zephyr before its templates exist), unreadable model
            files, or a template error (named with the template path).
    """
    flavour_dir = TEMPLATES_DIR / spec.rtos / "project"
    if not flavour_dir.is_dir():
        raise ProjectError(
            f"{spec.rtos} flavour not implemented yet",
            hint="use --rtos baremetal" if spec.rtos != "baremetal" else None,
        )
    env = _environment()
    selected_ops = selected_operators_yaml(spec)  # ExecuTorch's gen_oplist, run once per project
    ctx = _context(spec, selected_ops)
    if spec.rtos == "zephyr":
        from armgen.project.zephyr import zephyr_context

        ctx.update(zephyr_context(spec))
    ctx["flash_watch"] = flash_watch_context(spec.board, spec.rtos, spec.name, ctx.get("zephyr_release_name"))
    files: dict[str, bytes] = {}
    for root in (TEMPLATES_DIR / "common" / "project", flavour_dir):
        for path in sorted(p for p in root.rglob("*") if p.is_file()):
            rel = path.relative_to(root).as_posix()
            if "__pycache__" in rel:
                continue
            if not writes_template(rel.removesuffix(".j2"), spec):
                continue
            if rel.endswith(".j2"):
                rel = rel[: -len(".j2")]
                tmpl_name = path.relative_to(TEMPLATES_DIR).as_posix()
                try:
                    text = env.get_template(tmpl_name).render(ctx)
                except jinja2.TemplateError as exc:
                    raise ProjectError(f"template {tmpl_name}: {exc}") from exc
                if not text.strip():  # whether a file applies is writes_template's to say, not the template's
                    raise ProjectError(f"template {tmpl_name} rendered to nothing (a template bug)")
                data = _normalise(text)
            else:
                data = path.read_bytes()
            files[_rename(rel, spec)] = data

    # `armgen run`'s input hand-over and the semihosting call (templates/common/run, owned by the run stage).
    run_files = (["armgen_input_file.c", "armgen_input_file.h"] if _semihosting(spec) else []) + (
        ["armgen_semihost.h"] if _semihost_calls(spec) else [])
    for run_file in run_files:
        files[f"src/armgen/{run_file}"] = (TEMPLATES_DIR / "common" / "run" / run_file).read_bytes()

    # armgen's patches to the pinned sources (modules/patches/), where `west patch apply` finds them in the
    # application's own west workspace (patches.yml and patch-base under the manifest repository's zephyr/).
    if spec.rtos == "zephyr":
        from armgen.workspace.patches import patch_files

        files.update(patch_files("zephyr/"))

    # The program itself and what it was made with.
    try:
        files[f"model/{spec.pte_path.name}"] = spec.pte_path.read_bytes()
        if spec.report_path is not None:
            files[f"model/{spec.report_path.name}"] = spec.report_path.read_bytes()
            for rel in sorted(spec.report.files.values()):
                src = spec.report_path.parent / rel
                if src.is_file():
                    files[f"model/{Path(rel).name}"] = src.read_bytes()
    except OSError as exc:
        raise ProjectError(f"cannot read the compiled program: {exc}") from exc
    files["model/selected_operators.yaml"] = selected_ops
    if standin is not None:
        for rel, data in render_project(standin).files.items():
            files[f"{STANDIN_DIR}/{standin.board.name}/{rel}"] = data
    # What `armgen update` needs: the pristine text of your files (its merge base) and every file's digest.
    for rel in user_owned(sorted(files)):
        files[f"{BASE_DIR}/{rel}"] = files[rel]
    digests = {rel: hashlib.sha256(data).hexdigest() for rel, data in files.items() if not is_intermediate_path(rel)}
    files["armgen.toml"] = project_record(spec, standin, digests)
    return RenderedProject(name=spec.name, files=dict(sorted(files.items())))


@dataclass(frozen=True)
class WriteResult:
    """What :func:`write_project_result` did.

    Attributes:
        path: the project directory.
        kept: POSIX paths (relative to ``path``, sorted) of files the old project had that armgen
            does not generate, carried over unchanged by ``force`` (``build/`` not included).
    """

    path: Path
    kept: tuple[str, ...] = ()


def write_project(rendered: RenderedProject, out_dir: Path, *, force: bool = False) -> Path:
    """Write a rendered project to ``out_dir/<name>`` atomically; see :func:`write_project_result`.

    Returns:
        Path: the project directory.
    """
    return write_project_result(rendered, out_dir, force=force).path


def write_project_result(rendered: RenderedProject, out_dir: Path, *, force: bool = False,
                         drop: frozenset[str] = frozenset()) -> WriteResult:
    """Write a rendered project to ``out_dir/<name>`` atomically.

    The files go into a temporary directory beside the destination, which then replaces it with
    one rename. Directories get mode ``0o777 & ~umask`` (files are created under the umask too).

    Args:
        rendered: from :func:`render_project`. out_dir: the parent directory (created if needed).
        force: replace an existing project directory. Generated files are replaced (unchanged ones
            keep their modification times); its ``build/`` is kept, and every other file armgen
            does not generate (the user's own sources, notes) is carried over unchanged.
        drop: files of the old project not to carry over (``armgen update``: no longer generated).

    Returns:
        WriteResult: the project directory and the files kept from the old project.

    Raises:
        ProjectError: the name escapes ``out_dir``; the destination exists without ``force``, or
            exists and is not a directory; a file of the old project is in the way of a generated
            one (a file where armgen now writes a directory, or the reverse); the files cannot be
            written. In every error case the old project is left as it was and no temporary
            directory is left behind.
    """
    validate_name(rendered.name)
    out_dir = Path(out_dir).expanduser().resolve()
    dest = _destination(out_dir, rendered.name, force)
    replacing = force and dest.is_dir()
    kept = tuple(p for p in _user_files(dest, rendered) if p not in drop) if replacing else ()
    tmp = Path(tempfile.mkdtemp(prefix=f".{rendered.name}.armgen-", dir=out_dir))
    moved_build = False
    try:
        tmp.chmod(_dir_mode())  # mkdtemp makes it 0o700; a project directory is an ordinary one
        _fill(tmp, dest, rendered, kept, force)
        if replacing:
            build = dest / "build"
            if build.is_dir() and not build.is_symlink():
                os.rename(build, tmp / "build")
                moved_build = True
            trash = Path(tempfile.mkdtemp(prefix=f".{rendered.name}.old-", dir=out_dir))
            os.rename(dest, trash / rendered.name)
            try:
                os.rename(tmp, dest)
            except OSError:
                os.rename(trash / rendered.name, dest)  # put the old project back
                raise
            shutil.rmtree(trash, ignore_errors=True)
        else:
            os.rename(tmp, dest)
    except BaseException as exc:
        if moved_build and (tmp / "build").is_dir() and dest.is_dir() and not (dest / "build").exists():
            os.rename(tmp / "build", dest / "build")  # never lose the user's build tree
        shutil.rmtree(tmp, ignore_errors=True)
        if isinstance(exc, OSError):
            raise ProjectError(f"cannot write project {dest}: {exc}") from exc
        raise
    return WriteResult(path=dest, kept=kept)


def _destination(out_dir: Path, name: str, force: bool) -> Path:
    """``out_dir/name``, checked: inside ``out_dir``, absent unless ``force``, a directory if present;
    ``out_dir`` created.

    Raises:
        ProjectError: as :func:`write_project_result`.
    """
    dest = out_dir / name
    if dest.resolve().parent != out_dir:
        raise ProjectError(f"project name '{name}' escapes the output directory {out_dir}")
    if dest.exists() or dest.is_symlink():
        if not force:
            raise ProjectError(
                f"{dest} already exists",
                hint="choose another NAME or --out, or pass --force to replace it",
            )
        check_replaceable(dest)
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ProjectError(f"cannot create output directory {out_dir}: {exc}") from exc
    return dest


def _fill(tmp: Path, dest: Path, rendered: RenderedProject, kept: tuple[str, ...], force: bool) -> None:
    """Write the generated files into ``tmp`` (unchanged ones keep the old modification time) and copy
    the user's own files of the old project over.

    Raises:
        ProjectError: a kept file is in the way of a generated file or directory.
    """
    for rel, data in rendered.files.items():
        path = tmp / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        old = dest / rel
        if force and old.is_file() and not old.is_symlink():
            try:
                if old.read_bytes() == data:
                    st = old.stat()
                    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
            except OSError:
                pass
    for rel in kept:
        # A copy (not a move): the old project stays whole until the final rename.
        path = tmp / rel
        if path.exists() or any(p.exists() and not p.is_dir() for p in path.parents if tmp in p.parents):
            raise ProjectError(
                f"cannot keep your file {rel}: armgen generates a file or directory in its way",
                hint=f"move {dest / rel} elsewhere, then run `armgen new --force` again",
            )
        path.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(dest / rel, path, follow_symlinks=False)


def _user_files(dest: Path, rendered: RenderedProject) -> tuple[str, ...]:
    """Files (and symlinks) under ``dest`` that are not in ``rendered`` and not under ``build/``.

    Raises:
        ProjectError: a directory of the old project sits where armgen writes a file.
    """
    kept = []
    for root, dirs, files in os.walk(dest):
        rel_root = Path(root).relative_to(dest)
        if rel_root == Path("."):
            dirs[:] = [d for d in dirs if d != "build"]
        for name in sorted(files) + sorted(d for d in dirs if (Path(root) / d).is_symlink()):
            rel = (rel_root / name).as_posix()
            if rel not in rendered.files:
                kept.append(rel)
        for d in dirs:
            rel = (rel_root / d).as_posix()
            if rel in rendered.files and not (Path(root) / d).is_symlink():
                raise ProjectError(
                    f"cannot replace {dest / rel}: it is a directory, and armgen generates a file there",
                    hint="move it elsewhere, then run `armgen new --force` again",
                )
    return tuple(sorted(kept))


def _dir_mode() -> int:
    """``0o777`` less the process umask (what ``mkdir`` would give)."""
    umask = os.umask(0)
    os.umask(umask)
    return 0o777 & ~umask


# ---- pieces rendered from Python ------------------------------------------------------------------
def selected_operators_yaml(spec: ProjectSpec) -> bytes:
    """The program's operators in ExecuTorch's selected-operators YAML format.

    Written by ExecuTorch's own ``codegen.tools.gen_oplist`` (from the installed ``executorch``)
    with the report's operators as root ops (prim ops included: the prim-ops library reads them
    too), so the build's codegen consumes exactly what it produces itself.

    Raises:
        ProjectError: when ExecuTorch's codegen tools are not importable.
    """
    try:
        from executorch.codegen.tools.gen_oplist import gen_oplist
    except ImportError as exc:  # pragma: no cover - executorch is a dependency
        raise ProjectError(f"cannot import ExecuTorch's gen_oplist: {exc}") from exc
    ops = sorted(set(spec.selected_operators) | set(spec.prim_operators))
    header = (
        f"# Operators of program '{spec.report.name}' ({spec.report.pte_sha256[:12]}), written by armgen with\n"
        "# ExecuTorch's codegen.tools.gen_oplist. The build registers exactly these kernels.\n"
    )
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "selected_operators.yaml"
        with contextlib.redirect_stdout(io.StringIO()):
            gen_oplist(output_path=str(out), root_ops=",".join(ops) if ops else None)
        body = out.read_text()
    return (header + body).encode()


def kernel_table_slots(selected_operators: bytes) -> int:
    """Slots of ExecuTorch's kernel table (``MAX_KERNEL_NUM``) for the kernels this build registers.

    Follows upstream's rule (``codegen/tools/gen_max_kernel_num.py``, ExecuTorch 1.5: one slot per
    kernel key in ``et_kernel_metadata``, one per operator listed without) but does not add all 28
    prim ops of ``register_prim_ops.cpp`` as upstream does: armgen builds the prim ops selectively
    (``gen_selected_prim_ops_lib``), so only those the YAML lists register, and they are counted
    already. Upstream's extra slots cost 12 B each of ``.bss`` (336 B).

    Args:
        selected_operators: the YAML of :func:`selected_operators_yaml`.

    Returns:
        int: slots, at least 1 (a zero-length array is not standard C++).
    """
    data = yaml.safe_load(selected_operators) or {}
    metadata = data.get("et_kernel_metadata") or {}
    count = sum(len(v) if isinstance(v, list) and v else 1 for v in metadata.values())
    count += sum(1 for op in (data.get("operators") or {}) if op not in metadata)
    return max(1, count)


def project_record(spec: ProjectSpec, standin: ProjectSpec | None = None, files: dict[str, str] | None = None) -> bytes:
    """``armgen.toml``: the project record later commands (build, size, run, update) read. ``files``: the
    record's ``[files]`` (path -> SHA-256 of every other file of the project).

    See :class:`armgen.project.record.ProjectRecord` for its keys; ``elf``/``map`` are where west
    (``build/zephyr/zephyr.elf``) or the bare-metal CMake project (``build/<name>.elf``) writes them.
    """
    from armgen.project.run_plan import plan_run, runs_on_npu

    zephyr = spec.rtos == "zephyr"
    record = ProjectRecord(
        root=Path("."),
        name=spec.name,
        board=spec.board_ref,
        rtos=spec.rtos,
        backend=spec.backend,
        target=spec.target,
        cpu=spec.cpu,
        elf="build/zephyr/zephyr.elf" if zephyr else f"build/{spec.name}.elf",
        map="build/zephyr/zephyr.map" if zephyr else f"build/{spec.name}.map",
        armgen_version=spec.armgen_version,
        executorch_version=spec.executorch_version,
        zephyr_release=spec.zephyr_release,
        zephyr_target=spec.zephyr_target if spec.zephyr_release is not None else None,
        run=plan_run(spec.board, rtos=spec.rtos, npu=runs_on_npu(spec.backend, spec.report),
                     standin=(f"{STANDIN_DIR}/{standin.board.name}", standin.rtos) if standin is not None else None),
        model=ModelEntry(
            source=spec.model_source,
            weights=spec.weights or None,
            pte=f"model/{spec.pte_path.name}",
            report=f"model/{spec.report_path.name}" if spec.report_path is not None else None,
            sha256=spec.report.pte_sha256,
            labels=spec.class_labels,
            calibration=spec.calibration,
            source_sha256=spec.source_sha256,
            weights_sha256=spec.weights_sha256,
        ),
        regions={"code": spec.code_region, "model": spec.model_region, "data": spec.data_region,
                 "stack": spec.stack_region},
        memory={"stack": "auto" if spec.stack_auto else spec.stack_size, "heap": spec.heap_size,
                "method_allocator_bound": spec.method_allocator_bound,
                **({"load_scratch": spec.load_scratch[1]} if spec.load_scratch else {})},
        pools=tuple(PoolEntry(p.name, p.bytes, p.region, p.section) for p in spec.pools),
        budgets=_own_budgets(spec),
        frontend=spec.frontend.as_record() if spec.frontend is not None else None,
        files=dict(files or {}),
    )
    return record.to_toml()


# ---- helpers --------------------------------------------------------------------------------------
def _own_budgets(spec: ProjectSpec) -> dict[str, Any]:
    """``[budgets]`` as the record keeps it: what is not the board's own flash/RAM budget. The size stage
    reads the board's budgets from the board file, so a project keeps no copy that could go stale (an
    an547 project written before the board's RAM budget left out DDR kept 273,154,048 B through every
    ``armgen new --force``, which keeps this table)."""
    board = spec.board.budgets
    return {k: v for k, v in spec.budgets.items()
            if not (k in ("flash", "ram") and v == getattr(board, k))}


def _environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader([str(TEMPLATES_DIR), str(TEMPLATES_DIR / "common")]),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        autoescape=False,
    )
    env.filters["c_upper"] = _c_upper
    env.filters["c_float"] = _c_float
    return env


def _c_upper(name: str) -> str:
    """``OperatorMissing`` -> ``OPERATOR_MISSING``."""
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).upper()


def _c_float(value: float) -> str:
    """An exact C float literal (hexadecimal), e.g. ``0x1.0p-7f``."""
    import numpy as np

    return float(np.float32(value)).hex() + "f"


def _normalise(text: str) -> bytes:
    lines = [line.rstrip() for line in text.replace("\r\n", "\n").split("\n")]
    out = "\n".join(lines).rstrip("\n") + "\n"
    return out.encode()


def _rename(rel: str, spec: ProjectSpec) -> str:
    if rel == "linker/firmware.ld":
        return f"linker/{spec.name}.ld"
    if spec.rtos == "zephyr" and rel.startswith("boards/board.") and spec.zephyr_target is not None:
        from armgen.project.zephyr import normalise_board_target

        # boards/<normalised target>.conf/.overlay
        return f"boards/{normalise_board_target(spec.zephyr_target)}{rel[len('boards/board'):]}"
    return rel


def _cpu_flags(spec: ProjectSpec) -> list[str]:
    cpu = spec.board.cpu
    flags = ["-mthumb", f"-mcpu={cpu.gcc_mcpu}"]
    flags.append(f"-mfpu={cpu.gcc_mfpu}" if cpu.gcc_mfpu else ("-mfpu=auto" if cpu.gcc_float_abi != "soft" else ""))
    flags.append(f"-mfloat-abi={cpu.gcc_float_abi}")
    return [f for f in flags if f]


def _sample_inputs(spec: ProjectSpec) -> tuple[dict[int, list[str]], str | None]:
    """C initialiser lines for each input, in the tensor's memory (dim) order."""
    import numpy as np

    arrays: dict[int, Any] = {}
    ref_name = None
    if spec.reference_path is not None:
        try:
            with np.load(spec.reference_path) as npz:
                for io_spec in spec.inputs:
                    key = f"input_{io_spec.index}"
                    if key in npz.files:
                        arrays[io_spec.index] = np.asarray(npz[key])
            ref_name = spec.reference_path.name
        except (OSError, ValueError) as exc:
            raise ProjectError(f"cannot read reference data {spec.reference_path}: {exc}") from exc
    out: dict[int, list[str]] = {}
    for io_spec in spec.inputs:
        np_dtype = numpy_dtype(io_spec.dtype)
        arr = arrays.get(io_spec.index)
        from_reference = arr is not None and arr.size == io_spec.numel
        if not from_reference:
            # Deterministic pattern when no reference input exists.
            rng = np.random.default_rng(io_spec.index)
            if io_spec.dtype == "float32":
                arr = rng.uniform(-1.0, 1.0, size=io_spec.shape)
            else:
                arr = rng.integers(-128 if io_spec.dtype == "int8" else 0, 128, size=io_spec.shape)
        arr = np.asarray(arr)
        if not (from_reference and arr.shape == stored_shape(io_spec.shape, io_spec.dim_order)):
            # logical order (the generated pattern, or a logical-order reference): to memory order
            arr = to_memory_order(arr.reshape(io_spec.shape), io_spec.dim_order)
        # the reference's input_<i> is already in memory (dim) order: its bytes as they are
        flat = np.ascontiguousarray(arr).astype(np_dtype).reshape(-1)
        if io_spec.dtype == "float32":
            items = [float(v).hex() + "f" for v in flat.astype(np.float32).tolist()]
        elif io_spec.dtype == "bool":
            items = ["true" if v else "false" for v in flat.tolist()]
        else:
            items = [str(int(v)) for v in flat.tolist()]
        out[io_spec.index] = [
            ", ".join(items[i : i + _PER_LINE]) + "," for i in range(0, len(items), _PER_LINE)
        ]
    return out, ref_name


def _semihosting(spec: ProjectSpec) -> bool:
    return reads_input_file(spec.board, spec.rtos)


def _semihost_calls(spec: ProjectSpec) -> bool:
    """Whether the firmware makes semihosting calls (``armgen_semihost.h``): to read ``input.bin``, or as
    its bare-metal console or exit (:func:`_baremetal_console_context`)."""
    bm = spec.board.baremetal
    bare_metal_calls = spec.rtos == "baremetal" and "semihosting" in (bm.console, bm.exit)
    return _semihosting(spec) or bare_metal_calls


#: Where a bare-metal project's console driver goes: one file, ``<driver>.c`` (:func:`console_driver`),
#: from ``templates/baremetal/project/src/platform/console/<driver>.c.j2``.
CONSOLE_DIR = "src/platform/console/"

#: ``baremetal.uart_kind`` (boards/schema.json) -> the console driver that drives it.
_UART_DRIVERS = {"cmsdk": "cmsdk_uart", "ns16550": "ns16550", "stm32_usart_v1": "stm32_usart",
                 "stm32_usart_v2": "stm32_usart"}


def console_driver(board: Any) -> str:
    """The bare-metal console driver of ``board``: ``semihosting``, ``cmsdk_uart`` (Arm CMSDK APB UART),
    ``ns16550`` or ``stm32_usart`` (both STM32 USART layouts); its project gets
    ``src/platform/console/<driver>.c`` and no other console file.

    Raises:
        ProjectError: a UART kind no driver is written for (boards/schema.json admits only the kinds
            above).
    """
    bm = board.baremetal
    if bm.console == "semihosting":
        return "semihosting"
    driver = _UART_DRIVERS.get(bm.uart_kind or "")
    if driver is None:
        raise ProjectError(f"board {board.name}: no console driver for baremetal.uart_kind {bm.uart_kind!r}",
                           hint=f"use one of {', '.join(sorted(_UART_DRIVERS))}")
    return driver


#: Files only some projects get (path in the project, ``.j2`` dropped) -> whether ``spec``'s project does.
#: Their templates hold no guard of their own: every template a project gets renders to a file.
_CONDITIONAL_FILES: dict[str, Callable[[ProjectSpec], bool]] = {
    "src/platform/npu.c": lambda spec: spec.uses_npu,  # the Ethos-U driver glue (bare metal)
    "cmake/ethos_u.cmake": lambda spec: spec.uses_npu,
    "src/frontend/armgen_frontend.c": lambda spec: spec.frontend is not None,  # armgen new --frontend
    "src/frontend/armgen_frontend.h": lambda spec: spec.frontend is not None,
}


def writes_template(rel: str, spec: ProjectSpec) -> bool:
    """Whether the project gets the file a template renders to (``rel``: its path in the project, relative
    POSIX, ``.j2`` dropped). The flavour's folder decides Zephyr or bare-metal files; here: the one console
    driver of the board (:func:`console_driver`; the driver's own header ``armgen_console.h`` always) and
    the files of :data:`_CONDITIONAL_FILES` (the NPU's with an Ethos-U delegate, the front end's with one);
    every other template always."""
    if rel.startswith(CONSOLE_DIR) and rel.endswith(".c"):
        return rel == f"{CONSOLE_DIR}{console_driver(spec.board)}.c"
    applies = _CONDITIONAL_FILES.get(rel)
    return applies is None or applies(spec)


def _context(spec: ProjectSpec, selected_ops: bytes) -> dict[str, Any]:
    board = spec.board
    pools = list(spec.pools)
    sample_inputs, ref_name = _sample_inputs(spec)
    # Interrupt vector: 16 system exceptions + enough IRQ lines for the NPU (and a sane minimum).
    n_irq = max(32, (board.npu.irq + 1) if board.npu is not None else 0)
    irq_vector = []
    irq_handlers = []
    for i in range(n_irq):
        if board.npu is not None and spec.uses_npu and i == board.npu.irq:
            irq_vector.append("NPU_IRQHandler")
            irq_handlers.append({"handler": "NPU_IRQHandler"})
        else:
            irq_vector.append("armgen_default_handler")
    num_vectors = 16 + n_irq
    vector_align = 1 << max(7, (num_vectors * 4 - 1).bit_length())
    return {
        "name": spec.name,
        "armgen_version": spec.armgen_version,
        "executorch_version": spec.executorch_version,
        "board": board,
        "report": spec.report,
        "rtos": spec.rtos,
        "backend": spec.backend,
        "uses_npu": spec.uses_npu,
        "inputs": spec.inputs,
        "outputs": spec.outputs,
        "pools": pools,
        "planned_pools": [p for p in pools if p.kind == "planned"],
        "temp_pool": next((p for p in pools if p.kind == "temp"), None),
        "load_scratch": _load_scratch_context(spec),
        "regions": sorted(board.regions, key=lambda r: r.base),
        "code_region": spec.code_region,
        "model_region": spec.model_region,
        "data_region": spec.data_region,
        "stack_region": spec.stack_region,
        "stack_size": spec.stack_size,
        "stack_auto": spec.stack_auto,
        "heap_size": spec.heap_size,
        "pte_file": spec.pte_path.name,
        "kernel_libraries": spec.kernel_libraries,
        "portable_sources": spec.portable_sources,
        "cortex_m_sources": spec.cortex_m_sources,
        "cmsis_nn_optimization": spec.cmsis_nn_optimization,
        "selected_operators": spec.selected_operators,
        "kernel_table_slots": kernel_table_slots(selected_ops),
        "error_codes": ERROR_CODES,
        "cpu_flags": _cpu_flags(spec),
        "sample_inputs": sample_inputs,
        "reference_name": ref_name,
        "npu_remap_windows": remap_windows(board),
        "npu_dcache_windows": dcache_windows(board),
        "irq_vector": irq_vector,
        "irq_handlers": irq_handlers,
        "num_vectors": num_vectors,
        "vector_align": vector_align,
        "method_allocator_bound": spec.method_allocator_bound,
        "semihosting": _semihosting(spec),
        "exit_codes": EXIT_CODES,
        **(_baremetal_console_context(board) if spec.rtos == "baremetal" else {}),
        "frontend": _frontend_context(spec),
    }


def _baremetal_console_context(board: Any) -> dict[str, Any]:
    """The console driver file (:func:`console_driver`) and how the firmware stops: a semihosting exit on a
    semihosting console whatever ``baremetal.exit`` says (the console needs the host already), else as it says."""
    bm = board.baremetal
    return {"console_driver": console_driver(board),
            "semihosting_exit": bm.console == "semihosting" or bm.exit == "semihosting"}


def _load_scratch_context(spec: ProjectSpec) -> dict[str, Any] | None:
    """The planned pool lent to the operator-lookup scratch during load_method (spec.load_scratch)."""
    if spec.load_scratch is None:
        return None
    pool, nbytes = spec.load_scratch
    return {"pool": pool, "bytes": nbytes, "symbol": spec.pool(pool).symbol}


def _frontend_context(spec: ProjectSpec) -> dict[str, Any] | None:
    """The audio front end's parameters, constants (C literals), input quantization and streaming; None without."""
    fe = spec.frontend
    if fe is None:
        return None
    from armgen.model.frontend import LfbeFrontend, memory_strides
    from armgen.model.stream import stream_context

    tables = fe.tables()
    io, report_io = spec.inputs[0], spec.report.inputs[0]
    assert io.scale is not None and io.zero_point is not None  # checked by options.check_frontend
    frame_stride, value_stride = memory_strides(fe, report_io.shape, report_io.dim_order)
    context = {
        "kind": fe.kind, "params": fe, "num_frames": fe.num_frames, "num_bins": fe.num_bins,
        "frame_features": fe.frame_features, "frame_stride": frame_stride, "value_stride": value_stride,
        "window": _c_float_lines(tables["window"]), "mel_start": tables["mel_start"], "mel_count": tables["mel_count"],
        "mel_weights": _c_float_lines(tables["mel_weights"]), "num_mel_weights": len(tables["mel_weights"]),
        "scale": _c_float(io.scale), "zero_point": io.zero_point,
    }
    if isinstance(fe, LfbeFrontend):
        context |= {k: _c_float(getattr(fe, k)) for k in ("preemphasis", "power_floor", "db_offset", "db_range")}
        context |= stream_context(fe, spec.report.outputs[0])
    else:
        context |= {"dct": _c_float_lines(tables["dct"]), "log_offset": _c_float(fe.log_offset)}
    return context


def _c_float_lines(values: list[float], per_line: int = 8) -> list[str]:
    """float32 values as exact C literals (:func:`_c_float`), ``per_line`` a line."""
    lits = [_c_float(v) for v in values]
    return [", ".join(lits[i : i + per_line]) + "," for i in range(0, len(lits), per_line)]
