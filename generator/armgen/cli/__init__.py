"""armgen's command line: a thin layer that turns flags into stage calls.

The group and the error-to-exit-code mapping live in :mod:`armgen.cli.group`; each sub-command lives
in its own module of this package and registers itself on :data:`main` when imported here.
"""

from __future__ import annotations

from armgen.cli import (  # noqa: F401 - imported to register the sub-commands on `main`
    boards_cmd,
    build_cmd,
    compile_cmd,
    new_cmd,
    run_cmd,
    size_cmd,
    update_cmd,
    weights_cmd,
    workspace_cmd,
)
from armgen.cli.group import main, quiet_upstream_logs

__all__ = ["main", "quiet_upstream_logs"]
