"""The README's commands run ``examples/quickstart.py``: as shipped (``scripts/demo.sh`` form), and
through ``scripts/spark-submit`` with a local-cluster master, from a shell where the venv is not
activated. spark-submit with a local master (Ray started as in local mode) is run by
``tests/test_examples.py``'s training job."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
QUICKSTART = str(ROOT / "examples" / "quickstart.py")


def shell_without_the_venv() -> dict[str, str]:
    """This environment as a new shell has it: no activated venv, no Spark or PySpark variables."""
    venv_bin = str(Path(sys.executable).parent)
    env = {k: v for k, v in os.environ.items()
           if k != "VIRTUAL_ENV" and not k.startswith(("PYSPARK_", "SPARK_")) and k != "PYTHONPATH"}
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep) if p and p != venv_bin)
    return env


COMMANDS = {
    "python": [sys.executable, QUICKSTART],
    "spark-submit local-cluster": [str(ROOT / "scripts" / "spark-submit"), "--master", "local-cluster[2,1,1024]",
                                   QUICKSTART, "--cluster-mode", "spark-submit"],
}


@pytest.mark.cluster
@pytest.mark.timeout(500)
@pytest.mark.parametrize("launch", list(COMMANDS))
def test_the_quickstart_job_trains_predicts_and_plots(tmp_path: Path, launch: str) -> None:
    done = subprocess.run([*COMMANDS[launch], "--output", str(tmp_path)], capture_output=True, text=True, timeout=460,
                          cwd=tmp_path, env=shell_without_the_venv())
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-5000:]
    accuracy = float(re.search(r"test accuracy\s*:\s*([0-9.]+)", done.stdout).group(1))
    assert accuracy >= 0.9, done.stdout
    keras_accuracy = float(re.search(r"Keras test accuracy\s*:\s*([0-9.]+)", done.stdout).group(1))
    assert keras_accuracy >= 0.9, done.stdout
    assert "rows in Spark DataFrame: 178" in done.stdout
    # the quickstart's own lines (zoo_lite's log lines, which spark-submit mixes in, may name workers too)
    workers = re.findall(r"^  training rows .*, (\d+) worker\(s\)$", done.stdout, re.M)
    assert workers == (["2", "2"] if "local-cluster" in launch else ["1", "1"]), done.stdout
    plot = tmp_path / "digits_loss.png"
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
