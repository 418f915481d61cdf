"""Resolve user paths (files, folders, globs, lists; local, file://, hdfs://, s3://) to files."""

from __future__ import annotations

import functools
import os
import socket
import uuid
from typing import TYPE_CHECKING, Any, Mapping, Optional, Sequence, Union

from zoo_lite.data.filesystems import filesystem, is_object_store, missing_object_error, storage_errors
from zoo_lite.errors import DataReadError, InvalidArgumentError

if TYPE_CHECKING:
    from pyspark import SparkContext

__all__ = ["expand_paths", "path_exists", "file_sizes", "this_host", "missing_on_executor", "missing_on_some_executor",
           "check_every_host_sees",
           "SHARED_PATH_ADVICE"]

#: what to do about a path that not every host of a cluster sees
SHARED_PATH_ADVICE = ("every host of a cluster must see it: use a shared file system mounted at the same path on every "
                      "host (NFS), or hdfs:// or s3://")

PathLike = Union[str, Sequence[str]]
_GLOB_CHARS = ("*", "?", "[")


def this_host() -> str:
    """The name of the host this process runs on, as errors name hosts.

    Examples
    --------
    >>> this_host() == socket.gethostname()
    True
    """
    return socket.gethostname()


def missing_on_executor(argument: str, path: str, listed_on: str, executor_host: Optional[str] = None) -> str:
    """The message for a file the driver listed on host ``listed_on`` that an executor did not find
    on its host: ``executor_host`` when known, by default this one.

    Examples
    --------
    >>> print(missing_on_executor("file_path", "/tmp/a.csv", "edge-node", "worker-7"))
    file_path: '/tmp/a.csv' is on the driver's host 'edge-node', but an executor on host 'worker-7' did not find it; every host of a cluster must see it: use a shared file system mounted at the same path on every host (NFS), or hdfs:// or s3://
    """
    executor_host = executor_host or this_host()
    if executor_host == listed_on:
        return f"{argument}: {path!r} was listed on host {executor_host!r} but is gone: it was deleted or moved while being read"
    return (f"{argument}: {path!r} is on the driver's host {listed_on!r}, but an executor on host {executor_host!r} did not "
            f"find it; {SHARED_PATH_ADVICE}")


def missing_on_some_executor(argument: str, path: str, listed_on: str) -> str:
    """:func:`missing_on_executor` where Spark did not say which executor looked.

    Examples
    --------
    >>> missing_on_some_executor("file_path", "/tmp/a.csv", "edge-node")[:80]
    "file_path: '/tmp/a.csv' is on the driver's host 'edge-node', but an executor did"
    """
    return f"{argument}: {path!r} is on the driver's host {listed_on!r}, but an executor did not find it on its host; {SHARED_PATH_ADVICE}"


def path_exists(path: str, storage_options: Optional[Mapping[str, Any]] = None) -> bool:
    """Whether a file or folder exists at ``path`` (opened with ``storage_options``, see
    :func:`~zoo_lite.data.filesystems.storage_options_for`)."""
    fs, stripped = filesystem(path, storage_options)
    with storage_errors(path, "path"):
        return bool(fs.exists(stripped))


def file_sizes(files: Sequence[str], storage_options: Optional[Mapping[str, Any]] = None) -> list[int]:
    """The size in bytes of each file (as :func:`expand_paths` names them).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "a.csv"
    >>> _ = path.write_text("x\\n1\\n")
    >>> file_sizes([str(path)])
    [4]
    """
    sizes = []
    for file in files:
        fs, stripped = filesystem(file, storage_options)
        with storage_errors(file, "file_path"):
            sizes.append(int(fs.size(stripped)))
    return sizes


def _with_protocol(fs, path: str, original: str) -> str:
    return fs.unstrip_protocol(path) if "://" in original else path


def _expand_one(path: str, argument: str, storage_options: Optional[Mapping[str, Any]]) -> list[str]:
    fs, stripped = filesystem(path, storage_options, argument)
    with storage_errors(path, argument):
        return _expand_in(fs, stripped, path, argument)


