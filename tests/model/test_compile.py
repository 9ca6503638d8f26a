"""The compile stage end to end: real torch.export, real ExecuTorch lowering, real Vela.

Every (sample, target) is compiled once per test session (the ``compiled`` fixture); each test
then reads the written ``.pte`` back with ExecuTorch's own deserializer and checks the report
against it, so the numbers the firmware pools are sized from are exact.
"""

from __future__ import annotations

import hashlib
import json
import struct

import numpy as np
import pytest
import torch
from click.testing import CliRunner

from _narrow import present
from _programs import compile_result
from armgen.cli import main
from armgen.model.compile import compile_model
from armgen.model.program_report import ProgramReport

CASES = [
    ("kws", "cortex-m55"),
    ("vww", "cortex-m55"),
    ("ic", "cortex-m55"),
    ("ad", "cortex-m55"),
    ("kws", "ethos-u55-128"),
    ("kws", "ethos-u85-256"),
]

_PRIM = ("executorch_prim::", "aten::sym_size", "aten::sym_numel", "aten::_local_scalar_dense")


@pytest.fixture(scope="session")
def compiled():
    """Return a function (sample, target) -> CompileResult with armgen's defaults for the target: the
    session's compile cache (tests/_programs.py), so a pair another test file compiles is compiled once."""
    return compile_result


def _program(path):
    from executorch.exir._serialize._program import deserialize_pte_binary

    return deserialize_pte_binary(path.read_bytes()).program


@pytest.mark.slow
@pytest.mark.parametrize(("sample", "target"), CASES)
def test_report_equals_program(compiled, sample, target):
    result = compiled(sample, target)
    data = result.pte_path.read_bytes()
    program = _program(result.pte_path)
    plan = program.execution_plan[0]
    report = ProgramReport.load(result.report_path)
    assert report == result.report

    # memory plan, sizes, identity
    assert report.planned_buffers == tuple(plan.non_const_buffer_sizes[1:])
    assert report.pte_size == len(data)
    assert report.pte_sha256 == hashlib.sha256(data).hexdigest()
    assert report.file_identifier == data[4:8].decode() == "ET12"
    assert report.constant_data_size == sum(len(b.storage) for b in program.constant_buffer)
    assert report.method == plan.name == "forward"

    # operator table, in order, with call counts counted here
    assert [(o.name, o.overload) for o in report.operators] == [(op.name, op.overload) for op in plan.operators]
    calls = [0] * len(plan.operators)
    n_kernel_calls = n_delegate_calls = 0
    for chain in plan.chains:
        for instr in chain.instructions:
            kind = type(instr.instr_args).__name__
            if kind == "KernelCall":
                calls[instr.instr_args.op_index] += 1
                n_kernel_calls += 1
            elif kind == "DelegateCall":
                n_delegate_calls += 1
    assert [o.calls for o in report.operators] == calls
    for o in report.operators:
        expected = "prim" if o.name.startswith(_PRIM) else o.name.split("::")[0]
        expected = {"aten": "portable", "dim_order_ops": "portable", "quantized_decomposed": "quantized"}.get(
            expected, expected
        )
        assert o.library == expected, o

    # stats
    s = report.stats
    assert s.num_values == len(plan.values)
    assert s.num_operators == len(plan.operators)
    assert s.num_kernel_calls == n_kernel_calls
    assert s.num_delegate_calls == n_delegate_calls == len(report.delegates)
    assert s.num_instructions == sum(len(c.instructions) for c in plan.chains)
    assert s.num_tensors == sum(type(v.val).__name__ == "Tensor" for v in plan.values)
    assert (s.num_inputs, s.num_outputs) == (len(plan.inputs), len(plan.outputs)) == (1, 1)

    # I/O: int8 at the boundary, with the quantization the firmware needs
    for info, vidx in ((report.inputs[0], plan.inputs[0]), (report.outputs[0], plan.outputs[0])):
        t = plan.values[vidx].val
        assert info.shape == tuple(t.sizes)
        assert info.dim_order == tuple(t.dim_order)
        assert info.dtype == "int8" and t.scalar_type.name == "CHAR"
        assert info.nbytes == int(np.prod(t.sizes))
        assert info.scale is not None and info.scale > 0 and -128 <= present(info.zero_point) <= 127

    assert report.target == target
    assert report.executorch_version == "1.5.1"
    npu = {"vela_summary", "host_program"} | {f"delegate{i}_tosa" for i in range(len(report.delegates))}
    assert set(report.files) == {"quantized_program", "reference", "float_program", "float_reference"} | (
        npu if target.startswith("ethos") else {"lowered_program"}
    )


