#!/usr/bin/env bash
# Set everything up from nothing, then run the quickstart job on the embedded default (local Spark).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/_setup_env.sh"
cd "$ROOT"
exec "$VENV/bin/python" examples/quickstart.py "$@"
