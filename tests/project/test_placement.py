"""Placement as a pure function: make_spec on synthetic program reports (no model, no .pte read).

The spec stage sizes pools from ``ProgramReport.method_allocator`` (the model stage's replay) and the
planned buffers, and places them by board data alone, so these run in milliseconds. The real-model
counterparts (exact replay, firmware-measured use) are in test_spec.py and test_run.py.
"""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path

import pytest

from armgen.boards import load_board
from armgen.errors import ProjectError
from armgen.model.method_allocator import POOL_ALIGNMENT, method_allocator_bound_from_stats, pool_sizes
from armgen.model.program_report import (
    DelegateInfo,
    MethodAllocatorPlan,
    OperatorInfo,
    ProgramReport,
    ProgramStats,
    TensorInfo,
    VelaInfo,
)
from armgen.project.spec import make_spec
from armgen.project.zephyr import zephyr_placement

#: A .pte path that does not exist: the spec must not read it.
NO_FILE = Path("/nonexistent/armgen/model.pte")


def _report(planned=(20_000,), pte_size=60_000, method=(11_648, 448), cpu="cortex-m55", delegated=None) -> ProgramReport:
    stats = ProgramStats(num_values=200, num_tensors=80, num_tensor_dims=300, num_tensor_lists=0,
                         num_tensor_list_items=0, num_instructions=20, num_kernel_calls=18,
                         num_kernel_call_args=120, num_delegate_calls=0, num_delegate_call_args=0,
                         num_operators=6, num_chains=1, num_inputs=1, num_outputs=1, num_constant_tensors=40)
    delegates: tuple[DelegateInfo, ...]
    backend, target, delegates = "cortex-m", cpu, ()
    if delegated is not None:
        backend, target = "ethos-u", delegated
        delegates = (DelegateInfo("EthosUBackend", 30_000, VelaInfo(delegated, "cfg", "Shared_Sram", 22_048, 0, 1_816,
                                                                   30_240)),)
    return ProgramReport(
        name="synthetic", pte_file="synthetic.pte", pte_size=pte_size, pte_sha256="0" * 64, file_identifier="ET12",
        executorch_version="1.5.1", backend=backend, target=target, cpu=cpu, method="forward",  # type: ignore[arg-type]
        operators=(OperatorInfo("cortex_m::quantized_conv2d", "out", "cortex_m", 4),),
        delegates=delegates, planned_buffers=tuple(planned), constant_data_size=50_000,
        inputs=(TensorInfo(0, (1, 1, 49, 10), "int8", (0, 1, 2, 3), 490, 0.5, -1),),
        outputs=(TensorInfo(0, (1, 12), "int8", (0, 1), 12, 0.0039, -128),),
        stats=stats,
        method_allocator=MethodAllocatorPlan(method[0], method[1], method[0] - 12) if method else None,
    )


def test_pools_come_from_the_report_without_reading_the_program():
    start = time.perf_counter()
    spec = make_spec(_report(planned=(20_464, 512)), load_board("qemu_mps3_an547"), name="s", pte_path=NO_FILE)
    assert time.perf_counter() - start < 1.0
    assert [(p.name, p.bytes) for p in spec.pools] == [("planned_1", 20_464), ("planned_2", 512), ("method", 11_648),
                                                       ("temp", 448)]
    assert {p.region for p in spec.pools} == {"DTCM"} and spec.model_region == "ITCM"
    assert spec.method_allocator_bound == 11_648
    assert all(p.section == f".armgen_pool.{p.name}" for p in spec.pools)


def test_lookup_scratch_borrows_the_largest_planned_pool_when_planned_memory_is_idle_at_load():
    report = _report(planned=(512, 20_464))
    assert report.method_allocator is not None
    idle = dataclasses.replace(report, method_allocator=dataclasses.replace(report.method_allocator, temp_load_only=True))
    spec = make_spec(idle, load_board("qemu_mps3_an547"), name="s", pte_path=NO_FILE)
    assert [p.name for p in spec.pools] == ["planned_1", "planned_2", "method"]
    assert spec.load_scratch == ("planned_2", 448)
    # no planned pool large enough: the temp pool stays
    small = dataclasses.replace(idle, planned_buffers=(256,))
    spec = make_spec(small, load_board("qemu_mps3_an547"), name="s", pte_path=NO_FILE)
    assert spec.load_scratch is None and spec.pool("temp").bytes == 448


def test_report_without_replay_falls_back_to_the_stats_bound():
    report = _report(method=None)
    method, temp = pool_sizes(report)
    assert method == method_allocator_bound_from_stats(report.stats) and method % POOL_ALIGNMENT == 0
    assert temp == 0
    spec = make_spec(report, load_board("qemu_mps3_an547"), name="s", pte_path=NO_FILE)
    assert spec.pool("method").bytes == method and "temp" not in {p.name for p in spec.pools}


