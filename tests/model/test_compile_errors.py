"""Bad input to `armgen compile` / `armgen inspect`: one line, exit code 2, nothing half-written."""

from __future__ import annotations

import textwrap

import pytest
from click.testing import CliRunner

from armgen.cli import main


def _run(args):
    result = CliRunner().invoke(main, args)
    return result.exit_code, result.stderr, result.stdout


def _assert_one_line_error(code, err, *needles):
    assert code == 2, err
    lines = [ln for ln in err.splitlines() if ln.startswith("armgen: error:")]
    assert len(lines) == 1, err
    for n in needles:
        assert n in lines[0], lines[0]
    assert "Traceback" not in err


def _write(path, text):
    path.write_text(textwrap.dedent(text))
    return path


def test_missing_model_file(tmp_path):
    code, err, _ = _run(["compile", str(tmp_path / "nope.py"), "--target", "cortex-m55", "-o", str(tmp_path / "o")])
    _assert_one_line_error(code, err, "nope.py", "model file not found")
    assert not (tmp_path / "o").exists()


def test_file_not_defining_the_model(tmp_path):
    f = _write(tmp_path / "empty_model.py", "x = 1\n")
    code, err, _ = _run(["compile", str(f), "--target", "cortex-m55", "-o", str(tmp_path / "o")])
    _assert_one_line_error(code, err, "empty_model.py", "does not define", "model", "example_inputs")
    assert "hint:" in err


def test_file_without_model_hints_at_its_own_factories(tmp_path):
    # issue 27, item 4: the hint named `make_model` whatever the file held
    f = _write(
        tmp_path / "factories.py",
        """
        import torch
        from torch.nn import Linear


        def build_net():
            return torch.nn.Linear(4, 2), (torch.zeros(1, 4),)


        def scale(x):
            return x * 2


        def _private():
            return None


        net = Linear(4, 2)
        """,
    )
    code, err, _ = _run(["compile", str(f), "--target", "cortex-m55", "-o", str(tmp_path / "o")])
    _assert_one_line_error(code, err, "does not define module-level model and example_inputs")
    hint = next(ln for ln in err.splitlines() if "hint:" in ln)
    assert f"{f}:build_net" in hint and f"{f}:net" in hint, hint
    assert "make_model" not in hint and "scale" not in hint and "_private" not in hint and "Linear" not in hint
    bare = _write(tmp_path / "bare.py", "x = 1\n")
    code, err, _ = _run(["compile", str(bare), "--target", "cortex-m55", "-o", str(tmp_path / "o")])
    assert "make_model" not in err and f"{bare}:<function>" in err, err


def test_factory_attribute_missing(tmp_path):
    f = _write(tmp_path / "m.py", "x = 1\n")
    code, err, _ = _run(["compile", f"{f}:make", "--target", "cortex-m55", "-o", str(tmp_path / "o")])
    _assert_one_line_error(code, err, "does not define 'make'")


def test_forward_fails_on_example_inputs(tmp_path):
    f = _write(
        tmp_path / "bad_shape.py",
        """
        import torch
        model = torch.nn.Linear(10, 2)
        example_inputs = (torch.ones(1, 5),)
        """,
    )
    code, err, _ = _run(["compile", str(f), "--target", "cortex-m55", "-o", str(tmp_path / "o")])
    _assert_one_line_error(code, err, "bad_shape.py", "forward() failed", "(1, 5)")
    assert not (tmp_path / "o").exists()


def test_unknown_target(tmp_path):
    code, err, _ = _run(["compile", "kws", "--target", "ethos-u99-7", "-o", str(tmp_path / "o")])
    _assert_one_line_error(code, err, "unknown target 'ethos-u99-7'")
    assert "ethos-u85-256" in err  # the hint lists the valid targets
    assert not (tmp_path / "o").exists()


def test_cpu_must_match_a_cortex_m_target(tmp_path):
    code, err, _ = _run(["compile", "kws", "--target", "cortex-m55", "--cpu", "cortex-m4", "-o", str(tmp_path)])
    _assert_one_line_error(code, err, "--cpu cortex-m4 differs from target cortex-m55")


def test_inspect_non_pte_file(tmp_path):
    f = tmp_path / "notes.pte"
    f.write_text("this is not a program\n")
    code, err, out = _run(["inspect", str(f)])
    _assert_one_line_error(code, err, "notes.pte", "not an ExecuTorch program")
    assert out == ""


def test_inspect_missing_file(tmp_path):
    code, err, _ = _run(["inspect", str(tmp_path / "gone.pte")])
    _assert_one_line_error(code, err, "gone.pte", "no such file")


def test_inspect_truncated_pte(tmp_path):
    # A real program header (b"....ET12") followed by too few bytes: the committed kws program fixture cut.
    from _programs import program

    data = program("kws-cortex-m55")[1].read_bytes()
    assert data[4:8] == b"ET12"
    f = tmp_path / "cut.pte"
    f.write_bytes(data[: len(data) // 3])
    code, err, _ = _run(["inspect", str(f), "--json"])
    _assert_one_line_error(code, err, "cut.pte", "truncated or corrupt")


@pytest.mark.slow
def test_operator_without_kernel_fails_early_with_its_name(tmp_path):
    # Upstream issue 21950: this exports fine and dies at load time with OperatorMissing.
    f = _write(
        tmp_path / "spectrum.py",
        """
        import torch
        class Spectrum(torch.nn.Module):
            def forward(self, x):
                return torch.fft.rfft(x).abs().pow(2)
        model = Spectrum()
        example_inputs = (torch.randn(1, 64),)
        """,
    )
    out_dir = tmp_path / "o"
    code, err, _ = _run(["compile", str(f), "--target", "cortex-m55", "-o", str(out_dir)])
    _assert_one_line_error(code, err, "fft")
    assert "operator aten.fft_rfft" in err and "is not in armgen's Cortex-M operator matrix" in err  # after export
    assert not out_dir.exists() or not any(out_dir.iterdir())  # nothing half-written


def _raised_from(filename: str) -> BaseException:
    """An exception raised by code whose file is ``filename`` (as a frame of that package would be)."""
    namespace: dict = {}
    exec(compile("def fail():\n    raise ValueError('bad')\n", filename, "exec"), namespace)  # noqa: S102
    try:
        namespace["fail"]()
    except ValueError as exc:
        return exc
    raise AssertionError("fail() did not raise")


def test_only_vela_itself_gets_the_vela_hint():
    """ExecuTorch's Ethos-U backend lives in executorch/backends/arm/ethosu/: a failure of its passes
    there is not Vela's, though the path has an "ethosu" folder too."""
    import importlib.util
    import os

    from armgen.model.vela import raised_in_vela

    vela, executorch = importlib.util.find_spec("ethosu"), importlib.util.find_spec("executorch")
    assert vela is not None and vela.submodule_search_locations  # namespace packages, both
    assert executorch is not None and executorch.submodule_search_locations
    vela_root, executorch_root = list(vela.submodule_search_locations)[0], list(executorch.submodule_search_locations)[0]
    assert raised_in_vela(_raised_from(os.path.join(vela_root, "vela", "vela.py")))
    assert not raised_in_vela(_raised_from(os.path.join(executorch_root, "backends", "arm", "ethosu", "backend.py")))
