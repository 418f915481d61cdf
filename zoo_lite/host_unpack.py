"""One unpacked environment per host, shared by the executors of every application there.

With ``spark.archives``, a Spark standalone worker fetches ``penv_archive`` and unpacks it into
each executor's own folder, again for every executor and every application: a minute per
executor for an environment of torch and TensorFlow. Where the cluster manager keeps no cache of
its own (standalone and ``local-cluster``; YARN caches localized archives per node, a Kubernetes
pod is new each time), zoo_lite ships the archive as a file instead (``spark.files``, fetched
once per application and host, not unpacked) with a small launcher script, which Spark runs as
the executors' Python (``spark.pyspark.python``). The launcher:

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
from pathlib import Path

__all__ = ["HOST_ENVS_FOLDER", "LAUNCHERS_FOLDER", "environment_key", "launcher_text", "write_launcher", "host_unpacked_conf"]

#: the folder of unpacked environments, in the Spark worker's work folder
HOST_ENVS_FOLDER = "zoo_lite-envs"
#: where the driver writes the launchers, in zoo_lite's cache folder of archives
LAUNCHERS_FOLDER = "launchers"
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
    """The launcher script for ``archive`` (shipped beside it), unpacking into ``key``.

    Examples
    --------
    >>> text = launcher_text("/cache/env.tar.gz", "env-0123")
    >>> text.startswith("#!/bin/sh") and 'archive="$here/env.tar.gz"' in text
    True
    """
    name = os.path.basename(archive.rstrip("/"))
    for value, what in ((name, "the archive's name"), (key, "the key")):
        if shlex.quote(value) != value:
            raise ValueError(f"{what} {value!r} holds characters a shell would read; rename the archive")
    return _LAUNCHER.format(archive=name, envs=HOST_ENVS_FOLDER, key=key, ready=_READY_MARKER, wait_s=_UNPACK_WAIT_S,
                            extract=_extract_command(name))


def write_launcher(archive: str, folder: Path) -> Path:
    """Write the launcher of ``archive`` into ``folder`` (named after its key, so that two archives
    never share one) and return its path."""
    key = environment_key(archive)
    path = Path(folder) / f"zoo_lite-python-{key}"
    text = launcher_text(archive, key)
    if not path.is_file() or path.read_text() != text:
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(f".{path.name}.{os.getpid()}")
        partial.write_text(text)
        partial.chmod(0o755)
        os.replace(partial, path)
    return path


def host_unpacked_conf(archive: str, launcher: Path) -> dict[str, str]:
    """The conf that ships ``archive`` and its ``launcher`` as files; the executors run the launcher.

    Examples
    --------
    >>> host_unpacked_conf("/envs/env.tar.gz", Path("/cache/zoo_lite-python-env-0123"))
    {'spark.files': '/envs/env.tar.gz,/cache/zoo_lite-python-env-0123', 'spark.pyspark.python': './zoo_lite-python-env-0123'}
    """
    return {"spark.files": f"{archive},{launcher}", "spark.pyspark.python": f"./{launcher.name}"}
