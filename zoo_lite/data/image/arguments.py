"""Checks of the image readers' arguments, made on the driver before any Spark work.

Each check returns the value to use or raises :class:`~zoo_lite.errors.InvalidArgumentError`
naming the argument; :mod:`~zoo_lite.data.image.readers` calls them first thing. The checks of a
``label`` and a ``label_map`` are in :mod:`~zoo_lite.data.image.labels`, beside what they check.
"""

from __future__ import annotations

import numbers
import os
from typing import Any, Sequence

from zoo_lite.errors import InvalidArgumentError

__all__ = ["CHANNELS", "check_size", "check_mode", "check_choice", "check_path", "check_format"]

#: the Pillow modes images can be converted to, and the channels each gives
CHANNELS = {"RGB": 3, "L": 1, "RGBA": 4}
_FORMATS = ("image", "image_folder")  # "image_folder" is Orca's name for the same thing


def check_size(size: Any) -> tuple[int, int]:
    """``size`` as ``(height, width)``: two positive integers."""
    fits = (isinstance(size, (tuple, list)) and len(size) == 2
            and all(isinstance(v, numbers.Integral) and not isinstance(v, bool) and v > 0 for v in size))
    if not fits:
        raise InvalidArgumentError(f"size={size!r} must be two positive integers (height, width), e.g. size=(224, 224)")
    return int(size[0]), int(size[1])


def check_mode(mode: Any) -> str:
    """``mode``, one of the Pillow modes of :data:`CHANNELS`."""
    if not isinstance(mode, str) or mode not in CHANNELS:
        raise InvalidArgumentError(f"mode={mode!r} is not supported; use 'RGB' (3 channels), 'L' (1) or 'RGBA' (4)")
    return mode


def check_choice(value: Any, argument: str, choices: Sequence[str]) -> str:
    """``value`` of ``argument``, one of ``choices``."""
    if value not in choices:
        raise InvalidArgumentError(f"{argument}={value!r} is not supported; use one of {list(choices)}")
    return value


def check_path(path: Any, argument: str, what: str = "a folder, a file or a glob of image files") -> str:
    """``path`` of ``argument`` as a non-empty string (a path-like object is turned into one)."""
    if isinstance(path, os.PathLike):
        path = os.fspath(path)
    if not isinstance(path, str) or not path:
        raise InvalidArgumentError(f"{argument}={path!r} must be {what}, as a string")
    return path


def check_format(format: Any, reader: str, orca_formats: Sequence[str], hint: str) -> None:
    """Refuse a ``format`` other than ``"image"``; Orca's ``orca_formats`` with ``hint`` on what to do instead."""
    if format in _FORMATS:
        return
    if format in orca_formats:
        raise InvalidArgumentError(f"{reader}(format={format!r}): Orca's format {format!r} is not supported by zoo_lite; {hint}")
    raise InvalidArgumentError(f"{reader}(format={format!r}) is not supported; use format='image'")
