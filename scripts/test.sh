#!/usr/bin/env bash
# Set everything up from nothing, then run the whole test suite (unit tests and docstring examples).
#
# The suite runs in two pytest-xdist workers, one module at a time each (tests/conftest.py says in
# which order): much of a test's time is spent waiting on process start-up and timeouts, and the
# second worker fills it. Each worker has a /dev/shm of its own (scripts/_test_worker_python),
# which needs root, as the multi-host tests do; without it, or with ZOO_LITE_TEST_WORKERS=1, the
# suite runs in one process.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/_setup_env.sh"
ensure_chromium
cd "$ROOT"
workers="${ZOO_LITE_TEST_WORKERS:-2}"
if [[ "$workers" -gt 1 ]] && unshare --mount true 2>/dev/null; then
  set -- --tx "$workers*popen//python=$ROOT/scripts/_test_worker_python" --dist loadscope "$@"
fi
exec "$VENV/bin/python" -m pytest tests zoo_lite zoo_lite_startup.py "$@"
