"""One unpacked environment per host, shared by the executors of every application there.

With ``spark.archives``, a Spark standalone worker fetches ``penv_archive`` and unpacks it into
each executor's own folder, again for every executor and every application: a minute per
executor for an environment of torch and TensorFlow. Where the cluster manager keeps no cache of
its own (standalone and ``local-cluster``; YARN caches localized archives per node, a Kubernetes
pod is new each time), zoo_lite ships a local archive as a file instead (``spark.files``, fetched
once per application and host) with a small launcher script, which Spark runs as the executors'
Python (``spark.pyspark.python``).

The file goes under a name of its own, ``zoo_lite-archive-<key>`` (a link in zoo_lite's cache
folder, :func:`link_archive`): Spark untars every file of ``spark.files`` whose name ends in
``.tar.gz``, ``.tgz`` or ``.tar`` where it fetches it, in the driver's folder of files and in each
executor's, which would unpack the whole environment twice more per host and application for
nothing. The launcher:

- unpacks the archive once per host into ``zoo_lite-envs/<key>`` in the Spark worker's work
  folder (two levels above the executor's own), under ``flock``, so that two executors starting
  at once unpack it once, and a half-unpacked folder is never used (a marker file is written
  last);
- runs ``bin/conda-unpack`` in a conda-pack archive, once, after unpacking;
- ``exec``\\ s the environment's Python with the arguments Spark gave.

The key names the archive (its name, with a digest of its path, size and modification time), so
a changed archive is unpacked anew and an unchanged one is never unpacked twice on a host. The folders stay in Spark's work folder, which the cluster's own
clean-up (``spark.worker.cleanup.*`` only removes applications' folders) or its administrator
manages; see ``docs/cluster.md``.
"""

from __future__ import annotations

import hashlib
import os
import re
import shlex
import shutil
import time
from pathlib import Path
from typing import Callable

__all__ = ["HOST_ENVS_FOLDER", "LAUNCHERS_FOLDER", "ARCHIVE_LINK_PREFIX", "STALE_AFTER_S", "environment_key",
           "launcher_text", "link_archive", "write_launcher", "host_unpacked_conf"]

#: the folder of unpacked environments, in the Spark worker's work folder
HOST_ENVS_FOLDER = "zoo_lite-envs"
#: where the driver writes the launchers and the archives' links, in zoo_lite's cache folder of archives
LAUNCHERS_FOLDER = "launchers"
#: the name an archive is shipped under, before its key: no suffix that Spark would untar
ARCHIVE_LINK_PREFIX = "zoo_lite-archive-"
_LAUNCHER_PREFIX = "zoo_lite-python-"
#: a shipped archive's file that is its archive's only name (the archive was removed, or it is a
#: copy) is removed this long after that, when another archive is shipped: an application that
#: started before may still serve it to executors that join late
STALE_AFTER_S = 3600.0
#: how long an executor waits for another one that unpacks the same environment on its host
_UNPACK_WAIT_S = 1800
#: the file written last into an unpacked environment: it is complete
_READY_MARKER = ".zoo_lite-unpacked"

_LAUNCHER = r"""#!/bin/sh
# zoo_lite (penv_archive): unpack {archive} once on this host, then run its Python.
set -e
here=$(pwd -P)
archive="$here/{archive}"
envs="$(cd "$here/../.." && pwd -P)/{envs}"
env="$envs/{key}"
if [ ! -f "$env/{ready}" ]; then
  mkdir -p "$envs"
  unpack() {{
    if [ ! -f "$env/{ready}" ]; then
      rm -rf "$env"; mkdir -p "$env"
      {extract}
      if [ -f "$env/bin/conda-unpack" ]; then "$env/bin/python" "$env/bin/conda-unpack"; fi
      touch "$env/{ready}"
    fi
  }}
  if command -v flock >/dev/null 2>&1; then
    exec 9>"$env.lock"
    if ! flock -w {wait_s} 9; then
      echo "zoo_lite: another executor on $(hostname) did not finish unpacking $archive into $env within {wait_s} s" >&2
      exit 1
    fi
    unpack
    exec 9>&-
  else   # no flock: this executor unpacks into its own folder
    env="$here/{key}"
    unpack
  fi
fi
exec "$env/bin/python" "$@"
"""


def environment_key(archive: str) -> str:
    """The name of ``archive``'s unpacked folder on each host: its name, with a digest of its real
    path, size and modification time (a local file; any change makes a new folder) or of its URI
    (a file of a shared file system, which zoo_lite does not read).

    Examples
    --------
    >>> key = environment_key("hdfs:///envs/env.tar.gz")
    >>> key.startswith("env-"), len(key)
    (True, 16)
    """
    name = os.path.basename(archive.rstrip("/"))
    stem = re.sub(r"\.(tar\.gz|tgz|tar|zip|jar)$", "", name)
    identity = archive
    if os.path.isfile(archive):
        stat = os.stat(archive)
        identity = f"{os.path.realpath(archive)}:{stat.st_size}:{stat.st_mtime_ns}"
    return f"{stem}-{hashlib.sha256(identity.encode()).hexdigest()[:12]}"


