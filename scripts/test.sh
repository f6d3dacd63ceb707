#!/usr/bin/env bash
# Everything the tests need on a fresh Debian machine, then the tests.
#   bash scripts/test.sh            (extra arguments go to pytest)
set -euo pipefail
cd "$(dirname "$0")/.."

# The browser tests drive Debian's Chromium; Chinese needs a CJK font to draw as text.
# tests/test_nginx_replicas.py runs Debian's nginx in front of two replicas (deploy/nginx.conf).
# (grep without -q reads all of fc-list: with pipefail, an early exit would fail the pipe)
if ! [ -x /usr/bin/chromium ] || ! fc-list 2>/dev/null | grep -iE "noto sans cjk|wenquanyi" >/dev/null \
        || ! [ -x /usr/sbin/nginx ]; then
    SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
    $SUDO apt-get update -q
    $SUDO apt-get install -y -q chromium fonts-noto-cjk nginx
fi

[ -x .venv/bin/python ] || python3 -m venv .venv
.venv/bin/pip install -q -r requirements-dev.txt
.venv/bin/python -m ruff check .
.venv/bin/python -m pytest "$@"