def test_a_pool_too_large_for_the_fast_region_moves_to_the_next():
    # an547: DTCM 512 KiB; 600 KB of planned buffer goes to ISRAM (the next fastest), the method pool stays.
    spec = make_spec(_report(planned=(600_000,)), load_board("qemu_mps3_an547"), name="s", pte_path=NO_FILE)
    assert spec.pool("planned_1").region != "DTCM" and spec.pool("method").region == "DTCM"


def test_shortfall_names_the_region_and_the_bytes():
    board = load_board("stm32f4_disco")  # 192 KiB RAM
    with pytest.raises(ProjectError, match=r"pool planned_1 .*short by \d+ bytes"):
        make_spec(_report(planned=(400_000,), cpu="cortex-m4"), board, name="s", pte_path=NO_FILE, rtos="baremetal")


def test_npu_pools_only_where_the_npu_reaches_and_zephyr_sram_follows_them():
    board = load_board("corstone_320")
    report = _report(delegated="ethos-u85-256", cpu="cortex-m85", method=(272, 22_048))
    spec = make_spec(report, board, name="s", pte_path=NO_FILE, zephyr=zephyr_placement(board))
    reachable = {r.name for r in board.regions if r.npu_address == r.base}
    for p in spec.pools:
        if p.kind in ("planned", "temp"):
            assert p.npu and p.region in reachable, p
    # Zephyr: .data/.bss, stack and heap share the NPU pools' region (one NPU-reachable zephyr,sram).
    assert spec.data_region == spec.stack_region == spec.pool("planned_1").region
    assert spec.zephyr_target == "mps4/corstone320/fvp" and spec.zephyr_release == "4.4"


def test_a_zephyr_spec_needs_its_flavour():
    with pytest.raises(ProjectError, match="needs the board's Zephyr target"):
        make_spec(_report(cpu="cortex-m7"), load_board("nucleo_h743zi"), name="s", pte_path=NO_FILE, rtos="zephyr")


def test_same_inputs_same_spec():
    board = load_board("qemu_mps3_an547")
    a = make_spec(_report(), board, name="s", pte_path=NO_FILE)
    b = make_spec(dataclasses.replace(_report()), board, name="s", pte_path=NO_FILE)
    assert a == b


def test_tables_are_not_cut_when_piped():
    """Piped output (not a terminal) was laid out 80 columns wide and cut long layer and op names."""
    import io

    from rich.console import Console
    from rich.table import Table

    from armgen.cli._console import print_table

    name = "features.block_12.depthwise_separable_convolution.pointwise"
    table = Table(title="placement (execution order)")
    for col in ("#", "layer", "op", "runs as"):
        table.add_column(col)
    table.add_row("0", name, "cortex_m::quantized_depthwise_conv2d", "CMSIS-NN int8")
    out = io.StringIO()
    console = Console(file=out, width=80, highlight=False)
    assert not console.is_terminal
    print_table(table, console)
    text = out.getvalue()
    assert name in text and "cortex_m::quantized_depthwise_conv2d" in text, text
    assert console.width == 80  # the console's own width is left as it was


def test_mac_ops_are_matched_by_word():
    """upsample_bilinear2d contains "linear" and was counted as 100 % of a model's MACs."""
    from armgen.model.placement import does_macs

    for name in ("cortex_m::quantized_conv2d", "cortex_m::quantized_depthwise_conv2d", "aten::convolution",
                 "cortex_m::quantized_linear", "aten::linear", "aten::addmm", "aten::bmm", "aten::mm",
                 "aten::matmul", "cortex_m::quantized_batch_matmul"):
        assert does_macs(name), name
    for name in ("aten::upsample_bilinear2d", "aten::add", "cortex_m::quantized_avg_pool2d", "aten::mean",
                 "cortex_m::quantize_per_tensor"):
        assert not does_macs(name), name


def test_a_transposed_convolution_counts_each_input_pixel_through_the_kernel_once():
    """8x8x8 input, 8 -> 2 channels, 4x4 kernel, stride 2: 64 pixels x 256 weights = 16,384 MACs, not the
    65,536 of output pixels x weights per output channel (which counts the zeros a stride inserts)."""
    from types import SimpleNamespace

    from armgen.model.placement import _macs

    def t(*sizes: int) -> SimpleNamespace:
        return SimpleNamespace(sizes=sizes)

    inputs = [t(1, 8, 8, 8), t(2, 4, 4, 8), t(2)]  # input, weight (OHWI-like), bias
    assert _macs("cortex_m::quantized_transpose_conv2d", inputs, t(1, 2, 16, 16)) == 16_384
    assert _macs("cortex_m::quantized_conv2d", [t(1, 8, 16, 16), t(2, 3, 3, 8)], t(1, 2, 16, 16)) == 2 * 16 * 16 * 72
