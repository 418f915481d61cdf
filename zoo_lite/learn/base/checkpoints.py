"""Checkpoint files, shared by the Estimators: ``epoch=<n>.ckpt`` names in a directory, written
whole or not at all, on a local (or shared) file system or in an object store (``s3://``, through
:mod:`zoo_lite.data.filesystems`, with the credentials it resolves on the process that writes)."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import tempfile
from typing import Iterator, Optional

from zoo_lite.data.filesystems import filesystem, is_object_store, storage_errors, storage_options_for
from zoo_lite.errors import InvalidArgumentError

__all__ = ["checkpoint_path", "latest_checkpoint", "write_atomically", "read_file", "local_copy", "written_from_local"]

_NAME_RE = re.compile(r"^epoch=(\d+)\.ckpt$")


def checkpoint_path(filepath: str, epoch: int) -> str:
    """Where the checkpoint after ``epoch`` goes: ``filepath`` formatted with ``epoch`` when it has
    ``{epoch}`` in it, else ``filepath/epoch=<epoch>.ckpt``.

    Examples
    --------
    >>> checkpoint_path("/ckpt", 3)
    '/ckpt/epoch=3.ckpt'
    >>> checkpoint_path("/ckpt/model-{epoch:02d}.pt", 3)
    '/ckpt/model-03.pt'
    """
    if "{epoch" in filepath:
        return filepath.format(epoch=epoch)
    return os.path.join(filepath, f"epoch={epoch}.ckpt")


def latest_checkpoint(checkpoint_dir: str) -> Optional[str]:
    """The ``epoch=<n>.ckpt`` file with the largest ``n`` in ``checkpoint_dir``, or None.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> folder = tempfile.mkdtemp()
    >>> for n in (2, 10): _ = pathlib.Path(folder, f"epoch={n}.ckpt").write_bytes(b"")
    >>> os.path.basename(latest_checkpoint(folder))
    'epoch=10.ckpt'
    """
    names = _object_names(checkpoint_dir) if is_object_store(checkpoint_dir) else (
        os.listdir(checkpoint_dir) if os.path.isdir(checkpoint_dir) else [])
    epochs = [(int(match.group(1)), name) for name in names if (match := _NAME_RE.match(name))]
    return os.path.join(checkpoint_dir, max(epochs)[1]) if epochs else None


def _object_names(folder: str) -> list[str]:
    """The names of the objects directly below an object-store ``folder`` (none if it is not there)."""
    fs, name = filesystem(folder, storage_options_for(folder), "checkpoint_dir")
    with storage_errors(folder, "checkpoint_dir"):
        if not fs.isdir(name):
            return []
        return [entry.rstrip("/").rsplit("/", 1)[-1] for entry in fs.ls(name, detail=False)]


def write_atomically(path: str, data: bytes) -> None:
    """Write ``data`` to ``path`` whole or not at all: a reader never sees a half-written file
    (it is written beside ``path`` and renamed over it).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> target = os.path.join(tempfile.mkdtemp(), "sub", "epoch=1.ckpt")
    >>> write_atomically(target, b"state")
    >>> pathlib.Path(target).read_bytes(), os.listdir(os.path.dirname(target))
    (b'state', ['epoch=1.ckpt'])
    """
    if is_object_store(path):   # an object appears whole when its upload ends, never in part
        fs, name = filesystem(path, storage_options_for(path), "path")
        with storage_errors(path, "path"):
            fs.pipe_file(name, data)
        return
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    with open(path + ".tmp", "wb") as file:
        file.write(data)
    os.replace(path + ".tmp", path)


def read_file(path: str, caller: str, what: str = "checkpoint") -> bytes:
    """The bytes of the file (or object) at ``path``.

    Raises
    ------
    InvalidArgumentError
        Nothing is at ``path``: the message names ``caller``, what was looked for, and the path.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> target = pathlib.Path(tempfile.mkdtemp(), "a.ckpt")
    >>> _ = target.write_bytes(b"state")
    >>> read_file(str(target), "load_checkpoint")
    b'state'
    >>> read_file(str(target) + ".gone", "load_checkpoint")
    Traceback (most recent call last):
    ...
    zoo_lite.errors.InvalidArgumentError: load_checkpoint: no checkpoint at path='....gone'
    """
    try:
        if is_object_store(path):
            fs, name = filesystem(path, storage_options_for(path), "path")
            with storage_errors(path, "path"):
                return fs.cat_file(name)
        with open(path, "rb") as file:
            return file.read()
    except (FileNotFoundError, IsADirectoryError) as error:
        raise InvalidArgumentError(f"{caller}: no {what} at path={path!r}") from error


@contextlib.contextmanager
def _local_stand_in(path: str) -> Iterator[str]:
    """A local file path named as ``path``'s last part, in a folder removed afterwards."""
    folder = tempfile.mkdtemp(prefix="zoo_lite-object-")
    try:
        yield os.path.join(folder, path.rstrip("/").rsplit("/", 1)[-1])
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@contextlib.contextmanager
def local_copy(path: str, caller: str, what: str) -> Iterator[str]:
    """``path`` itself when it is local, else a local copy of the object (for readers, such as
    Keras', that open local files only), removed afterwards."""
    if not is_object_store(path):
        yield path
        return
    with _local_stand_in(path) as local:
        with open(local, "wb") as file:
            file.write(read_file(path, caller, what))
        yield local


@contextlib.contextmanager
def written_from_local(path: str) -> Iterator[str]:
    """Where to write the file for ``path``: ``path`` itself when it is local; else a local file
    that is uploaded to the object store, whole, when the block ends without an error."""
    if not is_object_store(path):
        yield path
        return
    with _local_stand_in(path) as local:
        yield local
        with open(local, "rb") as file:
            write_atomically(path, file.read())
