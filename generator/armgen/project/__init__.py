"""The project stage: ProgramReport + Board -> a project spec -> a rendered project on disk.

    spec            the pools, placement and operator libraries (:class:`ProjectSpec`)
    zephyr          the Zephyr flavour: releases, Kconfig, devicetree, west
    render          the project's files from the templates, written atomically
    project_record  reading ``armgen.toml``
"""
