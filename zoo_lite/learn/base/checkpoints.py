"""Checkpoint file names: ``epoch=<n>.ckpt`` in a directory, shared by the Estimators."""

from __future__ import annotations

import os
import re
from typing import Optional

__all__ = ["checkpoint_path", "latest_checkpoint"]

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
