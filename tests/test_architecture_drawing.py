"""docs/architecture.svg is drawn from the code by scripts/draw_architecture.py: the picture in the
docs must be the one today's code gives (every module placed in a layer, no import cycle, every
name of the fit's path found)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_the_architecture_drawing_in_the_docs_is_the_one_the_code_gives(tmp_path: Path) -> None:
    drawn = tmp_path / "architecture.svg"
    run = subprocess.run([sys.executable, str(ROOT / "scripts" / "draw_architecture.py"), "--output", str(drawn)],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr
    assert drawn.read_bytes() == (ROOT / "docs" / "architecture.svg").read_bytes(), (
        "docs/architecture.svg is out of date: run `.venv/bin/python scripts/draw_architecture.py` and commit it")