@pytest.mark.slow
@pytest.mark.parametrize("sample", ["kws", "vww", "ic", "ad"])
def test_cortex_m55_lowers_everything_to_cmsis_nn(compiled, sample):
    report = compiled(sample, "cortex-m55").report
    names = [o.name for o in report.operators]
    assert "dim_order_ops::_clone_dim_order" not in names  # channels_last input: no stray clone
    assert all(o.library in ("cortex_m", "prim") for o in report.operators), names
    assert report.delegates == ()
    assert report.temp_allocator_size == 0
    assert report.cpu == "cortex-m55" and report.backend == "cortex-m"


@pytest.mark.slow
def test_kws_cortex_m55_memory_plan_matches_the_hand_made_build(compiled):
    # firmware-build-notes.md: DS-CNN on M55 planned 20,464 B and ran bit-identical on QEMU.
    assert compiled("kws", "cortex-m55").report.planned_buffers == (20464,)


@pytest.mark.slow
@pytest.mark.parametrize("target", ["ethos-u55-128", "ethos-u85-256"])
def test_ethos_u_delegate_facts_come_from_the_blob(compiled, target):
    from executorch.backends.arm.scripts.get_ethosu_scratch_from_pte import get_scratch_size_from_delegate

    result = compiled("kws", target)
    program = _program(result.pte_path)
    plan = program.execution_plan[0]
    report = result.report
    assert report.backend == "ethos-u" and report.cpu == "cortex-m55"
    assert len(report.delegates) == len(plan.delegates) >= 1
    for d, pd in zip(report.delegates, plan.delegates, strict=True):
        blob = program.backend_delegate_data[pd.processed.index].data
        assert d.backend_id == pd.id == "EthosUBackend"
        assert d.blob_size == len(blob)
        assert d.vela is not None
        assert d.vela.scratch_size == get_scratch_size_from_delegate(blob)  # upstream's own reader
        assert d.vela.accelerator_config == target
        assert d.vela.command_stream_size > 0 and d.vela.weights_size >= 0
        assert d.vela.cycles is not None and d.vela.cycles > 0
        # Vela prints SRAM use in KiB with two decimals; the scratch area is what it counts.
        assert d.vela.sram_bytes is not None and abs(d.vela.sram_bytes - d.vela.scratch_size) <= 10
    expected_defaults = {
        "ethos-u55-128": ("Ethos_U55_High_End_Embedded", "Shared_Sram"),
        "ethos-u85-256": ("Ethos_U85_SYS_DRAM_Mid", "Sram_Only"),
    }[target]
    assert {(d.vela.system_config, d.vela.memory_mode) for d in report.delegates} == {expected_defaults}
    # The temp allocator is reset after every instruction, so the largest scratch (16-aligned) is the need.
    assert report.temp_allocator_size == -(-max(d.vela.scratch_size for d in report.delegates) // 16) * 16
    # non-delegated quantize/dequantize are the cortex_m ones, never quantized_decomposed
    assert not any(o.name.startswith("quantized_decomposed::") for o in report.operators)


@pytest.mark.slow
@pytest.mark.parametrize("target", ["ethos-u55-128", "ethos-u85-256"])
def test_kws_runs_entirely_on_the_npu(compiled, target):
    # The sample's global average pool has stride 1, which the U55 accepts (stride <= 3).
    report = compiled("kws", target).report
    assert report.operators == ()
    assert len(report.delegates) == 1


@pytest.mark.slow
@pytest.mark.parametrize(("sample", "target"), [("kws", "cortex-m55"), ("ad", "cortex-m55"), ("kws", "ethos-u85-256")])
def test_reference_input_is_the_firmware_input_and_outputs_are_not_degenerate(compiled, sample, target):
    import torchao.quantization.pt2e.quantize_pt2e  # noqa: F401 - registers quantized_decomposed ops

    result = compiled(sample, target)
    report = result.report
    ref = np.load(result.pte_path.parent / report.files["reference"])
    inp, out = report.inputs[0], report.outputs[0]
    x_q = ref["input_0"]
    assert x_q.dtype == np.int8
    assert x_q.shape == tuple(inp.shape[d] for d in inp.dim_order)
    assert ref["output_0"].dtype == np.int8 and ref["output_0"].shape == out.shape

    # the firmware's input bytes are the float input quantized with the report's parameters
    x = torch.from_numpy(ref["float_input_0"])
    q = torch.clamp(torch.round(x / inp.scale) + inp.zero_point, -128, 127).to(torch.int8).numpy()
    assert np.array_equal(q.transpose(inp.dim_order), x_q)

    # the float view is the int8 output dequantized with the report's parameters
    want_f = (ref["output_0"].astype(np.float32) - out.zero_point) * np.float32(out.scale)
    if target.startswith("cortex-m"):
        assert np.array_equal(ref["float_output_0"], want_f)
    # trained weights: a real, non-saturated answer (not all one value)
    assert len(np.unique(ref["output_0"])) > 2


@pytest.mark.slow
def test_ethos_u_reference_is_the_saved_quantized_program(compiled):
    """A delegate cannot run on the host: the reference is the quantized model's, and says so."""
    import torchao.quantization.pt2e.quantize_pt2e  # noqa: F401 - registers quantized_decomposed ops

    result = compiled("kws", "ethos-u85-256")
    report = result.report
    ref = np.load(result.pte_path.parent / report.files["reference"])
    assert str(ref["reference_kind"].reshape(-1)[0]) == "quantized_model"
    out = report.outputs[0]
    ep = torch.export.load(str(result.pte_path.parent / report.files["quantized_program"]))
    y = ep.module()(torch.from_numpy(ref["float_input_0"])).detach().numpy()
    y_q = torch.clamp(torch.round(torch.from_numpy(y) / out.scale) + out.zero_point, -128, 127).to(torch.int8)
    assert np.array_equal(y_q.numpy(), ref["output_0"])


_ROUND_TRIP = """
import json, sys
import numpy as np, torch
from armgen.model.lowered_program import load_lowered_program
ep = load_lowered_program(sys.argv[1])
ref = np.load(sys.argv[2])
dim_order = json.loads(sys.argv[3])
x = torch.from_numpy(ref["input_0"]).permute(*np.argsort(dim_order).tolist())  # memory order -> logical
with torch.no_grad():
    y = ep.module()(x)
print(json.dumps(y.numpy().reshape(-1).tolist()))
"""


@pytest.mark.slow
@pytest.mark.parametrize("sample", ["kws", "vww"])
def test_cortex_m_reference_is_the_lowered_program_on_the_firmware_input(compiled, sample):
    """output_0 is the lowered program (cortex_m host kernels = CMSIS-NN's arithmetic, which the
    firmware matches bit for bit) on input_0 exactly, also after loading it in a fresh process."""
    import subprocess
    import sys

    from armgen.model.lowered_program import load_lowered_program

    result = compiled(sample, "cortex-m55")
    report = result.report
    inp = report.inputs[0]
    ref_path = result.files["reference"]
    lowered_path = result.files["lowered_program"]
    assert lowered_path.name == report.files["lowered_program"] == f"{sample}.lowered.pt2"
    ref = np.load(ref_path)
    assert str(ref["reference_kind"].reshape(-1)[0]) == "lowered_cortex_m"

    # in this process: memory-order bytes -> logical shape with strides in the dim order
    x = torch.from_numpy(ref["input_0"]).permute(*np.argsort(inp.dim_order).tolist())
    with torch.no_grad():
        y = load_lowered_program(lowered_path).module()(x)
    assert y.dtype == torch.int8
    assert np.array_equal(y.numpy(), ref["output_0"])

    # in a fresh process (nothing registered yet): the same int8 values
    proc = subprocess.run(
        [sys.executable, "-c", _ROUND_TRIP, str(lowered_path), str(ref_path), json.dumps(list(inp.dim_order))],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == ref["output_0"].reshape(-1).tolist()

    # the quantized model before lowering is a different reference (not CMSIS-NN's arithmetic);
    # both agree on the shape and roughly on the values
    import torchao.quantization.pt2e.quantize_pt2e  # noqa: F401

    qep = torch.export.load(str(result.files["quantized_program"]))
    xf = torch.from_numpy(ref["float_input_0"])
    if xf.dim() == 4:
        xf = xf.to(memory_format=torch.channels_last)
    yq = qep.module()(xf).detach().numpy()
    out = report.outputs[0]
    yq_q = np.clip(np.round(yq / out.scale) + out.zero_point, -128, 127).astype(np.int8)
    lsb = int(np.abs(yq_q.astype(int) - ref["output_0"].astype(int)).max())
    print(f"\n{sample}: lowered vs quantized-model reference: max {lsb} LSB")
    assert lsb <= 16


@pytest.mark.slow
def test_compiling_twice_is_byte_identical(compiled, tmp_path):
    first = compiled("kws", "cortex-m55")
    again = compile_model("kws", "cortex-m55", out_dir=tmp_path)
    assert again.pte_path.read_bytes() == first.pte_path.read_bytes()
    assert again.report_path.read_text() == first.report_path.read_text()
    for role in ("reference", "quantized_program", "lowered_program", "float_program", "float_reference"):
        assert again.files[role].read_bytes() == first.files[role].read_bytes(), role


@pytest.mark.slow
@pytest.mark.parametrize(("sample", "target"), [("kws", "cortex-m55"), ("ad", "cortex-m55")])
def test_report_says_how_far_int8_is_from_float(compiled, sample, target):
    """The quality figures on the calibration inputs, and the float side saved for `armgen run`."""
    from armgen.model.reference import float_model_outputs, float_reference, load_reference

    result = compiled(sample, target)
    report = result.report
    (q,) = report.quality
    assert report.calibration_samples == 8 and q["samples"] == 8
    assert report.classifier == (sample == "kws") and (q["top1_agreement"] is None) == (sample == "ad")
    assert q["max_abs_error"] > 0 and isinstance(q["snr_db"], float) and q["snr_db"] > 0  # close, not equal
    if not report.untrained_weights:  # measured 21.4 dB (kws) and 27.6 dB (ad) with the trained weights
        assert q["snr_db"] > 15
    assert any(n.startswith("int8 against the float model") for n in result.notes)
    # the float model's outputs for the reference input, and the float program that recomputes them
    rdir = result.pte_path.parent
    floats = present(float_reference(report, rdir))
    ref = present(load_reference(report, rdir))
    again = float_model_outputs(report, rdir, [np.load(rdir / report.files["float_reference"])["input_0"]])
    assert np.allclose(again[0], floats[0], atol=1e-6)
    assert floats[0].shape == ref.outputs[0].shape


@pytest.mark.slow
def test_inspect_prints_the_same_report_as_table_and_json(compiled):
    result = compiled("kws", "ethos-u55-128")
    runner = CliRunner()
    as_json = runner.invoke(main, ["inspect", str(result.pte_path), "--json"])
    assert as_json.exit_code == 0, as_json.output
    assert json.loads(as_json.stdout) == json.loads(result.report_path.read_text())
    table = runner.invoke(main, ["inspect", str(result.pte_path)], terminal_width=250)
    assert table.exit_code == 0, table.output
    report = result.report
    for o in report.operators:
        assert o.name in table.stdout
    for b in report.planned_buffers:
        assert f"{b} B" in table.stdout
    for d in report.delegates:
        assert f"{d.vela.scratch_size} B" in table.stdout and f"{d.blob_size} B" in table.stdout
    assert report.pte_sha256 in table.stdout


@pytest.mark.slow
def test_inspect_without_sidecar_reads_the_program_alone(compiled, tmp_path):
    result = compiled("ad", "cortex-m55")
    lone = tmp_path / "lone.pte"
    lone.write_bytes(result.pte_path.read_bytes())
    runner = CliRunner()
    out = runner.invoke(main, ["inspect", str(lone), "--json"])
    assert out.exit_code == 0, out.output
    data = json.loads(out.stdout)
    assert data["planned_buffers"] == list(result.report.planned_buffers)
    assert data["operators"] == [o.__dict__ for o in result.report.operators]
    assert data["inputs"][0]["scale"] is None  # quantization is not stored in the .pte itself
    assert struct.unpack("<I", lone.read_bytes()[:4])[0] > 0
