"""Packing a Python environment into an archive that bare cluster hosts unpack and run
(``penv_archive``: Spark's ``spark.archives=env.tar.gz#python_env``).

A venv is packed with venv-pack2 (``import venv_pack``), a conda environment (a folder with
``conda-meta``) with conda-pack; both make the archive relocatable (scripts in ``bin`` find the
Python beside them). An archive is cached by a fingerprint of its environment
(:func:`environment_fingerprint`): an unchanged environment is packed once, and later calls, in
this process or another, reuse its archive. Packing writes a temporary file in the cache folder
and renames it, under a lock (``fcntl.flock``) that makes a second process packing the same
environment wait and then reuse the first one's archive.

Editable installs (``pip install -e``, as zoo_lite itself is installed in development) are
packed as files: the project's importable packages and modules (``top_level.txt``, located by the
environment's own Python as it would import them) go into the archive's ``site-packages``, and
setuptools' ``__editable__*`` import machinery, which points into the checkout, stays out: the
hosts cannot see the checkout. The ``.pth`` files installed beside them (``zoo_lite_startup.pth``,
which imports ``zoo_lite_startup``) are packed as they are, and find their module among the
packed files. An editable project's whole package folder is packed, including files its wheel
would leave out. venv-pack2 refuses an environment whose ``.pth`` files name folders outside it
(editable installs of flit, hatchling and ``setup.py develop``); reinstall such a project with
setuptools' default editable mode, or without ``-e``, before packing.

What is left out, and why that is safe
--------------------------------------
- An editable project's byte-code caches (``__pycache__`` in its source folders): its sources
  change while one works on them, and compiling them on a host is cheap (zoo_lite's own: under
  0.2 s). The installed distributions' byte-code caches are packed (see below).
- setuptools' ``__editable__*`` files and their byte code (see above), replaced by the project's files.
- ``pyspark/work``: the scratch folders of applications that a standalone Spark worker started
  from this environment's pyspark left behind (its default ``SPARK_WORKER_DIR``); no part of
  any package.
- ``pyspark/jars``: the Java side of the pip package's Spark (about 460 MB). A cluster's hosts run
  their own Spark's JVMs, whose Python workers import only pyspark's Python code; a driver started
  by YARN or Kubernetes in cluster deploy mode joins the JVM its cluster manager started.
- ``include`` folders of tensorflow, torch and pyarrow: C and C++ headers (about 350 MB), read only
  when an extension is compiled against these libraries, never when they run.
- What the libraries leave out themselves: venv-pack2 writes its own relocatable ``bin/activate``
  scripts in place of the venv's; conda-pack leaves out ``conda``, ``activate`` and
  ``deactivate`` scripts that conda put into the environment and adds ``bin/conda-unpack``.

Byte code is shipped
--------------------
The installed distributions' ``__pycache__`` folders go into the archive (about 15 % of it for
torch and TensorFlow). Without them every host compiles each module from its source: importing
zoo_lite, torch, TensorFlow, pandas, Ray, pyarrow and Keras took 13.1 s from a fresh unpack
against 5.7 s with the caches (measured on this project's environment). Where the unpacked
folder may not be written (a read-only localised archive, or ``PYTHONDONTWRITEBYTECODE=1`` as
many container images set), that cost came back in every Python process an executor or a Ray
node starts; elsewhere the first processes on each host each compiled it. A cache stays valid
after unpacking because the archive keeps the sources' modification times, which is what
CPython checks; a host whose Python differs in its minor version ignores the caches and compiles,
as it would anyway.

The libraries write the archive in the temporary folder first (``TMPDIR``), which needs room for
it. A venv's ``bin/python`` stays a link to its base interpreter, which each host must have at
the same path (see ``docs/cluster.md``); a conda environment carries its own interpreter.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import logging
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator, Optional, Union

from zoo_lite.errors import EnvironmentPackingError, InvalidArgumentError

if TYPE_CHECKING:
    import conda_pack
    import venv_pack

__all__ = [
    "ARCHIVE_SUFFIXES",
    "CACHE_DIR_VARIABLE",
    "default_cache_dir",
    "environment_kind",
    "environment_fingerprint",
    "archive_path",
    "pack_environment",
    "local_path",
    "check_archive",
    "check_penv_archive",
    "penv_archive_needs_packing",
    "resolve_penv_archive",
]

logger = logging.getLogger(__name__)

#: the archives Spark unpacks (``spark.archives``)
ARCHIVE_SUFFIXES = (".tar.gz", ".tgz", ".tar", ".zip", ".jar")
#: names the cache folder of packed environments (else ``~/.cache/zoo_lite/environments``)
CACHE_DIR_VARIABLE = "ZOO_LITE_CACHE_DIR"
#: part of every fingerprint: changing what goes into an archive must not reuse older archives
_PACKING_VERSION = "3"
#: gzip level: the libraries' default; higher levels take much longer for a few percent less,
#: as most of an environment's bytes are compiled libraries
_COMPRESS_LEVEL = 4
#: how long a process waits for another one packing the same environment
_LOCK_TIMEOUT_S = 1800.0
_LOCK_POLL_S = 0.2
#: archives kept per environment folder: the newest, and the one before it, which a running
#: application may still be serving to its executors
_KEPT_ARCHIVES = 2
#: an editable project's byte-code caches, not packed (its folders' names)
_NOT_PACKED_DIRS = ("__pycache__",)
#: setuptools' import machinery of an editable install, in site-packages
_EDITABLE_MACHINERY = "__editable__*"
#: Spark standalone's default SPARK_WORKER_DIR, in pyspark's folder: applications' scratch files
_SPARK_WORK_DIR = "pyspark/work/*"
#: what only the driver's own Spark or a compiler reads, in site-packages (see the module's text)
_NOT_NEEDED_TO_RUN = ("pyspark/jars/*", "tensorflow/include/*", "torch/include/*", "pyarrow/include/*")
#: the library that packs each kind of environment: import name, what to pip install
_PACKERS = {"venv": ("venv_pack", "venv-pack2==0.9.2"), "conda": ("conda_pack", "conda-pack==0.9.2")}

# Run by the environment's own Python: where its interpreter is, and where it would import each
# name given from (a package's folder, or a module's file), without importing any of them.
_PROBE = r"""
import importlib.util, json, os, sys, sysconfig
locations = {}
for name in sys.argv[1:]:
    spec = importlib.util.find_spec(name)
    if spec is not None and spec.submodule_search_locations:
        locations[name] = list(spec.submodule_search_locations)[0]
    elif spec is not None and spec.origin and os.path.isfile(spec.origin):
        locations[name] = spec.origin
