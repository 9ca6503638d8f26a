#!/bin/sh
# Size gate of kws: build the image, check its budgets and its growth over the committed
# baseline (size-baseline.json, [budgets.growth] in armgen.toml), write the reports, exit as
# `armgen size` does: 0 within budget, 1 over budget or grown more than allowed, 2 on error.
#
#   ci/size-gate.sh [BASE_REPORT]
#
# BASE_REPORT (optional): the base branch's `armgen size --format json` report; the causes are
# then given against it (else against the baseline). Reports: $SIZE_GATE_OUT (default
# build/size-gate/) size-report.json, .md (a PR comment or job summary) and .html (one page).
# Record a new baseline after an accepted change: armgen size --write-baseline, then commit it.
# Plain POSIX sh: the same script is the gate in GitHub Actions, GitLab CI or Jenkins.
set -eu
cd "$(dirname "$0")/.."
ARMGEN=${ARMGEN:-armgen}
OUT=${SIZE_GATE_OUT:-build/size-gate}

rc=0
$ARMGEN build . || rc=$?
if [ "$rc" -gt 1 ]; then
    echo "size-gate: armgen build failed (exit $rc)" >&2
    exit "$rc"
fi
mkdir -p "$OUT"
if [ -n "${1:-}" ]; then
    set -- --compare "$1"
fi
rc=0
$ARMGEN size . "$@" --format json --output "$OUT/size-report.json" || rc=$?
if [ "$rc" -gt 1 ]; then
    exit "$rc"
fi
$ARMGEN size . "$@" --format markdown --output "$OUT/size-report.md" 2>/dev/null || [ $? -eq 1 ]
$ARMGEN size . "$@" --format html --output "$OUT/size-report.html" 2>/dev/null || [ $? -eq 1 ]
cat "$OUT/size-report.md"
if [ -n "${GITHUB_STEP_SUMMARY:-}" ]; then
    cat "$OUT/size-report.md" >> "$GITHUB_STEP_SUMMARY"
fi
exit "$rc"
