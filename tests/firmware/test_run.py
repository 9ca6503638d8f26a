"""Tests of the run stage (armgen.firmware.run) and `armgen run`.

Without a workspace: a tiny real bare-metal program (tests/run_fixtures/probe.c, own start-up and
semihosting) is compiled with arm-none-eabi-gcc for mps3-an547 and mps2-an386 and run on the real
qemu-system-arm through armgen.firmware.qemu's wrapper. CI installs both tools.

With a workspace (marker `workspace`): the samples through `armgen new` + `armgen run`.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from _narrow import present
from armgen.boards import Emulator
from armgen.errors import ModelError, RunError
from armgen.firmware.console_protocol import FirmwareError, PoolUse, StackUse, parse_firmware_output
from armgen.firmware.faults import check_run, decode_cfsr
from armgen.firmware.host_io import input_bytes, output_array, quantize_input
from armgen.firmware.qemu import instructions_from_ticks, run_qemu
from armgen.firmware.run import run_firmware
from armgen.firmware.run_report import check_pools
from armgen.model.program_report import ProgramReport, ProgramStats, TensorInfo

FIXTURES = Path(__file__).parents[1] / "run_fixtures"
#: The firmware's semihosting reader of input.bin (shared with the generated projects).
INPUT_FILE_SRC = Path(__file__).parents[2] / "templates" / "common" / "run"

#: machine -> (gcc -mcpu, float flags, code base, data base), from boards.md section 9.
MACHINES = {
    "mps3-an547": ("cortex-m55", 0x10000000, 0x30000000),
    "mps2-an386": ("cortex-m4", 0x00000000, 0x20000000),
}
EMULATORS = {
    "mps3-an547": Emulator(board="qemu_mps3_an547", qemu_machine="mps3-an547", qemu_cpu="cortex-m55",
                           systick_hz=32_000_000),
    "mps2-an386": Emulator(board="qemu_mps2_an386", qemu_machine="mps2-an386", qemu_cpu="cortex-m4",
                           systick_hz=25_000_000),
}
MODES = {"ok": 1, "fault": 2, "hang": 3, "et_error": 4, "lockup": 5, "input": 6, "no_input": 6}


@pytest.fixture(scope="session")
def probe(tmp_path_factory):
    """Compile probe.c for (machine, mode, loop) once per session; return the ELF path."""
    out = tmp_path_factory.mktemp("probe")
    cache: dict[tuple[str, str, int], Path] = {}

    def build(machine: str, mode: str, loop: int = 1_000_000) -> Path:
        key = (machine, mode, loop)
        if key in cache:
            return cache[key]
        mcpu, code, data = MACHINES[machine]
        ld = out / f"{machine}.ld"
        ld.write_text(
            (FIXTURES / "probe.ld.in").read_text().replace("@CODE@", hex(code)).replace("@DATA@", hex(data))
        )
        elf = out / f"{machine}-{mode}-{loop}.elf"
        subprocess.run(
            ["arm-none-eabi-gcc", f"-mcpu={mcpu}", "-mthumb", "-O2", "-ffreestanding", "-nostdlib",
             f"-DPROBE_MODE={MODES[mode]}", f"-DPROBE_LOOP={loop}", "-I", str(INPUT_FILE_SRC),
             *(["-DPROBE_IGNORE_INPUT"] if mode == "no_input" else []),
             "-T", str(ld), "-o", str(elf), str(FIXTURES / "probe.c"),
             str(INPUT_FILE_SRC / "armgen_input_file.c")],
            check=True,
        )  # fmt: skip
        cache[key] = elf
        return elf

    return build


# ---- parsing (inline strings) -------------------------------------------------------------------
def test_parse_all_line_kinds():
    text = (
        "booting\n"
        "ARMGEN pool planned_1 reserved=20464 used=20464\n"
        "I 00:00:00.001 main.cpp:10] ARMGEN pool method reserved=12288 used=11552\n"
        "ARMGEN stack reserved=8192 used=1904\n"
        "ARMGEN output 0 -3,0, 17,127\n"
        "ARMGEN output 1\n"
        "ARMGEN ticks 57904\n"
        "ARMGEN error 0x14 load_method\n"
        "ARMGEN error OperatorMissing execute\n"
        "ARMGEN frobnicate 3\n"
        "ARMGEN done\n"
    )
    log = parse_firmware_output(text)
    assert log.pools == (PoolUse("planned_1", 20464, 20464), PoolUse("method", 12288, 11552))
    assert log.stack == StackUse(8192, 1904)
    assert log.outputs == {0: (-3, 0, 17, 127), 1: ()}
    assert log.ticks == 57904
    assert log.errors == (FirmwareError("OperatorMissing", "load_method"), FirmwareError("OperatorMissing", "execute"))
    assert log.done
    assert log.malformed == ("ARMGEN frobnicate 3",)


def test_instructions_from_ticks_uses_the_machine_systick_rate():
    # 1 instruction = 1 ns under -icount shift=0; SysTick 32 MHz on an547, 25 MHz on an386: the board files'
    # clock, the one place armgen keeps it (a real board's emulator inherits its QEMU board's).
    from armgen.boards import load_board

    an547, an386, e8 = (load_board(b).emulator for b in ("qemu_mps3_an547", "qemu_mps2_an386", "alif_e8"))
    assert an547 is not None and an386 is not None and e8 is not None
    assert (an547.systick_hz, an386.systick_hz) == (32_000_000, 25_000_000)
    assert e8.systick_hz == 32_000_000  # its stand-in's, not the E8's 400 MHz
    assert instructions_from_ticks(57904, an547.systick_hz) == 1_809_500
    assert instructions_from_ticks(212_037, an386.systick_hz) == 8_481_480
    with pytest.raises(RunError, match="unknown"):
        instructions_from_ticks(1, None)


def test_decode_cfsr_names_bits():
    assert decode_cfsr(0x8200) == ["PRECISERR (precise data bus error)"]
    assert decode_cfsr(1 << 16)[0].startswith("UNDEFINSTR")


def _report(planned=(16,), in_scale=0.5, in_zp=-1, out_scale=0.25, out_zp=3, n=4, files=None) -> ProgramReport:
    stats = ProgramStats(*([0] * 15))
    return ProgramReport(
        name="identity", pte_file="identity.pte", pte_size=0, pte_sha256="", file_identifier="ET12",
        executorch_version="1.5.1", backend="cortex-m", target="cortex-m55", cpu="cortex-m55",
        method="forward", operators=(), delegates=(), planned_buffers=tuple(planned),
        constant_data_size=0,
        inputs=(TensorInfo(0, (1, n), "int8", (0, 1), n, in_scale, in_zp),),
        outputs=(TensorInfo(0, (1, n), "int8", (0, 1), n, out_scale, out_zp),),
        stats=stats, files=dict(files or {}),
    )  # fmt: skip


def test_check_pools_rules():
    report = _report(planned=(100, 50))
    findings = check_pools(
        [PoolUse("planned_1", 100, 100), PoolUse("planned_2", 64, 50), PoolUse("method", 10, 12)],
        StackUse(4096, 1000),
        report,
    )
    by = {(f.subject, f.severity): f.message for f in findings}
    assert "plan says 50 B" in by[("pool planned_2", "error")]
    assert "14 B wasted" in by[("pool planned_2", "warning")]
    assert "overflow" in by[("pool method", "error")]
    assert ("pool planned_1", "error") not in by and ("pool planned_1", "warning") not in by
    assert "3096 B headroom" in by[("stack", "info")]
    missing = check_pools([PoolUse("method", 10, 5)], None, report)
    assert {f.subject for f in missing if f.severity == "error"} == {"pool planned_1", "pool planned_2"}


def test_quantize_and_layout():
    info = TensorInfo(0, (1, 2, 2, 3), "int8", (0, 2, 3, 1), 12, 0.5, -1)
    x = np.arange(12, dtype=np.float32).reshape(1, 2, 2, 3) - 6.0
    q = quantize_input(x, info)
    assert q.dtype == np.int8 and q[0, 0, 0, 0] == -13 and q[0, 1, 1, 2] == 9
    # channels_last bytes: innermost dimension is C
    assert input_bytes([q], [info])[:3] == bytes(np.array([q[0, 0, 0, 0], q[0, 1, 0, 0], q[0, 0, 0, 1]], np.int8))
    back = output_array(list(np.transpose(q, (0, 2, 3, 1)).reshape(-1)), info)
    assert np.array_equal(back, q)
    with pytest.raises(RunError, match="shape"):
        quantize_input(np.zeros((1, 12), np.float32), info)
    with pytest.raises(RunError, match="expected 12"):
        output_array([1, 2], info)


# ---- real QEMU runs of a real bare-metal program -------------------------------------------------
@pytest.mark.parametrize("machine", sorted(MACHINES))
def test_probe_lines_are_parsed(probe, machine):
    run = run_qemu(probe(machine, "ok"), EMULATORS[machine], timeout=30)
    log = parse_firmware_output(run.console)
    check_run(run, log)
    assert run.returncode == 0
    assert log.pools == (PoolUse("planned_1", 20464, 20464), PoolUse("method", 12288, 11552))
    assert log.stack == StackUse(8192, 1904)
    assert log.outputs == {0: (-3, 0, 17, 127), 1: (-128, 5)}
    assert log.done and not log.errors


@pytest.mark.parametrize("machine", sorted(MACHINES))
def test_instruction_count_is_exact_and_repeats(probe, machine):
    """A busy loop of N iterations is 2N instructions (subs + bne): the count must say so."""
    emu = EMULATORS[machine]
    counts = {}
    for loop in (1_000_000, 3_000_000):
        elf = probe(machine, "ok", loop)
        ticks = [parse_firmware_output(run_qemu(elf, emu, timeout=30).console).ticks for _ in range(2)]
        assert ticks[0] is not None and ticks[0] == ticks[1], f"ticks do not repeat: {ticks}"
        counts[loop] = instructions_from_ticks(ticks[0], emu.systick_hz)
        assert counts[loop] == pytest.approx(2 * loop, rel=1e-4, abs=64)
    # proportional: 2M more instructions for 1M... 3M iterations
    assert counts[3_000_000] - counts[1_000_000] == pytest.approx(4_000_000, abs=64)


@pytest.mark.parametrize("machine", sorted(MACHINES))
def test_hard_fault_is_a_run_error(probe, machine, tmp_path):
    log_path = tmp_path / "qemu.log"
    run = run_qemu(probe(machine, "fault"), EMULATORS[machine], timeout=30, log_path=log_path)
    assert run.returncode != 0
    with pytest.raises(RunError, match="HardFault") as exc:
        check_run(run, parse_firmware_output(run.console))
    assert exc.value.exit_code != 0
    assert "PRECISERR" in exc.value.message and "pc=0x" in exc.value.message
    assert "cfsr=" in log_path.read_text()


def test_fault_at_the_stack_limit_says_stack_overflow():
    """Issue 27: --stack-size 512 ran kws into a PRECISERR HardFault whose message named no stack.

    The line is the one the bare-metal fault handler (templates/.../startup.c.j2) prints."""
    from armgen.firmware.qemu import QemuRun

    line = ("ARMGEN error HardFault exception=3 pc=0x10001234 lr=0x10005679 cfsr=0x00008200 hfsr=0x40000000 "
            "bfar=0x2000fff0 exc_return=0xfffffff9 sp=0x30000108 stack_limit=0x30000100 stack_size=512 "
            "stack_limit_reached=1")  # fmt: skip
    run = QemuRun(("qemu-system-arm",), 3, line + "\n", "", 0.1, False, 30.0)
    with pytest.raises(RunError) as exc:
        check_run(run, parse_firmware_output(run.console))
    assert exc.value.message.startswith("stack overflow: the 512 B stack was used to its limit"), exc.value.message
    assert "sp=0x30000108, stack limit 0x30000100" in exc.value.message
    assert "then HardFault [" in exc.value.message and "PRECISERR" in exc.value.message
    assert "--stack-size" in (exc.value.hint or "") and "auto" in (exc.value.hint or "")
    # the same fault with the stack far from its limit is an ordinary HardFault
    run = QemuRun(("qemu-system-arm",), 3, line.replace("stack_limit_reached=1", "stack_limit_reached=0") + "\n",
                  "", 0.1, False, 30.0)  # fmt: skip
    with pytest.raises(RunError, match="HardFault: firmware faulted") as exc:
        check_run(run, parse_firmware_output(run.console))
    assert "stack overflow" not in exc.value.message
    # an abort after the stack reached its limit (what kws with --stack-size 512 printed)
    abort = "ARMGEN error Abort et_pal_abort sp=0x30000300 stack_limit=0x30000100 stack_size=512 stack_limit_reached=1"
    run = QemuRun(("qemu-system-arm",), 8, abort + "\n", "", 0.1, False, 30.0)
    with pytest.raises(RunError, match=r"^stack overflow: the 512 B stack .*, then Abort$"):
        check_run(run, parse_firmware_output(run.console))


def test_zephyr_stack_guard_says_stack_overflow():
    """The line the generated Zephyr k_sys_fatal_error_handler prints (templates/zephyr/.../platform.c.j2)
    when the stack guard prj.conf turns on stops the main thread; other fatal errors are faults."""
    from armgen.firmware.qemu import QemuRun

    line = ("ARMGEN error ZephyrFatal reason=2 (StackCheckFail) thread_stack_size=1024 stack_size=1024 "
            "stack_limit_reached=1")
    run = QemuRun(("qemu-system-arm",), 3, line + "\n", "", 0.1, False, 30.0)
    with pytest.raises(RunError) as exc:
        check_run(run, parse_firmware_output(run.console))
    assert exc.value.message.startswith("stack overflow: Zephyr's stack guard stopped the main thread"), exc.value.message
    assert "the 1,024 B stack is too small" in exc.value.message
    assert "--stack-size BYTES" in (exc.value.hint or "") and "--stack-size auto on a QEMU board" in (exc.value.hint or "")
    other = line.replace("reason=2 (StackCheckFail)", "reason=0 (CpuException)").replace("reached=1", "reached=0")
    run = QemuRun(("qemu-system-arm",), 3, other + "\n", "", 0.1, False, 30.0)
    with pytest.raises(RunError, match="HardFault: firmware faulted: ZephyrFatal reason=0"):
        check_run(run, parse_firmware_output(run.console))


def test_every_zephyr_board_gets_a_stack_guard():
    """HW_STACK_PROTECTION where the core has stack-limit registers or the board's MPU is on, else the
    sentinel: each a Kconfig symbol Zephyr has for that board (a wrong one aborts Kconfig)."""
    from armgen.boards import list_boards, load_board
    from armgen.project.zephyr import stack_guard

    guards = {}
    for entry in list_boards():
        board = load_board(entry if isinstance(entry, str) else entry.name)
        if board.zephyr is not None:
            guards[board.name] = stack_guard(board)[1]
    assert guards["qemu_mps3_an547"] == ["CONFIG_HW_STACK_PROTECTION=y"]
    assert guards["corstone_320"] == ["CONFIG_HW_STACK_PROTECTION=y"]
    assert guards["stm32f4_disco"] == ["CONFIG_HW_STACK_PROTECTION=y"]
    assert guards["qemu_mps2_an386"] == ["CONFIG_STACK_SENTINEL=y"]
    assert all(g in (["CONFIG_HW_STACK_PROTECTION=y"], ["CONFIG_STACK_SENTINEL=y"]) for g in guards.values())


@pytest.mark.parametrize("machine", sorted(MACHINES))
def test_lockup_without_handler_is_a_hard_fault(probe, machine):
    run = run_qemu(probe(machine, "lockup"), EMULATORS[machine], timeout=30)
    with pytest.raises(RunError, match="HardFault: the CPU locked up") as exc:
        check_run(run, parse_firmware_output(run.console))
    assert exc.value.exit_code == 2


def test_hang_is_a_timeout(probe):
    run = run_qemu(probe("mps3-an547", "hang"), EMULATORS["mps3-an547"], timeout=2)
    assert run.timed_out and run.returncode is None and 1.5 < run.seconds < 20
    with pytest.raises(RunError, match=r"timeout: firmware did not finish within 2 s") as exc:
        check_run(run, parse_firmware_output(run.console))
    assert exc.value.exit_code == 2


@pytest.mark.parametrize("machine", sorted(MACHINES))
def test_executorch_error_is_named(probe, machine):
    run = run_qemu(probe(machine, "et_error"), EMULATORS[machine], timeout=30)
    assert run.returncode == 1
    with pytest.raises(RunError) as exc:
        check_run(run, parse_firmware_output(run.console))
    assert exc.value.message == "ExecuTorch error MemoryAllocationFailed (0x21) in load_method"
    assert "pool" in (exc.value.hint or "")


def test_input_reaches_firmware_through_semihosting(probe):
    elf, emu = probe("mps3-an547", "input"), EMULATORS["mps3-an547"]
    run = run_qemu(elf, emu, timeout=30, input_bytes=b"\x01\x80\x7f\x00")
    log = parse_firmware_output(run.console)
    check_run(run, log)
    assert log.outputs[0] == (1, -128, 127, 0) and log.input_source == "file"
    # no input.bin: the firmware keeps its embedded input
    log = parse_firmware_output(run_qemu(elf, emu, timeout=30).console)
    assert log.outputs[0] == (9, 8, 7, 6) and log.input_source == "embedded"
    # a file of the wrong size is an error, not silently ignored
    run = run_qemu(elf, emu, timeout=30, input_bytes=b"\x01\x02")
    with pytest.raises(RunError, match="ExecuTorch error InvalidArgument .* in read_input"):
        check_run(run, parse_firmware_output(run.console))


def _identity_project(tmp_path: Path, ref_offset_lsb: int = 0) -> tuple[ProgramReport, Path]:
    """A synthetic 'identity' program whose reference is the dequantized input (+ an offset)."""
    # input scale == output scale, zero points equal: firmware echoes q, so output == input.
    report = _report(in_scale=0.25, in_zp=3, out_scale=0.25, out_zp=3, files={"reference": "identity.ref.npz"})
    x = np.array([[-1.0, 0.0, 2.5, 30.0]], dtype=np.float32)
    q = quantize_input(x, report.inputs[0])
    out = (q.astype(np.float32) - 3) * 0.25 + ref_offset_lsb * 0.25
    np.savez(tmp_path / "identity.ref.npz", input_0=x, output_0=out)
    return report, tmp_path


def test_reference_arrays_in_memory_order_are_made_logical(tmp_path):
    from armgen.model.reference import load_reference

    info = TensorInfo(0, (1, 3, 2, 2), "int8", (0, 2, 3, 1), 12, 0.1, 0)
    rep = ProgramReport(**{**_report(files={"reference": "r.npz"}).__dict__, "inputs": (info,)})
    x = np.arange(12, dtype=np.int8).reshape(1, 3, 2, 2)
    np.savez(tmp_path / "r.npz", input_0=np.ascontiguousarray(x.transpose(0, 2, 3, 1)),
             output_0=np.zeros((1, 4), np.int8))  # fmt: skip
    ref = present(load_reference(rep, tmp_path))
    assert np.array_equal(ref.inputs[0], x)


def test_run_firmware_end_to_end_passes(probe, tmp_path):
    report, rdir = _identity_project(tmp_path)
    rr = run_firmware(
        probe("mps3-an547", "input"), report, EMULATORS["mps3-an547"], report_dir=rdir,
        timeout=30, repeat=2, log_dir=tmp_path / "logs",
    )  # fmt: skip
    assert rr.passed, rr.findings
    assert rr.max_lsb_diff == 0 and rr.max_abs_diff == 0
    assert rr.outputs[0].values == (-1, 3, 13, 123)
    assert rr.alternate_checked and rr.runs == 2 and len(set(rr.ticks_per_run)) == 1
    assert rr.instructions == instructions_from_ticks(present(rr.ticks), 32_000_000)
    assert rr.pools == (PoolUse("planned_1", 16, 16), PoolUse("method", 256, 200))
    assert rr.stack == StackUse(4096, 96)
    assert any(f.subject == "pool method" and "56 B headroom" in f.message for f in rr.findings)
    assert len(rr.logs) == 3 and all(Path(p).is_file() for p in rr.logs)
    # an .npz without reference_kind is not known to come from the lowered program: say so
    assert any(f.subject == "reference" and f.severity == "warning" and "before lowering" in f.message
               for f in rr.findings)  # fmt: skip
    json.dumps(rr.to_dict())  # JSON-ready


def test_firmware_without_input_file_support(probe, tmp_path):
    """A firmware that says it ran its embedded input: the second-input check is reported as not
    done, and a user-given input is refused rather than silently replaced."""
    report, rdir = _identity_project(tmp_path)
    elf, emu = probe("mps3-an547", "no_input"), EMULATORS["mps3-an547"]
    # the probe's embedded input {9,8,7,6} is not the reference's input: outputs differ
    rr = run_firmware(elf, report, emu, report_dir=rdir, timeout=30, repeat=1)
    assert not rr.alternate_checked and "embedded" in rr.input_source
    assert any(f.subject == "second input" and "does not read input.bin" in f.message for f in rr.findings)
    with pytest.raises(RunError, match="ignored input.bin"):
        run_firmware(elf, report, emu, report_dir=rdir, inputs=[np.zeros((1, 4), np.int8)], timeout=30)


def test_run_says_when_the_weights_are_untrained(probe, tmp_path):
    report, rdir = _identity_project(tmp_path)
    report = dataclasses.replace(report, untrained_weights=True)
    assert ProgramReport.from_dict(json.loads(report.to_json())).untrained_weights  # kept in the report file
    rr = run_firmware(probe("mps3-an547", "input"), report, EMULATORS["mps3-an547"], report_dir=rdir,
                      timeout=30, repeat=1, check_alternate=False)  # fmt: skip
    assert rr.passed  # bit-exact all the same
    (w,) = [f for f in rr.findings if f.subject == "weights"]
    assert w.severity == "warning" and "UNTRAINED" in w.message and "armgen weights fetch" in w.message


def test_run_firmware_flags_a_mismatch(probe, tmp_path):
    report, rdir = _identity_project(tmp_path, ref_offset_lsb=2)
    rr = run_firmware(probe("mps3-an547", "input"), report, EMULATORS["mps3-an547"], report_dir=rdir, timeout=30)
    assert not rr.passed
    assert rr.max_lsb_diff == pytest.approx(2.0)
    assert any(f.severity == "error" and "2 LSB" in f.message for f in rr.findings)


def test_run_firmware_flags_constant_outputs(probe, tmp_path):
    """The 'ok' probe prints fixed outputs whatever the input: that proves nothing and must fail."""
    report = _report(n=4, out_scale=0.5, out_zp=0, files={"reference": "r.npz"}, planned=(20464,))
    np.savez(tmp_path / "r.npz", input_0=np.zeros((1, 4), np.float32),
             output_0=np.array([[-1.5, 0.0, 8.5, 63.5]], np.float32))  # fmt: skip
    rr = run_firmware(probe("mps3-an547", "ok"), report, EMULATORS["mps3-an547"], report_dir=tmp_path, timeout=30)
    assert rr.max_lsb_diff == 0
    assert not rr.passed
    assert any("identical for two different inputs" in f.message for f in rr.errors)


def test_constant_outputs_of_a_constant_float_model_say_so(probe, tmp_path, float_programs):
    report = _report(n=4, out_scale=0.5, out_zp=0, files={"reference": "r.npz"}, planned=(20464,))
    np.savez(tmp_path / "r.npz", input_0=np.zeros((1, 4), np.float32),
             output_0=np.array([[-1.5, 0.0, 8.5, 63.5]], np.float32))  # fmt: skip
    report = _with_float_model(report, tmp_path, float_programs["constant"], calibration_samples=1)
    rr = run_firmware(probe("mps3-an547", "ok"), report, EMULATORS["mps3-an547"], report_dir=tmp_path, timeout=30)
    (err,) = [f for f in rr.errors if "identical for two different inputs" in f.message]
    assert "float model's outputs are constant too" in err.message and "single input" in err.message


class _Affine(torch.nn.Module):
    """``x * gain + offset``: gain 0 is a float model whose output does not depend on its input."""

    def __init__(self, gain: float, offset: float):
        super().__init__()
        self.gain, self.offset = gain, offset

    def forward(self, x):
        return x * self.gain + self.offset


@pytest.fixture(scope="module")
def float_programs(tmp_path_factory):
    """Saved float programs (torch.export .pt2) of 1x4 models: {"shifted": x + 0.1, "constant": 0 * x + 5,
    "vanishing": 1e-8 * x (an untrained deep network whose activations die out: MobileNetV2, issue 23)}."""
    out = tmp_path_factory.mktemp("float_programs")
    paths = {}
    for name, (gain, offset) in {"shifted": (1.0, 0.1), "constant": (0.0, 5.0), "vanishing": (1e-8, 0.0)}.items():
        ep = torch.export.export(_Affine(gain, offset), (torch.zeros(1, 4),))
        torch.export.save(ep, str(out / f"{name}.float.pt2"))
        paths[name] = out / f"{name}.float.pt2"
    return paths


def _with_float_model(report: ProgramReport, rdir: Path, program: Path, **fields) -> ProgramReport:
    shutil.copy(program, rdir / "identity.float.pt2")
    x = np.array([[-1.0, 0.0, 2.5, 30.0]], dtype=np.float32)
    np.savez(rdir / "identity.float_reference.npz", input_0=x,
             output_0=x * (0.0 if "constant" in program.name else 1.0) + (5.0 if "constant" in program.name else 0.1))
    files = {**report.files, "float_program": "identity.float.pt2", "float_reference": "identity.float_reference.npz"}
    return dataclasses.replace(report, files=files, **fields)


def test_run_reports_int8_against_float(probe, tmp_path, float_programs):
    report, rdir = _identity_project(tmp_path)
    report = _with_float_model(report, rdir, float_programs["shifted"], classifier=True)
    elf, emu = probe("mps3-an547", "input"), EMULATORS["mps3-an547"]
    rr = run_firmware(elf, report, emu, report_dir=rdir, timeout=30, repeat=1, check_alternate=False)
    assert rr.passed
    (q,) = rr.quality
    assert q["max_abs_error"] == pytest.approx(0.1, abs=1e-5) and q["top1_agreement"] == 1.0 and q["samples"] == 1
    assert any(f.subject == "int8 vs float" and "max abs error 0.1" in f.message for f in rr.findings)
    # another input: the saved float program runs on it (no re-export)
    x = np.array([[1.0, 2.0, 3.0, 4.0]], np.float32)
    rr = run_firmware(elf, report, emu, report_dir=rdir, inputs=[x], timeout=30, repeat=1, check_alternate=False)
    assert rr.quality[0]["max_abs_error"] == pytest.approx(0.1, abs=1e-5)


def test_degenerate_causes_name_what_the_host_sees(tmp_path, float_programs):
    from armgen.firmware.run import degenerate_causes

    report, rdir = _identity_project(tmp_path)
    alt = [np.array([[7, -100, 50, 1]], np.int8)]
    floats = (np.full((1, 4), 5.0, np.float32),)
    const = _with_float_model(report, rdir, float_programs["constant"], calibration_samples=1)
    causes = degenerate_causes(const, rdir, [np.array([[-128, 127, 127, -128]])], alt, floats)
    assert len(causes) == 3
    assert "float model's outputs are constant too" in causes[0]
    assert "calibrated on a single input" in causes[1] and "--calibration" in causes[1]
    assert "saturated at the int8 limits" in causes[2]
    moving = _with_float_model(report, rdir, float_programs["shifted"], calibration_samples=8)
    causes = degenerate_causes(moving, rdir, [np.array([[1, 2, 3, 4]])], alt, (np.zeros((1, 4), np.float32),))
    assert len(causes) == 1 and "float model's outputs do change" in causes[0]
    assert degenerate_causes(report, rdir, [np.array([[1, 2, 3, 4]])], alt, None) == []  # nothing to see
    # outputs ~1e-8 x: they move by 3.05e-07 (2.6 LSB at the float32-epsilon scale the quantizer floors at)
    eps = float(np.finfo(np.float32).eps)
    tiny = dataclasses.replace(report, outputs=(dataclasses.replace(report.outputs[0], scale=eps),))
    tiny = _with_float_model(tiny, rdir, float_programs["vanishing"], calibration_samples=1)
    x = np.array([[-1.0, 0.0, 2.5, 30.0]], np.float32)
    causes = degenerate_causes(tiny, rdir, [np.array([[3, 3, 3, 3]])], alt, (x * 1e-8,))
    assert causes[0] == ("the float model's outputs barely change (by up to 3.05e-07 for the two inputs, 2.6 output "
                         "LSB): int8 rounding loses a difference that small")
    assert causes[1] == ("output 0's scale is the quantizer's floor (1.19e-07, float32 epsilon): its calibrated range "
                         "was narrower than int8 can represent; the float outputs are all near zero (largest |value| "
                         "3e-07; an untrained or dead network does this)")
    assert "single input" in causes[2] and len(causes) == 3


def test_load_input_file_formats(tmp_path):
    import torch

    from armgen.firmware.host_io import load_input_file

    info = TensorInfo(0, (1, 2, 3), "int8", (0, 1, 2), 6, 0.1, 0)
    x = np.arange(6, dtype=np.float32).reshape(1, 2, 3)
    np.save(tmp_path / "a.npy", x)
    np.savez(tmp_path / "b.npz", input_0=x)
    torch.save((torch.from_numpy(x),), tmp_path / "c.pt")
    for name in ("a.npy", "b.npz", "c.pt"):
        (got,) = load_input_file(tmp_path / name, [info])
        assert np.array_equal(got, x), name
    (tmp_path / "d.txt").write_text("1 2 3")
    with pytest.raises(RunError, match="unknown input format"):
        load_input_file(tmp_path / "d.txt", [info])
    (tmp_path / "e.wav").write_bytes(b"RIFF")  # a clip for a project without a front end: the hint says so
    with pytest.raises(RunError, match="unknown input format .wav") as exc:
        load_input_file(tmp_path / "e.wav", [info])
    assert "armgen new --frontend mfcc" in (exc.value.hint or "")
    # a different rank with the same elements is refused, naming both shapes (issue 27: it passed)
    np.save(tmp_path / "rank.npy", x[0])
    with pytest.raises(RunError, match=r"has shape \(2, 3\), the program wants \(1, 2, 3\)"):
        load_input_file(tmp_path / "rank.npy", [info])
    np.save(tmp_path / "shape.npy", x.reshape(1, 3, 2))
    with pytest.raises(RunError, match=r"has shape \(1, 3, 2\)"):
        load_input_file(tmp_path / "shape.npy", [info])
    with pytest.raises(RunError, match="holds 2 inputs"):
        torch.save([torch.zeros(1), torch.zeros(1)], tmp_path / "e.pt")
        load_input_file(tmp_path / "e.pt", [info])


# ---- the command ------------------------------------------------------------------------------
def _armgen(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    exe = Path(sys.executable).with_name("armgen")
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "armgen.cli"]
    return subprocess.run([*cmd, *args], capture_output=True, text=True, cwd=cwd, timeout=1800)


def test_cli_not_a_project(tmp_path):
    res = _armgen("run", str(tmp_path))
    assert res.returncode == 2
    assert "armgen: error:" in res.stderr and "no armgen.toml" in res.stderr
    assert "Traceback" not in res.stderr


def test_cli_ethos_u_program_cannot_run_on_qemu(tmp_path):
    """An Ethos-U delegated program: one line saying why, and the Cortex-M build command."""
    from armgen.model.program_report import DelegateInfo

    rep = _report()
    rep = ProgramReport(**{**rep.__dict__, "backend": "ethos-u", "target": "ethos-u85-256",
                           "delegates": (DelegateInfo("EthosUBackend", 1000),)})  # fmt: skip
    (tmp_path / "model").mkdir()
    rep.save(tmp_path / "model" / "kws.report.json")
    (tmp_path / "armgen.toml").write_text(
        'name = "kws"\nboard = "corstone_320"\nrtos = "baremetal"\nbackend = "ethos-u"\n'
        'target = "ethos-u85-256"\ncpu = "cortex-m85"\nelf = "build/kws.elf"\n'
        '[model]\npte = "model/kws.pte"\nreport = "model/kws.report.json"\nsource = "sample:kws"\n'
    )
    res = _armgen("run", str(tmp_path), "--on", "qemu")  # (the default for Ethos-U: the TOSA host run)
    assert res.returncode == 2, res.stderr
    assert "Ethos-U" in res.stderr and "QEMU has no Ethos-U model" in res.stderr
    assert (
        "armgen new kws_cpu --board corstone_320 --backend cortex-m --model kws --rtos baremetal "
        "&& armgen run kws_cpu\n" in res.stderr.replace("`", "") + "\n"
    ), res.stderr
    assert "Traceback" not in res.stderr
    # a Zephyr project: the hint's run needs no Zephyr workspace (issue 27: it did)
    record = (tmp_path / "armgen.toml").read_text()
    record = record.replace('rtos = "baremetal"\n', 'rtos = "zephyr"\nzephyr_target = "mps4/corstone320/fvp"\n')
    (tmp_path / "armgen.toml").write_text(record)
    res = _armgen("run", str(tmp_path), "--on", "qemu")
    assert res.returncode == 2, res.stderr
    assert "--rtos zephyr --standin baremetal && armgen run kws_cpu" in res.stderr, res.stderr
    # untrained weights are no --weights argument; a trained file is passed on (the record's path)
    record = (tmp_path / "armgen.toml").read_text()
    (tmp_path / "armgen.toml").write_text(record + 'weights = "untrained (fixed-seed weights)"\n')
    res = _armgen("run", str(tmp_path), "--on", "qemu")
    assert res.returncode == 2 and "--model kws --rtos zephyr" in res.stderr and "--weights" not in res.stderr
    (tmp_path / "armgen.toml").write_text(record + 'weights = "/w dir/kws.tflite"\n')
    res = _armgen("run", str(tmp_path), "--on", "qemu")
    assert res.returncode == 2 and "--model kws --weights '/w dir/kws.tflite' --rtos zephyr" in res.stderr, res.stderr


# ---- with a workspace: the samples through `armgen new` + `armgen run` ---------------------------
#: Samples whose randomly initialised stand-in saturates its outputs: without the trained weights their
#: run cannot pass the non-degenerate check, so it is skipped (not failed) where the weights are absent.
NEEDS_TRAINED_WEIGHTS = frozenset({"vww", "ic"})


def _weights_missing(sample: str) -> str | None:
    """Why ``sample`` runs without its trained weights here (None when they are present or not needed)."""
    from armgen.model.model_source import mlperf_dir, sample_module

    if sample not in NEEDS_TRAINED_WEIGHTS:
        return None
    folder, name = mlperf_dir(), sample_module(sample).WEIGHTS_FILE
    if folder is None or not (folder / name).is_file():
        return f"trained weights {name} not found (set ARMGEN_MLPERF_DIR to the MLPerf Tiny models folder)"
    return None


SAMPLE_RUNS = [
    ("kws", "qemu_mps3_an547"),
    ("vww", "qemu_mps3_an547"),
    ("ic", "qemu_mps3_an547"),
    ("ad", "qemu_mps3_an547"),
    ("sww", "qemu_mps3_an547"),
    ("kws", "qemu_mps2_an386"),
]


@pytest.mark.workspace
@pytest.mark.needs_workspace
@pytest.mark.slow
@pytest.mark.parametrize("sample,board", SAMPLE_RUNS, ids=[f"{s}-{b}" for s, b in SAMPLE_RUNS])
def test_sample_runs_on_qemu_within_one_lsb(sample, board, tmp_path):
    no_weights = _weights_missing(sample)
    if no_weights:
        pytest.skip(no_weights)
    made = _armgen("new", sample, "--board", board, "--out", str(tmp_path))
    assert made.returncode == 0, made.stderr
    res = _armgen("run", str(tmp_path / sample), "--json", "--repeat", "2")
    assert res.returncode == 0, res.stderr
    rr = json.loads(res.stdout)
    print(f"\n{sample} on {board}: " + json.dumps(
        {k: rr[k] for k in ("max_abs_diff", "max_lsb_diff", "pools", "stack", "ticks", "instructions")}
    ))  # fmt: skip
    assert rr["passed"], rr["findings"]
    assert rr["max_lsb_diff"] is not None and rr["max_lsb_diff"] <= 1.0
    assert rr["alternate_checked"], "the outputs were not checked against a second input"
    assert not any(o["saturated"] for o in rr["outputs"])
    pools = {p["name"]: p for p in rr["pools"]}
    planned = [p for n, p in pools.items() if n.startswith("planned_")]
    assert planned and all(p["used"] == p["reserved"] for p in planned), planned
    assert 0 < pools["method"]["used"] <= pools["method"]["reserved"]
    assert rr["stack"] and 0 < rr["stack"]["used"] < rr["stack"]["reserved"]
    assert rr["runs"] == 2 and len(set(rr["ticks_per_run"])) == 1 and rr["ticks"] > 0
    assert rr["instructions"] > 100_000


@pytest.mark.slow
def test_reference_outputs_run_the_saved_quantized_program(tmp_path):
    """A real PT2E-quantized torch.export program (.pt2) is the host reference for any input."""
    import torch
    from executorch.backends.cortex_m.quantizer.quantizer import CortexMQuantizer
    from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e

    from armgen.model.reference import reference_outputs
    from armgen.model.tensors import dequantize

    class Tiny(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = torch.nn.Conv2d(3, 4, 3)
            self.fc = torch.nn.Linear(4 * 6 * 6, 5)

        def forward(self, x):
            return self.fc(torch.relu(self.conv(x)).flatten(1))

    torch.manual_seed(0)
    x = torch.randn(1, 3, 8, 8)
    graph = torch.export.export(Tiny().eval(), (x,)).module(check_guards=False)
    prepared = prepare_pt2e(graph, CortexMQuantizer())
    prepared(x)
    converted = convert_pt2e(prepared)
    torch.export.save(torch.export.export(converted, (x,)), tmp_path / "tiny.pt2")

    rep = _report(files={"quantized_program": "tiny.pt2"})
    rep = ProgramReport(**{**rep.__dict__,
                           "inputs": (TensorInfo(0, (1, 3, 8, 8), "int8", (0, 1, 2, 3), 192, 0.03, 2),),
                           "outputs": (TensorInfo(0, (1, 5), "int8", (0, 1), 5, 0.05, 0),)})  # fmt: skip
    q = np.random.default_rng(1).integers(-128, 128, (1, 3, 8, 8)).astype(np.int8)
    (out,) = reference_outputs(rep, tmp_path, [q])
    want = converted(torch.from_numpy(dequantize(q, rep.inputs[0].scale, rep.inputs[0].zero_point).astype(np.float32)))
    assert out.shape == (1, 5) and np.allclose(out, want.detach().numpy())
    with pytest.raises(ModelError, match="not found"):
        reference_outputs(ProgramReport(**{**rep.__dict__, "files": {"quantized_program": "nope.pt2"}}), tmp_path, [q])


@pytest.mark.slow
def test_reference_outputs_run_the_lowered_program(tmp_path):
    """A Cortex-M compile saves the lowered program; the run stage's reference for any input is
    that program on the host (cortex_m host kernels), equal to the saved reference on its input."""
    from armgen.model.compile import compile_model
    from armgen.model.reference import alternate_inputs, load_reference, reference_outputs, reference_program

    result = compile_model("ic", "cortex-m55", out_dir=tmp_path)  # 3-channel channels_last input
    report = result.report
    ref = present(load_reference(report, tmp_path))
    assert ref.kind == "lowered_cortex_m"
    path, kind = reference_program(report, tmp_path)
    assert (path, kind) == (result.files["lowered_program"], "lowered_cortex_m")
    (out,) = reference_outputs(report, tmp_path, list(ref.inputs))
    assert out.dtype == np.int8 and np.array_equal(out, ref.outputs[0])
    # without the lowered program (older compiles): the quantized model, which says what it is
    older = ProgramReport(**{**report.__dict__, "files": {k: v for k, v in report.files.items() if k != "lowered_program"}})
    assert reference_program(older, tmp_path)[1] == "quantized_model"
    (out_q,) = reference_outputs(older, tmp_path, list(ref.inputs))
    assert out_q.shape == out.shape and out_q.dtype == np.float32

    # The run's second input and its reference outputs are saved by the compile stage (so a run does
    # not load the program for them), and equal what the lowered program gives on the host.
    alt = alternate_inputs(report.inputs)
    assert ref.alternate_inputs is not None and np.array_equal(ref.alternate_inputs[0], alt[0])
    (alt_out,) = reference_outputs(report, tmp_path, alt)
    assert np.array_equal(present(ref.alternate_outputs)[0], alt_out)
    # With a cache folder, a second call with the same program and input reads the kept outputs.
    cache = tmp_path / "cache"
    (first,) = reference_outputs(report, tmp_path, alt, cache_dir=cache)
    (kept,) = list(cache.glob("reference-*.npz"))
    np.savez(kept, output_0=np.full_like(first, 7))
    (second,) = reference_outputs(report, tmp_path, alt, cache_dir=cache)
    assert np.array_equal(first, alt_out) and np.all(second == 7)
    (other,) = reference_outputs(report, tmp_path, list(ref.inputs), cache_dir=cache)  # another input: computed
    assert np.array_equal(other, ref.outputs[0]) and len(list(cache.glob("reference-*.npz"))) == 2


def test_qemu_that_cannot_start_is_one_line(probe):
    bogus = Emulator(board="x", qemu_machine="no-such-machine", qemu_cpu="cortex-m55")
    run = run_qemu(probe("mps3-an547", "ok"), bogus, timeout=30)
    with pytest.raises(RunError, match="QEMU could not start: qemu-system-arm: unsupported machine type"):
        check_run(run, parse_firmware_output(run.console))
    with pytest.raises(RunError, match="firmware ELF not found"):
        run_qemu(Path("/nonexistent/fw.elf"), bogus)


def test_a_saturated_output_the_float_model_agrees_with_is_not_degenerate():
    """Every value at -128 is the right answer when the float model's output is there too (a sigmoid of
    zeros, calibrated on that one input); it stays an error when the float model says otherwise."""
    from types import SimpleNamespace

    from armgen.firmware.run import saturation_explained
    from armgen.firmware.run_report import compare_outputs

    info = TensorInfo(index=0, shape=(1, 4), dtype="int8", dim_order=(0, 1), nbytes=4, scale=0.01, zero_point=-128)
    fw = [np.full((1, 4), -128, dtype=np.int8)]
    checks, findings = compare_outputs(fw, [np.full((1, 4), -128, dtype=np.int8)], [info])
    assert [f.severity for f in findings] == ["error"] and "degenerate" in findings[0].message
    report: Any = SimpleNamespace(outputs=[info])
    right = saturation_explained(findings, checks, (np.full((1, 4), 0.004),), report)
    assert [f.severity for f in right] == ["info"] and "so is the float model's output" in right[0].message
    wrong = saturation_explained(findings, checks, (np.full((1, 4), 0.5),), report)
    assert wrong == findings
