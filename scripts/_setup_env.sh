#!/usr/bin/env bash
# Shared by demo.sh and test.sh: Java 17 if missing, .venv with the pinned set. A second run only
# compares a stamp and returns, so it takes about a second.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="$ROOT/.venv"
EXTRAS="${ZOO_LITE_EXTRAS:-dev,bench,torch,tf,s3,tfds,vision}"

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
  local want
  want="$(cat "$ROOT/constraints.txt" "$ROOT/setup.py" | sha256sum | cut -d' ' -f1) $EXTRAS"
  if [[ -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then return; fi
  echo "[setup] installing the pinned set (.[$EXTRAS]) into $VENV; the first time takes a few minutes"
  "$VENV/bin/python" -m pip install -q --upgrade pip
  "$VENV/bin/python" -m pip install -q -c "$ROOT/constraints.txt" -e "$ROOT[$EXTRAS]"
  echo "$want" > "$stamp"
}

ensure_java
ensure_venv
export JAVA_HOME="${JAVA_HOME:-$(dirname "$(dirname "$(readlink -f "$(command -v java)")")")}"
