"""`armgen workspace init|status`: the west workspace of pinned upstream sources.

Progress goes to stderr; the status table (or ``--json``) to stdout. Errors are WorkspaceError (exit 2);
``status`` exits 1 when the workspace is incomplete.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import click
from rich.table import Table

from armgen.cli._console import err_console, out_console
from armgen.cli.group import main
from armgen.workspace import (
    INIT_HINT,
    default_release,
    init_workspace,
    manifest_pins,
    parse_revision_overrides,
    validate_mirror_template,
    workspace_status,
    zephyr_init_dir,
)


def _size(n: int) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} B"


@main.group("workspace")
def workspace() -> None:
    """Pinned upstream sources (ExecuTorch, CMSIS-NN, CMSIS_6, Ethos-U driver, optional Zephyr) in a west
    workspace, from modules/west.yml. Default location: $ARMGEN_WORKSPACE, else
    ~/.local/share/armgen/workspace; a Zephyr workspace: $ARMGEN_WORKSPACE_ZEPHYR_<R> (R = 4_4, 4_1, 3_7),
    else $ARMGEN_WORKSPACE, else ~/.local/share/armgen/workspace-zephyr-<R> (the default workspace when it
    already holds that release)."""


@workspace.command("init")
@click.argument("directory", required=False, type=click.Path(file_okay=False, path_type=Path))
@click.option(
    "--mirror",
    metavar="TEMPLATE",
    help="URL template for every project, with {owner} and {name} "
    "(e.g. 'file:///srv/mirrors/{owner}+{name}/repo'); recorded and reused by later inits.",
)
@click.option(
    "--revision",
    "revisions",
    multiple=True,
    metavar="PROJECT=REV",
    help="Override a pinned revision with a tag, branch or full commit (repeatable), "
    "e.g. executorch=main for mirrors without release tags.",
)
@click.option(
    "--url",
    "urls",
    multiple=True,
    metavar="PROJECT=URL",
    help="Fetch one project from a URL of its own (repeatable), e.g. zephyr=file:///srv/m/zvm.git for a "
    "mirror under another name; wins over --mirror for that project.",
)
@click.option(
    "--zephyr/--no-zephyr",
    default=None,
    help="Also fetch Zephyr and the modules its boards need (over 1 GB for 4.4). Default: as the workspace "
    "has it (off).",
)
@click.option(
    "--zephyr-release",
    default=None,
    metavar="RELEASE",
    help="With --zephyr: 4.4 (default), 4.1 or 3.7 (modules/zephyr/releases.yaml). One release per workspace.",
)
@click.option(
    "--benchmarks/--no-benchmarks",
    default=None,
    help="Also fetch TFLite Micro, gemmlowp, ruy, kissfft (the TFLM comparison). Default: as before (off).",
)
def init_cmd(
    directory: Path | None,
    mirror: str | None,
    revisions: tuple[str, ...],
    urls: tuple[str, ...],
    zephyr: bool | None,
    zephyr_release: str | None,
    benchmarks: bool | None,
) -> None:
    """Create the workspace at DIRECTORY (or the default), or bring it up to the pins."""
    if mirror is not None:
        validate_mirror_template(mirror)
    pins = manifest_pins(zephyr_release or default_release())
    overrides = parse_revision_overrides(revisions, pins)
    url_overrides = parse_revision_overrides(urls, pins, option="--url")
    start = time.monotonic()
    if directory is None and zephyr:  # a Zephyr workspace per release (armgen.workspace.zephyr_init_dir)
        directory = zephyr_init_dir(zephyr_release or default_release())
    result = init_workspace(
        directory,
        mirror=mirror,
        revisions=overrides,
        zephyr=zephyr,
        zephyr_release=zephyr_release,
        urls=url_overrides,
        benchmarks=benchmarks,
        progress=lambda msg: err_console.print(msg, highlight=False, soft_wrap=True),
    )
    root = result.workspace.root
    if result.already_complete:
        err_console.print(f"workspace at {root} is complete and at the pins; nothing to do")
        return
    for name, action in result.actions.items():
        err_console.print(f"  {action:10} {name}", highlight=False)
    err_console.print(f"workspace ready at {root} ({time.monotonic() - start:.1f} s)")


@workspace.command("status")
@click.argument("directory", required=False, type=click.Path(file_okay=False, path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print the status as JSON.")
@click.pass_context
def status_cmd(ctx: click.Context, directory: Path | None, as_json: bool) -> None:
    """Show what is present, at which revision, its size, and what is missing (exit 1 when incomplete)."""
    st = workspace_status(directory)
    if not as_json and not (st.exists and st.is_west_workspace):
        err_console.print(f"armgen: no armgen workspace at {st.root}", highlight=False, soft_wrap=True)
        err_console.print(f"hint: {INIT_HINT}", highlight=False, soft_wrap=True)
        ctx.exit(1)
    if as_json:
        out_console.print_json(json.dumps(st.to_dict()))
    else:
        table = Table(title=f"armgen workspace {st.root}", title_justify="left")
        for col in ("project", "path", "revision", "commit", "size", "state"):
            table.add_column(col, justify="right" if col == "size" else "left", overflow="fold")
        for p in st.projects:
            if not p.active:
                state = "stub (not needed for bare metal)" if p.stub else "inactive"
            elif p.missing:
                state = "[red]" + "; ".join(p.missing) + "[/]"
            else:
                state = "[green]ok[/]"
            rev = p.revision or "-"
            if len(rev) == 40 and all(c in "0123456789abcdef" for c in rev):
                rev = rev[:12]
            table.add_row(
                p.name,
                p.path,
                rev,
                p.commit[:12] if p.commit else "-",
                _size(p.size_bytes) if p.size_bytes else "-",
                state,
            )
        out_console.print(table)
        total = sum(p.size_bytes for p in st.projects)
        extra = []
        if st.mirror:
            extra.append(f"mirror {st.mirror}")
        if st.executorch_version:
            pip_v = st.pip_executorch_version
            differs = pip_v and pip_v.split("+")[0] != st.executorch_version
            extra.append(
                f"ExecuTorch {st.executorch_version}"
                + (f" ([yellow]pip executorch is {pip_v}[/]: programs load while the identifier matches)"
                   if differs else "")
            )
        if st.program_file_identifier:
            extra.append(f"program identifier {st.program_file_identifier}")
        out_console.print(f"total {_size(total)}" + (", " + ", ".join(extra) if extra else ""))
        for name, module, state, saves in st.patches:  # armgen's patches (modules/patches/patches.yml)
            color = "green" if state == "applied" else "yellow"
            out_console.print(f"patch {module}/{name}: [{color}]{state}[/] ({saves})", soft_wrap=True,
                              highlight=False)
        for problem in st.problems:
            out_console.print(f"[red]{problem}[/]", soft_wrap=True)
    if not st.complete:
        if not as_json:
            err_console.print(
                "armgen: workspace incomplete; hint: run: armgen workspace init"
                + (f" {st.root}" if directory else "")
                + (f" --mirror '{st.mirror}'" if st.mirror else " --mirror '<template>'"),
                highlight=False,
                soft_wrap=True,
            )
        ctx.exit(1)
