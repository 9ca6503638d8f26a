"""``armgen update``: a new render of a project merged with the tree the team has edited since.

The new render comes from the project record plus the changes asked for (a retrained model, new weights,
a newer armgen); this module compares it, file by file, with the tree on disk and with what armgen wrote
last (the record's ``[files]`` digests and, for your files, their pristine text under
:data:`armgen.project.ownership.BASE_DIR`), as copier's ``copier update`` and cruft do for a template:

=========================================  ==========================================================
on disk                                    result
=========================================  ==========================================================
as armgen wrote it                         replaced by the new render (``replace``)
edited by you, armgen's version unchanged  kept (``keep``)
edited by you, armgen's version changed    merged three ways (``git merge-file``, ``merge``): your file
                                           against its pristine text, armgen's file against armgen's
                                           last render of it (see below); overlapping changes get
                                           conflict markers and your version is saved beside it as
                                           ``<file>.mine`` (``conflict``). An armgen file without that
                                           base (or binary): the new version is written, yours saved
                                           as ``<file>.mine`` (``conflict``).
missing                                    armgen's file is written again (``restore``); your file
                                           stays deleted (``deleted``)
new in the render                          written (``add``)
no longer rendered                         removed if untouched (``remove``), else kept as yours
=========================================  ==========================================================

armgen's last render of its own file is not kept (the record holds its digest only): it is made again by
rendering the old record with the project's committed program (``model/<name>.pte`` and its report, no
compile) with this armgen (``old_render``, which the CLI passes), and taken as the base only when its
SHA-256 equals the record's ``[files]`` digest of that file (a newer armgen's templates, a project with an
audio front end or an edited program give another text: then no merge).

A record of schema 1 (no ``[files]``) cannot tell your edits from armgen's: armgen's files are replaced,
your files kept, with armgen's new version beside each that differs (``<file>.armgen-new``), and a note.
Each change of an armgen file carries its causes: the facts of the record and the program that moved
(program, pools, operators, armgen and ExecuTorch versions), as :func:`causes` finds them.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import signal
import subprocess
import tempfile
import tomllib
from collections.abc import Callable
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any

import yaml

from armgen.errors import ProjectError
from armgen.project.intermediates import is_intermediate_path
from armgen.project.ownership import BASE_DIR, USER, owner_of
from armgen.project.record import RECORD_FILE, ProjectRecord

#: Suffix of your version of a file saved beside armgen's when both changed.
MINE_SUFFIX = ".mine"
#: Suffix of armgen's new version of your file, saved beside it when a schema 1 project has no merge base.
ARMGEN_NEW_SUFFIX = ".armgen-new"


@dataclass(frozen=True)
class FileAction:
    """What ``armgen update`` does with one file.

    Attributes:
        path: project-relative POSIX path. owner: ``"armgen"`` or ``"user"``. action: one of ``add``,
        ``replace``, ``same``, ``keep``, ``merge``, ``conflict``, ``restore``, ``deleted``, ``remove``.
        data: the file's new content (None: the file is left as it is, or removed). beside: a file saved
        next to it (``<path>.mine`` / ``<path>.armgen-new``) and its content. causes: why armgen's version
        changed (:func:`causes`), for the files armgen changed. markers: ``data`` holds the conflict
        markers of a three-way merge.
    """

    path: str
    owner: str
    action: str
    data: bytes | None = None
    beside: tuple[str, bytes] | None = None
    causes: tuple[str, ...] = ()
    markers: bool = False


@dataclass(frozen=True)
class UpdatePlan:
    """Every file's :class:`FileAction`, the causes found, and the files to write / drop.

    Attributes:
        actions: one per file armgen writes or wrote, sorted by path. causes: all causes (:func:`causes`).
        files: the new tree's generated files (path -> bytes), what the atomic write puts in place.
        drop: files of the old project to leave out (no longer rendered and untouched).
        notes: one-line notes (a schema 1 record).
    """

    actions: tuple[FileAction, ...]
    causes: tuple[str, ...]
    files: dict[str, bytes] = field(default_factory=dict)
    drop: frozenset[str] = frozenset()
    notes: tuple[str, ...] = ()
    kinds: frozenset[str] = frozenset()

    @property
    def new_target(self) -> bool:
        """The board, RTOS, backend, CPU target or Zephyr release changed: ``build/`` was configured for the old."""
        return "board" in self.kinds

    @property
    def conflicts(self) -> list[FileAction]:
        """The actions that ended in a conflict."""
        return [a for a in self.actions if a.action == "conflict"]

    @property
    def changed(self) -> list[FileAction]:
        """The actions that change the tree (all but ``same`` and ``keep``)."""
        return [a for a in self.actions if a.action not in ("same", "keep")]


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _read(path: Path) -> bytes | None:
    try:
        return path.read_bytes() if path.is_file() and not path.is_symlink() else None
    except OSError:
        return None


def merge3(mine: bytes, base: bytes, theirs: bytes) -> tuple[bytes, bool]:
    """Three-way merge of ``mine`` and ``theirs`` (armgen's new version) against ``base`` with
    ``git merge-file``: (merged text, clean). Overlaps get markers labelled ``yours``/``armgen``.

    Raises:
        ProjectError: git is missing or ``git merge-file`` fails (a binary file, an I/O error).
    """
    with tempfile.TemporaryDirectory(prefix="armgen-merge-") as tmp:
        paths = []
        for name, data in (("mine", mine), ("base", base), ("theirs", theirs)):
            (Path(tmp) / name).write_bytes(data)
            paths.append(str(Path(tmp) / name))
        try:
            r = subprocess.run(["git", "merge-file", "-p", "-L", "yours", "-L", "pristine", "-L", "armgen", *paths],
                               capture_output=True, check=False)
        except FileNotFoundError:
            raise ProjectError("git not found: armgen update merges your edits with `git merge-file`",
                               hint="install git") from None
    if r.returncode < 0 or r.returncode > 127:
        raise ProjectError(f"git merge-file failed: {r.stderr.decode(errors='replace').strip()}")
    return r.stdout, r.returncode == 0


def _text(*versions: bytes) -> bool:
    """No version is binary (git merge-file takes text: a NUL byte says binary, as git's own check does)."""
    return not any(b"\0" in v for v in versions)


def _operators(data: bytes | None) -> set[str]:
    if not data:
        return set()
    try:
        doc = yaml.safe_load(data) or {}
    except yaml.YAMLError:
        return set()
    return set((doc.get("operators") or {}).keys()) if isinstance(doc, dict) else set()


def causes(
    old: ProjectRecord, new_record: dict[str, Any], old_ops: set[str], new_ops: set[str]
) -> dict[str, list[str]]:
    """Why armgen's render changed, by kind: ``board`` (board, RTOS, backend, target, Zephyr release),
    ``program``, ``pools``, ``operators``, ``versions``, ``memory``, ``run`` (the run plan: a stand-in added,
    removed or of another RTOS).

    Args:
        old: the project's record. new_record: the new ``armgen.toml`` as TOML data. old_ops / new_ops:
            the operators of the old and new ``model/selected_operators.yaml``.
    """
    out: dict[str, list[str]] = {}
    new_model = new_record.get("model") or {}
    if old.model is None or old.model.sha256 != new_model.get("sha256"):
        old_sha = old.model.sha256[:12] if old.model else "none"
        out.setdefault("program", []).append(f"new program ({old_sha} -> {str(new_model.get('sha256', ''))[:12]})")
    if old.model is not None and old.model.source != new_model.get("source"):
        out.setdefault("program", []).append(f"model {old.model.source} -> {new_model.get('source')}")
    if old.model is not None and (old.model.weights or None) != new_model.get("weights"):
        out.setdefault("program", []).append(f"weights {old.model.weights} -> {new_model.get('weights')}")
    old_pools = {p.name: p.bytes for p in old.pools}
    new_pools = {p["name"]: p["bytes"] for p in new_record.get("pools", [])}
    for name in sorted(old_pools.keys() | new_pools.keys()):
        a, b = old_pools.get(name), new_pools.get(name)
        if a != b:
            pool = f"{'planned pool ' + name.split('_', 1)[1] if name.startswith('planned_') else name + ' pool'}"
            out.setdefault("pools", []).append(
                f"{pool} {'none' if a is None else f'{a:,}'} -> {'none' if b is None else f'{b:,} B'}")
    for op in sorted(new_ops - old_ops):
        out.setdefault("operators", []).append(f"new operator {op}")
    for op in sorted(old_ops - new_ops):
        out.setdefault("operators", []).append(f"operator {op} no longer used")
    for key in ("board", "rtos", "backend", "target", "zephyr_release"):
        a, b = getattr(old, key), new_record.get(key)
        if (a or None) != (b or None):
            out.setdefault("board", []).append(f"{key.replace('_', ' ')} {a or 'none'} -> {b or 'none'}")
    for key, what in (("armgen_version", "armgen"), ("executorch_version", "ExecuTorch")):
        a, b = getattr(old, key), new_record.get(key)
        if a != b:
            out.setdefault("versions", []).append(f"{what} {a or '?'} -> {b}")
    old_run = old.run.as_table() if old.run is not None else {}
    new_run = {k: v for k, v in (new_record.get("run") or {}).items() if k != "why"}
    if {k: v for k, v in old_run.items() if k != "why"} != new_run:
        def plan(t: dict[str, Any]) -> str:
            return "none" if not t else " ".join(str(t[k]) for k in ("on", "firmware", "image") if k in t)
        out.setdefault("run", []).append(f"run plan {plan(old_run)} -> {plan(new_run)}")
    old_mem = {k: v for k, v in old.memory.items()}
    new_mem = new_record.get("memory") or {}
    for key in sorted((old_mem.keys() | new_mem.keys()) - {"method_allocator_bound"}):  # that one is the method pool
        if old_mem.get(key) != new_mem.get(key):
            out.setdefault("memory", []).append(f"{key} {old_mem.get(key)} -> {new_mem.get(key)}")
    return out


#: Which kinds of cause (:func:`causes`) a file follows, by path pattern (first match); the rest follow
#: only the versions (armgen's templates).
_FOLLOWS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("model/selected_operators.yaml", ("operators", "program")),
    ("README.md", ("program", "pools", "operators", "memory")),
    ("model/*", ("program",)),
    ("src/model/*", ("program", "pools", "memory")),
    ("Kconfig", ("pools", "memory")),
    ("linker/*", ("pools", "memory")),
    ("boards/*", ("pools", "memory")),
    ("prj.conf", ("memory",)),
    ("CMakeLists.txt", ("operators", "program", "memory")),  # memory: the stack the linker script falls back to
    ("cmake/*", ("operators",)),
    ("src/armgen/*", ("program",)),
    ("src/main.cpp", ("program",)),
    ("standin/*", ("run", "program", "pools", "operators", "memory")),
)


def _file_causes(path: str, found: dict[str, list[str]]) -> tuple[str, ...]:
    kinds = next((k for pattern, k in _FOLLOWS if fnmatchcase(path, pattern)), ())
    mine = [c for kind in ("board", *kinds, "versions") for c in found.get(kind, [])]
    return tuple(mine) if mine else ("armgen's template renders it differently",)


def plan_update(root: Path, record: ProjectRecord, new_files: dict[str, bytes],
                old_render: Callable[[], dict[str, bytes] | None] | None = None) -> UpdatePlan:
    """Compare ``new_files`` (the new render, :func:`armgen.project.render.render_project`) with the
    project at ``root`` and decide every file (see the module text). Reads only; writes nothing.

    ``old_render``: armgen's last render made again from ``record`` and the committed program (None when it
    cannot be), the base of a merge of armgen's own files; called at most once, and only when one of them
    was edited and changed.

    Raises:
        ProjectError: a three-way merge cannot run (:func:`merge3`).
    """
    old_files: list[dict[str, bytes] | None] = []

    def armgen_base(path: str) -> bytes | None:
        if old_render is None:
            return None
        if not old_files:
            old_files.append(old_render())
        return None if old_files[0] is None else old_files[0].get(path)

    new_record = tomllib.loads(new_files[RECORD_FILE].decode())
    found = causes(record, new_record, _operators(_read(root / "model" / "selected_operators.yaml")),
                   _operators(new_files.get("model/selected_operators.yaml")))
    all_causes = tuple(c for v in found.values() for c in v)
    v1 = not record.files
    notes = []
    if v1:
        notes.append(f"{root / RECORD_FILE} is schema {record.schema_version} (no file digests): armgen's files are "
                     f"replaced and yours kept; where armgen's version of one of yours differs it is saved beside "
                     f"it as <file>{ARMGEN_NEW_SUFFIX}")
    paths = sorted((set(new_files) | set(record.files)) - {RECORD_FILE})
    actions: list[FileAction] = []
    files: dict[str, bytes] = {RECORD_FILE: new_files[RECORD_FILE]}
    drop: set[str] = set()
    for path in paths:
        if is_intermediate_path(path):  # git-ignored, rebuilt from the record: armgen's, no digest, no plan line
            if path in new_files:
                files[path] = new_files[path]
            elif (root / path).is_file():
                drop.add(path)
            continue
        if path.startswith(BASE_DIR + "/"):
            if path in new_files:
                files[path] = new_files[path]
            else:
                drop.add(path)
            continue
        owner = owner_of(path)
        new = new_files.get(path)
        disk = _read(root / path)
        old_sha = record.files.get(path)
        act: FileAction
        if new is None:
            if disk is None:
                continue
            if old_sha is not None and _sha(disk) == old_sha:
                act = FileAction(path, owner, "remove", causes=_file_causes(path, found))
                drop.add(path)
            else:
                act = FileAction(path, owner, "keep")  # no longer armgen's: carried over as yours
        elif disk is None:
            if old_sha is None:
                act = FileAction(path, owner, "add", new, causes=_file_causes(path, found))
            elif owner == USER:
                act = FileAction(path, owner, "deleted")  # you deleted it: armgen does not bring it back
            else:
                act = FileAction(path, owner, "restore", new)
        elif disk == new:
            act = FileAction(path, owner, "same", new)
        elif old_sha is not None and _sha(disk) == old_sha:
            act = FileAction(path, owner, "replace", new, causes=_file_causes(path, found))
        elif old_sha is not None and _sha(new) == old_sha:
            act = FileAction(path, owner, "keep", disk)
        elif v1:
            if owner == USER:
                act = FileAction(path, owner, "keep", disk, beside=(path + ARMGEN_NEW_SUFFIX, new))
            else:
                act = FileAction(path, owner, "replace", new, causes=_file_causes(path, found))
        else:
            base = _read(root / BASE_DIR / path) if owner == USER else armgen_base(path)
            why = _file_causes(path, found)
            if base is not None and _sha(base) == old_sha and (owner == USER or _text(disk, base, new)):
                merged, clean = merge3(disk, base, new)
                act = (FileAction(path, owner, "merge", merged, causes=why) if clean else
                       FileAction(path, owner, "conflict", merged, beside=(path + MINE_SUFFIX, disk), causes=why,
                                  markers=True))
            elif owner == USER:  # no pristine text to merge against: yours stays, armgen's beside it
                act = FileAction(path, owner, "conflict", disk, beside=(path + ARMGEN_NEW_SUFFIX, new), causes=why)
            else:
                act = FileAction(path, owner, "conflict", new, beside=(path + MINE_SUFFIX, disk), causes=why)
        actions.append(act)
        if act.data is not None and act.action != "remove":
            files[path] = act.data
        if act.beside is not None:
            files[act.beside[0]] = act.beside[1]
    return UpdatePlan(tuple(actions), all_causes, dict(sorted(files.items())), frozenset(drop), tuple(notes),
                      frozenset(found))


#: The first line git merge-file writes for an overlap in :func:`merge3` (labels "yours" / "armgen").
CONFLICT_MARKER = b"<<<<<<< yours"


def unresolved_conflicts(root: Path, record: ProjectRecord) -> list[str]:
    """The files (yours, and armgen's that you edited) that still hold the conflict markers of an earlier update
    (``<<<<<<< yours`` at a line start)."""
    out = []
    for path in sorted(record.files):
        data = _read(root / path)
        if data is not None and (data.startswith(CONFLICT_MARKER) or b"\n" + CONFLICT_MARKER in data):
            out.append(path)
    return out


def describe_conflicts(plan: UpdatePlan) -> str:
    """One line naming each conflict and where its two versions are."""
    parts = []
    for a in plan.conflicts:
        beside = a.beside[0] if a.beside else ""
        if a.markers:
            parts.append(f"{a.path} (conflict markers; your version in {beside})")
        elif a.owner == USER:
            parts.append(f"{a.path} (yours kept; armgen's new version in {beside})")
        else:
            parts.append(f"{a.path} (armgen's file: its new version written; your edit in {beside})")
    return "; ".join(parts)


def apply_plan(root: Path, plan: UpdatePlan, *, drop_build: bool = False) -> list[str]:
    """Write ``plan`` into the project at ``root`` in place, file by file; returns the interruptions held back.

    The directory itself stays (a shell inside it keeps working; ``.git``, ignored data, empty directories,
    its mode and mount are untouched). Every file to write is staged first beside its target (a temporary
    name in the same directory); an error or Ctrl-C while staging removes the staged files and leaves the
    project byte-identical. Then, with SIGINT and SIGTERM held back, the staged files are renamed into place
    (each rename atomic), the dropped files removed and, with ``drop_build``, ``build/`` removed. A signal
    held back is returned (its name) for the caller to report; it does not undo a finished update.

    Raises:
        ProjectError: a file cannot be staged (a directory in the way, no permission, disk full).
    """
    staged: list[tuple[Path, Path]] = []
    try:
        for rel, data in plan.files.items():
            target = root / rel
            if target.is_file() and not target.is_symlink() and target.read_bytes() == data:
                continue  # unchanged: keeps its modification time, so the next build recompiles less
            if target.is_dir() and not target.is_symlink():
                raise ProjectError(f"cannot write {target}: it is a directory", hint="move it elsewhere")
            target.parent.mkdir(parents=True, exist_ok=True)
            fd, name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".armgen-tmp", dir=target.parent)
            staged.append((Path(name), target))
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            mode = target.stat().st_mode & 0o777 if target.is_file() else 0o666 & ~_umask()
            os.chmod(name, mode)
    except BaseException as exc:
        for staged_file, _ in staged:
            staged_file.unlink(missing_ok=True)
        if isinstance(exc, OSError):
            raise ProjectError(f"cannot write project {root}: {exc}") from None
        raise
    held: list[str] = []
    previous = _hold_signals(held)
    try:
        for staged_file, target in staged:
            if target.is_symlink():
                target.unlink()
            os.replace(staged_file, target)
        for rel in sorted(plan.drop):
            (root / rel).unlink(missing_ok=True)
        if drop_build and (root / "build").is_dir() and not (root / "build").is_symlink():
            shutil.rmtree(root / "build", ignore_errors=True)
    finally:
        _restore_signals(previous)
    return held


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _hold_signals(held: list[str]) -> dict[int, Any]:
    """Replace the SIGINT/SIGTERM handlers by one that records the signal (main thread only; elsewhere none)."""
    def record(signum: int, _frame: Any) -> None:
        held.append(signal.Signals(signum).name)

    previous: dict[int, Any] = {}
    for sig in (signal.SIGINT, signal.SIGTERM):
        try:
            previous[sig] = signal.signal(sig, record)
        except ValueError:  # not the main thread
            break
    return previous


