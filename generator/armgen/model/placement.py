"""Where each operator of a program runs: kernel library, data type, the layer it came from, its MACs.

Read from the ``.pte``'s execution plan (one row per kernel call or delegate call, in execution
order); the layer names come from the compile stage (``nn_module_stack`` of the lowered edge
program's nodes, matched to the plan's calls in order), so a ``.pte`` inspected alone has none.
MACs are counted for the ops that multiply and accumulate (convolutions, linear, matrix products):
output elements x the weight elements that feed one output element. A quantized program that runs a
float portable kernel gets a warning (:func:`float_fallback_warnings`) naming the layer, the op, its
share of the MACs and the fix where one exists.
"""

from __future__ import annotations

from collections.abc import Sequence
from math import prod
from typing import Any

from armgen.model.program_report import OpPlacement, ProgramReport
from armgen.model.tensors import DTYPE_NAMES


def does_macs(name: str) -> bool:
    """Whether an operator (``cortex_m::quantized_linear``) multiplies and accumulates: one of its
    ``_``-separated words starts with ``conv``, ends with ``mm`` or is ``linear``/``matmul``. Words,
    not substrings: ``upsample_bilinear2d`` contains "linear" and does no MACs."""
    words = name.split("::")[-1].split("_")
    return any(w.startswith("conv") or w.endswith("mm") or w in ("linear", "matmul") for w in words)


#: Ops that only move or reshape data: listed in the placement, not warned about.
DATA_MOVEMENT = frozenset({
    "aten::unsqueeze_copy", "aten::squeeze_copy", "aten::view_copy", "aten::permute_copy", "aten::expand_copy",
    "aten::clone", "aten::slice_copy", "aten::select_copy", "aten::cat", "dim_order_ops::_clone_dim_order",
    "dim_order_ops::_to_dim_order_copy",
})

#: The fix for a float portable op, where armgen knows one (op name -> what to change in the model).
FLOAT_FIXES = {
    "aten::convolution": "a Conv1d is rewritten to int8 automatically; a transposed Conv1d or a ConvTranspose2d "
                         "with output_padding stays float (ExecuTorch 1.5.1's quantizer): use ConvTranspose2d "
                         "without output_padding",
    "aten::mean": "use nn.AdaptiveAvgPool2d / nn.AvgPool2d over the spatial axes (CMSIS-NN int8 average pool)",
    "aten::linear": "feed nn.Linear a 2-D (batch, features) tensor (CMSIS-NN int8 fully connected)",
    "aten::addmm": "use nn.Linear on a 2-D (batch, features) tensor (CMSIS-NN int8 fully connected)",
    "aten::relu": "put the ReLU right after a convolution or linear layer (fused into the int8 kernel)",
    "aten::sigmoid": "sigmoid/tanh after a convolution or linear layer run as CMSIS-NN int8 activations",
    "aten::tanh": "sigmoid/tanh after a convolution or linear layer run as CMSIS-NN int8 activations",
}


def layers_of(exported_program: Any) -> tuple[tuple[str, str], ...]:
    """``(op name, layer path)`` per kernel node of a lowered edge program, in graph order.

    The layer is the innermost ``nn_module_stack`` entry (e.g. ``features.0.conv``); "" when a pass
    made the node without one.
    """
    out = []
    for node in exported_program.graph.nodes:
        if node.op != "call_function":
            continue
        schema = getattr(node.target, "_schema", None)
        if schema is None:
            continue
        stack = node.meta.get("nn_module_stack") or {}
        layer = list(stack.values())[-1][0] if stack else ""
        out.append((str(schema.name), str(layer)))
    return tuple(out)


def cpu_reasons(exported_program: Any, rejected: dict[str, str]) -> tuple[str, ...]:
    """Why each kernel node of :func:`layers_of` stayed on the CPU: ``rejected[node name]`` (the
    partitioner's reason), "" for the nodes it did not reject; parallel to :func:`layers_of`."""
    out = []
    for node in exported_program.graph.nodes:
        if node.op == "call_function" and getattr(node.target, "_schema", None) is not None:
            out.append(rejected.get(node.name, ""))
    return tuple(out)