def _extract_command(archive_name: str) -> str:
    if archive_name.endswith((".zip", ".jar")):
        return 'unzip -q "$archive" -d "$env"'
    return 'tar -xf "$archive" -C "$env"'


def launcher_text(archive: str, key: str) -> str:
    """The launcher script for ``archive``, shipped beside it as ``zoo_lite-archive-<key>``,
    unpacking into ``key``.

    Examples
    --------
    >>> text = launcher_text("/cache/env.tar.gz", "env-0123")
    >>> text.startswith("#!/bin/sh") and 'archive="$here/zoo_lite-archive-env-0123"' in text
    True
    """
    if shlex.quote(key) != key:
        raise ValueError(f"the key {key!r} holds characters a shell would read; rename the archive {archive!r}")
    return _LAUNCHER.format(archive=ARCHIVE_LINK_PREFIX + key, envs=HOST_ENVS_FOLDER, key=key, ready=_READY_MARKER,
                            wait_s=_UNPACK_WAIT_S, extract=_extract_command(os.path.basename(archive.rstrip("/"))))


def _replace_atomically(path: Path, make: Callable[[Path], None]) -> None:
    """``make(partial)`` beside ``path``, then rename it over ``path``: no reader sees half of it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.{os.getpid()}")
    partial.unlink(missing_ok=True)
    make(partial)
    os.replace(partial, path)


def link_archive(archive: str, folder: Path) -> Path:
    """The local file ``archive`` in ``folder`` under the name ``zoo_lite-archive-<key>`` (a name
    Spark does not untar), which ``spark.files`` ships: a hard link, or a copy where ``folder`` is
    on another file system (Spark ships a symbolic link under its target's name). Files of this
    kind that nothing else links to any more (their archive was removed, as zoo_lite's cache
    removes older archives) and that are older than :data:`STALE_AFTER_S` are removed.

    Examples
    --------
    >>> import tempfile
    >>> folder = Path(tempfile.mkdtemp())
    >>> archive = folder / "env.tar.gz"
    >>> _ = archive.write_bytes(b"")
    >>> link = link_archive(str(archive), folder / "launchers")
    >>> link.name == ARCHIVE_LINK_PREFIX + environment_key(str(archive)), link.samefile(archive)
    (True, True)
    """
    folder = Path(folder)
    link = folder / (ARCHIVE_LINK_PREFIX + environment_key(archive))
    _remove_stale_links(folder, keep=link)
    if link.is_file() and link.stat().st_size == os.path.getsize(archive):
        return link

    def hard_link_or_copy(partial: Path) -> None:
        try:
            os.link(archive, partial)
        except OSError:   # another file system, or one without hard links
            shutil.copyfile(archive, partial)

    _replace_atomically(link, hard_link_or_copy)
    return link


def _remove_stale_links(folder: Path, keep: Path) -> None:
    now = time.time()
    for path in folder.glob(f"{ARCHIVE_LINK_PREFIX}*"):
        try:
            stat = path.stat()
            if path != keep and stat.st_nlink == 1 and now - stat.st_ctime > STALE_AFTER_S:
                path.unlink()
        except OSError:   # removed meanwhile by another driver
            continue


def write_launcher(archive: str, folder: Path) -> Path:
    """Write the launcher of ``archive`` into ``folder`` (named after its key, so that two archives
    never share one) and return its path."""
    key = environment_key(archive)
    path = Path(folder) / f"{_LAUNCHER_PREFIX}{key}"
    text = launcher_text(archive, key)
    if not path.is_file() or path.read_text() != text:
        def write(partial: Path) -> None:
            partial.write_text(text)
            partial.chmod(0o755)

        _replace_atomically(path, write)
    return path


def host_unpacked_conf(archive: str, folder: Path) -> dict[str, str]:
    """Write the launcher of the local file ``archive`` and its link into ``folder``; the conf that
    ships both as files and runs the launcher as the executors' Python.

    Examples
    --------
    >>> import tempfile
    >>> folder = Path(tempfile.mkdtemp())
    >>> archive = folder / "env.tar.gz"
    >>> _ = archive.write_bytes(b"")
    >>> conf = host_unpacked_conf(str(archive), folder / "launchers")
    >>> key = environment_key(str(archive))
    >>> conf["spark.files"] == f"{folder}/launchers/zoo_lite-archive-{key},{folder}/launchers/zoo_lite-python-{key}"
    True
    >>> conf["spark.pyspark.python"] == f"./zoo_lite-python-{key}"
    True
    """
    link = link_archive(archive, folder)
    launcher = write_launcher(archive, folder)
    return {"spark.files": f"{link},{launcher}", "spark.pyspark.python": f"./{launcher.name}"}