print(json.dumps({"version": sys.version, "base_executable": os.path.realpath(sys._base_executable),
                  "platform": sysconfig.get_platform(), "locations": locations}))
"""


@dataclass(frozen=True)
class _Environment:
    """What packing needs to know of an environment, found once per call."""

    prefix: Path
    kind: str
    site_packages: Path
    interpreter: tuple[str, str, str]
    #: the editable distributions' top-level names and the folder or file each is imported from
    editable_sources: tuple[tuple[str, Path], ...]


def default_cache_dir() -> Path:
    """The folder of packed environments: ``$ZOO_LITE_CACHE_DIR``, else
    ``~/.cache/zoo_lite/environments``.

    Examples
    --------
    >>> import os
    >>> saved = os.environ.get(CACHE_DIR_VARIABLE)
    >>> os.environ[CACHE_DIR_VARIABLE] = "/data/envs"
    >>> default_cache_dir()
    PosixPath('/data/envs')
    >>> _ = os.environ.pop(CACHE_DIR_VARIABLE) if saved is None else os.environ.update({CACHE_DIR_VARIABLE: saved})
    """
    configured = os.environ.get(CACHE_DIR_VARIABLE)
    if configured:
        return Path(configured).expanduser()
    return Path.home() / ".cache" / "zoo_lite" / "environments"


def environment_kind(prefix: Union[str, Path]) -> Optional[str]:
    """``"conda"`` for a conda environment (it has ``conda-meta``), ``"venv"`` for a venv or
    virtualenv (it has ``pyvenv.cfg``), else None.

    Examples
    --------
    >>> import tempfile
    >>> environment_kind(tempfile.mkdtemp()) is None
    True
    """
    folder = Path(prefix)
    if (folder / "conda-meta").is_dir():
        return "conda"
    if (folder / "pyvenv.cfg").is_file():
        return "venv"
    return None


def _require_environment(prefix: Path, named: str) -> str:
    """The kind of environment at ``prefix``; else an error that calls it ``named``."""
    kind = environment_kind(prefix)
    if kind is None:
        where = "no such folder" if not prefix.is_dir() else "a folder with neither pyvenv.cfg nor conda-meta"
        raise InvalidArgumentError(
            f"{named} is neither a venv nor a conda environment ({where}: {prefix}); give the folder of one "
            "(python -m venv makes a venv), or an archive of one")
    return kind


def _site_packages(prefix: Path) -> Path:
    found = sorted(prefix.glob("lib/python3*/site-packages"))
    if len(found) != 1:
        raise EnvironmentPackingError(
            f"prefix={str(prefix)!r} has {len(found)} site-packages folders ({[str(f) for f in found]}), "
            "where one lib/python3.X/site-packages was expected; pack an environment of one Python version")
    return found[0]


def _editable_top_level_names(site_packages: Path) -> list[str]:
    """The top-level packages and modules of the distributions installed editable."""
    from importlib.metadata import distributions

    names: list[str] = []
    for dist in distributions(path=[str(site_packages)]):
        try:
            direct_url = json.loads(dist.read_text("direct_url.json") or "{}")
        except ValueError:   # a malformed record is no editable install pip made
            continue
        if direct_url.get("dir_info", {}).get("editable") is True:
            # without top_level.txt (not written by every build backend), the project's name
            top_level = (dist.read_text("top_level.txt") or "").split()
            names.extend(top_level or [dist.metadata["Name"].replace("-", "_").lower()])
    return names


def _probe(prefix: Path, names: list[str]) -> dict[str, Any]:
    """Ask the environment's own Python (isolated from this process's variables) about itself."""
    python = prefix / "bin" / "python"
    try:
        done = subprocess.run([str(python), "-I", "-c", _PROBE, *names], capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired) as error:
        raise EnvironmentPackingError(f"prefix={str(prefix)!r}: its Python {python} does not run ({error}); "
                                      "recreate the environment") from error
    if done.returncode != 0:
        raise EnvironmentPackingError(f"prefix={str(prefix)!r}: its Python {python} failed (exit code "
                                      f"{done.returncode}):\n{done.stderr[-2000:]}")
    return json.loads(done.stdout)


def _inspect(prefix: Union[str, Path], named: str) -> _Environment:
    folder = Path(os.path.abspath(prefix))
    kind = _require_environment(folder, named)
    site_packages = _site_packages(folder)
    facts = _probe(folder, _editable_top_level_names(site_packages))
    # a name found inside the environment is packed with it already (only a checkout's must be added)
    sources = tuple(sorted((name, Path(path)) for name, path in facts["locations"].items()
                           if not Path(path).is_relative_to(folder)))
    return _Environment(folder, kind, site_packages, (facts["version"], facts["base_executable"], facts["platform"]),
                        sources)


def _editable_files(source: Path) -> Iterator[tuple[Path, str]]:
    """Each file of an editable package folder (or its one module file), with its path relative
    to site-packages; byte-code caches left out."""
    if source.is_file():
        yield source, source.name
        return
    for root, dirs, files in os.walk(source):
        dirs[:] = sorted(d for d in dirs if d not in _NOT_PACKED_DIRS)
        for name in sorted(files):
            if not name.endswith(".pyc"):
                path = Path(root) / name
                yield path, f"{source.name}/{path.relative_to(source)}"


def _fingerprint(env: _Environment) -> str:
    """What decides an archive's content: the interpreter, every installed distribution's name and
    version (and for conda every package record), and each editable source file's path, size and
    modification time (edited, added or removed source files change it)."""
    from importlib.metadata import distributions

    digest = hashlib.sha256()
    digest.update(json.dumps([_PACKING_VERSION, env.kind, list(env.interpreter)]).encode())
    installed = sorted(f"{dist.metadata['Name']}=={dist.version}" for dist in distributions(path=[str(env.site_packages)]))
    digest.update(json.dumps(installed).encode())
    if env.kind == "conda":
        digest.update(json.dumps(sorted(os.listdir(env.prefix / "conda-meta"))).encode())
    for name, source in env.editable_sources:
        for path, target in _editable_files(source):
            stat = path.stat()
            digest.update(json.dumps([name, str(path), target, stat.st_size, stat.st_mtime_ns]).encode())
    return digest.hexdigest()[:16]


def environment_fingerprint(prefix: Union[str, Path] = sys.prefix) -> str:
    """The fingerprint :func:`pack_environment` caches the archive of the environment at
    ``prefix`` by: 16 hexadecimal digits that change when its interpreter, an installed
    distribution (name, version), or a source file of an editable install changes.

    Parameters
    ----------
    prefix : str or Path
        The folder of a venv or conda environment; by default this Python's.

    Returns
    -------
    str

    Examples
    --------
    >>> import subprocess, sys, tempfile
    >>> from pathlib import Path
    >>> env = Path(tempfile.mkdtemp()) / "env"
    >>> _ = subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(env)], check=True)
    >>> fingerprint = environment_fingerprint(env)
    >>> len(fingerprint), fingerprint == environment_fingerprint(env)
    (16, True)
    """
    return _fingerprint(_inspect(prefix, f"prefix={str(prefix)!r}"))


def _human_size(size_bytes: int) -> str:
    size = float(size_bytes)
    for unit in ("B", "KB", "MB", "GB"):
        if size < 1024 or unit == "GB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    raise AssertionError("unreachable")


@contextlib.contextmanager
def _exclusive_lock(lock_file: Path, prefix: Path, timeout_s: float) -> Iterator[None]:
    """Hold ``lock_file`` exclusively; wait up to ``timeout_s`` for a process holding it (the lock
    goes with its process, so one that died holds nothing)."""
    with open(lock_file, "a") as handle:
        deadline = time.monotonic() + timeout_s
        waiting = False
        while True:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if not waiting:
                    logger.info("waiting for another process packing %s (it holds %s)", prefix, lock_file)
                    waiting = True
                if time.monotonic() >= deadline:
                    raise EnvironmentPackingError(
                        f"another process has been packing prefix={str(prefix)!r} for longer than lock_timeout_s="
                        f"{timeout_s:g} (it holds {lock_file}); let it finish and call again, or give a longer "
                        "lock_timeout_s") from None
                time.sleep(_LOCK_POLL_S)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _import_packer(kind: str, prefix: Path) -> Any:
    module, requirement = _PACKERS[kind]
    try:
        return __import__(module)
    except ImportError as error:
        raise EnvironmentPackingError(
            f"packing the {kind} at prefix={str(prefix)!r} needs {requirement.split('==')[0]}, which is not installed "
            f"here ({error}); install it with: pip install {requirement}") from error


def _left_out(env: _Environment) -> list[str]:
    """Patterns (of a path relative to the environment) of the files not packed; see the module's text."""
    site = env.site_packages.relative_to(env.prefix).as_posix()
    return [f"{site}/{_EDITABLE_MACHINERY}", f"{site}/__pycache__/{_EDITABLE_MACHINERY}", f"{site}/{_SPARK_WORK_DIR}",
            *(f"{site}/{pattern}" for pattern in _NOT_NEEDED_TO_RUN)]


