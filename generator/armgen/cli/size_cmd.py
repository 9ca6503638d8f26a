"""`armgen size`: ELF sizes per region and component against budgets (exit 0 ok / 1 over / 2 error)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click
from rich.markup import escape
from rich.table import Table

from armgen.cli._console import err_console, out_console
from armgen.cli.group import main
from armgen.errors import SizeError
from armgen.firmware.size import (
    COMPONENT_LABELS,
    ElfSizeReport,
    SizeBudgets,
    SizeComparison,
    Violation,
    check_budgets,
    find_map,
    resolve_budgets,
    size_elf,
)
from armgen.firmware.size.budgets import check_growth
from armgen.firmware.size.compare import DEFAULT_TOP_SYMBOLS, check_same_target, compare_dicts
from armgen.firmware.size.growth import growth_dict
from armgen.firmware.size.project_facts import project_facts
from armgen.firmware.size.saved import BASELINE_FILE, is_elf, load_saved_report
from armgen.project.record import ProjectRecord, read_record


def _read_project(toml_path: Path) -> ProjectRecord:
    """The record at ``toml_path`` (``armgen size`` also reads hand-written ones: no key is required)."""
    return read_record(toml_path, error=SizeError, required=())


def _find_project_toml(elf: Path) -> Path | None:
    """armgen.toml of the project an ELF was built in.

    ``<project>/build/<name>.elf`` (the ELF's parent or grandparent), or any ancestor up to three levels
    whose armgen.toml names this ELF in its ``elf`` key (Zephyr: ``<project>/build/zephyr/zephyr.elf``).
    """
    parents = [elf.parent, elf.parent.parent, elf.parent.parent.parent]
    for d in parents:
        cand = d / "armgen.toml"
        if not cand.is_file():
            continue
        try:
            named = _read_project(cand).elf_path
        except SizeError:
            named = None
        if named is not None and named.resolve() == elf.resolve():
            return cand
    for d in parents[:2]:
        if (d / "armgen.toml").is_file():
            return d / "armgen.toml"
    return None


def _resolve_target(target: Path) -> tuple[Path, Path | None, ProjectRecord | None]:
    """(ELF, armgen.toml or None, project data) for an ELF or a project directory.

    A project's ELF is the one its armgen.toml's ``elf`` key names (``build/zephyr/zephyr.elf`` for
    Zephyr); records without that key: ``build/<name>.elf``, else the only ELF in ``build/``.

    Raises:
        SizeError: a directory without armgen.toml, a project not built yet, a path that does not exist.
    """
    if target.is_dir():
        toml_path = target / "armgen.toml"
        if not toml_path.is_file():
            raise SizeError(f"{target} is a directory without armgen.toml", hint="pass the ELF or a project directory")
        project = _read_project(toml_path)
        elf: Path | None = project.elf_path
        name = project.name
        if elf is None and isinstance(name, str) and name:
            elf = target / "build" / f"{name}.elf"
        if elf is not None:
            if not elf.is_file():
                raise SizeError(f"{elf}: no such file", hint=f"build the project first: armgen build {target}")
            return elf, toml_path, project
        elfs = sorted((target / "build").glob("*.elf"))
        if len(elfs) != 1:
            found = "none" if not elfs else ", ".join(e.name for e in elfs)
            raise SizeError(
                f"{toml_path} has no 'name' key and {target / 'build'} holds {found} ELF files",
                hint="pass the ELF explicitly: armgen size path/to/firmware.elf",
            )
        return elfs[0], toml_path, project
    if not target.exists() and target.suffix.lower() != ".elf":  # a mistyped project name, not an unbuilt ELF
        raise SizeError(f"{target}: no such file or directory",
                        hint="pass a project directory made by `armgen new`, or a firmware ELF")
    owner = _find_project_toml(target) if target.is_file() else None
    return target, owner, (_read_project(owner) if owner else None)


def _load_board(spec: str) -> Any:
    from armgen.boards import load_board  # lazy: the boards loader is optional for ELF-only use

    return load_board(spec)


def _add_row(t: Table, *cells: str, **kwargs: Any) -> None:
    """Add a row of plain text: names, paths and keys like ``[runtime_core]`` are not rich markup."""
    t.add_row(*(escape(c) for c in cells), **kwargs)


def _region_table(report: ElfSizeReport) -> Table:
    t = Table(title="memory regions" if report.regions_known else "memory (regions unknown: no board)")
    for col, just in (("region", "left"), ("kind", "left"), ("base", "right"), ("used", "right"),
                      ("usable", "right"), ("%", "right")):
        t.add_column(col, justify=just)  # type: ignore[arg-type]
    if report.regions_known:
        for r in report.regions:
            _add_row(t, r.name, r.kind, f"0x{r.base:08x}", f"{r.used:,}", f"{r.usable:,}", f"{r.percent:.1f}")
    _add_row(t, "flash total", "", "", f"{report.flash:,}", "", "", style="bold")
    _add_row(t, "RAM total", "", "", f"{report.ram:,}", "", "", style="bold")
    return t


def _section_table(report: ElfSizeReport) -> Table:
    t = Table(title="sections")
    for col in ("section", "type", "VMA", "LMA", "size", "flash", "RAM", "region"):
        t.add_column(col, justify="left" if col in ("section", "type", "region") else "right")
    for s in report.sections:
        where = ", ".join(
            (p.region or "-") + (" (image)" if p.what == "image" else "") for p in s.placements
        ) if report.regions_known else ""
        lma = f"0x{s.lma:08x}" if s.lma != s.vma else ""
        _add_row(t, s.name, s.type, f"0x{s.vma:08x}", lma, f"{s.size:,}", f"{s.flash:,}", f"{s.ram:,}", where)
    return t


def _component_table(report: ElfSizeReport) -> Table:
    t = Table(title=f"components (from {report.attribution})")
    for col in ("component", "flash", "RAM"):
        t.add_column(col, justify="left" if col == "component" else "right")
    for c in report.components:
        _add_row(t, COMPONENT_LABELS.get(c.name, c.name) + f" [{c.name}]", f"{c.flash:,}", f"{c.ram:,}")
    _add_row(t, "total", f"{report.flash:,}", f"{report.ram:,}", style="bold")
    return t


def _ram_table(report: ElfSizeReport) -> Table:
    t = Table(title="memory pools, stacks and heaps")
    for col in ("item", "bytes", "symbol", "section", "region"):
        t.add_column(col, justify="right" if col == "bytes" else "left")
    for p in report.pools:
        _add_row(t, f"pool {p.name}", f"{p.size:,}", f"armgen_pool_{p.name}", p.section, p.region or "-")
    for x in report.stacks:
        item = x.name if x.kind == "heap" else f"{x.name} stack"
        _add_row(t, item, f"{x.size:,}", x.symbol if x.symbol != x.section else "", x.section, x.region or "-")
    return t


def _cause_table(cmp: SizeComparison) -> Table:
    t = Table(title=f"causes (against {cmp.base or cmp.old_elf})")
    for col in ("cause", "flash", "RAM", "detail"):
        t.add_column(col, justify="right" if col in ("flash", "RAM") else "left")
    unexplained = cmp.unexplained
    for c in (*cmp.causes, *((unexplained,) if unexplained is not None else ())):
        _add_row(t, c.name, f"{c.flash:+,}", f"{c.ram:+,}", c.detail)
    _add_row(t, "total", f"{cmp.flash.delta:+,}", f"{cmp.ram.delta:+,}", "", style="bold")
    return t


def _compare_tables(cmp: SizeComparison) -> list[Table]:
    tables = [_cause_table(cmp)]
    for title, rows in (
        ("component deltas, flash", cmp.components_flash),
        ("component deltas, RAM", cmp.components_ram),
        ("section deltas", cmp.sections),
        ("region deltas", cmp.regions),
        (f"symbol deltas (top {cmp.top})", cmp.symbols),
    ):
        if not rows:
            continue
        t = Table(title=title)
        for col in ("name", "old", "new", "delta"):
            t.add_column(col, justify="left" if col == "name" else "right")
        for d in rows:
            _add_row(t, d.name, f"{d.old:,}", f"{d.new:,}", f"{d.delta:+,}")
        tables.append(t)
    return tables


def _print(table: Table) -> None:
    """Tables go to stdout; when it is not a terminal (CI logs, pipes) at their natural width, not elided
    (:class:`armgen.cli._console._UnwrappedWhenPiped`)."""
    out_console.print(table)


def _violation_dict(v: Violation) -> dict[str, Any]:
    return {"kind": v.kind, "name": v.name, "used": v.used, "limit": v.limit, "over": v.over, "message": v.message}


def _budgets_dict(b: SizeBudgets) -> dict[str, Any]:
    return {
        "growth": growth_dict(b.growth),
        "flash": b.flash,
        "ram": b.ram,
        "regions": dict(b.regions),
        "components": {
            k: {"total": v.total, "flash": v.flash, "ram": v.ram} for k, v in b.components.items()
        },
        "sources": dict(b.sources),
    }


def _record_map(project: ProjectRecord, elf: Path) -> Path | None:
    """The record's map, when the record names this ELF and the map exists."""
    record_elf, record_map = project.elf_path, project.map_path
    if record_elf is not None and record_map is not None and record_map.is_file() \
            and record_elf.resolve() == elf.resolve():
        return record_map
    return None


def _write_svg(elf: Path, report: Any) -> str | None:
    """Write ``<elf stem>.size.svg`` beside the ELF (only when it changed); its path, or None when it
    cannot be written (a warning, not an error)."""
    from armgen.firmware.size.plot import render_region_svg

    svg_path = elf.with_name(elf.stem + ".size.svg")
    svg = render_region_svg(report)
    try:
        if not svg_path.is_file() or svg_path.read_text() != svg:
            svg_path.write_text(svg)
        return str(svg_path)
    except OSError as exc:
        err_console.print(f"armgen: warning: cannot write {svg_path}: {exc.strerror}", highlight=False, markup=False)
        return None


def _size_target(target: Path, board_spec: str | None, map_file: Path | None
                 ) -> tuple[ElfSizeReport, Path | None, ProjectRecord | None, Any]:
    """(report, armgen.toml or None, project, board) of an ELF or a project directory."""
    elf, toml_path, project = _resolve_target(target)
    board_spec = board_spec if board_spec is not None else (project.board_spec if project is not None else None)
    board = _load_board(board_spec) if board_spec else None
    if map_file is None and project is not None:
        map_file = _record_map(project, elf)
    if map_file is not None and not map_file.is_file():
        raise SizeError(f"map file {map_file}: no such file")
    record_pools = [p.as_dict() for p in project.pools] if project is not None and project.pools else None
    facts = project_facts(project) if project is not None else None
    report = size_elf(elf, board, map_file if map_file is not None else find_map(elf), pools=record_pools,
                      project=facts)
    return report, toml_path, project, board


def _load_base(base: Path, board_spec: str | None, old_map: Path | None) -> dict[str, Any]:
    """The report dict of BASE: a saved report (JSON), an ELF, or a project directory."""
    if not base.exists():
        raise SizeError(f"{base}: no such file or directory", hint="--compare takes an ELF, a project "
                        "directory or a saved report (armgen size --json)")
    if base.is_file() and not is_elf(base):
        if old_map is not None:
            raise click.UsageError("--compare-map goes with an ELF base, not a saved report")
        return load_saved_report(base)
    report, _, _, _ = _size_target(base, board_spec, old_map)
    return report.to_dict()


def _base_label(base: Path) -> str:
    """What BASE is, for the report: ``project P``, ``ELF E`` or ``report R``."""
    if base.is_dir():
        return f"project {base}"
    return f"ELF {base}" if is_elf(base) else f"report {base}"


def _render(doc: dict[str, Any], fmt: str, report: ElfSizeReport, comparison: SizeComparison | None) -> str | None:
    """The document in ``fmt`` (None for text, which prints tables itself)."""
    if fmt == "json":
        return json.dumps(doc, indent=2, sort_keys=True) + "\n"
    if fmt == "markdown":
        from armgen.firmware.size.markdown import render_markdown

        return render_markdown(doc)
    if fmt == "html":
        from armgen.firmware.size.html_report import render_html

        return render_html(doc)
    return None


def _print_text(doc: dict[str, Any], report: ElfSizeReport, comparison: SizeComparison | None,
                svg_written: str | None) -> None:
    for note in report.notes:
        err_console.print(f"note: {note}", highlight=False, soft_wrap=True, markup=False)
    _print(_region_table(report))
    _print(_section_table(report))
    _print(_component_table(report))
    if report.pools or report.stacks:
        _print(_ram_table(report))
    if comparison is not None:
        out_console.print(
            f"compared with {comparison.old_elf}: flash {comparison.flash.delta:+,} B, "
            f"RAM {comparison.ram.delta:+,} B",
            markup=False,
        )
        for note in comparison.notes:
            err_console.print(f"note: {note}", highlight=False, soft_wrap=True, markup=False)
        for t in _compare_tables(comparison):
            _print(t)
    growth = doc.get("growth") or {}
    if growth.get("skipped"):
        err_console.print(f"note: growth check skipped: {growth['skipped']}", highlight=False, markup=False)
    if svg_written:
        err_console.print(f"wrote {svg_written}", highlight=False, markup=False)


def _within_line(report: ElfSizeReport, budgets: SizeBudgets, growth_checked: bool) -> str:
    """The verdict line of an image without violations, the counterpart of the over-budget lines:
    ``within budget: flash 430,232 of 524,288 B (82.1 %), RAM ...``, the other limits met counted;
    ``no budget checked: ...`` when there was nothing to check (no board, no [budgets])."""
    parts = []
    for name, used, limit in (("flash", report.flash, budgets.flash), ("RAM", report.ram, budgets.ram)):
        if limit is None:
            parts.append(f"{name} {used:,} B (no budget)")
        else:
            share = f" ({100 * used / limit:.1f} %)" if limit else ""
            parts.append(f"{name} {used:,} of {limit:,} B{share}")
    others = [f"{n} {what} budget{'s' if n > 1 else ''}"
              for what, n in (("region", len(budgets.regions)), ("component", len(budgets.components))) if n]
    if budgets.flash is None and budgets.ram is None and not others and not growth_checked:
        return "no budget checked: " + ", ".join(parts)
    line = "within budget: " + ", ".join(parts)
    if others:
        line += f"; {' and '.join(others)} met"
    if growth_checked:
        line += "; growth over the baseline within [budgets.growth]"
    return line


def _write_atomic(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file beside it (no half-written file on failure)."""
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise SizeError(f"cannot write {path}: {exc.strerror}") from None


@main.command("size")
@click.argument("target", required=False, default=".", type=click.Path(path_type=Path))
@click.option("--budget", "budget_file", type=click.Path(path_type=Path),
              help="TOML file with a [budgets] table (and [budgets.growth]); wins over armgen.toml and the board.")
@click.option("--format", "fmt", type=click.Choice(["text", "json", "markdown", "html"]), default=None,
              help="Report format on stdout (or --output): text tables (default), JSON (sorted keys; "
              "size_report.schema.json), Markdown (a PR comment or job summary), HTML (one self-contained page).")
@click.option("--json", "as_json", is_flag=True, help="Same as --format json.")
@click.option("--output", "-o", "output", type=click.Path(path_type=Path),
              help="Write the report (--format) to this file instead of stdout.")
@click.option("--compare", "base", type=click.Path(path_type=Path),
              help="Base to compare with: an ELF, a project directory or a saved report (armgen size --json). "
              "Default: the project's size baseline, when it has one.")
@click.option("--compare-map", "old_map", type=click.Path(path_type=Path),
              help="GNU ld map of the base ELF (default: <elf>.map next to it). Without one on either side, "
              "components are not compared (a note says so).")
@click.option("--top", "top", type=click.IntRange(min=0), default=DEFAULT_TOP_SYMBOLS, show_default=True,
              help="Symbols listed in the comparison (largest change first).")
@click.option("--allow-different-board", is_flag=True,
              help="Compare images of different boards, RTOSes or Zephyr releases.")
@click.option("--baseline", "baseline", type=click.Path(path_type=Path),
              help=f"Saved report the growth budgets are checked against (default: the project's {BASELINE_FILE}).")
@click.option("--write-baseline", "write_baseline", is_flag=False, flag_value="", default=None,
              metavar="[FILE]", help=f"Record this report as the baseline (default: {BASELINE_FILE} in the project).")
@click.option("--board", "board_spec", help="Board name or board YAML path (default: armgen.toml's board).")
@click.option("--map", "map_file", type=click.Path(path_type=Path),
              help="GNU ld map file of the link (default: armgen.toml's map, else <elf>.map next to the ELF).")
def size_command(target: Path, budget_file: Path | None, fmt: str | None, as_json: bool, output: Path | None,
                 base: Path | None, old_map: Path | None, top: int, allow_different_board: bool,
                 baseline: Path | None, write_baseline: str | None, board_spec: str | None,
                 map_file: Path | None) -> None:
    """Size an ELF (or the ELF a project's armgen.toml names) per memory region and component.

    Exit 0 within budget, 1 over budget or grown over the baseline by more than [budgets.growth]
    allows (each named, with bytes and causes), 2 on error. Writes <elf stem>.size.svg next to the ELF.
    """
    if as_json and fmt not in (None, "json"):
        raise click.UsageError("--json is --format json; give one of them")
    fmt = "json" if as_json else (fmt or "text")
    if old_map is not None and base is None:
        raise click.UsageError("--compare-map needs --compare BASE")
    report, toml_path, project, board = _size_target(target, board_spec, map_file)
    project_budgets = project.budgets if project is not None else None
    budgets = resolve_budgets(board, project_budgets, str(toml_path) if toml_path else "armgen.toml", budget_file)
    new = report.to_dict()
    root = toml_path.parent if toml_path is not None else None
    baseline_path = baseline if baseline is not None else (root / BASELINE_FILE if root is not None else None)
    if baseline is not None and not baseline.is_file():
        raise SizeError(f"baseline {baseline}: no such file", hint="write one: armgen size --write-baseline")
    base_doc = _load_base(base, board_spec, old_map) if base is not None else None
    baseline_doc = load_saved_report(baseline_path) if baseline_path is not None and baseline_path.is_file() else None
    for other in (base_doc, baseline_doc):
        if other is not None and not allow_different_board:
            check_same_target(other, new)
    violations = check_budgets(report, budgets)
    growth: dict[str, Any] = {"baseline": str(baseline_path) if baseline_doc is not None else None, "skipped": None}
    if baseline_doc is not None:
        violations += check_growth(baseline_doc, new, budgets)
    elif budgets.growth:
        growth["skipped"] = (f"no baseline ({baseline_path or 'no project'}); "
                             "write one with armgen size --write-baseline")
    compare_with = base_doc if base_doc is not None else baseline_doc
    label = (_base_label(base) if base is not None else f"the baseline {baseline_path}")
    comparison = compare_dicts(compare_with, new, top, label) if compare_with is not None else None
    svg_written = _write_svg(Path(report.elf), report)
    doc: dict[str, Any] = {
        "report": new,
        "budgets": _budgets_dict(budgets),
        "violations": [_violation_dict(v) for v in violations],
        "within_budget": not violations,
        "svg": svg_written,
        "growth": growth,
    }
    if comparison is not None:
        doc["compare"] = comparison.to_dict()
    if write_baseline is not None:
        dest = Path(write_baseline) if write_baseline else baseline_path
        if dest is None:
            raise SizeError("--write-baseline needs a FILE outside a project")
        if dest.is_dir():
            raise SizeError(f"--write-baseline {dest}: is a directory, not a file",
                            hint="give the project first: armgen size PROJECT --write-baseline [FILE]")
        _write_atomic(dest, json.dumps(doc, indent=2, sort_keys=True) + "\n")
        err_console.print(f"wrote baseline {dest}", highlight=False, markup=False)
    text = _render(doc, fmt, report, comparison)
    if text is None:
        _print_text(doc, report, comparison, svg_written)
    elif output is not None:
        _write_atomic(output, text)
    else:
        click.echo(text, nl=False)
    for v in violations:
        label = {"placement": "misplaced", "growth": "grew over the baseline"}.get(v.kind, "over budget")
        err_console.print(f"armgen: {label}: {v.message}", highlight=False, soft_wrap=True, markup=False)
    if violations:
        raise click.exceptions.Exit(1)
    growth_checked = baseline_doc is not None and bool(budgets.growth)
    err_console.print(f"armgen: {_within_line(report, budgets, growth_checked)}", highlight=False, soft_wrap=True,
                      markup=False)
