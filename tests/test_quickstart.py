"""The README's first command runs ``examples/quickstart.py``: it must work as shipped."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.cluster
@pytest.mark.timeout(400)
def test_the_quickstart_job_trains_predicts_and_plots(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, str(ROOT / "examples" / "quickstart.py"), "--output", str(tmp_path)],
                          capture_output=True, text=True, timeout=360, cwd=ROOT)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    accuracy = float(re.search(r"test accuracy\s*:\s*([0-9.]+)", done.stdout).group(1))
    assert accuracy >= 0.9, done.stdout
    keras_accuracy = float(re.search(r"Keras test accuracy\s*:\s*([0-9.]+)", done.stdout).group(1))
    assert keras_accuracy >= 0.9, done.stdout
    assert "rows in Spark DataFrame: 178" in done.stdout
    plot = tmp_path / "digits_loss.png"
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