def _editable_records(env: _Environment, make_file: Any) -> list[Any]:
    """The library's records (``make_file(source, target)``) of the editable projects' files, in
    site-packages."""
    site = env.site_packages.relative_to(env.prefix).as_posix()
    return [make_file(str(path), f"{site}/{target}")
            for _, source in env.editable_sources for path, target in _editable_files(source)]


def _pack_venv(env: _Environment, output: Path, verbose: bool) -> None:
    venv_pack = _import_packer("venv", env.prefix)
    packed: "venv_pack.Env" = venv_pack.Env(prefix=str(env.prefix))
    for pattern in _left_out(env):
        packed = packed.exclude(pattern)
    packed.files.extend(_editable_records(env, venv_pack.File))
    packed.pack(output=str(output), format="tar.gz", verbose=verbose, compress_level=_COMPRESS_LEVEL)


def _pack_conda(env: _Environment, output: Path, verbose: bool) -> None:
    conda_pack = _import_packer("conda", env.prefix)
    # its check refuses any editable install; their files are added in place of their machinery
    packed: "conda_pack.CondaEnv" = conda_pack.CondaEnv.from_prefix(str(env.prefix), ignore_editable_packages=True)
    for pattern in _left_out(env):
        packed = packed.exclude(pattern)

    def unmanaged(source: str, target: str) -> Any:   # as conda-pack records a file no package owns
        return conda_pack.File(source, target, is_conda=False, file_mode="unknown")

    packed.files.extend(_editable_records(env, unmanaged))
    packed.pack(output=str(output), format="tar.gz", verbose=verbose, compress_level=_COMPRESS_LEVEL, n_threads=-1)


