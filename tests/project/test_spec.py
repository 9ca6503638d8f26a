"""ProjectSpec: pools sized from the program report, placed in board regions, checked before writing.

The program is the committed kws fixture (tests/data/programs, compiled for real by its make.py with
armgen.model.compile: torch.export, PT2E, ExecuTorch lowering; the slow tier checks it is still what the
pinned ExecuTorch produces), so these tests need no export; boards are the built-in YAML files or
variants of them made with board_from_data.
"""

from __future__ import annotations

import dataclasses

import pytest
import yaml

from _narrow import present
from _programs import program
from armgen.boards import BOARDS_DIR, Board, board_from_data, load_board
from armgen.errors import ProjectError
from armgen.model.method_allocator import (
    POOL_ALIGNMENT,
    method_allocator_bound,
    method_allocator_bound_from_stats,
    method_allocator_use,
    operator_lookup_scratch,
    temp_pool_size,
)
from armgen.model.program_report import DelegateInfo, VelaInfo
from armgen.project.spec import (
    default_backend,
    default_rtos,
    make_spec,
    portable_source_for,
    validate_name,
)
from armgen.project.zephyr import zephyr_placement


@pytest.fixture(scope="module")
def kws_m55():
    return program("kws-cortex-m55")


def _board_variant(name: str, edit) -> Board:
    data = yaml.safe_load((BOARDS_DIR / f"{name}.yaml").read_text())
    edit(data)
    return board_from_data(data, name=f"{name}_variant", source=f"{name}_variant.yaml")


def test_planned_pools_equal_the_report(kws_m55):
    report, pte, report_path = kws_m55
    spec = make_spec(report, load_board("qemu_mps3_an547"), name="kws", pte_path=pte, report_path=report_path)
    planned = [p for p in spec.pools if p.kind == "planned"]
    assert [p.name for p in planned] == [f"planned_{i}" for i in range(1, len(report.planned_buffers) + 1)]
    assert [p.bytes for p in planned] == list(report.planned_buffers)
    assert [p.memory_id for p in planned] == list(range(1, len(report.planned_buffers) + 1))
    assert all(p.section == f".armgen_pool.{p.name}" for p in spec.pools)
    # Cortex-M path: CMSIS-NN scratch is planned, so the program itself needs no temp allocator;
    # the temp allocator holds only the operator-lookup scratch of load_method, because that shrinks
    # the method pool. kws has no mutable buffer and no delegate, so planned memory is idle while
    # it loads: the largest planned pool lends that scratch and there is no temp pool at all.
    assert report.temp_allocator_size == 0
    scratch = operator_lookup_scratch(pte.read_bytes())
    assert report.method_allocator is not None and report.method_allocator.temp_load_only
    assert report.method_allocator.temp_pool == scratch > 0
    assert "temp" not in {p.name for p in spec.pools}
    assert spec.load_scratch == ("planned_1", scratch)
    without = _round16(method_allocator_use(pte.read_bytes(), 0))
    assert spec.pool("method").bytes + scratch < without


