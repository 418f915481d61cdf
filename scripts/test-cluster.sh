#!/usr/bin/env bash
# A simulated multi-host cluster on this machine (network, UTS and mount namespaces; needs root):
#   scripts/test-cluster.sh up [--workers 2] [--hosts-style cluster|debian|none]
#   scripts/test-cluster.sh run driver .venv/bin/python my_job.py --master spark://10.213.0.10:7077
#   scripts/test-cluster.sh status
#   scripts/test-cluster.sh down
# Sets up the venv as test.sh does; see tests/cluster/__main__.py and docs/cluster.md.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/_setup_env.sh" >&2
cd "$ROOT"
exec "$VENV/bin/python" -m tests.cluster "$@"
