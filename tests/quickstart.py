"""What the quickstart (``examples/quickstart.py``) must print, and the shell a user runs it from.

``tests/test_examples.py`` runs it as the README's commands do (``scripts/demo.sh`` form), from a
shell where the venv is not activated; ``tests/bare_hosts/test_bare_hosts.py`` runs it under
``scripts/spark-submit`` on the simulated cluster's hosts; both check its output here."""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

from tests.test_quiet import clean_environment

ROOT = Path(__file__).resolve().parents[1]
QUICKSTART = str(ROOT / "examples" / "quickstart.py")


def shell_without_the_venv() -> dict[str, str]:
    """This environment as a new shell has it: no activated venv, no Spark or PySpark variables
    but the suite's JVM settings, and no TensorFlow log level (``init_orca_context`` in this test
    process sets one)."""
    venv_bin = str(Path(sys.executable).parent)
    env = {k: v for k, v in clean_environment().items() if k != "VIRTUAL_ENV"}
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep) if p and p != venv_bin)
    return env


def check_quickstart_output(stdout: str, output: Path, workers: int) -> None:
    """The quickstart's claims: both models reach 0.9 on the digits, the wine CSV gave 178 rows
    in Spark, both fits ran on ``workers`` workers, and the loss plot is a PNG in ``output``."""
    assert float(re.search(r"\btest accuracy\s*:\s*([0-9.]+)", stdout).group(1)) >= 0.9, stdout
    assert float(re.search(r"Keras test accuracy\s*:\s*([0-9.]+)", stdout).group(1)) >= 0.9, stdout
    assert "rows in Spark DataFrame: 178" in stdout
    # the quickstart's own lines (zoo_lite's log lines, which spark-submit mixes in, may name workers too)
    assert re.findall(r"^  training rows .*, (\d+) worker\(s\)$", stdout, re.M) == [str(workers)] * 2, stdout
    assert (output / "digits_loss.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
