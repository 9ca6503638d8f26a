"""How `armgen run` checks a project: decided once, by ``armgen new`` / ``armgen update``, and kept in the
record (``armgen.toml [run]``), so that the run stage only carries it out (:func:`armgen.pipeline.run_project`).

==================  ==========================================================================================
``on``              what runs
==================  ==========================================================================================
``qemu``            the run image of the project at ``image`` (``.``: this project, on a QEMU board; else the
                    stand-in application ``new`` rendered under ``standin/<QEMU board>/``: the same program
                    for the board's QEMU machine, same CPU) on QEMU board ``emulator``
``tosa-reference``  an Ethos-U program on the host: its delegates in the TOSA reference model, its CPU
                    operators with the host kernels (QEMU has no NPU model)
``none``            nothing can run it here; ``why`` says so
==================  ==========================================================================================

The run image is armgen's (``src/armgen/armgen_run_main.cpp`` with the project's model library, pools,
platform and linker script): what a run proves is :data:`WHAT_A_RUN_CHECKS`, whatever the user's main does.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

from armgen.errors import ProjectError

#: ``[run] on`` values.
RUN_ON = ("qemu", "tosa-reference", "none")

#: What a QEMU run of the project's own image proves, and what it does not (the README and the run report).
WHAT_A_RUN_CHECKS = (
    "the model, its kernels, pools, platform and linker script as linked for the product, run by armgen's "
    "harness main (src/armgen/armgen_run_main.cpp); not your main.cpp, src/app/ or drivers"
)


def what_a_run_checks(plan: RunPlan) -> str:
    """One line: what carrying out ``plan`` proves, and what it does not."""
    if not plan.standin:
        return WHAT_A_RUN_CHECKS
    rtos = "bare metal" if plan.firmware == "baremetal" else "Zephyr"
    return (f"the program, its kernels and pools as planned for the QEMU board {plan.emulator} (a {rtos} stand-in, "
            f"{plan.image}/), run by armgen's harness main; not the product's platform, linker script or RTOS "
            "configuration, nor your main.cpp, src/app/ or drivers")


@dataclass(frozen=True)
class RunPlan:
    """``armgen.toml [run]``: how `armgen run` checks this project.

    Attributes:
        on: one of :data:`RUN_ON`. image: the directory (relative to the project; ``.`` for itself) of the
            project whose run image runs on QEMU. firmware: that project's RTOS (``baremetal``/``zephyr``).
        emulator: the armgen board that is the QEMU machine (e.g. ``qemu_mps3_an547``).
        why: one line: why the run goes where it goes (a stand-in, the host, nowhere).
    """

    on: str
    image: str | None = None
    firmware: str | None = None
    emulator: str | None = None
    why: str = ""

    @property
    def standin(self) -> bool:
        """The run image is a stand-in application's (``image`` is not the project itself)."""
        return self.on == "qemu" and self.image not in (None, ".")

    def as_table(self) -> dict[str, str]:
        """The ``[run]`` table's keys, in a fixed order (None values left out)."""
        keys = ("on", "image", "firmware", "emulator", "why")
        return {k: getattr(self, k) for k in keys if getattr(self, k) not in (None, "")}

    @classmethod
    def from_table(cls, table: dict[str, Any], where: str) -> RunPlan:
        """Read ``[run]``.

        Raises:
            ProjectError: an unknown key or ``on``, a QEMU plan without ``image``/``emulator``/``firmware``, an
                ``image`` outside the project, a value not a string.
        """
        unknown = sorted(set(table) - {"on", "image", "firmware", "emulator", "why"})
        if unknown:
            raise ProjectError(f"{where}: [run] has no key {unknown[0]!r} (keys: on, image, firmware, emulator, why)")
        bad = next((k for k, v in table.items() if not isinstance(v, str)), None)
        if bad is not None:
            raise ProjectError(f"{where}: [run] {bad!r} must be a string")
        on = table.get("on")
        if on not in RUN_ON:
            raise ProjectError(f"{where}: [run] on must be one of {', '.join(RUN_ON)}, not {on!r}")
        plan = cls(on=on, image=table.get("image"), firmware=table.get("firmware"), emulator=table.get("emulator"),
                   why=table.get("why", ""))
        if on == "qemu" and not (plan.image and plan.emulator and plan.firmware in ("baremetal", "zephyr")):
            raise ProjectError(f"{where}: [run] on = \"qemu\" needs image, firmware (baremetal or zephyr) and "
                               f"emulator, not {table}")
        image = PurePosixPath(plan.image or ".")
        if plan.image is not None and (image.is_absolute() or ".." in image.parts
                                       or not (plan.image == "." or image.parts[0] == "standin")):
            raise ProjectError(f"{where}: [run] image must be \".\" or a stand-in under standin/, not {plan.image!r}")
        return plan


