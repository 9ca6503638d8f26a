"""`armgen compile` (model -> .pte + report) and `armgen inspect` (.pte -> report)."""

from __future__ import annotations

from pathlib import Path

import click
from rich.table import Table

from armgen.cli._console import err_console, out_console, print_table
from armgen.cli.group import main, offline_option
from armgen.model.program_report import ProgramReport


def _delegates_table(report: ProgramReport) -> Table:
    """One column per delegate: backend, blob size and, for Vela blobs, Vela's sizes and estimates."""
    dels = Table(title="delegates", title_justify="left")
    dels.add_column("field")
    for i, _ in enumerate(report.delegates):
        dels.add_column(f"delegate {i}", justify="right")
    rows: list[tuple[str, list[str]]] = [
        ("backend_id", [d.backend_id for d in report.delegates]),
        ("blob_size", [f"{d.blob_size} B" for d in report.delegates]),
    ]
    if any(d.vela for d in report.delegates):
        def vela_row(label: str, fmt) -> tuple[str, list[str]]:
            return label, ["" if d.vela is None else fmt(d.vela) for d in report.delegates]

        def opt(v, unit: str = "") -> str:
            return "" if v is None else f"{v}{unit}"

        rows += [
            vela_row("accelerator_config", lambda v: v.accelerator_config),
            vela_row("system_config", lambda v: v.system_config),
            vela_row("memory_mode", lambda v: v.memory_mode),
            vela_row("scratch_size", lambda v: f"{v.scratch_size} B"),
            vela_row("fast_scratch_size", lambda v: f"{v.fast_scratch_size} B"),
            vela_row("command_stream_size", lambda v: f"{v.command_stream_size} B"),
            vela_row("weights_size", lambda v: f"{v.weights_size} B"),
            vela_row("cycles (Vela estimate)", lambda v: opt(v.cycles)),
            vela_row("sram_bytes (Vela estimate)", lambda v: opt(v.sram_bytes, " B")),
            vela_row("flash_bytes (Vela estimate)", lambda v: opt(v.flash_bytes, " B")),
        ]
    for label, vals in rows:
        dels.add_row(label, *vals)
    return dels


#: What each kernel library means on the device (the placement table's "runs as" column).
LIBRARY_MEANING = {
    "cortex_m": "CMSIS-NN int8", "quantized": "quantized (int8)", "portable": "portable",
    "prim": "runtime", "delegate": "NPU (Ethos-U)",
}


#: cortex_m ops that convert between float and int8 at the program's edges (ExecuTorch's
#: backends/cortex_m/ops/op_quantize_per_tensor.cpp and op_dequantize_per_tensor.cpp at cff6f4dd32:
#: C++ loops, MVE-vectorised, no CMSIS-NN call), so the table does not say "CMSIS-NN int8" beside their float32 dtype.
CORTEX_M_CONVERSIONS = frozenset({"cortex_m::quantize_per_tensor", "cortex_m::dequantize_per_tensor"})


def placement_table(report: ProgramReport) -> Table:
    """Where each call of the program runs: layer, op, kernel library, dtype, MACs and their share; for an
    Ethos-U program also why a call stayed on the CPU (the partitioner's reason) and each delegate's
    NPU cycles (Vela's estimate, :func:`npu_layer_tables` has them per layer)."""
    total = sum(r.macs for r in report.placement) or 1
    why = any(r.reason for r in report.placement)
    vela = [d.vela for d in report.delegates]
    tab = Table(title="placement (execution order)", title_justify="left")
    cols = ["#", "layer", "op", "runs as", "dtype", "MACs", "share"] + (["NPU cycles"] if any(vela) else []) + (
        ["why on the CPU (Ethos-U partitioner)"] if why else [])
    for col in cols:
        tab.add_column(col, justify="right" if col in ("#", "MACs", "share", "NPU cycles") else "left")
    delegate = 0
    for r in report.placement:
        runs = LIBRARY_MEANING.get(r.library, r.library)
        if r.library == "portable" and r.dtype.startswith("float"):
            runs = "portable FLOAT"
        elif r.library == "cortex_m" and r.op in CORTEX_M_CONVERSIONS:
            runs = "int8 <-> float"  # ExecuTorch's cortex_m (de)quantize kernels, not CMSIS-NN
        row = [str(r.index), r.layer or "-", r.op, runs, r.dtype or "-", f"{r.macs:,}" if r.macs else "-",
               f"{r.macs / total:.1%}" if r.macs else "-"]
        if any(vela):
            v = vela[delegate] if r.library == "delegate" and delegate < len(vela) else None
            row.append(f"{v.layer_cycles:,} (delegate {delegate})" if v is not None and v.layers else "-")
            delegate += r.library == "delegate"
        if why:
            row.append(r.reason or "-")
        tab.add_row(*row)
    return tab