def _pack_atomically(env: _Environment, archive: Path, progress: bool) -> None:
    """Pack into a temporary file beside ``archive``, then rename it: no reader ever sees part of one."""
    partial = archive.with_name(f".{archive.name}.{os.getpid()}.partial")
    # the libraries' bars redraw ten times a second: only for a terminal, never into a log file
    verbose = progress and sys.stdout.isatty()
    logger.info("packing the %s at %s into %s", env.kind, env.prefix, archive)
    started = time.monotonic()
    try:
        (_pack_venv if env.kind == "venv" else _pack_conda)(env, partial, verbose)
        os.replace(partial, archive)
    except EnvironmentPackingError:
        partial.unlink(missing_ok=True)
        raise
    except Exception as error:   # the libraries' own errors, and the file system's
        partial.unlink(missing_ok=True)
        raise EnvironmentPackingError(
            f"packing the {env.kind} at prefix={str(env.prefix)!r} failed: {type(error).__name__}: {error}") from error
    logger.info("packed %s into %s (%s) in %.1f s", env.prefix, archive, _human_size(archive.stat().st_size),
                time.monotonic() - started)


def _prune_older_archives(archive: Path) -> None:
    stem = archive.name.rsplit("-", 1)[0]   # the environment folder's part of the name
    older = sorted(archive.parent.glob(f"{stem}-{'?' * 16}.tar.gz"), key=lambda path: path.stat().st_mtime_ns, reverse=True)
    for stale in older[_KEPT_ARCHIVES:]:
        stale.unlink(missing_ok=True)
        logger.info("removed %s, an archive of an earlier state of the same environment", stale)


