"""The project stage: ProgramReport + Board -> a project spec -> a rendered project on disk.

    spec         the pools, placement and operator libraries (:class:`ProjectSpec`), a pure function
                 of the report, the board and the options; its entry is ``make_spec``
    options      the options checked and defaulted (name, RTOS, backend, stack, front end): the cheap
                 checks ``armgen new`` makes before compiling
    memory_plan  the pools' sizes and the regions the model, data, stack, heap and pools go in
    zephyr       the Zephyr flavour the spec is given: releases, board targets, Kconfig, devicetree, west
    render       the project's files from the templates, written atomically
    record       ``armgen.toml``, the versioned :class:`ProjectRecord` later stages read
"""
