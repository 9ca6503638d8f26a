"""Test-session set-up: a site fact, read only when present.

The trained MLPerf Tiny weights are data files of this site (``../shared/models/mlperf_tiny`` beside the
checkout; see its README). armgen itself finds them only through ``$ARMGEN_MLPERF_DIR`` or
``--weights``; the tests point the variable there when the folder exists and the variable is unset.
"""

from __future__ import annotations

import os
from pathlib import Path

_SITE_MLPERF = Path(__file__).resolve().parent.parent.parent / "shared" / "models" / "mlperf_tiny"
if "ARMGEN_MLPERF_DIR" not in os.environ and _SITE_MLPERF.is_dir():
    os.environ["ARMGEN_MLPERF_DIR"] = str(_SITE_MLPERF)
