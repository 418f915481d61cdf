"""Python environments for the tests of the executors' Python (tests/test_executor_python.py,
tests/test_shipped_environment.py): small venvs that see this environment's packages."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def venv_seeing_this_environment(python: str, folder: Path) -> Path:
    """A venv of ``python`` at ``folder`` (no pip: it installs nothing) whose ``site-packages``
    leads, through ``.pth`` files, to this environment's packages and the checkout; its prefix."""
    subprocess.run([python, "-m", "venv", "--without-pip", str(folder)], check=True, timeout=120)
    site_packages = next((folder / "lib").glob("python3.*")) / "site-packages"
    (site_packages / "this_environment.pth").write_text("\n".join(p for p in sys.path if p.endswith("site-packages")) + "\n")
    (site_packages / "zoo_lite_checkout.pth").write_text(f"{ROOT}\n")
    return folder
