#!/usr/bin/env bash
# Set everything up from nothing, then run the whole test suite (unit tests and docstring examples).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/_setup_env.sh"
ensure_chromium
cd "$ROOT"
exec "$VENV/bin/python" -m pytest tests zoo_lite zoo_lite_startup.py "$@"
