"""Python environments for the tests of the executors' Python and of shipping and packing an
environment (tests/test_executor_python.py, tests/test_shipped_environment.py,
tests/test_env_packing.py): small venvs that see this environment's packages, and tiny venvs
with wheels written here (no network)."""

from __future__ import annotations

import base64
import hashlib
import os
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BASE_PYTHON = os.path.realpath(sys._base_executable)


def venv_seeing_this_environment(python: str, folder: Path) -> Path:
    """A venv of ``python`` at ``folder`` (no pip: it installs nothing) whose ``site-packages``
    leads, through ``.pth`` files, to this environment's packages and the checkout; its prefix."""
    subprocess.run([python, "-m", "venv", "--without-pip", str(folder)], check=True, timeout=120)
    site_packages = next((folder / "lib").glob("python3.*")) / "site-packages"
    (site_packages / "this_environment.pth").write_text("\n".join(this_environments_paths()) + "\n")
    return folder


def this_environments_paths() -> list[str]:
    """Where this environment's packages and the checkout's zoo_lite are imported from: for
    another Python's ``.pth`` file or ``PYTHONPATH``."""
    return [*(path for path in sys.path if path.endswith("site-packages")), str(ROOT)]


def make_venv(folder: Path) -> Path:
    subprocess.run([BASE_PYTHON, "-m", "venv", "--without-pip", str(folder)], check=True, timeout=60)
    return folder


def make_wheel(folder: Path, name: str, version: str = "1.0") -> Path:
    """A pure-Python wheel of one package ``name`` whose ``VALUE`` is ``f"{name} {version}"``."""
    files = {
        f"{name}/__init__.py": f"VALUE = {f'{name} {version}'!r}\n",
        f"{name}-{version}.dist-info/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
        f"{name}-{version}.dist-info/WHEEL": "Wheel-Version: 1.0\nGenerator: tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
        f"{name}-{version}.dist-info/top_level.txt": f"{name}\n",
    }
    record = f"{name}-{version}.dist-info/RECORD"
    lines = []
    for path, text in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()
        lines.append(f"{path},sha256={digest},{len(text.encode())}")
    files[record] = "\n".join([*lines, f"{record},,"]) + "\n"
    wheel = folder / f"{name}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for path, text in files.items():
            archive.writestr(path, text)
    return wheel


def pip_install(venv: Path, *arguments: str, env: dict[str, str] | None = None) -> None:
    subprocess.run([sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "install", "-q",
                    "--no-index", "--no-deps", "--disable-pip-version-check", *arguments],
                   check=True, timeout=120, env=env)
