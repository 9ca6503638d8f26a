"""The project stage: ProgramReport + Board -> a project spec -> a rendered project on disk.

    spec     the pools, placement and operator libraries (:class:`ProjectSpec`), a pure function of
             the report, the board and the options
    zephyr   the Zephyr flavour the spec is given: releases, board targets, Kconfig, devicetree, west
    render   the project's files from the templates, written atomically
    record   ``armgen.toml``, the versioned :class:`ProjectRecord` later stages read
"""
