#!/usr/bin/env bash
# Build the documentation site from nothing into site/ in strict mode (a broken link, a missing
# reference or a docstring that does not parse fails the build); `scripts/docs.sh serve` previews
# it at http://127.0.0.1:8000 and rebuilds on every change.
set -euo pipefail
# the reference is read from the source (griffe), so the site needs only the docs extra
export ZOO_LITE_EXTRAS="${ZOO_LITE_EXTRAS:-docs}"
source "$(dirname "${BASH_SOURCE[0]}")/_setup_env.sh"
cd "$ROOT"
export NO_MKDOCS_2_WARNING=1  # Material's notice about its successor, printed on every build
case "${1:-build}" in
  build) exec "$VENV/bin/mkdocs" build --strict --clean --site-dir "$ROOT/site" ;;
  serve) exec "$VENV/bin/mkdocs" serve --strict --dev-addr 127.0.0.1:8000 ;;
  *) echo "usage: scripts/docs.sh [build|serve]" >&2; exit 2 ;;
esac
