"""armgen: PyTorch model + board definition -> finished Cortex-M / Ethos-U firmware.

Stages (each module owns one; data only moves forward):

    compile   (model -> .pte + ProgramReport)        armgen.compile, armgen.program_report
    boards    (board data files -> Board)             armgen.boards
    spec      (ProgramReport + Board -> ProjectSpec)   armgen.spec
    render    (ProjectSpec -> files of a project)      armgen.render
    workspace (pinned upstream sources via west)       armgen.workspace
    build     (project + workspace -> ELF + map)       armgen.build
    size      (ELF + budgets -> ElfSizeReport)          armgen.size
    run       (ELF -> RunReport on QEMU)                armgen.run
"""

__version__ = "0.1.0"
