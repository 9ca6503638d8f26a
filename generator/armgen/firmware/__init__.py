"""The firmware stage: a project + a workspace -> an ELF, its size report and its run report.

    build      CMake/Ninja (bare metal) or west (Zephyr) with the Arm GNU toolchain
    size       sections, regions and components of the ELF against the budgets
    size_plot  the SVG of each region's fill
    run        QEMU runs checked against the reference
"""
