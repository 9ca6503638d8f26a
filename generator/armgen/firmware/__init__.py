"""The firmware stage: a project + a workspace -> an ELF, its size report and its run report.

    build             CMake/Ninja (bare metal) or west (Zephyr) with the Arm GNU toolchain
    size              sections, regions and components of the ELF against the budgets (a package:
                      rules, records, ELF reader, map parser, attribution, budgets, compare, JSON
                      Schema, SVG plot)
    run               QEMU runs checked against the reference (the run stage's order of steps)
    qemu              the qemu-system-arm wrapper; SysTick ticks -> instructions under -icount
    console_protocol  the ARMGEN lines the firmware prints (the protocol's description) and their parser
    faults            a failed run (timeout, lockup, HardFault, ExecuTorch error) -> RunError
    host_io           program inputs -> input.bin, printed outputs -> arrays
    run_report        the run report: outputs vs reference, pool and stack checks
    stack             the stack sized from its measured high-water mark
    audio_run         runs with an audio front end: features and label checked
"""
