"""What bare worker hosts hold, and the driver's environment that matches them.

A worker host of a real cluster has Java, a Spark installation and the system's Python; the user's
packages arrive with the job (``penv_archive=``, ``spark.archives``). A simulated bare host is made
by hiding, in its mount namespace, the checkout, this environment and the interpreter it was made
from (:func:`hidden_on_bare_hosts`), and by running Spark from an installation of its own
(:func:`spark_installation`, a hard-linked copy of the pinned pyspark's Spark, as a host's image
would hold it).

The executors then run the system's Python (Debian's 3.11.2 here), while this environment was made
by pyenv's 3.11.7; Ray refuses to join processes of two patch versions. So the driver of the
bare-host tests runs :func:`driver_environment`: a venv of the system's Python whose
site-packages are this environment's, hard-linked (no download, no copy). It is built once per set
of installed distributions and kept outside the checkout, in :data:`ENVIRONMENTS`, with the
archives that zoo_lite packs of it.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path
from typing import Optional, Sequence

from tests.kept_builds import build_once

__all__ = ["SYSTEM_PYTHON", "ENVIRONMENTS", "ARCHIVES", "NOT_IMPORTED_BY_THE_JOBS", "why_no_bare_hosts",
           "hidden_on_bare_hosts", "spark_installation", "driver_environment"]

#: the bare hosts' Python, as the machine's image installs it
SYSTEM_PYTHON = "/usr/bin/python3"
#: where the driver's environment and Spark's copy are kept between runs (outside any checkout)
ENVIRONMENTS = Path("/var/tmp/zoo_lite-test-envs")
#: where zoo_lite packs the driver's environment for these tests (``ZOO_LITE_CACHE_DIR``)
ARCHIVES = ENVIRONMENTS / "archives"
_ROOT = Path(__file__).resolve().parents[2]
_TIMEOUT_S = 600.0


def _system_python_facts() -> Optional[str]:
    """The system Python's ``major.minor.micro``, or None when it is missing or cannot make a venv."""
    if not os.path.exists(SYSTEM_PYTHON):
        return None
    done = subprocess.run([SYSTEM_PYTHON, "-c", "import platform, venv; print(platform.python_version())"],
                          capture_output=True, text=True, timeout=60)
    return done.stdout.strip() if done.returncode == 0 else None


def why_no_bare_hosts() -> Optional[str]:
    """Why bare hosts cannot be simulated here, or None when they can: they need a system Python of
    this Python's minor version (its wheels must load there) that has no numpy of its own."""
    version = _system_python_facts()
    ours = f"{sys.version_info.major}.{sys.version_info.minor}"
    if version is None:
        return f"bare hosts need a system Python at {SYSTEM_PYTHON} with its venv module (apt install python3-venv)"
    if not version.startswith(ours + "."):
        return f"the system Python is {version}, this environment's is {ours}: their wheels differ"
    if subprocess.run([SYSTEM_PYTHON, "-c", "import numpy"], capture_output=True, timeout=60).returncode == 0:
        return f"{SYSTEM_PYTHON} imports numpy: it is not a bare Python"
    return None


def hidden_on_bare_hosts() -> list[str]:
    """The folders a bare host must not see: the checkout, this environment, the interpreter it was
    made from, and the bare-host driver's environments (those below ``/tmp`` are hidden already)."""
    # a folder is hidden by mounting over it, so the drivers' one must exist before the hosts are
    # made: on a new machine it is made only when the first driver environment is built, later
    (ENVIRONMENTS / "drivers").mkdir(parents=True, exist_ok=True)
    base = Path(sys.base_prefix).resolve()
    pyenv = next((parent for parent in base.parents if parent.name == ".pyenv"), base)
    folders = {str(_ROOT), str(Path(sys.prefix).resolve()), str(pyenv), str(ENVIRONMENTS / "drivers")}
    if str(base).startswith("/usr"):   # a system interpreter is what the bare hosts run
        folders -= {str(base), str(pyenv)}
    outermost = sorted(folder for folder in folders if not folder.startswith("/tmp/") and os.path.isdir(folder))
    return [folder for folder in outermost if not any(folder.startswith(other + "/") for other in outermost)]


def _build_once(target: Path, build) -> Path:
    """:func:`build_once`; when another checkout's or package set's build is pruned, so are the
    archives zoo_lite packed of it."""
    def archives_pruned(folder: Path) -> None:
        for archive in ARCHIVES.glob(f"{folder.name}-*"):
            archive.unlink(missing_ok=True)

    return build_once(target, build, archives_pruned)


def _hard_linked_copy(source: Path, target: Path) -> None:
    """``source``'s tree at ``target``, hard-linked (a plain copy where they are on two file systems)."""
    linked = subprocess.run(["cp", "-al", str(source), str(target)], capture_output=True, text=True, timeout=_TIMEOUT_S)
    if linked.returncode != 0:
        shutil.rmtree(target, ignore_errors=True)
        subprocess.run(["cp", "-a", str(source), str(target)], check=True, timeout=_TIMEOUT_S)


def spark_installation() -> Path:
    """The bare hosts' Spark: the pinned pyspark's Spark folder, hard-linked into :data:`ENVIRONMENTS`,
    with the suite's short-lived JVM settings as the defaults in its ``conf/`` (which the hosts'
    Spark reads; the class archive, made for pyspark's own folder, would not fit it)."""
    import pyspark

    from tests.jvm_settings import SHORT_LIVED_JVM_OPTIONS
    from zoo_lite.standalone import spark_home

    def build(folder: Path) -> None:
        _hard_linked_copy(Path(spark_home()), folder)
        shutil.rmtree(folder / "conf", ignore_errors=True)
        (folder / "conf").mkdir()
        (folder / "conf" / "spark-defaults.conf").write_text(
            "".join(f"spark.{role}.defaultJavaOptions {SHORT_LIVED_JVM_OPTIONS}\n" for role in ("driver", "executor")))

    return _build_once(ENVIRONMENTS / f"spark-{pyspark.__version__}", build)