def npu_layer_tables(report: ProgramReport) -> list[Table]:
    """Vela's per-layer estimate of every delegate: NPU op, cycles, MACs and the bytes each layer reads
    from each memory area, with the delegate's total; the title names the Vela configuration."""
    tables = []
    for i, d in enumerate(report.delegates):
        v = d.vela
        if v is None or not v.layers:
            continue
        areas = [a for a in dict.fromkeys(k for x in v.layers for k in x.read_bytes)
                 if any(x.read_bytes.get(a) for x in v.layers)]
        tab = Table(title=f"NPU layers of delegate {i} (Vela's estimate for {v.accelerator_config}, system config "
                          f"{v.system_config}, memory mode {v.memory_mode}, {v.config_file})", title_justify="left")
        for col in ["#", "TOSA op", "from", "NPU op", "cycles", "MACs", *(f"read {a} (B)" for a in areas)]:
            tab.add_column(col, justify="left" if col in ("TOSA op", "from", "NPU op") else "right")
        for j, x in enumerate(v.layers):
            tab.add_row(str(j), x.name, x.original_op, x.npu_op, f"{x.cycles:,}", f"{x.macs:,}",
                        *(f"{x.read_bytes.get(a, 0):,}" for a in areas))
        tab.add_row("", "total", "", "", f"{v.layer_cycles:,}", f"{sum(x.macs for x in v.layers):,}",
                    *(f"{sum(x.read_bytes.get(a, 0) for x in v.layers):,}" for a in areas))
        tables.append(tab)
    return tables


def npu_total_line(report: ProgramReport, board_name: str | None = None, npu_clock_hz: float | None = None,
                   clock_source: str = "") -> str:
    """The program's NPU total in words: Vela's cycles over all delegates, and an inference time only
    for a real NPU clock (``npu_clock_hz`` from board data, cited in ``clock_source``; no board file gives
    one yet); "" without Vela layers."""
    vs = [d.vela for d in report.delegates if d.vela is not None and d.vela.layers]
    if not vs:
        return ""
    cycles = sum(v.layer_cycles for v in vs)
    text = (f"NPU total: {cycles:,} cycles over {len(vs)} delegate{'s' if len(vs) != 1 else ''} "
            f"(Vela's estimate, system config {vs[0].system_config}, {vs[0].config_file}; not measured)")
    if npu_clock_hz:
        return text + f"; {cycles / npu_clock_hz * 1e3:.3f} ms at the NPU's {npu_clock_hz / 1e6:g} MHz ({clock_source})"
    assumed = f"; Vela's config assumes {vs[0].vela_clock_hz / 1e6:g} MHz" if vs[0].vela_clock_hz else ""
    whose = f"board {board_name}'s file gives no NPU clock" if board_name else "no board NPU clock given"
    return text + f"; no inference time: {whose}{assumed} (the Corstone FVPs are not cycle-timed)"


def _print_report(report: ProgramReport) -> None:
    """Print a report as rich tables on stdout (same content as the JSON).

    Tables are printed at their natural width (:func:`armgen.cli._console.print_table`), so that
    piped output keeps every value on one line.
    """
    def show(table: Table) -> None:
        print_table(table)

    summary = Table(title=f"program {report.name}", show_header=False, title_justify="left")
    summary.add_column("field")
    summary.add_column("value", overflow="fold")
    for key, val in (
        ("pte_file", report.pte_file),
        ("pte_size", f"{report.pte_size} B"),
        ("pte_sha256", report.pte_sha256),
        ("file_identifier", report.file_identifier),
        ("executorch_version", report.executorch_version),
        ("backend", report.backend),
        ("target", report.target),
        ("cpu", report.cpu),
        ("method", report.method),
        ("planned_buffers", ", ".join(f"id {i + 1}: {b} B" for i, b in enumerate(report.planned_buffers)) or "none"),
        ("activation_lower_bound", "-" if report.activation_lower_bound is None else
         f"{report.activation_lower_bound} B (planned tensors live at once: no plan of this graph needs less)"),
        ("constant_data_size", f"{report.constant_data_size} B"),
        ("temp_allocator_size", f"{report.temp_allocator_size} B"),
        ("schema_version", str(report.schema_version)),
    ):
        summary.add_row(key, val)
    show(summary)

    ops = Table(title="operators", title_justify="left")
    for col in ("name", "overload", "library", "calls"):
        ops.add_column(col, justify="right" if col == "calls" else "left")
    for o in report.operators:
        ops.add_row(o.name, o.overload, o.library, str(o.calls))
    show(ops)
    if report.placement:
        show(placement_table(report))
    for table in npu_layer_tables(report):
        show(table)
    if total := npu_total_line(report):
        out_console.print(total, markup=False, highlight=False, soft_wrap=True)

    if report.delegates:
        show(_delegates_table(report))

    io_tab = Table(title="inputs / outputs", title_justify="left")
    for col in ("io", "index", "shape", "dtype", "dim_order", "nbytes", "scale", "zero_point"):
        io_tab.add_column(col)
    for kind, items in (("input", report.inputs), ("output", report.outputs)):
        for t in items:
            io_tab.add_row(kind, str(t.index), "x".join(map(str, t.shape)), t.dtype, str(list(t.dim_order)),
                           str(t.nbytes), "" if t.scale is None else repr(t.scale),
                           "" if t.zero_point is None else str(t.zero_point))
    show(io_tab)

    stats = Table(title="stats", title_justify="left", show_header=False)
    stats.add_column("count")
    stats.add_column("value", justify="right")
    for key, val in report.stats.__dict__.items():
        stats.add_row(key, str(val))
    show(stats)

    if report.files:
        files = Table(title="files", title_justify="left", show_header=False)
        files.add_column("role")
        files.add_column("file")
        for key, val in sorted(report.files.items()):
            files.add_row(key, val)
        show(files)
    for w in report.warnings:
        out_console.print(f"warning: {w}", highlight=False, soft_wrap=True)