def plan_placement(
    plan: Any, libraries: Sequence[str], layers: Sequence[tuple[str, str]] = (), reasons: Sequence[str] = ()
) -> tuple[OpPlacement, ...]:
    """One :class:`OpPlacement` per kernel or delegate call of ``execution_plan[0]``.

    Args:
        plan: the deserialized execution plan. libraries: the kernel library of each of
            ``plan.operators`` (by operator index). layers: ``(op name, layer)`` in execution order
            (:func:`layers_of`), matched to the calls by name in order; unmatched calls get "".
            reasons: why each of ``layers``' nodes stayed on the CPU ("" for none; parallel to ``layers``,
            :func:`cpu_reasons`).
    """
    values = plan.values
    rows: list[OpPlacement] = []
    pending = [(name, path, reasons[j] if j < len(reasons) else "") for j, (name, path) in enumerate(layers)]
    for chain in plan.chains:
        for ins in chain.instructions:
            args = ins.instr_args
            kind = type(args).__name__
            if kind == "DelegateCall":
                rows.append(OpPlacement(len(rows), plan.delegates[args.delegate_index].id, "delegate", "", 0, ""))
                continue
            if kind != "KernelCall":
                continue
            op = plan.operators[args.op_index]
            # An out-variant's last argument is its output (listed again as the return value).
            idx = [i for i in dict.fromkeys(args.args) if type(values[i].val).__name__ == "Tensor"]
            tensors = [values[i].val for i in idx]
            out = values[args.args[-1]].val if args.args and args.args[-1] in idx else None
            last: Any = values[args.args[-1]].val if args.args else None
            if out is None and type(last).__name__ == "TensorList" and list(last.items):
                # several outputs (native_layer_norm.out: out, mean, rstd) return a list: the first is the result
                out = values[list(last.items)[0]].val
            dtype = DTYPE_NAMES.get(out.scalar_type.name, out.scalar_type.name.lower()) if out is not None else ""
            layer = reason = ""
            for j, (name, path, why) in enumerate(pending):
                if name == op.name:
                    layer, reason, pending = path, why, pending[j + 1:]
                    break
            inputs = [t for t in tensors if t is not out]
            rows.append(OpPlacement(len(rows), op.name, libraries[args.op_index], dtype,
                                    _macs(op.name, inputs, out) if out is not None else 0, layer, reason))
    return tuple(rows)


def _macs(name: str, inputs: Sequence[Any], out: Any) -> int:
    """MACs of one call: output elements x weight elements per output channel (0 for other ops); for a
    transposed convolution, input pixels x weight elements (each input pixel, all its channels, is scattered
    through the whole kernel once: the zeros a stride inserts between output pixels cost nothing)."""
    if not does_macs(name) or not inputs:
        return 0
    if "transpose_conv" in name and len(inputs) >= 2 and len(inputs[0].sizes) == 4:
        n, c, h, w = (int(s) for s in inputs[0].sizes)
        return n * h * w * prod(int(s) for s in inputs[1].sizes)
    out_numel = prod(int(s) for s in out.sizes)
    # output channels: dim 1 of a convolution's (N, C, ...) output, the last dim of a linear/matrix product
    conv = "conv" in name.split("::")[-1]
    channels = int(out.sizes[1]) if conv and len(out.sizes) >= 3 else int(out.sizes[-1]) if out.sizes else 1
    weights = [t for t in inputs[1:] if len(t.sizes) >= 2 and channels in [int(s) for s in t.sizes]]
    if not weights:  # a matrix product of two activations: inner dimension of the first
        return out_numel * int(inputs[0].sizes[-1]) if inputs[0].sizes else 0
    weight = max(weights, key=lambda t: prod(int(s) for s in t.sizes))
    return out_numel * prod(int(s) for s in weight.sizes) // channels


def float_fallback_warnings(report: ProgramReport) -> list[str]:
    """One warning per float portable op (grouped by op and layer; data movement left out) of a
    quantized program.

    A program is quantized when any I/O tensor is int8 or any op runs on the ``cortex_m`` or
    ``quantized`` libraries. Returns [] for float programs and programs without placement rows.
    """
    rows = report.placement
    quantized = any(t.dtype == "int8" for t in (*report.inputs, *report.outputs)) or any(
        r.library in ("cortex_m", "quantized") for r in rows)
    if not quantized:
        return []
    total = sum(r.macs for r in rows) or 1
    groups: dict[tuple[str, str], list[OpPlacement]] = {}
    for r in rows:
        if r.library == "portable" and r.dtype.startswith("float") and r.op not in DATA_MOVEMENT:
            groups.setdefault((r.op, r.layer), []).append(r)
    out = []
    for (op, layer), items in groups.items():
        macs = sum(r.macs for r in items)
        where = f"layer '{layer}'" if layer else "a functional call (no module)"
        fix = FLOAT_FIXES.get(op)
        out.append(f"{where} runs {op} as a float portable kernel ({len(items)} call{'s' if len(items) > 1 else ''}, "
                   f"{macs:,} MACs, {macs / total:.1%} of the program's): the program is int8 elsewhere"
                   + (f"; fix: {fix}" if fix else ""))
    return out