def runs_on_npu(backend: str | None, report: Any) -> bool:
    """Whether the firmware drives an Ethos-U NPU: an ``ethos-u`` project (its platform starts the NPU even
    when every operator fell back to the CPU) or a program with an Ethos-U delegate
    (:attr:`armgen.model.program_report.ProgramReport.uses_npu`). The one place `armgen` decides it for a run."""
    return backend == "ethos-u" or bool(report.uses_npu)


def standin_rtos(board: Any, rtos: str, npu: bool, zephyr_release: str | None, choice: str = "auto") -> str | None:
    """The RTOS of the stand-in application ``new``/``update`` renders for `armgen run`, or None when there is
    none to render (an NPU program, a board without a QEMU machine, or a QEMU board itself with ``choice``
    ``auto``).

    ``choice``: ``auto`` (a Zephyr project gets a Zephyr stand-in when the QEMU board is in its release, else
    a bare-metal one; a bare-metal project a bare-metal one) or ``baremetal`` (always bare metal: runs
    without a Zephyr workspace).

    Raises:
        ProjectError: an unknown ``choice``.
    """
    if choice not in ("auto", "baremetal"):
        raise ProjectError(f"--standin {choice!r} is not one of: auto, baremetal")
    emulator = board.emulator
    if npu or emulator is None:
        return None
    if choice == "baremetal":
        return None if emulator.board == board.name and rtos == "baremetal" else "baremetal"
    if emulator.board == board.name:
        return None
    if rtos == "zephyr":
        from armgen.boards import load_board

        qemu = load_board(emulator.board)
        if qemu.zephyr is not None and zephyr_release in qemu.zephyr.releases:
            return "zephyr"
    return "baremetal"


def plan_run(board: Any, *, rtos: str, npu: bool, standin: tuple[str, str] | None) -> RunPlan:
    """The run plan of a project on ``board``.

    Args:
        board: the project's :class:`armgen.boards.Board`. rtos: the project's. npu: :func:`runs_on_npu`.
        standin: ``(directory relative to the project, its RTOS)`` of the stand-in application rendered
            with it, None when it has none.
    """
    if npu:
        return RunPlan(on="tosa-reference", why="QEMU has no Ethos-U model: the delegates run in the TOSA "
                       "reference model on the host, the CPU operators with the host kernels")
    emulator = board.emulator
    if emulator is None:
        return RunPlan(on="none", why=f"board {board.name} has no QEMU stand-in (no `emulator:` in {board.source})")
    if standin is not None:
        where, firmware = standin
        return RunPlan(on="qemu", image=where, firmware=firmware, emulator=emulator.board,
                       why=f"the same program in a {'bare-metal' if firmware == 'baremetal' else 'Zephyr'} "
                           f"application for the QEMU board {emulator.board} (same CPU family; its memory map)")
    return RunPlan(on="qemu", image=".", firmware=rtos, emulator=emulator.board,
                   why=f"this project's own board is the QEMU machine {emulator.qemu_machine}")


def plan_from_record(record: Any, board: Any, report: Any) -> RunPlan | None:
    """For a record written before run plans (no ``[run]``): the plan when nothing needs rendering (an NPU
    program, no QEMU machine, the board is the QEMU machine, a Zephyr stand-in the record names); None when a
    stand-in would have to be rendered first (``armgen update`` does it)."""
    npu = runs_on_npu(record.backend or report.backend, report)
    rtos = record.rtos or "baremetal"
    if npu or board.emulator is None or board.emulator.board == board.name:
        return plan_run(board, rtos=rtos, npu=npu, standin=None)
    if rtos == "zephyr" and record.standin and (record.root / record.standin / "armgen.toml").is_file():
        return plan_run(board, rtos=rtos, npu=False, standin=(record.standin, "zephyr"))
    return None
