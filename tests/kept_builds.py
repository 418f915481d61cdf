"""Builds the suite keeps between runs, outside any checkout (``/var/tmp``): made once, in a
folder renamed into place when done, and pruned once no run has used them for a while."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path
from typing import Callable, Optional

__all__ = ["UNUSED_FOR_S", "build_once"]

#: a build of another key is removed once unused this long (another checkout may still use it)
UNUSED_FOR_S = 3 * 24 * 3600


def build_once(target: Path, build: Callable[[Path], None], pruned: Optional[Callable[[Path], None]] = None) -> Path:
    """``target``, made by ``build(folder)`` into a new folder beside it and renamed into place when
    done (a run killed half-way leaves no half-built ``target``; two runs building at once each
    finish, and one rename wins). Each use marks ``target`` used; builds of the same kind (the name
    up to its first ``-``) unused for :data:`UNUSED_FOR_S` are removed, ``pruned(folder)`` being
    called for each."""
    if not target.is_dir():
        target.parent.mkdir(parents=True, exist_ok=True)
        partial = target.with_name(target.name + f".partial-{os.getpid()}")
        shutil.rmtree(partial, ignore_errors=True)
        try:
            build(partial)
            os.rename(partial, target)
        except OSError:
            if not target.is_dir():   # not another run's rename: a real failure
                raise
        finally:
            shutil.rmtree(partial, ignore_errors=True)
    os.utime(target)
    kind = target.name.split("-")[0]
    for other in target.parent.glob(f"{kind}-*"):
        if other != target and time.time() - other.stat().st_mtime > UNUSED_FOR_S:
            shutil.rmtree(other, ignore_errors=True)
            if pruned is not None:
                pruned(other)
    return target
