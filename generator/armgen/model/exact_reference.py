"""An exact reference for an Ethos-U program, and what tells it apart from the quantized reference.

The Ethos-U program's reference (:func:`armgen.model.reference.reference_outputs`) is the quantized
``torch.export`` program: fake quantization, float32 arithmetic between the quantize points, each
average pool as a float mean. Three things make that reference differ from the integer program the
TOSA graph describes (the first two by more than the run check's 1 LSB on the MLPerf Tiny ``ic`` ResNet):

- **The average pool's zero points in the TOSA graph are not the model's** (ExecuTorch 1.5.1).
  ``RewriteAvgPool2dPass`` (``backends/arm/_passes/rewrite_avg_pool2d_pass.py:55-64``) materializes
  the AVG_POOL2D input and output zero points with ``call_scalar(zp, meta)``, ``meta`` being the
  pool's own, output qparams included; ``call_scalar`` (``backends/arm/_passes/arm_pass.py:176-202``)
  makes an ``aten.full`` carrying that meta, and ``ComputeConstantOpsAOTPass.compute_node_aot``
  (``backends/arm/_passes/fuse_constant_ops_pass.py:314-320``) evaluates it and *quantizes the
  constant* with those qparams: zero point 17 at scale 0.1116 becomes round(17 / 0.1116) + 17 = 169,
  saturated to 127. With the input and output zero points equal, the pool's result moves only on
  exact ties of the average (the sum of ``q - zp`` changes sign, and TOSA rounds ties away from zero).
- **TOSA's AVG_POOL2D rounds an exact tie of the sum away from zero**, the reference's float mean
  rounds it half to even: with the model's own zero points ``ic``'s first representative input would
  still be 10 LSB off (12 with the graph's).
- **The reference's float32 arithmetic** rounds some values differently from exact arithmetic
  (``ic``'s fourth representative input: one of the 16384 ``conv2d_1``/``relu_1`` outputs is exactly
  51.5 LSB, 51.499997 in float32; it does not reach the outputs, whose 8 LSB there are the pool's).

:func:`run_quantized_program` runs the quantized program's graph in float64 (quantize and dequantize
included) with each ``avg_pool2d`` computed as TOSA's integer AVG_POOL2D (TOSA 1.0 specification,
AVG_POOL2D and ``reciprocal_scale``/``apply_scale_32``) with given zero points; :func:`tosa_avg_pool_zero_points`
reads the zero points the delegates' TOSA graphs really carry. :func:`explain_reference` compares the
references layer by layer and names each cause with its figures. Whether a host run is explained by
them is the run stage's decision (``armgen.firmware.tosa_run``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from armgen.errors import ModelError
from armgen.model.program_report import ProgramReport
from armgen.model.tensors import dequantize


@dataclass(frozen=True)
class PoolZeroPoints:
    """One average pool of the quantized program and its zero points.

    Attributes:
        layer: the ``avg_pool2d`` node's name in the quantized program.
        intended: (input, output) zero points of the model's qparams (the dequantize before the pool,
            the quantize after it). graph: those of the TOSA graph's AVG_POOL2D (None: not read).
        output_scale: the pool's output scale (the quantize after it).
    """

    layer: str
    intended: tuple[int, int]
    graph: tuple[int, int] | None
    output_scale: float


@dataclass(frozen=True)
class Trace:
    """One run of the quantized program: its outputs and every quantize node's integers.

    Attributes:
        outputs: one array per program output (what the graph returns: int8, or float64 when it
            dequantizes its outputs itself).
        quantized: ``{layer: int values}``, the layer being the node each quantize reads (program order).
        pools: the average pools met, in program order.
    """

    outputs: tuple[np.ndarray, ...]
    quantized: dict[str, np.ndarray]
    pools: tuple[PoolZeroPoints, ...] = field(default=())


def tosa_avg_pool_zero_points(graphs: Sequence[bytes]) -> list[tuple[int, int]]:
    """The (input, output) zero points of every AVG_POOL2D in TOSA flatbuffers, graph then operator order.

    Raises:
        ModelError: a graph cannot be parsed, or a zero point is not a one-value constant.
    """
    from tosa.Op import Op
    from tosa.TosaGraph import TosaGraph

    out: list[tuple[int, int]] = []
    for k, buf in enumerate(graphs):
        try:
            graph = TosaGraph.GetRootAsTosaGraph(buf, 0)
            for r in range(graph.RegionsLength()):
                region = graph.Regions(r)
                for b in range(region.BlocksLength()):
                    block = region.Blocks(b)
                    tensors = {block.Tensors(i).Name().decode(): block.Tensors(i) for i in range(block.TensorsLength())}
                    for i in range(block.OperatorsLength()):
                        op = block.Operators(i)
                        if op.Op() != Op.AVG_POOL2D:
                            continue
                        zps = []
                        for j in (1, 2):  # AVG_POOL2D(input, input_zp, output_zp)
                            data = np.asarray(tensors[op.Inputs(j).decode()].DataAsNumpy()).view(np.int8)
                            if data.size != 1:
                                raise ModelError(f"AVG_POOL2D zero point of {data.size} bytes in TOSA graph {k}")
                            zps.append(int(data[0]))
                        out.append((zps[0], zps[1]))
        except ModelError:
            raise
        except Exception as exc:  # noqa: BLE001 - the flatbuffer reader raises many types
            raise ModelError(f"cannot read TOSA graph {k}: {type(exc).__name__}: {exc}") from None
    return out


def tosa_average(q: np.ndarray, kernel: tuple[int, int], stride: tuple[int, int], zero_points: tuple[int, int],
                 qmin: int, qmax: int) -> np.ndarray:
    """TOSA AVG_POOL2D on int8 values without padding (TOSA 1.0 specification: ``acc`` the sum of
    ``value - input_zp`` over the window, ``apply_scale_32(acc, reciprocal_scale(count))`` without
    double rounding, ``+ output_zp``, clipped). Arrays NCHW (or CHW); the result is int64."""
    import torch

    x = torch.from_numpy(np.asarray(q, np.float64) - zero_points[0])
    acc = torch.nn.functional.avg_pool2d(x, list(kernel), list(stride), divisor_override=1).numpy()
    acc = np.rint(acc).astype(np.int64)  # whole numbers: a float64 sum of at most 2^16 int8 values
    count = kernel[0] * kernel[1]
    k = (count - 1).bit_length()  # (1 << k) / 2 < count <= (1 << k): 32 - clz(count - 1)
    multiplier, shift = (((1 << 30) + 1) << k) // count, 30 + k
    result = (acc * multiplier + (1 << (shift - 1))) >> shift  # arithmetic shift: floor
    return np.asarray(np.clip(result + zero_points[1], qmin, qmax))


def _ops() -> dict[str, Any]:
    import torch

    with_quant = torch.ops.quantized_decomposed
    return {"q": with_quant.quantize_per_tensor.default, "dq": with_quant.dequantize_per_tensor.default,
            "dqc": with_quant.dequantize_per_channel.default, "pool": torch.ops.aten.avg_pool2d.default}


def _pool_args(node: Any) -> tuple[tuple[int, int], tuple[int, int]] | None:
    """(kernel, stride) of an ``avg_pool2d`` node TOSA's AVG_POOL2D computes alike, or None (padding,
    ceil mode, divisor override)."""
    args = list(node.args) + [None] * (7 - len(node.args))
    kernel = tuple(args[1]) * (2 if len(args[1]) == 1 else 1)
    stride = tuple(args[2] or kernel) * (2 if args[2] and len(args[2]) == 1 else 1)
    if any(args[3] or []) or args[4] or args[6] is not None:
        return None
    return (int(kernel[0]), int(kernel[1])), (int(stride[0]), int(stride[1]))


def run_quantized_program(program: Any, inputs: Sequence[np.ndarray], report: ProgramReport, *, exact: bool,
                          integer_pools: bool = True,
                          pool_zero_points: Sequence[tuple[int, int]] | None = None) -> Trace:
    """Run the quantized ``torch.export`` program and record every quantize node's integers.

    Args:
        program: the loaded quantized program (``report.files["quantized_program"]``).
        inputs: program inputs (logical order, program dtype: int8 ones are dequantized when the program
            takes float).
        exact: False: the program as it is (float32; the outputs are the quantized reference's). True:
            float64 for every value between the quantize points, each ``avg_pool2d`` between a
            dequantize and a quantize as TOSA's integer AVG_POOL2D (:func:`tosa_average`).
        integer_pools: with ``exact``, False keeps the pools as float64 means (the reference's pool,
            exactly computed).
        pool_zero_points: with ``exact``, the (input, output) zero points of the k-th pool (the TOSA
            graph's, :func:`tosa_avg_pool_zero_points`); None: the model's own.

    Raises:
        ModelError: the program cannot run, or (``exact``) holds a quantize op or pool this cannot
            compute exactly, or ``pool_zero_points`` does not have one pair per pool.
    """
    import torch

    ops = _ops()
    dtype = torch.float64 if exact else torch.float32
    quantized: dict[str, np.ndarray] = {}
    pools: list[PoolZeroPoints] = []

    class Exact(torch.fx.Interpreter):
        def run_node(self, n: Any) -> Any:
            if n.op in ("placeholder", "get_attr", "output") or not exact:
                out = super().run_node(n)
                if exact and isinstance(out, torch.Tensor) and out.is_floating_point():
                    out = out.to(dtype)
            else:
                args, _ = self.fetch_args_kwargs_from_env(n)
                if n.target is ops["q"]:
                    x, scale, zp, qmin, qmax, qdtype = args
                    out = torch.clamp(torch.round(x.to(dtype) / scale) + zp, qmin, qmax).to(qdtype)
                elif n.target is ops["dq"]:
                    out = (args[0].to(dtype) - args[2]) * args[1]
                elif n.target is ops["dqc"]:
                    q, scales, zps, axis = args[:4]
                    shape = [1] * q.dim()
                    shape[axis] = -1
                    out = (q.to(dtype) - zps.to(dtype).reshape(shape)) * scales.to(dtype).reshape(shape)
                elif n.target is ops["pool"] and integer_pools:
                    out = self._pool(n)
                elif "quantized_decomposed" in str(n.target):
                    raise ModelError(f"no exact reference: {n.target} ({n.name}) is not computed exactly here")
                else:
                    out = super().run_node(n)
            if n.op == "call_function" and n.target is ops["q"]:
                quantized[n.args[0].name if hasattr(n.args[0], "name") else n.name] = out.numpy().copy()
            return out

        def _pool(self, n: Any) -> Any:
            src, users = n.args[0], list(n.users)
            geometry = _pool_args(n)
            if (geometry is None or getattr(src, "target", None) is not ops["dq"] or len(users) != 1
                    or users[0].target is not ops["q"]):
                raise ModelError(f"no exact reference: {n.name} is not an int8 average pool TOSA computes alike")
            _, in_scale, in_zp, *_ = src.args
            _, out_scale, out_zp, qmin, qmax, _ = users[0].args
            k = len(pools)
            zps = (int(in_zp), int(out_zp))
            if pool_zero_points is not None:
                if k >= len(pool_zero_points):
                    raise ModelError(f"{len(pool_zero_points)} AVG_POOL2D zero points for more average pools")
                zps = tuple(pool_zero_points[k])  # type: ignore[assignment]
            pools.append(PoolZeroPoints(n.name, (int(in_zp), int(out_zp)),
                                        None if pool_zero_points is None else zps, float(out_scale)))
            q_in = self.env[src.args[0]].numpy()
            q_out = tosa_average(q_in, *geometry, zps, int(qmin), int(qmax))
            # the float the quantize after the pool turns back into q_out exactly
            return torch.from_numpy((q_out.astype(np.float64) - int(out_zp)) * float(out_scale))

    placeholders = [n for n in program.graph.nodes if n.op == "placeholder"
                    and n.name in set(program.graph_signature.user_inputs)]
    args = []
    for i, (arr, info) in enumerate(zip(inputs, report.inputs, strict=True)):
        val = placeholders[i].meta.get("val") if i < len(placeholders) else None
        want_float = val is None or val.dtype.is_floating_point
        x = dequantize(arr, info.scale, info.zero_point) if want_float and info.scale is not None else np.asarray(arr)
        args.append(torch.from_numpy(np.ascontiguousarray(x, np.float64 if exact else np.float32)
                                     if want_float else np.ascontiguousarray(x)))
    try:
        with torch.no_grad():
            out = Exact(program.module(), garbage_collect_values=False).run(*args)
    except ModelError:
        raise
    except Exception as exc:  # noqa: BLE001 - any failure here is one line for the user
        raise ModelError(f"the quantized program fails on the host: {type(exc).__name__}: {exc}") from None
    if pool_zero_points is not None and len(pool_zero_points) != len(pools):
        raise ModelError(f"{len(pool_zero_points)} AVG_POOL2D zero points in the TOSA graphs, "
                         f"{len(pools)} average pools in the quantized program")
    outs = out if isinstance(out, (tuple, list)) else (out,)
    return Trace(tuple(np.asarray(o.detach().numpy()) for o in outs), quantized, tuple(pools))


def _lsb(a: np.ndarray, b: np.ndarray, scale: float | None, zero_point: int | None) -> float:
    """max |a - b| in LSBs of an output (``scale``; integer arrays are dequantized first)."""
    def real(x: np.ndarray) -> np.ndarray:
        x = np.asarray(x).reshape(-1)
        return dequantize(x, scale, zero_point) if np.issubdtype(x.dtype, np.integer) else x.astype(np.float64)

    diff = float(np.max(np.abs(real(a) - real(b)), initial=0.0))
    return round(diff / scale, 3) if scale else diff


@dataclass(frozen=True)
class Cause:
    """One reason the quantized reference differs from the exact one, with its figures.

    Attributes:
        kind: ``"pool_zero_point"`` (a TOSA AVG_POOL2D whose zero points are not the model's) or
            ``"reference_arithmetic"`` (the reference's float32 arithmetic and half-to-even rounding).
        layer: the node of the quantized program where it shows first (``avg_pool2d``, ``relu_1``).
        values_changed / values: how many of the layer's int8 values it changes, of how many.
        layer_max_lsb: the largest change there, in that layer's LSBs.
        output_max_lsb: the largest change it makes at the program's outputs, in output LSBs.
        message: the cause in words, figures included.
    """

    kind: str
    layer: str
    values_changed: int
    values: int
    layer_max_lsb: int
    output_max_lsb: float
    message: str


@dataclass(frozen=True)
class ReferenceExplanation:
    """The exact reference for one input and why the quantized reference differs from it.

    Attributes:
        exact_outputs: the exact reference with the TOSA graphs' own pool zero points (one per output).
        reference_vs_exact_lsb: max difference between the quantized and that exact reference
            (output LSBs, over all outputs).
        causes: what makes them differ, program order; empty when they agree.
    """

    exact_outputs: tuple[np.ndarray, ...]
    reference_vs_exact_lsb: float
    causes: tuple[Cause, ...]


def _first_difference(a: Trace, b: Trace, only: str | None = None) -> tuple[str, int, int, int] | None:
    """(layer, values changed, values, max change) of the first quantize point where ``a`` and ``b``
    differ (program order), or None; ``only``: that layer alone."""
    for layer, x in a.quantized.items():
        y = b.quantized.get(layer)
        if (only is not None and layer != only) or y is None or np.array_equal(x, y):
            continue
        d = np.abs(x.astype(np.int64) - y.astype(np.int64))
        return layer, int(np.count_nonzero(d)), int(d.size), int(d.max())
    return None


def explain_reference(report: ProgramReport, report_dir: Path, inputs: Sequence[np.ndarray],
                      tosa_graphs: Sequence[bytes]) -> ReferenceExplanation:
    """Name what separates the quantized reference from the exact reference with the TOSA graphs' own
    pool zero points, one factor at a time (see :func:`run_quantized_program`):

    1. the reference as it is against float64 arithmetic with the same float-mean pools: the
       reference's float32 arithmetic (``"reference_arithmetic"``, named at the first layer it changes);
    2. those float64 pools against TOSA's integer AVG_POOL2D with the graphs' zero points
       (``"pool_zero_point"`` when they are not the model's, else ``"pool_rounding"``), split in the
       message into TOSA's tie rounding alone (the model's zero points) and the zero points' share.

    Args:
        report / report_dir: the Ethos-U program report and its folder (``files["quantized_program"]``).
        inputs: program inputs (logical order, program dtype).
        tosa_graphs: the delegates' TOSA flatbuffers (delegate order), as handed to Vela.

    Raises:
        ModelError: no quantized program, a TOSA graph that cannot be read, or a program this cannot
            compute exactly (:func:`run_quantized_program`).
    """
    from armgen.model.reference import _load_quantized_program, reference_program

    path, kind = reference_program(report, report_dir)
    if kind != "quantized_model" or not path.is_file():
        raise ModelError(f"no exact reference: the reference is not a saved quantized program ({path})")
    program = _load_quantized_program(path)
    graph_zps = tosa_avg_pool_zero_points(tosa_graphs)
    as_is = run_quantized_program(program, inputs, report, exact=False)
    float_pools = run_quantized_program(program, inputs, report, exact=True, integer_pools=False)
    model_zps = run_quantized_program(program, inputs, report, exact=True)
    graph = run_quantized_program(program, inputs, report, exact=True, pool_zero_points=graph_zps)

    def at_outputs(a: Trace, b: Trace) -> float:
        return max((_lsb(x, y, t.scale, t.zero_point) for x, y, t in zip(a.outputs, b.outputs, report.outputs,
                                                                         strict=True)), default=0.0)

    def changed(a: Trace, b: Trace, layer: str | None = None) -> tuple[str, int, int, int] | None:
        return _first_difference(a, b, only=layer)

    causes: list[Cause] = []
    first = changed(as_is, float_pools)
    if first is not None:
        layer, n, size, most = first
        out = at_outputs(as_is, float_pools)
        causes.append(Cause(
            "reference_arithmetic", layer, n, size, most, out,
            f"the quantized reference computes in float32; in float64 {n} of {size} values of "
            f"{layer} round the other way (by up to {most} LSB: a value on a rounding tie), {out:g} LSB at the "
            "outputs"))
    for pool in graph.pools:
        hit = changed(float_pools, graph, pool.layer)
        if hit is None:
            continue
        _, n, size, most = hit
        out = at_outputs(float_pools, graph)
        rounding = changed(float_pools, model_zps, pool.layer)
        share = (f"with the model's zero points, TOSA's rounding alone (ties of the sum away from zero, where the "
                 f"reference's mean rounds half to even) changes {rounding[1] if rounding else 0} of {size} "
                 f"({at_outputs(float_pools, model_zps):g} LSB at the outputs)")
        if pool.graph is not None and pool.graph != pool.intended:
            zp = pool.intended[1]
            causes.append(Cause(
                "pool_zero_point", pool.layer, n, size, most, out,
                f"the TOSA graph's AVG_POOL2D has zero points {pool.graph[0]}/{pool.graph[1]}, the "
                f"model's are {pool.intended[0]}/{pool.intended[1]} (ExecuTorch's RewriteAvgPool2dPass makes them "
                f"constants carrying the pool's output qparams and ComputeConstantOpsAOTPass quantizes them: "
                f"round({zp}/{pool.output_scale:.4g}) {'-' if zp < 0 else '+'} {abs(zp)} = "
                f"{round(zp / pool.output_scale) + zp}, saturated "
                f"to int8), so exact ties of the average round the other way: {n} of {size} pool outputs by up "
                f"to {most} LSB, {out:g} LSB at the outputs (a lowering defect, not the host run's: Vela "
                f"compiles this graph, so the NPU computes the same); {share}"))
        else:
            causes.append(Cause(
                "pool_rounding", pool.layer, n, size, most, out,
                f"TOSA's AVG_POOL2D rounds exact ties of the sum away from zero, the reference's "
                f"mean rounds them half to even: {n} of {size} pool outputs by up to {most} LSB, {out:g} LSB at "
                "the outputs"))
    return ReferenceExplanation(graph.outputs, at_outputs(as_is, graph), tuple(causes))


__all__ = [
    "Cause",
    "PoolZeroPoints",
    "ReferenceExplanation",
    "Trace",
    "explain_reference",
    "run_quantized_program",
    "tosa_average",
    "tosa_avg_pool_zero_points",
]
