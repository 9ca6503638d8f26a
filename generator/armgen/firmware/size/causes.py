"""Why an image grew or shrank: the causes of a size delta, from what armgen generated for both images.

Each byte of the delta is assigned once, in this fixed precedence (flash and RAM separately):

1. **operators** added to or removed from ``model/selected_operators.yaml``: the symbols (by name)
   that appeared in the new image (added) or went from the old one (removed) in the kernel
   components and the kernel registration, and that name the operator (``quantized_max_pool2d``
   in ``cortex_m::native::quantized_max_pool2d_out``). When exactly one operator changed, every
   such symbol came or went with it (CMSIS-NN helpers; under LTO the kernel is inlined into a
   registration function whose name does not say which operator it serves). Signed: removed
   operators count negative.
2. **shared kernel code**: the rest of the kernel components' delta (CMSIS-NN helpers one kernel
   shares with another, such as the matrix multiply of conv and linear; symbols whose size changed).
   Its own line, never guessed onto an operator.
3. **kernel table**: the rest of the ``kernel_registration`` component's delta (the registered kernel
   count beside it).
4. **model**: the ``model`` component (the ``.pte`` in the image), split into its constant data
   (the program reports' ``constant_data_size``) and the rest of the program.
5. **pools**, one line per pool by name (``armgen_pool_<name>`` bytes).
6. **stack and heap**: the ``stack_heap`` component.
7. **unexplained**: total delta minus the above, with the components it lies in. So causes and
   unexplained add up to the total delta exactly.

Zephyr Kconfig symbols whose values differ are configuration changes (:class:`ConfigChange`): a
symbol has no bytes of its own, its effect is in the components above.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from armgen.firmware.size.rules import KERNEL_COMPONENTS

#: Components a cause covers in full (the rest of the delta is unexplained).
_COVERED = (*KERNEL_COMPONENTS, "kernel_registration", "model", "pools", "stack_heap")


@dataclass(frozen=True)
class Cause:
    """One cause of a delta: ``kind`` (operator_added, operator_removed, shared_kernel_code,
    kernel_table, model, pool, stack_heap, unexplained), ``name``, ``flash`` and ``ram`` bytes
    (signed) and a short ``detail`` for people."""

    kind: str
    name: str
    flash: int
    ram: int
    detail: str = ""

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict."""
        return {"kind": self.kind, "name": self.name, "flash": self.flash, "ram": self.ram, "detail": self.detail}


@dataclass(frozen=True)
class ConfigChange:
    """A Kconfig symbol whose value differs (``None``: absent from that ``.config``)."""

    symbol: str
    old: str | None
    new: str | None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict."""
        return {"symbol": self.symbol, "old": self.old, "new": self.new}


def _op_name(op: str) -> str:
    """``cortex_m::quantized_conv2d.out`` -> ``quantized_conv2d``: what its kernel's symbols contain."""
    return op.split("::")[-1].split(".")[0]


def _symbols(report: Mapping[str, Any]) -> dict[str, tuple[int, str]]:
    return {k: (v["size"], v["component"]) for k, v in (report.get("symbols") or {}).items()}


def _memory_of(report: Mapping[str, Any], region: str | None) -> str:
    vol = {r["name"]: r["volatile"] for r in report["regions"]}
    return "ram" if vol.get(region or "", False) else "flash"


