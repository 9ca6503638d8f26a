"""armgen: PyTorch model + board definition -> finished Cortex-M / Ethos-U firmware.

Stages (each subpackage or module owns one; data only moves forward):

    model     (model -> .pte + ProgramReport)          armgen.model.compile, armgen.model.program_report
    boards    (board data files -> Board)               armgen.boards
    project   (ProgramReport + Board -> ProjectSpec -> files)  armgen.project.spec, .zephyr, .render
    workspace (pinned upstream sources via west)        armgen.workspace
    firmware  (project + workspace -> ELF, size, run)   armgen.firmware.build, .size, .run
    pipeline  (the stages chained for `armgen new`)     armgen.pipeline
    cli       (thin commands)                           armgen.cli
"""

__version__ = "0.1.0"