def _archive_path(env: _Environment, cache_dir: Optional[Path]) -> Path:
    folder = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    # two environment folders of one name (two "venv"s) must not share archives
    folder_id = hashlib.sha256(str(env.prefix).encode()).hexdigest()[:8]
    return folder / f"{env.prefix.name or 'env'}-{folder_id}-{_fingerprint(env)}.tar.gz"


def archive_path(prefix: Union[str, Path] = sys.prefix, cache_dir: Optional[Path] = None) -> Path:
    """Where :func:`pack_environment` keeps the archive of the present state of the environment
    at ``prefix`` (it may not be packed yet). While a process packs it, it holds the lock file
    beside it, of the same name ending in ``.lock``.

    Parameters
    ----------
    prefix : str or Path
        The folder of a venv or conda environment; by default this Python's.
    cache_dir : Path, optional
        Where archives are kept; by default :func:`default_cache_dir`.

    Returns
    -------
    Path

    Examples
    --------
    >>> import sys
    >>> archive = archive_path(sys.prefix, cache_dir=Path("/data/envs"))   # this Python's environment
    >>> archive.parent, archive.name.endswith(".tar.gz"), archive.exists()
    (PosixPath('/data/envs'), True, False)
    """
    return _archive_path(_inspect(prefix, f"prefix={str(prefix)!r}"), cache_dir)


