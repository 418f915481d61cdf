"""Checkpoint file names: ``epoch=<n>.ckpt`` in a directory, shared by the Estimators."""

from __future__ import annotations

import os
import re
from typing import Optional

__all__ = ["checkpoint_path", "latest_checkpoint", "write_atomically"]

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
    if not os.path.isdir(checkpoint_dir):
        return None
    epochs = [(int(match.group(1)), name) for name in os.listdir(checkpoint_dir) if (match := _NAME_RE.match(name))]
    return os.path.join(checkpoint_dir, max(epochs)[1]) if epochs else None


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
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    with open(path + ".tmp", "wb") as file:
        file.write(data)
    os.replace(path + ".tmp", path)