def _expand_in(fs: Any, stripped: str, path: str, argument: str) -> list[str]:
    if any(char in stripped for char in _GLOB_CHARS):
        matches = sorted(fs.glob(stripped))
        files = [match for match in matches if fs.isfile(match)]
        if not files:
            raise DataReadError(f"{argument}={path!r}: the pattern matches no file")
        return [_with_protocol(fs, match, path) for match in files]
    if not fs.exists(stripped):
        if is_object_store(path):
            raise DataReadError(missing_object_error(fs, path, argument))
        # both Spark's and pandas' wording, which Orca passed through and its users match on
        raise DataReadError(f"Path does not exist: {argument}={path!r} (No such file or directory); "
                            "check the path (and its protocol, e.g. hdfs://)")
    if fs.isdir(stripped):
        root = stripped.rstrip("/")
        files = sorted(entry for entry in fs.find(stripped) if not _hidden(entry[len(root):]))
        if not files:
            raise DataReadError(f"{argument}={path!r} is an empty folder; it holds no data file")
        return [_with_protocol(fs, entry, path) for entry in files]
    return [path]


def _hidden(relative: str) -> bool:
    """Whether Spark's folder listing skips this path below a folder: any part starting with "." or
    "_" (_SUCCESS, .crc files, _temporary/, .ipynb_checkpoints/), except "_key=value" partitions."""
    return any(part.startswith(".") or (part.startswith("_") and "=" not in part) for part in relative.split("/") if part)


def expand_paths(path: PathLike, argument: str = "file_path", storage_options: Optional[Mapping[str, Any]] = None) -> list[str]:
    """Every data file named by ``path``: a file, a folder (all files below it, hidden and
    ``_``-prefixed ones left out), a glob, or a list of those. Order is sorted within each entry.
    ``storage_options`` opens an object store (see
    :func:`~zoo_lite.data.filesystems.storage_options_for`).

    Raises
    ------
    DataReadError
        A path does not exist (for an object store: its bucket, or its key), a folder is empty, a
        glob matches nothing, or an object store refused access.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (folder / "b.csv").write_text("x\\n1\\n"); _ = (folder / "a.csv").write_text("x\\n2\\n")
    >>> [p.rsplit("/", 1)[-1] for p in expand_paths(str(folder))]
    ['a.csv', 'b.csv']
    """
    if isinstance(path, str):
        return _expand_one(path, argument, storage_options)
    if isinstance(path, (list, tuple)) and path and all(isinstance(p, str) for p in path):
        return [file for entry in path for file in _expand_one(entry, argument, storage_options)]
    raise InvalidArgumentError(f"{argument}={path!r} must be a path string or a non-empty list of path strings")


def _local_path(path: str) -> Optional[str]:
    """``path`` as a local file system path, or None when it names another file system."""
    if path.startswith("file://"):
        return path[len("file://"):]
    if path.startswith("file:"):
        return path[len("file:"):]
    return None if "://" in path else os.path.abspath(path)


def _nearest_existing_folder(path: str) -> str:
    folder = os.path.dirname(path.rstrip("/")) or "/"
    while not os.path.isdir(folder):
        folder = os.path.dirname(folder)
    return folder


def _sees(marker: str, _: Any) -> tuple[str, bool]:
    return this_host(), os.path.exists(marker)


def check_every_host_sees(sc: "SparkContext", path: str, argument: str) -> None:
    """Refuse a local ``path`` to write to that executors on other hosts do not see.

    On a cluster, a writer running in the executors would put each part on the disk of the host
    that wrote it, and the driver would find an empty folder. The driver leaves a marker file in
    the path's nearest existing folder, and one task per task slot looks for it; where tasks run
    in the driver (local mode), for other file systems, or where no marker can be written, there
    is nothing to check.

    Raises
    ------
    InvalidArgumentError
        Tasks on some host did not see the marker: the message names the path, the driver's host
        and those hosts.

    Examples
    --------
    >>> import tempfile
    >>> from zoo_lite import init_orca_context
    >>> sc = init_orca_context(cores=2)
    >>> check_every_host_sees(sc, tempfile.mkdtemp() + "/out", "path")  # local mode: nothing to check
    """
    local = _local_path(path)
    master = sc.master
    if local is None or master == "local" or master.startswith("local["):
        return
    marker = os.path.join(_nearest_existing_folder(local), f".zoo_lite-visible-{uuid.uuid4().hex}")
    try:
        open(marker, "x").close()
    except OSError:
        return
    try:
        slots = max(1, sc.defaultParallelism)
        seen = sc.parallelize(range(slots), slots).map(functools.partial(_sees, marker)).collect()
    finally:
        os.unlink(marker)
    blind = sorted({host for host, sees in seen if not sees})
    if blind:
        raise InvalidArgumentError(
            f"{argument}={path!r} is on the driver's host {this_host()!r}, which the executors on {blind} do not see: "
            f"each would write its part to its own disk; {SHARED_PATH_ADVICE}"
        )