def pack_environment(prefix: Union[str, Path] = sys.prefix, cache_dir: Optional[Path] = None, progress: bool = True,
                     *, lock_timeout_s: float = _LOCK_TIMEOUT_S) -> Path:
    """Pack the venv or conda environment at ``prefix`` into a ``.tar.gz`` for ``penv_archive``,
    or return the archive packed earlier from the same state of it.

    The archive is cached by :func:`environment_fingerprint`; an unchanged environment is never
    packed twice, and a process that finds another one packing it waits for that archive.
    Editable installs are packed as their files (see :mod:`zoo_lite.env_packing`). The two
    newest archives of each environment folder are kept; older ones are removed.

    Parameters
    ----------
    prefix : str or Path
        The environment's folder; by default this Python's (``sys.prefix``).
    cache_dir : Path, optional
        Where archives are kept; by default :func:`default_cache_dir`.
    progress : bool
        Show the packing library's progress bar when standard output is a terminal (never in a log
        file). The time packing took and the archive's size are logged either way (logger
        ``zoo_lite.env_packing``).
    lock_timeout_s : float
        How long to wait for another process packing the same environment.

    Returns
    -------
    Path
        The archive.

    Raises
    ------
    InvalidArgumentError
        ``prefix`` is neither a venv nor a conda environment.
    EnvironmentPackingError
        The packing library is not installed, or failed; or the wait for another process timed out.

    Examples
    --------
    >>> import shutil, subprocess, sys, tempfile
    >>> from pathlib import Path
    >>> folder = Path(tempfile.mkdtemp())
    >>> _ = subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(folder / "env")], check=True)
    >>> archive = pack_environment(folder / "env", cache_dir=folder / "cache", progress=False)
    >>> archive.name.endswith(".tar.gz"), pack_environment(folder / "env", cache_dir=folder / "cache") == archive
    (True, True)
    >>> shutil.rmtree(folder)
    """
    env = _inspect(prefix, f"prefix={str(prefix)!r}")
    archive = _archive_path(env, cache_dir)
    archive.parent.mkdir(parents=True, exist_ok=True)
    if not archive.exists():
        with _exclusive_lock(archive.with_name(archive.name.replace(".tar.gz", ".lock")), env.prefix, lock_timeout_s):
            if not archive.exists():   # else another process packed it while this one waited
                _pack_atomically(env, archive, progress)
                _prune_older_archives(archive)
                return archive
    logger.info("reused %s (%s), packed earlier from %s, which has not changed since",
                archive, _human_size(archive.stat().st_size), env.prefix)
    return archive


def local_path(value: str) -> Optional[str]:
    """The local path ``value`` names (a plain path, or a ``file://`` URI); None for a remote URI.

    Examples
    --------
    >>> local_path("file:///envs/env.tar.gz"), local_path("env.tar.gz"), local_path("hdfs:///envs/env.tar.gz")
    ('/envs/env.tar.gz', 'env.tar.gz', None)
    """
    if "://" not in value:
        return value
    return value[len("file://"):] if value.startswith("file://") else None


