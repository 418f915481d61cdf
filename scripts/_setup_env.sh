#!/usr/bin/env bash
# Shared by demo.sh and test.sh: Java 17 if missing, .venv with the pinned set. A second run only
# compares a stamp and returns, so it takes about a second.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="$ROOT/.venv"
EXTRAS="${ZOO_LITE_EXTRAS:-dev,bench,docs,torch,tf,s3,tfds,vision,connect}"

ensure_java() {
  if command -v java >/dev/null 2>&1; then return; fi
  echo "[setup] java not found: installing OpenJDK 17 with apt"
  local sudo=""; [[ $(id -u) -ne 0 ]] && sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq openjdk-17-jre-headless >/dev/null
}

ensure_venv() {
  local python="${PYTHON:-python3}"
  if [[ ! -x "$VENV/bin/python" ]]; then
    echo "[setup] creating $VENV"
    "$python" -m venv "$VENV"
  fi
  local stamp="$VENV/.zoo_lite-installed"
  local pins
  pins="$(cat "$ROOT/constraints.txt" "$ROOT/setup.py" | sha256sum | cut -d' ' -f1)"
  if installed_already "$stamp" "$pins"; then return; fi
  echo "[setup] installing the pinned set (.[$EXTRAS]) into $VENV; the first time takes a few minutes"
  "$VENV/bin/python" -m pip install -q --upgrade pip
  "$VENV/bin/python" -m pip install -q -c "$ROOT/constraints.txt" -e "$ROOT[$EXTRAS]"
  echo "$pins $EXTRAS" > "$stamp"
}

# true when the stamp names the same pins and every extra asked for (docs.sh asks for fewer)
installed_already() {
  local stamp="$1" pins="$2" stamped_pins stamped_extras extra
  [[ -f "$stamp" ]] || return 1
  read -r stamped_pins stamped_extras < "$stamp"
  [[ "$stamped_pins" == "$pins" ]] || return 1
  for extra in ${EXTRAS//,/ }; do
    [[ ",$stamped_extras," == *",$extra,"* ]] || return 1
  done
}

# the system's Chromium for the documentation site's browser test (tests/test_docs_site.py)
ensure_chromium() {
  if command -v chromium >/dev/null 2>&1; then return; fi
  echo "[setup] chromium not found: installing Debian's chromium with apt"
  local sudo=""; [[ $(id -u) -ne 0 ]] && sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq chromium >/dev/null
}

ensure_java
ensure_venv
export JAVA_HOME="${JAVA_HOME:-$(dirname "$(dirname "$(readlink -f "$(command -v java)")")")}"