def _restore_signals(previous: dict[int, Any]) -> None:
    for sig, handler in previous.items():
        signal.signal(sig, handler)


def unified_diff(root: Path, plan: UpdatePlan, limit: int = 400) -> str:
    """The changes of ``plan`` to text files as one unified diff (``--dry-run``), at most ``limit`` lines
    per file; binary files are named only."""
    import difflib

    out: list[str] = []
    for a in plan.changed:
        old = _read(root / a.path) or b""
        new = a.data if a.data is not None and a.action != "remove" else b""
        try:
            lines = list(difflib.unified_diff(old.decode().splitlines(keepends=True),
                                              new.decode().splitlines(keepends=True), f"a/{a.path}", f"b/{a.path}"))
        except UnicodeDecodeError:
            out.append(f"Binary file {a.path} differs ({len(old):,} -> {len(new):,} B)\n")
            continue
        out += lines[:limit] + ([f"... ({len(lines) - limit} more lines)\n"] if len(lines) > limit else [])
    return "".join(out)


__all__ = ["ARMGEN_NEW_SUFFIX", "CONFLICT_MARKER", "MINE_SUFFIX", "FileAction", "UpdatePlan", "apply_plan", "causes",
           "describe_conflicts", "merge3", "plan_update", "unified_diff", "unresolved_conflicts"]
