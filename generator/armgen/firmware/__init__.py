"""The firmware stage: a project + a workspace -> an ELF, its size report and its run report.

    build      CMake/Ninja (bare metal) or west (Zephyr) with the Arm GNU toolchain
    size       sections, regions and components of the ELF against the budgets (a package: rules,
               records, ELF reader, map parser, attribution, budgets, compare, JSON Schema, SVG plot)
    run        QEMU runs checked against the reference
"""
