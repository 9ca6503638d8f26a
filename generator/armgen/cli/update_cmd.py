"""`armgen update [PROJECT]`: take a retrained model, new weights or a newer armgen into a project
without losing the team's edits (:mod:`armgen.project.update`)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click
from rich.markup import escape
from rich.table import Table

from armgen.cli._console import err_console, out_console, print_table
from armgen.cli.group import main, offline_option
from armgen.cli.new_cmd import _StackSize
from armgen.project.record import ProjectRecord
from armgen.project.update import UpdatePlan, describe_conflicts
from armgen.workspace import OTHER_RELEASE_ENV

#: How each action reads in the plan's table.
_SAYS = {
    "add": "add", "replace": "replace (armgen's, untouched)", "same": "unchanged", "keep": "keep (yours)",
    "merge": "merge (yours + armgen's)", "conflict": "CONFLICT", "restore": "restore (you deleted it)",
    "deleted": "stays deleted (yours)", "remove": "remove (no longer generated)",
}


def _release_list() -> str:
    from armgen.workspace import zephyr_releases

    names = [name for name, _ in zephyr_releases()]
    return ", ".join(names[:-1]) + f" or {names[-1]}" if len(names) > 1 else "".join(names)


_RELEASES = _release_list()


def _say(text: str) -> None:
    err_console.print(text, highlight=False, markup=False, soft_wrap=True)


@main.command("update")
@click.argument("project", required=False, type=click.Path(file_okay=False, path_type=Path))
@click.option("--model", default=None, help="A new model source (.py / .py:attr / .pt2 / .pte); default: the "
                                            "record's, compiled again.")
@click.option("--weights", default=None,
              help="Trained .tflite for a built-in sample (float; int8 for sww); default: the record's.")
@click.option("--calibration", default=None, metavar="PATH",
              help="Representative inputs for int8 calibration; default: the record's.")
@click.option("--stack-size", type=_StackSize(), default=None, metavar="BYTES|auto",
              help="Main stack in bytes or 'auto'; default: the record's.")
@click.option("--board", "board_name", default=None,
              help="Another board (name, alias or .yaml; its default backend unless --backend); default: the record's.")
@click.option("--rtos", type=click.Choice(["zephyr", "baremetal"]), default=None, help="Default: the record's.")
@click.option("--zephyr-release", default=None, metavar="RELEASE",
              help=f"Zephyr release: {_RELEASES} (modules/zephyr/releases.yaml); default: the record's.")
@click.option("--backend", type=click.Choice(["cortex-m", "ethos-u"]), default=None, help="Default: the record's.")
@click.option("--standin", "standin_choice", type=click.Choice(["auto", "baremetal"]), default=None,
              help="The stand-in `armgen run` uses (as for `armgen new`); default: the record's run plan.")
@click.option("--dry-run", is_flag=True, help="Print the plan and the diff; write nothing.")
@offline_option()
def update_cmd(project: Path | None, model: str | None, weights: str | None, calibration: str | None,
               stack_size: int | str | None, board_name: str | None, rtos: str | None, zephyr_release: str | None,
               backend: str | None, standin_choice: str | None, dry_run: bool, offline: bool) -> None:
    """Re-render PROJECT (default: .) from its record plus the changes given, and keep your edits.

    Per file: armgen's untouched files are replaced; your edits are kept; where both changed, your
    file is merged three ways (git merge-file) and a conflict gets markers, your version saved beside
    it as <file>.mine and exit status 1. In place, file by file: an error or Ctrl-C before the files are
    put in place leaves the project as it was; a new board, RTOS or CPU removes build/.
    """
    from armgen.errors import ModelError, ProjectError
    from armgen.model.pretrained import offline_mode
    from armgen.pipeline import UNTRAINED_WEIGHTS, new_project
    from armgen.project.record import load_project
    from armgen.project.update import apply_plan, plan_update, unified_diff, unresolved_conflicts

    record = load_project(project, hint="pass the directory of a project `armgen new` made")
    root = record.root
    unresolved = unresolved_conflicts(root, record)
    if unresolved:
        raise ProjectError(f"{', '.join(unresolved)} still hold{'s' if len(unresolved) == 1 else ''} the conflict "
                           "markers of the last update", hint="resolve them (and delete the .mine copies), then update")
    source = record.model.source if record.model else ""
    if model is None and source.startswith("sample:"):
        model = source.removeprefix("sample:")  # the sample, whatever the project's name
    elif model is None and source and not source.startswith("sample:"):
        if source.lower().endswith(".pte"):
            raise ProjectError("the project was made from a compiled .pte: pass --model with the new program or source")
        if not record.resolve(source).exists():
            raise ModelError(f"the model source the record names is gone: {source}", hint="pass --model FILE")
        model = str(record.resolve(source))
    if weights is None and record.model is not None and record.model.weights not in (None, UNTRAINED_WEIGHTS):
        weights = str(record.resolve(record.model.weights))
    if calibration is None and record.model is not None and record.model.calibration:
        calibration = str(record.resolve(record.model.calibration))
    if stack_size is None:
        stack_size = record.memory.get("stack")
    frontend = str(record.frontend.get("kind")) if record.frontend else None
    stream = int(record.frontend.get("infer_every", 1)) if record.frontend and record.frontend.get("stream") else None
    if standin_choice is None:  # a Zephyr project run in a bare-metal stand-in stays so
        run = record.run
        standin_choice = "baremetal" if run is not None and run.standin and run.firmware == "baremetal" else "auto"

    with offline_mode(offline):
        made = new_project(
            str(record.name), board_name or str(record.board_spec), model=model, weights=weights,
            calibration=calibration, rtos=rtos or record.rtos,
            backend=backend or (None if board_name else record.backend),
            zephyr_release=zephyr_release or (record.zephyr_release if (rtos or record.rtos) == "zephyr" else None),
            out_dir=root.parent, project_dir=root,
            stack_size=stack_size, force=False, say=_say, frontend=frontend, render_only=True, stream=stream,
            zephyr_development_tree=os.environ.get(OTHER_RELEASE_ENV) == "1", standin_choice=standin_choice,
        )
    _check_weights_kept(record, made.spec.report, offline)
    plan = plan_update(root, record, made.rendered.files, old_render=_old_render(record))
    for note in plan.notes:
        _say(f"note: {note}")
    _say("causes: " + ("; ".join(plan.causes) if plan.causes else "none (the new render equals the old)"))
    table = Table(title=f"armgen update {root}" + (" (dry run: nothing written)" if dry_run else ""),
                  title_justify="left")
    for col in ("file", "owner", "action", "why armgen's version changed"):
        table.add_column(col)
    for a in plan.changed + [a for a in plan.actions if a.action == "keep" and a.owner == "user"]:
        beside = f" -> {a.beside[0]}" if a.beside else ""
        table.add_row(escape(a.path), "you" if a.owner == "user" else "armgen", escape(_SAYS[a.action] + beside),
                      escape("; ".join(a.causes)))
    print_table(table)
    for a in plan.actions:
        if a.action == "deleted" and a.path in ("src/main.cpp", "app.cmake"):
            _say(f"warning: {a.path} is deleted and stays so, but the generated CMakeLists.txt includes it: "
                 "the build needs a file there")
    if plan.new_target and (root / "build").is_dir():
        _say("note: the board, RTOS, backend or CPU changed: build/ was configured for the old one and is removed")
    if dry_run:
        out_console.print(unified_diff(root, plan), markup=False, highlight=False, soft_wrap=True, end="")
        if plan.conflicts:
            raise click.exceptions.Exit(_conflict_exit(plan, would=True))
        return
    held = apply_plan(root, plan, drop_build=plan.new_target)
    unchanged = sum(a.action in ("same", "keep") for a in plan.actions)
    _say(f"updated {root}: {len(plan.changed)} files changed, {unchanged} unchanged or yours")
    if held:
        _say(f"note: {held[0]} came while the files were being put in place: held back, the update is complete")
    if plan.conflicts:
        raise click.exceptions.Exit(_conflict_exit(plan))
    _say(f"next: armgen build {root}")


def _old_render(record: ProjectRecord) -> Callable[[], dict[str, bytes] | None]:
    """armgen's last render of the project made again, for :func:`armgen.project.update.plan_update` (the base
    of a merge of armgen's own files): the record's board and options with the committed program
    (``model/<name>.pte`` and its report: no compile), rendered by this armgen. None when it cannot be
    rendered (a program or board gone, a project with an audio front end, which only its source declares)."""

    def render() -> dict[str, bytes] | None:
        from armgen.errors import ArmgenError
        from armgen.pipeline import new_project

        if record.frontend:
            return None
        try:
            made = new_project(
                str(record.name), str(record.board_spec), model=str(record.model_path("pte")), weights=None,
                calibration=None, rtos=record.rtos, backend=record.backend,
                zephyr_release=record.zephyr_release if record.rtos == "zephyr" else None,
                out_dir=record.root.parent, project_dir=record.root, stack_size=record.memory.get("stack"),
                force=False, say=lambda _line: None, render_only=True,
                zephyr_development_tree=os.environ.get(OTHER_RELEASE_ENV) == "1",
            )
        except ArmgenError:
            return None
        return dict(made.rendered.files)

    return render


def _conflict_exit(plan: UpdatePlan, would: bool = False) -> int:
    """Say which files conflict and where each version is (one line); return the exit status of a conflict (1)."""
    err_console.print(f"[bold red]armgen: {'would conflict' if would else 'conflict'}:[/] "
                      f"{escape(describe_conflicts(plan))}; resolve, delete the copies, then build",
                      highlight=False, soft_wrap=True)
    return 1


def say_if_stale(project: Path | None) -> None:
    """``armgen build``/``armgen run``: one line when PROJECT's model source, weights or armgen changed since
    it was written (:func:`armgen.project.staleness.stale_line`); silent when it did not or PROJECT is no
    project (the command then says that itself)."""
    from armgen import __version__
    from armgen.errors import ArmgenError
    from armgen.project.record import RECORD_FILE, read_record
    from armgen.project.staleness import stale_line

    root = Path(project or ".").expanduser()
    if not (root / RECORD_FILE).is_file():
        return
    try:
        line = stale_line(read_record(root / RECORD_FILE, required=()), __version__)
    except ArmgenError:
        return
    if line:
        _say(line)


def _check_weights_kept(record: Any, new_report: Any, offline: bool) -> None:
    """A program made with trained weights is not replaced by one with the fixed-seed weights (no trained file
    was found this time: $ARMGEN_MLPERF_DIR unset, no cache, no network) unless ``--offline`` says so.

    Raises:
        ModelError: the new program's weights are untrained and the committed one's were not.
    """
    from armgen.errors import ModelError
    from armgen.model.program_report import ProgramReport

    if not new_report.untrained_weights or offline:
        return
    try:
        old = ProgramReport.load(record.model_path("report"))
    except (OSError, ValueError, KeyError, TypeError):
        return
    if not old.untrained_weights:
        raise ModelError("the project's program has trained weights, and this update found none: it would commit "
                         "a program with meaningless fixed-seed weights",
                         hint="set ARMGEN_MLPERF_DIR or pass --weights FILE (or --offline to take the fixed-seed "
                              "weights on purpose)")