def _site_packages(prefix: Path) -> Path:
    return Path(sysconfig.get_path("purelib", vars={"base": str(prefix), "platbase": str(prefix)}))


def _environment_key(site_packages: Path, system_version: str) -> str:
    """What the driver's environment is made of: the system Python's version, the installed
    distributions and where the editable ones point (their import machinery's text)."""
    digest = hashlib.sha256(system_version.encode())
    for entry in sorted(os.listdir(site_packages)):
        if entry.endswith((".dist-info", ".egg-info")):
            digest.update(entry.encode())
        elif entry.startswith("__editable__"):
            digest.update((site_packages / entry).read_bytes())
    return digest.hexdigest()[:12]


def _copy_scripts(source_bin: Path, target_bin: Path, python: Path) -> None:
    """This environment's console scripts into ``target_bin``, their ``#!`` naming ``python``."""
    ours = f"#!{source_bin}/python"
    for script in source_bin.iterdir():
        if not script.is_file() or (target_bin / script.name).exists():
            continue
        with open(script, "rb") as file:
            first = file.readline()
        if not first.startswith(ours.encode()):
            continue
        text = script.read_bytes().replace(first, f"#!{python}\n".encode(), 1)
        (target_bin / script.name).write_bytes(text)
        (target_bin / script.name).chmod(0o755)


def _remove_distributions(site_packages: Path, names: Sequence[str]) -> None:
    """Remove the distributions ``names`` (as pip names them) from ``site_packages``: the files
    their records list there, their metadata, and the folders that leaves empty."""
    from importlib.metadata import distributions

    wanted = {name.lower().replace("_", "-") for name in names}
    emptied: set[Path] = set()
    for dist in distributions(path=[str(site_packages)]):
        if dist.metadata["Name"].lower().replace("_", "-") not in wanted:
            continue
        for record in dist.files or ():
            path = Path(os.path.normpath(site_packages / record))
            if path.is_relative_to(site_packages) and not path.is_dir():
                path.unlink(missing_ok=True)
                emptied.add(path.parent)
        shutil.rmtree(Path(str(dist._path)), ignore_errors=True)   # its .dist-info
    for folder in sorted(emptied, key=lambda path: len(path.parts), reverse=True):   # the deepest first
        while folder != site_packages and folder.is_dir() and _holds_only_byte_code(folder):
            shutil.rmtree(folder)
            folder = folder.parent


def _holds_only_byte_code(folder: Path) -> bool:
    """Whether ``folder`` is a byte-code cache or holds nothing else (byte code compiled since the
    install is in no record)."""
    return folder.name == "__pycache__" or {entry.name for entry in folder.iterdir()} <= {"__pycache__"}


#: what this environment holds that no job of the bare-host tests imports: the docs' and the
#: suite's own tools, the S3 test server, dask, TensorFlow Datasets, torchvision. Their 340 MB in
#: 28,000 files (of 3 GB in 53,000 packed) would be packed, unpacked on every host and removed again
NOT_IMPORTED_BY_THE_JOBS = (
    "playwright", "mkdocs", "mkdocs-material", "mkdocs-material-extensions", "mkdocstrings", "mkdocstrings-python",
    "mkdocs-autorefs", "mkdocs-get-deps", "ghp-import", "paginate", "pymdown-extensions", "babel", "ruff",
    "pytest-xdist", "execnet", "moto", "cfn-lint", "docker", "py-partiql-parser", "openapi-spec-validator", "dask",
    "tensorflow-datasets", "tensorflow-metadata", "torchvision")


def driver_environment(leave_out: Sequence[str] = NOT_IMPORTED_BY_THE_JOBS) -> Path:
    """The prefix of a venv of :data:`SYSTEM_PYTHON` holding this environment's distributions
    (hard-linked; the editable zoo_lite still imports from the checkout) but those named in
    ``leave_out`` (by default what the tests' jobs do not import), built once per set of
    distributions. Raises ``RuntimeError`` with the reason when bare hosts cannot be simulated."""
    why = why_no_bare_hosts()
    if why is not None:
        raise RuntimeError(why)
    source = _site_packages(Path(sys.prefix))
    version = _system_python_facts() or ""
    left_out = sorted(leave_out)
    key = _environment_key(source, version + "".join(f" -{name}" for name in left_out))
    target = ENVIRONMENTS / "drivers" / f"driver-{key}"

    def build(folder: Path) -> None:
        subprocess.run([SYSTEM_PYTHON, "-m", "venv", "--without-pip", str(folder)], check=True, timeout=_TIMEOUT_S)
        site_packages = folder / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}" / "site-packages"
        shutil.rmtree(site_packages)
        _hard_linked_copy(source, site_packages)
        _remove_distributions(site_packages, left_out)
        _copy_scripts(Path(sys.prefix) / "bin", folder / "bin", target / "bin" / "python")
        subprocess.run([str(folder / "bin" / "python"), "-c", "import zoo_lite, numpy, torch, pyspark"], check=True,
                       timeout=_TIMEOUT_S, cwd="/")

    return _build_once(target, build)