def _operator_causes(old: Mapping[str, Any], new: Mapping[str, Any], notes: list[str], taken: dict[str, list[int]]
                     ) -> list[Cause]:
    """Causes of step 1 (operators), bytes from the symbols that came or went; ``taken`` gets the signed
    ``[flash, ram]`` bytes they took from each component."""
    op_old = set((old.get("project") or {}).get("operators") or [])
    op_new = set((new.get("project") or {}).get("operators") or [])
    added, removed = sorted(op_new - op_old), sorted(op_old - op_new)
    if not added and not removed:
        return []
    s_old, s_new = old.get("symbols") or {}, new.get("symbols") or {}
    if not s_old or not s_new:
        notes.append("operators' kernel bytes unknown: a report without symbols (stripped ELF)")
    scope = (*KERNEL_COMPONENTS, "kernel_registration")
    came = {k: v for k, v in s_new.items() if k not in s_old and v["component"] in scope}
    went = {k: v for k, v in s_old.items() if k not in s_new and v["component"] in scope}
    only_one = len(added) + len(removed) == 1
    out: list[Cause] = []
    for ops, syms, report, sign, kind in ((added, came, new, 1, "operator_added"),
                                          (removed, went, old, -1, "operator_removed")):
        for op in ops:
            own = {k: v for k, v in syms.items() if only_one or _op_name(op) in k}
            flash = sum(v["size"] for v in own.values() if _memory_of(report, v["region"]) == "flash")
            ram = sum(v["size"] for v in own.values()) - flash
            by_comp: dict[str, int] = {}
            for v in own.values():
                by_comp[v["component"]] = by_comp.get(v["component"], 0) + v["size"]
                side = 0 if _memory_of(report, v["region"]) == "flash" else 1
                taken.setdefault(v["component"], [0, 0])[side] += sign * v["size"]
            syms = {k: v for k, v in syms.items() if k not in own}
            detail = ", ".join(f"{_LABELS.get(c, c)} {n:,} B" for c, n in sorted(by_comp.items(), key=_kernel_first)) \
                or "no symbols of its own"
            biggest = sorted(own, key=lambda k: (-own[k]["size"], k))[:3]
            if biggest:
                detail += f" ({len(own)} symbols; largest {', '.join(_short(k) for k in biggest)})"
            out.append(Cause(kind, op, sign * flash, sign * ram, detail))
    return out


#: How an operator's bytes are named in its cause's detail, by component.
_LABELS = {
    "portable_kernels": "kernel", "quantized_kernels": "kernel", "cortex_m_kernels": "kernel",
    "kernel_registration": "kernel inlined into its registration (LTO)", "cmsis_nn": "CMSIS-NN",
}


def _kernel_first(item: tuple[str, int]) -> tuple[int, str]:
    return (0 if item[0] in ("portable_kernels", "quantized_kernels", "cortex_m_kernels", "kernel_registration")
            else 1, item[0])


def _short(name: str, width: int = 48) -> str:
    return name if len(name) <= width else name[: width - 3] + "..."


def _component(report: Mapping[str, Any], name: str) -> tuple[int, int]:
    c = report["components"].get(name) or {"flash": 0, "ram": 0}
    return c["flash"], c["ram"]


def _cdelta(old: Mapping[str, Any], new: Mapping[str, Any], *names: str) -> tuple[int, int]:
    f = sum(_component(new, n)[0] - _component(old, n)[0] for n in names)
    r = sum(_component(new, n)[1] - _component(old, n)[1] for n in names)
    return f, r