def _round16(n: int) -> int:
    return -(-n // 16) * 16


def test_lookup_scratch_is_28_bytes_per_argument_of_the_widest_kernel_call(kws_m55):
    report, pte, _ = kws_m55
    from executorch.exir._serialize._program import deserialize_pte_binary

    plan = deserialize_pte_binary(pte.read_bytes()).program.execution_plan[0]
    widest = max(len(i.instr_args.args) for i in plan.chains[0].instructions)
    assert operator_lookup_scratch(pte.read_bytes()) == _round16(28 * widest)
    # With that much temp, no TensorMeta stays in the method pool; one byte less and all of it does.
    scratch = operator_lookup_scratch(pte.read_bytes())
    assert method_allocator_use(pte.read_bytes(), scratch) < method_allocator_use(pte.read_bytes(), 28 * widest - 1)
    assert temp_pool_size(report.temp_allocator_size, pte.read_bytes()) == scratch


def test_stack_size_is_checked_and_used(kws_m55):
    report, pte, report_path = kws_m55
    board = load_board("qemu_mps3_an547")
    spec = make_spec(report, board, name="kws", pte_path=pte, report_path=report_path, stack_size=2304)
    assert spec.stack_size == 2304
    for bad in (100, 2302):
        with pytest.raises(ProjectError, match="multiple of 8 and at least 512"):
            make_spec(report, board, name="kws", pte_path=pte, report_path=report_path, stack_size=bad)


def test_pools_go_to_the_fastest_region_that_fits(kws_m55):
    report, pte, report_path = kws_m55
    spec = make_spec(report, load_board("qemu_mps3_an547"), name="kws", pte_path=pte, report_path=report_path)
    # an547: DTCM (dtcm) is faster than ISRAM/DDR and has room for everything; the .pte stays in
    # the non-volatile code region (ITCM plays flash on QEMU).
    assert {p.region for p in spec.pools} == {"DTCM"}
    assert spec.model_region == "ITCM"
    assert spec.stack_region == "DTCM"

    # Shrink DTCM so the planned buffer no longer fits: it must move to the next region (ISRAM),
    # while the smaller method pool stays in DTCM.
    planned = report.planned_buffers[0]

    def shrink(d):
        for r in d["regions"]:
            if r["name"] == "DTCM":
                # room for stack, data reserve, input buffer and the method pool only
                r["size"] = planned - 1024 + 8192 + 8192 + 1024
    board = _board_variant("qemu_mps3_an547", shrink)
    spec2 = make_spec(report, board, name="kws", pte_path=pte, report_path=report_path)
    assert spec2.pool("planned_1").region == "ISRAM"
    assert spec2.pool("method").region == "DTCM"


def test_method_pool_is_the_exact_replay_rounded_to_16(kws_m55):
    report, pte, report_path = kws_m55
    use = method_allocator_use(pte.read_bytes(), temp_pool_size(report.temp_allocator_size, pte.read_bytes()))
    bound = method_allocator_bound(pte.read_bytes(), report.temp_allocator_size)
    assert bound % POOL_ALIGNMENT == 0
    assert 0 <= bound - use < POOL_ALIGNMENT
    # The replay covers what the stats count: 16 B per value, a TensorImpl and strides per tensor.
    s = report.stats
    assert use > 16 * s.num_values + 32 * s.num_tensors
    # Without the .pte the stats-only bound is larger (an upper bound), never smaller.
    assert method_allocator_bound_from_stats(report.stats) >= use
    spec = make_spec(report, load_board("qemu_mps3_an547"), name="kws", pte_path=pte, report_path=report_path)
    assert spec.pool("method").bytes == bound == spec.method_allocator_bound


def test_model_too_large_fails_naming_region_and_shortfall(kws_m55):
    report, pte, report_path = kws_m55
    board = load_board("qemu_mps2_an386")  # DATA: 4 MiB for data, pools and stack
    huge = dataclasses.replace(report, planned_buffers=(5 * 1024 * 1024,))
    with pytest.raises(ProjectError) as err:
        make_spec(huge, board, name="kws", pte_path=pte, report_path=report_path, allow_cpu_mismatch=True)
    msg = err.value.message
    region = board.region("DATA")
    # stack, data reserve and the input.bin buffer (semihosting console) are placed first
    free = region.usable - 8192 - 8192 - (sum(t.nbytes for t in report.inputs) + 15) // 16 * 16
    assert "pool planned_1" in msg and "DATA" in msg
    assert f"short by {5 * 1024 * 1024 - free} bytes" in msg

    big_pte = dataclasses.replace(report, pte_size=5 * 1024 * 1024)
    with pytest.raises(ProjectError, match=r"the model \(\.pte\).*CODE.*short by \d+ bytes"):
        make_spec(big_pte, board, name="kws", pte_path=pte, report_path=report_path, allow_cpu_mismatch=True)


def test_program_for_another_cpu_is_refused(kws_m55):
    report, pte, report_path = kws_m55
    with pytest.raises(ProjectError, match="compiled for cortex-m55, but board 'qemu_mps2_an386' has a cortex-m4"):
        make_spec(report, load_board("qemu_mps2_an386"), name="kws", pte_path=pte, report_path=report_path)


def test_program_for_another_cpu_names_the_real_compile_flags(kws_m55):
    report, pte, report_path = kws_m55
    with pytest.raises(ProjectError) as err:
        make_spec(report, load_board("qemu_mps2_an386"), name="kws", pte_path=pte, report_path=report_path)
    assert err.value.hint == "compile again: armgen compile kws --target cortex-m4 (or armgen new without --model)"
    assert "--backend" not in err.value.hint  # `armgen compile` has no --backend flag
    # The backend mismatch hint names --target too.
    with pytest.raises(ProjectError) as err:
        make_spec(report, load_board("corstone_320"), name="kws", pte_path=pte, report_path=report_path)
    assert "compiled for backend 'cortex-m', not 'ethos-u'" in err.value.message
    assert err.value.hint == "compile again: armgen compile kws --target ethos-u85-256 (or armgen new without --model)"
    # Emulator stand-ins (armgen run) still accept a program for a neighbouring CPU.
    spec = make_spec(report, load_board("qemu_mps2_an386"), name="kws", pte_path=pte, report_path=report_path,
                     allow_cpu_mismatch=True)
    assert spec.cpu == "cortex-m4"


def _as_ethos_u(report, target):
    """The report as if Vela had compiled it (its method-allocator plan re-derived from the stats)."""
    vela = VelaInfo(target, "Ethos_U55_High_End_Embedded", "Shared_Sram", 22048, 0, 1816, 30240)
    return dataclasses.replace(report, backend="ethos-u", target=target, method_allocator=None,
                               delegates=(DelegateInfo("EthosUBackend", 34000, vela),))


def test_ethos_u_program_for_another_npu_is_refused(kws_m55):
    """A Vela command stream runs only on the NPU configuration it was compiled for."""
    report, pte, report_path = kws_m55
    u55 = _as_ethos_u(report, "ethos-u55-256")
    with pytest.raises(ProjectError) as err:
        make_spec(u55, load_board("corstone_320"), name="kws", pte_path=pte, report_path=report_path)
    assert err.value.message == "kws.pte was compiled for ethos-u55-256, but board corstone_320 has an ethos-u85-256"
    assert err.value.hint == "compile again: armgen compile kws --target ethos-u85-256 (or armgen new without --model)"
    # also for emulator stand-ins: no NPU runs another configuration's command stream
    with pytest.raises(ProjectError, match="compiled for ethos-u55-256"):
        make_spec(u55, load_board("corstone_300"), name="kws", pte_path=pte, report_path=report_path,
                  allow_cpu_mismatch=True)
    # the matching configuration is accepted
    alif = load_board("alif_e8")
    spec = make_spec(u55, alif, name="kws", pte_path=pte, report_path=report_path, zephyr=zephyr_placement(alif))
    assert spec.target == present(spec.board.npu).vela_accelerator == "ethos-u55-256"


def test_ethos_u_on_a_board_without_npu_is_refused(kws_m55):
    report, pte, report_path = kws_m55
    with pytest.raises(ProjectError, match="has no Ethos-U NPU"):
        make_spec(report, load_board("qemu_mps3_an547"), name="kws", pte_path=pte, backend="ethos-u")


def test_npu_pools_only_in_npu_reachable_regions(kws_m55):
    """Planned and temp pools of a delegated program go where the NPU reaches (not DTCM)."""
    report, pte, report_path = kws_m55
    vela = VelaInfo("ethos-u85-256", "Ethos_U85_SYS_DRAM_Mid", "Sram_Only", 22048, 0, 1816, 30240)
    delegated = dataclasses.replace(report, backend="ethos-u", target="ethos-u85-256", method_allocator=None,
                                    delegates=(DelegateInfo("EthosUBackend", 34000, vela),))
    board = load_board("corstone_320")
    spec = make_spec(delegated, board, name="kws", pte_path=pte, report_path=report_path,
                     zephyr=zephyr_placement(board))
    reachable = {r.name for r in board.regions if r.npu_address is not None}
    assert spec.pool("temp").bytes == 22048
    for p in spec.pools:
        if p.kind in ("planned", "temp"):
            assert p.npu and p.region in reachable
    assert spec.model_region in reachable


def test_defaults_follow_the_board():
    an547, alif, c320 = load_board("qemu_mps3_an547"), load_board("alif_e8"), load_board("corstone_320")
    assert default_rtos(an547) == "baremetal" and default_backend(an547) == "cortex-m"
    assert default_rtos(alif) == "zephyr" and default_backend(alif) == "ethos-u"
    assert default_backend(c320) == "ethos-u"


@pytest.mark.parametrize("bad", ["", "../x", "a/b", "1abc", "kws-2", "int", "x" * 65, ".."])
def test_bad_names(bad):
    with pytest.raises(ProjectError):
        validate_name(bad)


def test_good_names():
    for good in ("kws", "_k", "my_model_2"):
        assert validate_name(good) == good


def test_portable_source_names():
    assert portable_source_for("aten::add.out") == "op_add.cpp"
    assert portable_source_for("dim_order_ops::_clone_dim_order.out") == "op__clone_dim_order.cpp"
