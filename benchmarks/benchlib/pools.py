"""Exact pools against upstream ExecuTorch defaults: arithmetic on the board data and the pools ``armgen run``
measured (no build)."""

from __future__ import annotations

from typing import Any

#: upstream defaults for the ExecuTorch memory pools (bytes), with where they come from
UPSTREAM_POOLS: dict[str, dict[str, Any]] = {
    "bare-metal arm_executor_runner": {
        "method": 60 * 1024 * 1024, "temp": 0x200000, "stack": None, "heap": None,
        "source": "examples/arm/executor_runner/arm_executor_runner.cpp "
                  "ET_ARM_BAREMETAL_METHOD_ALLOCATOR_POOL_SIZE (60 MiB); CMakeLists.txt "
                  "ET_ARM_BAREMETAL_SCRATCH_TEMP_ALLOCATOR_POOL_SIZE 0x200000 (not Dedicated_Sram)",
    },
    "Zephyr mv2-ethosu": {
        "method": 1572864, "temp": 1572864, "stack": 16384, "heap": 65536,
        "source": "zephyr/samples/mv2-ethosu/prj.conf (METHOD/TEMP_ALLOCATOR_POOL_SIZE 1572864, "
                  "MAIN_STACK 16384, HEAP 65536)",
    },
    "Zephyr hello-executorch": {
        "method": 2000, "temp": 2000, "stack": 8192, "heap": 32768,
        "source": "zephyr/samples/hello-executorch/prj.conf (METHOD/TEMP_ALLOCATOR_POOL_SIZE 2000, "
                  "MAIN_STACK 8192, HEAP 32768)",
    },
}
#: QEMU machine -> the real boards it stands in for (pool fit is checked on all of them)
FIT_BOARDS = {"an547": ["qemu_mps3_an547", "corstone_300", "alif_e8_he"],
              "an386": ["qemu_mps2_an386", "stm32f4_disco"]}


def pool_fit(board_name: str, pools: list[int]) -> dict[str, Any]:
    """Do these pools fit the board? Each pool is one static array, so it must sit in one region
    that the board lets hold pools; pools are placed largest first, best fit (arithmetic only)."""
    from armgen.boards import load_board

    b = load_board(board_name)
    free = {r.name: r.usable for r in b.regions if r.volatile and "pools" in r.uses}
    placed = []
    for n in sorted(pools, reverse=True):
        cands = [k for k, v in free.items() if v >= n]
        if not cands:
            return {"fits": False, "largest_pool_region": max(free.values()) if free else 0,
                    "why": f"a {n} B pool fits no pool region (largest {max(free.values()) if free else 0} B)"}
        k = min(cands, key=lambda k: free[k])
        free[k] -= n
        placed.append((n, k))
    return {"fits": True, "placement": placed}


def compare_pools(armgen_res: dict[str, Any]) -> dict[str, Any]:
    """armgen's exact pools and the upstream defaults (bytes) for each measured project: reserved, whether the
    program loads with them and whether they fit each board the QEMU machine stands in for."""
    out: dict[str, Any] = {}
    for m, per in armgen_res.items():
        for s, e in per.items():
            planned = sum(v["reserved"] for k, v in e["pools"].items() if k.startswith("planned_"))
            # upstream takes planned buffers from the method pool
            needed_method_pool = planned + e["pools"].get("method", {}).get("used", 0)
            temp_used = e["pools"].get("temp", {}).get("used", 0)
            armgen_pools = [v["reserved"] for v in e["pools"].values()]
            rows = {"armgen (exact)": {
                "pools_reserved": sum(armgen_pools),
                "ram_reserved": sum(armgen_pools) + (e["stack_reserved"] or 0),
                "program_loads": True,
                "fit": {b: pool_fit(b, armgen_pools) for b in FIT_BOARDS[m]},
            }}
            for cfg, u in UPSTREAM_POOLS.items():
                pools = [u["method"], u["temp"]]
                rows[cfg] = {
                    "pools_reserved": sum(pools),
                    "ram_reserved": sum(pools) + (u["stack"] or 0) + (u["heap"] or 0),
                    "program_loads": u["method"] >= needed_method_pool and u["temp"] >= temp_used,
                    "fit": {b: pool_fit(b, pools) for b in FIT_BOARDS[m]},
                    "source": u["source"],
                }
            out.setdefault(m, {})[s] = {
                "method_pool_needed_upstream_style": needed_method_pool, "configs": rows,
                "command": "arithmetic on the board data (armgen.boards.load_board) and the pools armgen run measured",
            }
    return out