def _model_causes(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[Cause]:
    f, r = _cdelta(old, new, "model")
    m_old = (old.get("project") or {}).get("model") or {}
    m_new = (new.get("project") or {}).get("model") or {}
    c_old, c_new = m_old.get("constant_bytes"), m_new.get("constant_bytes")
    if not f and not r:
        return []
    if c_old is None or c_new is None:
        return [Cause("model", "model (.pte)", f, r, "constant data not known (no program report)")]
    const = c_new - c_old
    detail = f".pte {m_old.get('bytes', 0):,} -> {m_new.get('bytes', 0):,} B"
    return [
        Cause("model", "model constant data", const, 0, f"constant data {c_old:,} -> {c_new:,} B; {detail}"),
        Cause("model", "model program (rest of the .pte)", f - const, r, detail),
    ]


def _pool_causes(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[Cause]:
    def pools(report: Mapping[str, Any]) -> dict[str, int]:
        return {p["name"]: p["size"] for p in report["pools"]}

    p_old, p_new = pools(old), pools(new)
    out = []
    for name in sorted(set(p_old) | set(p_new)):
        a, b = p_old.get(name, 0), p_new.get(name, 0)
        if a != b:
            what = "new pool" if name not in p_old else ("pool removed" if name not in p_new else f"{a:,} -> {b:,} B")
            out.append(Cause("pool", f"pool {name}", 0, b - a, what))
    return out


def find_causes(
    old: Mapping[str, Any], new: Mapping[str, Any], comparable: bool, flash_delta: int, ram_delta: int
) -> tuple[tuple[Cause, ...], Cause, list[str]]:
    """(causes, unexplained, notes) of the delta old -> new in the module's precedence.

    ``comparable``: both reports attributed components the same way; otherwise only the operators
    (without bytes) and the pools are causes, the rest is unexplained.
    """
    notes: list[str] = []
    taken: dict[str, list[int]] = {}
    causes = _operator_causes(old, new, notes, taken)
    if comparable:
        kf, kr = _cdelta(old, new, *KERNEL_COMPONENTS)
        sf = kf - sum(taken.get(c, [0, 0])[0] for c in KERNEL_COMPONENTS)
        sr = kr - sum(taken.get(c, [0, 0])[1] for c in KERNEL_COMPONENTS)
        if sf or sr:
            causes.append(Cause("shared_kernel_code", "shared kernel code", sf, sr,
                                "CMSIS-NN helpers and kernel files shared by operators, or changed in size"))
        tf, tr = _cdelta(old, new, "kernel_registration")
        tf, tr = tf - taken.get("kernel_registration", [0, 0])[0], tr - taken.get("kernel_registration", [0, 0])[1]
        k_old, k_new = (old.get("project") or {}).get("kernels"), (new.get("project") or {}).get("kernels")
        if tf or tr or k_old != k_new:
            causes.append(Cause("kernel_table", "kernel table", tf, tr, f"{k_old} -> {k_new} registered kernels"))
        causes += _model_causes(old, new)
    pool_causes = _pool_causes(old, new)
    if comparable:
        pf, pr = _cdelta(old, new, "pools")
        pool_causes = pool_causes if (sum(c.flash for c in pool_causes), sum(c.ram for c in pool_causes)) == (pf, pr) \
            else [*pool_causes, Cause("pool", "pools (alignment)", pf - sum(c.flash for c in pool_causes),
                                      pr - sum(c.ram for c in pool_causes), "padding between pools")]
    causes += [c for c in pool_causes if c.flash or c.ram]
    if comparable:
        hf, hr = _cdelta(old, new, "stack_heap")
        if hf or hr:
            causes.append(Cause("stack_heap", "stack and heap", hf, hr,
                                f"stack {old.get('stack', 0):,} -> {new.get('stack', 0):,} B, "
                                f"heap {old.get('heap', 0):,} -> {new.get('heap', 0):,} B"))
    uf, ur = flash_delta - sum(c.flash for c in causes), ram_delta - sum(c.ram for c in causes)
    rest = []
    if comparable:
        for name in sorted(set(old["components"]) | set(new["components"])):
            if name in _COVERED:
                continue
            f, r = _cdelta(old, new, name)
            sides = [f"{m} {n:+,} B" for m, n in (("flash", f), ("RAM", r)) if n]
            if sides:
                rest.append(f"{name} {' '.join(sides)}")
    return tuple(causes), Cause("unexplained", "unexplained", uf, ur, ", ".join(rest)), notes


def config_changes(old: Mapping[str, Any], new: Mapping[str, Any]) -> tuple[ConfigChange, ...]:
    """Kconfig symbols whose values differ between two Zephyr reports' ``.config`` (empty otherwise)."""
    k_old = (old.get("project") or {}).get("kconfig")
    k_new = (new.get("project") or {}).get("kconfig")
    if k_old is None or k_new is None:
        return ()
    return tuple(ConfigChange(k, k_old.get(k), k_new.get(k)) for k in sorted(set(k_old) | set(k_new))
                 if k_old.get(k) != k_new.get(k))