@main.command("compile")
@click.argument("model")
@click.option("--target", "-t", required=True, help="cortex-m0 .. cortex-m85, or ethos-u55-128, ethos-u85-256, ...")
@click.option("--cpu", default=None, help="Cortex-M running non-delegated ops (Ethos-U targets; default cortex-m55).")
@click.option("--weights", type=click.Path(dir_okay=False), default=None,
              help="Trained .tflite for a built-in sample, float (int8 for sww); default: the MLPerf Tiny reference "
                   "file from $ARMGEN_MLPERF_DIR, the cache, or downloaded once (see `armgen weights`).")
@click.option("--calibration", type=click.Path(), default=None,
              help="Representative inputs: a directory, .npz or .pt (default: sample generator / example inputs).")
@click.option("--system-config", default=None, help="Vela system config (Ethos-U; default: upstream's for the NPU).")
@click.option("--memory-mode", default=None, help="Vela memory mode (Ethos-U; default: upstream's for the NPU).")
@click.option("--vela-config", type=click.Path(dir_okay=False), default=None, help="Vela .ini file (Ethos-U).")
@click.option("--name", default=None, help="Output file stem (default: sample name or model file stem).")
@click.option("-o", "--out-dir", type=click.Path(file_okay=False), default=".", show_default=True,
              help="Folder for <name>.pte, <name>.report.json, <name>.pt2, <name>.reference.npz "
                   "(+ <name>.lowered.pt2 for Cortex-M).")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON instead of tables.")
@offline_option()
def compile_cmd(
    model, target, cpu, weights, calibration, system_config, memory_mode, vela_config, name, out_dir, as_json,
    offline,
):
    """Compile MODEL (kws|vww|ic|ad|sww, file.py[:attr], file.pt2) to an int8 ExecuTorch program.

    Built-in samples get the trained MLPerf Tiny weights: --weights, else $ARMGEN_MLPERF_DIR, else
    the cache ($ARMGEN_CACHE_DIR/weights, ~/.cache/armgen/weights), else a download checked by SHA-256
    ($ARMGEN_WEIGHTS_URL mirror; none with --offline or ARMGEN_OFFLINE=1). Without any: fixed-seed
    weights and a warning.
    """
    from armgen.model.compile import compile_model
    from armgen.model.pretrained import offline_mode

    with err_console.status(f"compiling {model} for {target} ..."), offline_mode(offline):
        result = compile_model(
            model, target, out_dir=Path(out_dir), cpu=cpu, system_config=system_config,
            memory_mode=memory_mode, vela_config_file=vela_config, weights=weights,
            calibration=calibration, name=name,
        )
    for w in result.report.warnings:  # first: the untrained-weights warning qualifies the int8 quality note
        err_console.print(f"[yellow]armgen: warning:[/] {w}", highlight=False, soft_wrap=True)
    for note in result.notes:
        err_console.print(f"armgen: {note}", highlight=False, soft_wrap=True)
    for _role, path in result.files.items():
        err_console.print(f"wrote {path}", highlight=False, soft_wrap=True)
    if as_json:
        click.echo(result.report.to_json(), nl=False)
    else:
        _print_report(result.report)


@main.command("inspect")
@click.argument("pte", type=click.Path(dir_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
def inspect_cmd(pte, as_json):
    """Read an ExecuTorch program (.pte) and print its program report."""
    from armgen.model.inspect_program import inspect_pte

    report = inspect_pte(Path(pte))
    if as_json:
        click.echo(report.to_json(), nl=False)
    else:
        _print_report(report)


__all__ = ["compile_cmd", "inspect_cmd"]