def check_archive(archive: Any, argument: str = "penv_archive") -> None:
    """Check that ``archive`` is an archive Spark unpacks: a local file that exists, or a URI
    Spark fetches (``hdfs://``, ``s3a://``, ...).

    Examples
    --------
    >>> check_archive("hdfs:///envs/env.tar.gz")
    >>> check_archive("env.whl")
    Traceback (most recent call last):
    ...
    zoo_lite.errors.InvalidArgumentError: penv_archive='env.whl' must name an archive of a Python environment (.tar.gz, .tgz, .tar, .zip, .jar), as conda-pack or venv-pack write it: pack the environment first (zoo_lite.env_packing.pack_environment(), conda pack -o env.tar.gz, or venv-pack -o env.tar.gz) and pass its path
    """
    how_to_pack = "pack the environment first (zoo_lite.env_packing.pack_environment(), conda pack -o env.tar.gz, " \
                  "or venv-pack -o env.tar.gz)"
    if not isinstance(archive, str) or not archive.lower().endswith(ARCHIVE_SUFFIXES):
        raise InvalidArgumentError(
            f"{argument}={archive!r} must name an archive of a Python environment ({', '.join(ARCHIVE_SUFFIXES)}), "
            f"as conda-pack or venv-pack write it: {how_to_pack} and pass its path")
    local = local_path(archive)
    if local is not None and not os.path.isfile(local):
        raise InvalidArgumentError(
            f"{argument}={archive!r}: no such file on the driver's host ({os.path.abspath(local)}); {how_to_pack}, "
            "or give the URI of a copy that the executors can fetch (hdfs://..., s3a://...)")


def _environment_to_pack(value: Any) -> Optional[Path]:
    """The environment folder ``penv_archive=value`` asks to pack (``"auto"``: this Python's), or
    None when ``value`` names an archive; refuses a folder that is no environment."""
    if value == "auto":
        _require_environment(Path(sys.prefix), f"penv_archive='auto' packs this Python's environment, but "
                                               f"sys.prefix={sys.prefix!r}, which")
        return Path(sys.prefix)
    local = local_path(value) if isinstance(value, str) else None
    if local is not None and os.path.isdir(local):
        _require_environment(Path(local), f"penv_archive={value!r}")
        return Path(local)
    return None


def check_penv_archive(value: Any) -> None:
    """Check ``penv_archive`` without packing anything: ``"auto"``, the folder of a venv or conda
    environment, an archive file that exists, or a URI Spark fetches.

    Examples
    --------
    >>> check_penv_archive("auto")   # when this Python runs in a venv or conda environment
    >>> check_penv_archive("env.whl")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    zoo_lite.errors.InvalidArgumentError: penv_archive='env.whl' must name an archive of a Python environment ...
    """
    if _environment_to_pack(value) is None:
        check_archive(value, "penv_archive")


def penv_archive_needs_packing(value: str) -> bool:
    """Whether ``penv_archive=value`` names an environment to pack (``"auto"`` or a folder).

    Examples
    --------
    >>> penv_archive_needs_packing("auto"), penv_archive_needs_packing("hdfs:///envs/env.tar.gz")
    (True, False)
    """
    return _environment_to_pack(value) is not None


def resolve_penv_archive(value: str, cache_dir: Optional[Path] = None, progress: bool = True) -> str:
    """The archive ``penv_archive=value`` ships: an archive file or a URI as it is; the folder of
    a venv or conda environment packed (:func:`pack_environment`, cached); ``"auto"`` this
    Python's own environment (``sys.prefix``) packed.

    Parameters
    ----------
    value : str
        The user's ``penv_archive``.
    cache_dir : Path, optional
        Where packed archives are kept; by default :func:`default_cache_dir`.
    progress : bool
        Show a progress bar while packing, on a terminal.

    Returns
    -------
    str
        A local archive's path, or a URI Spark fetches.

    Raises
    ------
    InvalidArgumentError
        ``value`` is none of these (the message names ``penv_archive``, the value and the fix).

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> archive = Path(tempfile.mkdtemp()) / "env.tar.gz"
    >>> _ = archive.write_bytes(b"")
    >>> resolve_penv_archive(str(archive)) == str(archive), resolve_penv_archive("s3a://bucket/env.tar.gz")
    (True, 's3a://bucket/env.tar.gz')
    >>> resolve_penv_archive(str(archive.parent))   # a folder, but no environment  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    zoo_lite.errors.InvalidArgumentError: penv_archive='...' is neither a venv nor a conda environment (a folder with neither pyvenv.cfg nor conda-meta: ...); give the folder of one (python -m venv makes a venv), or an archive of one
    """
    environment = _environment_to_pack(value)
    if environment is not None:
        return str(pack_environment(environment, cache_dir, progress))
    check_archive(value, "penv_archive")
    return value
