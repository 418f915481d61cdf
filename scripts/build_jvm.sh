#!/usr/bin/env bash
# Rebuild zoo_lite/data/jvm/zoo_lite-jvm.jar from ArrowFrames.java against the pinned pyspark's
# jars (needs javac 17). The jar records its source's SHA-256, which tests/data/test_jvm.py checks.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/_setup_env.sh"
cd "$ROOT/zoo_lite/data/jvm"
JARS="$("$VENV/bin/python" -c 'import pyspark, os; print(os.path.join(os.path.dirname(pyspark.__file__), "jars"))')"
BUILD="$(mktemp -d)"
trap 'rm -rf "$BUILD"' EXIT
javac --release 17 -Xlint:all,-path -cp "$JARS/*" -d "$BUILD" ArrowFrames.java
sha256sum ArrowFrames.java | cut -d' ' -f1 > "$BUILD/io/zoolite/ArrowFrames.java.sha256"
# fixed timestamps, so the same source gives the same jar
find "$BUILD" -exec touch -d "2026-01-01 00:00:00 UTC" {} +
rm -f zoo_lite-jvm.jar
(cd "$BUILD" && jar --create --file "$OLDPWD/zoo_lite-jvm.jar" --no-manifest io)
echo "built $(pwd)/zoo_lite-jvm.jar"
