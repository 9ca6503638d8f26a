"""The project record, ``armgen.toml``: written by :mod:`armgen.project.render`, read by every later stage.

One class, :class:`ProjectRecord`, owns the file: :meth:`ProjectRecord.to_toml` writes it and
:func:`read_record` / :func:`load_project` read it, for ``armgen build``, ``armgen size``, ``armgen run``
and ``benchmarks/``. The record carries ``schema_version`` (:data:`SCHEMA_VERSION`); a record without
it was written before the key existed (armgen 0.1.0, the same keys) and reads as version 1; a newer
version than this armgen knows is refused with one line. Version 2 added ``[files]`` (the SHA-256 of
every file armgen wrote, what ``armgen update`` compares your tree with) and ``[model] calibration``;
a version 1 record reads with neither.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from armgen.errors import ArmgenError, ProjectError
from armgen.project.run_plan import RunPlan

#: File name of the record in a project directory.
RECORD_FILE = "armgen.toml"
#: Version of the record's layout this armgen writes and reads. Bump it when a key changes meaning.
SCHEMA_VERSION = 2
#: Keys ``armgen build`` and ``armgen run`` need (``armgen size`` makes do with fewer).
REQUIRED_KEYS = ("name", "board", "rtos", "backend", "elf", "map")


@dataclass(frozen=True)
class ModelEntry:
    """``[model]``: where the program came from. Paths are relative to the project directory.

    Attributes:
        source: ``sample:<name>``, a model path, or a ``.pte`` path. pte: the program (``model/<name>.pte``).
        sha256: the program's SHA-256 (hex). report: the program report (``model/<name>.report.json``).
        weights: trained weights a sample was loaded with. labels: the output classes' names.
        calibration: the representative inputs the program was calibrated with (None: the model's own).
        source_sha256 / weights_sha256: SHA-256 of the model source file and of the weights file when
            the project was written (:mod:`armgen.project.staleness`); None for a sample or no file.
    """

    source: str
    pte: str
    sha256: str
    report: str | None = None
    weights: str | None = None
    labels: tuple[str, ...] = ()
    calibration: str | None = None
    source_sha256: str | None = None
    weights_sha256: str | None = None


@dataclass(frozen=True)
class PoolEntry:
    """One ``[[pools]]`` table: a static pool of the firmware (``armgen_pool_<name>``).

    Attributes:
        name: ``planned_<id>``, ``method`` or ``temp``. bytes: its size in bytes. region: the board
        region it is placed in. section: its input section (``.armgen_pool.<name>``).
    """

    name: str
    bytes: int
    region: str | None = None
    section: str | None = None

    def as_dict(self) -> dict[str, Any]:
        """The table's keys (None values left out), as :func:`armgen.firmware.size.size_elf` takes them."""
        return {k: v for k, v in (("name", self.name), ("bytes", self.bytes), ("region", self.region),
                                  ("section", self.section)) if v is not None}


@dataclass(frozen=True)
class ProjectRecord:
    """What ``armgen.toml`` says about a project.

    Attributes:
        root: the project directory (absolute). schema_version: the record's layout version.
        name, board (name, alias or path), rtos (``zephyr``/``baremetal``), backend
            (``cortex-m``/``ethos-u``), target (e.g. ``cortex-m55``, ``ethos-u55-128``), cpu.
        elf / map: the build outputs, relative to ``root`` (see :attr:`elf_path`).
        armgen_version / executorch_version: what generated the project and its program.
        zephyr_release / zephyr_target: Zephyr projects only. standin: directory of the QEMU stand-in
            application (relative), when the board is not emulated.
        model: ``[model]``. regions: ``[regions]`` (code, model, data, stack -> board region names).
        memory: ``[memory]`` (stack, heap, method_allocator_bound; bytes; stack may be ``"auto"``).
            pools: ``[[pools]]``.
        budgets: ``[budgets]`` as written (bytes or size strings; :mod:`armgen.firmware.size` parses it).
        frontend: ``[frontend]``: the audio front end's parameters
            (``as_record`` of :mod:`armgen.model.frontend`'s classes), None without one.
        files: ``[files]``: project-relative path -> SHA-256 (hex) of every file armgen wrote (the record
            itself left out); empty in a version 1 record.
        run: ``[run]``: how `armgen run` checks the project (:class:`armgen.project.run_plan.RunPlan`); None
            in records written before run plans, or when the table is unreadable (then ``run_error`` says
            why: only `armgen run` needs it, and `armgen update` writes it again).
    """

    root: Path
    name: str | None = None
    board: str | None = None
    rtos: str | None = None
    backend: str | None = None
    target: str = ""
    cpu: str = ""
    elf: str | None = None
    map: str | None = None
    armgen_version: str | None = None
    executorch_version: str | None = None
    zephyr_release: str | None = None
    zephyr_target: str | None = None
    standin: str | None = None
    model: ModelEntry | None = None
    regions: dict[str, str] = field(default_factory=dict)
    memory: dict[str, int | str] = field(default_factory=dict)
    pools: tuple[PoolEntry, ...] = ()
    budgets: dict[str, Any] | None = None
    frontend: dict[str, Any] | None = None
    files: dict[str, str] = field(default_factory=dict)
    run: RunPlan | None = None
    run_error: str | None = None
    schema_version: int = SCHEMA_VERSION

    @property
    def stack_auto(self) -> bool:
        """``[memory] stack = "auto"``: ``armgen build`` sizes the stack (:mod:`armgen.firmware.stack`; Zephyr:
        the main, ISR and idle stacks, :mod:`armgen.firmware.zephyr_stack`)."""
        return self.memory.get("stack") == "auto"

    @property
    def path(self) -> Path:
        """``root/armgen.toml``."""
        return self.root / RECORD_FILE

    @property
    def build_dir(self) -> Path:
        """``root/build``."""
        return self.root / "build"

    @property
    def elf_path(self) -> Path | None:
        """The ELF's absolute path (None when the record names none)."""
        return self.root / self.elf if self.elf else None

    @property
    def map_path(self) -> Path | None:
        """The linker map's absolute path (None when the record names none)."""
        return self.root / self.map if self.map else None

    @property
    def board_spec(self) -> str | None:
        """The board as :func:`armgen.boards.load_board` takes it: a name, or a board file's path
        (a relative path in the record is relative to the project directory). None: no board key."""
        board = self.board
        if board and not Path(board).is_absolute() and ("/" in board or board.endswith((".yaml", ".yml"))):
            return str(self.root / board)
        return board

    def resolve(self, path: str) -> Path:
        """A path the record holds (model source, weights, calibration: relative to the project directory
        since schema 2, absolute in older records) as an absolute path."""
        p = Path(path).expanduser()
        return p if p.is_absolute() else (self.root / p).resolve()

    def model_path(self, key: str) -> Path:
        """Absolute path of ``[model]``'s ``pte`` or ``report``; where ``armgen new`` puts them
        (``model/<name>.pte``, ``model/<name>.report.json``) when the record names none."""
        value = getattr(self.model, key, None) if self.model is not None else None
        if value:
            return self.root / value
        return self.root / "model" / f"{self.name}{'.pte' if key == 'pte' else '.report.json'}"

    def to_toml(self) -> bytes:
        """The record as ``armgen.toml`` text (UTF-8), with comments saying who reads what.

        Keys are written in a fixed order, so the same record gives the same bytes.
        """
        top: dict[str, Any] = {"schema_version": self.schema_version}
        for key in ("name", "board", "rtos", "backend", "target", "cpu", "elf", "map", "armgen_version",
                    "executorch_version", "zephyr_release", "zephyr_target", "standin"):
            value = getattr(self, key)
            if value is not None:
                top[key] = value
        lines = [
            "# armgen project record: what this firmware was generated from and how its memory is planned.",
            "# Read by `armgen build`, `armgen size` and `armgen run`; `armgen update` takes a new model or armgen in.",
        ]
        lines += [f"{k} = {_toml_value(v)}" for k, v in top.items()]
        if self.model is not None:
            model = {k: getattr(self.model, k) for k in ("source", "source_sha256", "weights", "weights_sha256",
                                                          "calibration", "pte", "report", "sha256")}
            model["labels"] = list(self.model.labels) or None
            lines += ["", "[model]"] + [f"{k} = {_toml_value(v)}" for k, v in model.items() if v is not None]
        if self.frontend is not None:
            lines += ["", "# The audio front end src/frontend/ computes (armgen.model.frontend); `armgen run` "
                      "checks its features against the host's."]
            lines += ["[frontend]"] + [f"{k} = {_toml_value(v)}" for k, v in self.frontend.items()]
        if self.run is not None:
            lines += ["", "# How `armgen run` checks this project (armgen.project.run_plan; `armgen update` plans it)."]
            lines += ["[run]"] + [f"{k} = {_toml_value(v)}" for k, v in self.run.as_table().items()]
        lines += ["", "# Where the linker puts code, the .pte, .data/.bss and the stack (board region names)."]
        lines += ["[regions]"] + [f"{k} = {_toml_value(v)}" for k, v in self.regions.items()]
        lines += ["", "# Bytes. method_allocator_bound: see armgen.model.method_allocator."]
        if "load_scratch" in self.memory:
            lines += ["# load_scratch: the operator-lookup scratch of load_method, lent by the largest planned pool",
                      "# (no temp pool; armgen.project.spec.load_scratch_host)."]
        lines += ["[memory]"] + [f"{k} = {_toml_value(v)}" for k, v in self.memory.items()]
        for p in self.pools:
            lines += ["", "[[pools]]"] + [f"{k} = {_toml_value(v)}" for k, v in p.as_dict().items()]
        lines += ["", "# Size limits checked by `armgen size` (bytes, or strings such as \"512 KiB\"); yours:",
                  "# `armgen update` and `armgen new --force` keep this table. flash and ram default to the",
                  "# board's budgets (`armgen boards show BOARD`); set them here to tighten. [budgets.growth]:",
                  "# growth allowed over size-baseline.json."]
        lines += _budget_lines(self.budgets or {})
        if self.files:
            lines += ["", "# SHA-256 of every file armgen wrote: `armgen update` tells your edits from its changes."]
            lines += ["[files]"] + [f"{_toml_value(k)} = {_toml_value(v)}" for k, v in sorted(self.files.items())]
        return ("\n".join(lines) + "\n").encode()


def read_record(
    toml_path: Path | str, *, error: type[ArmgenError] = ProjectError, required: tuple[str, ...] = REQUIRED_KEYS,
) -> ProjectRecord:
    """Read ``armgen.toml`` at ``toml_path``.

    Args:
        toml_path: the record's path; its directory is the project root.
        error: the error type to raise (``SizeError`` for ``armgen size``, whose exit-code contract
            differs; ``ProjectError`` otherwise).
        required: top-level keys that must be present (``armgen size`` reads hand-written records
            with fewer keys).

    Raises:
        error: the file cannot be read, is not valid TOML, lacks a required key, has a key of the
            wrong type, or has a newer ``schema_version`` than this armgen reads (one line naming the file).
    """
    path = Path(toml_path)
    try:
        data = tomllib.loads(path.read_text())
    except OSError as exc:
        raise error(f"cannot read {path}: {exc.strerror}") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise error(f"{path}: not valid TOML ({exc})") from None
    return _from_table(data, path, error, required)


def load_project(project: Path | str | None = None, *, hint: str | None = None) -> ProjectRecord:
    """The record of the project at ``project`` (default: the current directory), with every required key.

    Raises:
        ProjectError: no ``armgen.toml`` there, or see :func:`read_record`.
    """
    root = Path(project or ".").expanduser().resolve()
    if not (root / RECORD_FILE).is_file():
        raise ProjectError(
            f"{root} is not an armgen project (no {RECORD_FILE})",
            hint=hint or "run `armgen new NAME --board BOARD` first, or pass the project directory",
        )
    return read_record(root / RECORD_FILE)


def check_replaceable(dest: Path) -> None:
    """Whether ``--force`` may replace ``dest``: absent, or a directory holding an ``armgen.toml`` (a
    project armgen made). A directory of the user's, a file or a symlink is never replaced.

    Raises:
        ProjectError: ``dest`` exists and is not an armgen project directory (one line, nothing written).
    """
    if not (dest.exists() or dest.is_symlink()):
        return
    if not dest.is_dir() or dest.is_symlink():
        raise ProjectError(f"{dest} exists and is not a directory; refusing to replace it")
    if not (dest / RECORD_FILE).is_file():
        raise ProjectError(
            f"{dest} is not an armgen project (no {RECORD_FILE}): --force replaces only a project armgen made",
            hint="choose another NAME or --out",
        )


def _from_table(
    data: dict[str, Any], path: Path, error: type[ArmgenError], required: tuple[str, ...]
) -> ProjectRecord:
    version = data.get("schema_version", 1)
    if not isinstance(version, int) or version < 1:
        raise error(f"{path}: schema_version must be a positive integer, not {version!r}")
    if version > SCHEMA_VERSION:
        raise error(f"{path}: record schema_version {version} is newer than this armgen reads ({SCHEMA_VERSION})",
                    hint="upgrade armgen, or regenerate the project with `armgen new --force`")
    missing = [k for k in required if k not in data]
    if missing:
        raise error(f"{path}: missing key {missing[0]!r}")

    def text(key: str, table: Mapping[str, Any] = data, default: str | None = None) -> str | None:
        value = table.get(key, default)
        if value is not None and not isinstance(value, str):
            raise error(f"{path}: {key!r} must be a string, not {value!r}")
        return value

    run, run_error = _run(data, path, error)
    return ProjectRecord(
        root=path.parent.resolve(),
        schema_version=version,
        **{k: text(k) for k in ("name", "board", "rtos", "backend", "elf", "map", "armgen_version",
                                "executorch_version", "zephyr_release", "zephyr_target", "standin")},
        target=text("target", default="") or "",
        cpu=text("cpu", default="") or "",
        model=_model(data.get("model"), path, error),
        regions={str(k): str(v) for k, v in _table(data, "regions", path, error).items()},
        memory=_memory(_table(data, "memory", path, error), path, error),
        pools=_pools(data.get("pools", []), path, error),
        budgets=_table(data, "budgets", path, error) if "budgets" in data else None,
        frontend=_table(data, "frontend", path, error) if "frontend" in data else None,
        files={str(k): str(v) for k, v in _table(data, "files", path, error).items()},
        run=run,
        run_error=run_error,
    )


def _run(data: Mapping[str, Any], path: Path, error: type[ArmgenError]) -> tuple[RunPlan | None, str | None]:
    """``(run, run_error)`` of the record: an unreadable ``[run]`` is kept as its error line."""
    if "run" not in data:
        return None, None
    try:
        return RunPlan.from_table(_table(data, "run", path, error), str(path)), None
    except ArmgenError as exc:
        return None, exc.message


def _memory(table: dict[str, Any], path: Path, error: type[ArmgenError]) -> dict[str, int | str]:
    """``[memory]``: bytes, except ``stack``, which may also be ``"auto"`` (sized by ``armgen build``)."""
    memory: dict[str, int | str] = {str(k): v for k, v in table.items() if isinstance(v, int)}
    stack = table.get("stack")
    if stack == "auto":
        memory["stack"] = "auto"
    elif stack is not None and (not isinstance(stack, int) or isinstance(stack, bool) or stack <= 0):
        raise error(f"{path}: [memory] stack must be bytes or \"auto\", not {stack!r}")
    return memory


def _table(data: Mapping[str, Any], key: str, path: Path, error: type[ArmgenError]) -> dict[str, Any]:
    value = data.get(key, {})
    if not isinstance(value, Mapping):
        raise error(f"{path}: [{key}] must be a table")
    return dict(value)


def _model(value: Any, path: Path, error: type[ArmgenError]) -> ModelEntry | None:
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise error(f"{path}: [model] must be a table")
    fields = {k: value.get(k) for k in ("source", "pte", "sha256", "report", "weights", "calibration", "source_sha256",
                                        "weights_sha256")}
    bad = next((k for k, v in fields.items() if v is not None and not isinstance(v, str)), None)
    if bad is not None:
        raise error(f"{path}: [model] {bad!r} must be a string")
    labels = value.get("labels", [])
    if not (isinstance(labels, list) and all(isinstance(x, str) for x in labels)):
        raise error(f"{path}: [model] 'labels' must be a list of strings")
    return ModelEntry(source=fields["source"] or "", pte=fields["pte"] or "", sha256=fields["sha256"] or "",
                      report=fields["report"], weights=fields["weights"], labels=tuple(labels),
                      calibration=fields["calibration"], source_sha256=fields["source_sha256"],
                      weights_sha256=fields["weights_sha256"])


def _pools(value: Any, path: Path, error: type[ArmgenError]) -> tuple[PoolEntry, ...]:
    if not isinstance(value, list):
        raise error(f"{path}: pools must be an array of [[pools]] tables")
    pools = []
    for entry in value:
        if not (isinstance(entry, Mapping) and isinstance(entry.get("name"), str)
                and isinstance(entry.get("bytes"), int)):
            raise error(f"{path}: each [[pools]] table needs a name (string) and bytes (integer)")
        region, section = entry.get("region"), entry.get("section")
        pools.append(PoolEntry(entry["name"], entry["bytes"], region if isinstance(region, str) else None,
                               section if isinstance(section, str) else None))
    return tuple(pools)


def _budget_lines(budgets: Mapping[str, Any]) -> list[str]:
    """``[budgets]`` and its sub-tables (regions, components, growth) as TOML lines, keys sorted."""
    import tomli_w

    flat = {k: v for k, v in sorted(budgets.items()) if not isinstance(v, Mapping)}
    nested = {k: v for k, v in sorted(budgets.items()) if isinstance(v, Mapping)}
    lines = ["[budgets]"] + [f"{k} = {_toml_value(v)}" for k, v in flat.items()]
    if nested:
        lines += [""] + tomli_w.dumps({"budgets": nested}).strip().splitlines()
    return lines


def _toml_value(value: Any) -> str:
    import tomli_w

    return tomli_w.dumps({"v": value}).strip()[len("v = "):]
