"""`armgen build [PROJECT]`: cross-compile a generated project into build/<name>.elf (+ .map)."""

from __future__ import annotations

from pathlib import Path

import click
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from armgen.cli._console import err_console, out_console
from armgen.cli.group import main


@main.command("build")
@click.argument("project", required=False, type=click.Path(file_okay=False, path_type=Path), default=Path("."))
@click.option("--workspace", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="armgen workspace (default: $ARMGEN_WORKSPACE or ~/.local/share/armgen/workspace).")
@click.option("--rebuild", is_flag=True, help="Delete build/ first (a clean build).")
@click.option("-j", "--jobs", type=click.IntRange(1, 64), default=2, show_default=True, help="Parallel compile jobs.")
@click.pass_context
def build_cmd(ctx: click.Context, project: Path, workspace: Path | None, rebuild: bool, jobs: int) -> None:
    """Configure (first time) and build PROJECT (default: the current directory).

    Exit status: 0 built and within budget, 1 built but over budget, 2 error.
    """
    from armgen.cli.update_cmd import say_if_stale
    from armgen.firmware.build import build_project

    say_if_stale(project)

    if err_console.is_terminal:
        with Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=err_console,
            transient=True,
        ) as bar:
            task = bar.add_task("configure", total=None)

            def progress(phase: str, done: int, total: int, detail: str) -> None:
                if phase == "compile":
                    bar.update(task, description=f"compile {done}/{total}", completed=done, total=total)
                else:
                    bar.update(task, description=phase, completed=done, total=total or None)

            result = build_project(project, workspace=workspace, jobs=jobs, progress=progress, rebuild=rebuild)
    else:
        seen: set[str] = set()

        def progress(phase: str, done: int, total: int, detail: str) -> None:
            # Plain lines for logs: each phase once, compile every 10 %.
            if phase == "compile" and total:
                key = f"compile {min(10, done * 10 // total)}"
                line = f"compile {done}/{total}"
            else:
                key = line = phase
            if key not in seen:
                seen.add(key)
                err_console.print(line, highlight=False)

        result = build_project(project, workspace=workspace, jobs=jobs, progress=progress, rebuild=rebuild)

    for w in result.warnings:
        err_console.print(f"warning: {w}", highlight=False, soft_wrap=True)
    err_console.print(
        f"built {result.elf} in {result.seconds:.1f} s ({result.compiled} files compiled); map: {result.map}",
        highlight=False, soft_wrap=True,
    )
    if result.stack is not None:
        err_console.print(result.stack.describe(), highlight=False, soft_wrap=True)
    if result.size is not None:
        _print_size(result)
    if result.violations:
        for v in result.violations:
            err_console.print(f"over budget: {getattr(v, 'message', v)}", highlight=False, soft_wrap=True)
        ctx.exit(1)


def _print_size(result) -> None:
    rep = result.size
    t = Table(title=f"{result.project.name}: memory use (bytes)", title_justify="left")
    t.add_column("")
    t.add_column("used", justify="right")
    t.add_column("budget", justify="right")
    budgets = result.budgets  # the board's, then armgen.toml [budgets]
    t.add_row("flash", f"{rep.flash:,}", _fmt(getattr(budgets, "flash", None)))
    t.add_row("ram", f"{rep.ram:,}", _fmt(getattr(budgets, "ram", None)))
    out_console.print(t)


def _fmt(v) -> str:
    return f"{v:,}" if isinstance(v, int) else (str(v) if v is not None else "-")
