#!/usr/bin/env bash
# Line coverage of core/, viz/ and ui/ by the whole suite (issue 40: nothing less checked), the app
# servers the browser and server tests start included (coverage's subprocess patch; a server stopped
# with SIGTERM still saves its data).
#   bash scripts/coverage.sh                 this checkout, as scripts/test.sh runs it (two phases)
#   bash scripts/coverage.sh --serial A B    an older checkout without phases: two plain pytest
#                                            processes at once, one over the paths A B ..., one over the rest
# Run scripts/test.sh once first (it makes .venv). The report goes to stdout, the data to .coverage-data/.
# It takes about 1.5x the suite's time; the tests that time themselves may fail under it (listed, not fatal).
set -uo pipefail
cd "$(dirname "$0")/.."
root="$PWD"
.venv/bin/python -c "import coverage" 2>/dev/null || .venv/bin/pip install -q coverage==7.18.0
data="$root/.coverage-data"
rm -rf "$data" && mkdir -p "$data"
export COVERAGE_RCFILE="$data/coveragerc"
cat > "$COVERAGE_RCFILE" <<EOF
[run]
source =
    $root/core
    $root/viz
    $root/ui
parallel = True
data_file = $data/.coverage
patch =
    subprocess
    _exit
sigterm = True
[report]
precision = 1
EOF
export ANATOMY_MODEL_CACHE="${ANATOMY_MODEL_CACHE:-$PWD/assets/cache}" ANATOMY_SHOTS=0
run() { .venv/bin/python -m coverage run -m pytest -q "$@"; }
if [ "${1:-}" = "--serial" ]; then
    shift
    ignore=(); for p in "$@"; do ignore+=(--ignore="$p"); done
    run -p no:xdist "$@" > "$data/part1.log" 2>&1 &
    run -p no:xdist "${ignore[@]}" > "$data/part2.log" 2>&1 &
    wait
    tail -n 3 "$data/part1.log" "$data/part2.log"
else
    run -n 2 --dist worksteal --phase shared "$@" > "$data/shared.log" 2>&1
    run --phase alone "$@" > "$data/alone.log" 2>&1
    tail -n 3 "$data/shared.log" "$data/alone.log"
fi
.venv/bin/python -m coverage combine -q
.venv/bin/python -m coverage report --sort=name | tail -n 1
for room in core viz ui; do
    printf '%s/ ' "$room"
    .venv/bin/python -m coverage report --include="$root/$room/*" | tail -n 1
done
