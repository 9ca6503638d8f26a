"""Who owns each file of a generated project: armgen (regenerated freely) or you (yours after creation).

One table, :data:`OWNERSHIP`, read by ``armgen update`` (:mod:`armgen.project.update`) and shown in the
README (:func:`markdown_table`). The first pattern that matches a project-relative POSIX path decides;
a path no pattern matches is armgen's. Files armgen never writes (your ``src/app/`` sources, notes) are
yours without being listed: armgen only ever carries them over.

- armgen's files are replaced by ``armgen update`` when you have not edited them; an edit of yours to one
  that armgen also changes is a conflict (your copy is saved beside it).
- Your files are written once by ``armgen new``; ``armgen update`` keeps your version, and where armgen's
  own version of the file changed too (say, a new model needs another Kconfig line), it merges the two
  changes three ways (``git merge-file``) against the pristine text armgen wrote last, kept under
  :data:`BASE_DIR`.
"""

from __future__ import annotations

from fnmatch import fnmatchcase

ARMGEN = "armgen"
USER = "user"

#: Where a project keeps the pristine text armgen last wrote for each of your files (the merge base).
BASE_DIR = ".armgen/base"

#: (pattern, owner, what the file is). ``fnmatch`` patterns (``*`` also matches ``/``), first match wins.
OWNERSHIP: tuple[tuple[str, str, str], ...] = (
    ("armgen.toml", ARMGEN, "the project record; its [budgets] table is yours and kept"),
    (f"{BASE_DIR}/*", ARMGEN, "the pristine text of your files, the base of `armgen update`'s merges"),
    ("src/main.cpp", USER, "the application's main: an example to make your own"),
    ("app.cmake", USER, "the CMake fragment that compiles src/app/ (add include directories, libraries)"),
    ("src/app/*", USER, "your sources (armgen writes none): compiled by app.cmake"),
    (".gitignore", USER, "what git leaves out (armgen's line: the program's intermediates, model/*.pt2 and *.tosa)"),
    ("prj.conf", USER, "Zephyr: the application's Kconfig settings"),
    ("boards/*.conf", USER, "Zephyr: the board's Kconfig settings"),
    ("boards/*.overlay", USER, "Zephyr: the board's devicetree overlay"),
    ("armgen-stacks.conf", ARMGEN, "Zephyr, `[memory] stack = \"auto\"`: the main, ISR and idle stack sizes "
                                   "`armgen build` measured (only build writes it; commit it with the project)"),
    ("*", ARMGEN, "everything else: the program and its report (model/), pools, model API, platform layer, "
                  "linker scripts, CMake, Kconfig with the pool sizes, README, CI gate"),
)


def owner_of(path: str) -> str:
    """``"user"`` or ``"armgen"``: the owner of the project file at ``path`` (relative, POSIX)."""
    return next(owner for pattern, owner, _ in OWNERSHIP if fnmatchcase(path, pattern))


def user_owned(paths: list[str] | tuple[str, ...]) -> list[str]:
    """The paths of ``paths`` that are yours (:func:`owner_of`), in their order."""
    return [p for p in paths if owner_of(p) == USER]


def markdown_table() -> str:
    """The table as Markdown (README, "Updating a project")."""
    lines = ["| files | owner | what |", "|---|---|---|"]
    lines += [f"| `{pattern}` | {'armgen' if owner == ARMGEN else 'you'} | {what} |"
              for pattern, owner, what in OWNERSHIP]
    return "\n".join(lines)


__all__ = ["ARMGEN", "BASE_DIR", "OWNERSHIP", "USER", "markdown_table", "owner_of", "user_owned"]
