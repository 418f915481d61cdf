"""How an image gets its label: the folder it is in, the user's function of its path, or a ``label_map``.

The driver checks ``label`` and ``label_map`` (:func:`check_label`, :func:`check_label_map`) and
numbers the classes; :func:`label_of` runs where the images are decoded
(:mod:`~zoo_lite.data.image.decoding`) or written to a table (:mod:`~zoo_lite.data.image.parquet_table`).
"""

from __future__ import annotations

import numbers
from typing import Any, Callable, Mapping, Optional, Union

from zoo_lite.errors import DataReadError, InvalidArgumentError, ShardFunctionError
from zoo_lite.user_code import by_value

__all__ = ["Label", "check_label", "parent_name", "label_of", "label_map_classes", "check_label_map"]

#: what ``label`` may be: "folder", a function of the file's path returning an int, or None
Label = Union[str, Callable[[str], int], None]


def check_label(label: Any) -> Label:
    """``label`` as the readers take it; a user's function is wrapped to be shipped by value."""
    if label is None or (isinstance(label, str) and label == "folder"):
        return label
    if callable(label) and not isinstance(label, str):
        return by_value(label, "label")   # the user's function, with the user's module, whenever Spark pickles it
    raise InvalidArgumentError(
        f"label={label!r} is not supported; use 'folder' (the class is the name of the image's folder), "
        "a function taking the file's path and returning an int, or None (no labels)"
    )


def parent_name(path: str) -> str:
    """The name of the folder a file is in (its class with ``label="folder"``)."""
    parts = path.rsplit("/", 2)
    return parts[-2] if len(parts) == 3 else ""


def label_of(label: Label, path: str, classes: Optional[Mapping[str, int]], partition_index: int) -> int:
    """The label of the image at ``path``: its folder's index in ``classes``, or else ``label(path)``."""
    if classes is not None:
        folder = parent_name(path)
        if folder not in classes:  # the driver's listing and the executor's path disagree: never expected
            raise DataReadError(f"{path!r} is in the folder {folder!r}, which is not one of the classes {sorted(classes)}")
        return classes[folder]
    try:
        value = label(path)  # type: ignore[misc]
    except Exception as error:  # noqa: BLE001 - the user's function: reported with its partition
        raise ShardFunctionError(partition_index, getattr(label, "__name__", repr(label)), error) from error
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise InvalidArgumentError(f"label function returned {value!r} for {path!r}; it must return an int (the class index)")
    return int(value)


def label_map_classes(label_map: Mapping[str, int]) -> Optional[list[str]]:
    """The class names in label order if ``label_map``'s labels are 0 .. k-1, else None."""
    by_label = sorted(label_map, key=label_map.__getitem__)
    return by_label if [label_map[name] for name in by_label] == list(range(len(by_label))) else None


def check_label_map(label_map: Any, label: Label) -> Optional[dict[str, int]]:
    """``label_map`` as a dict of folder name to int label, or None; it needs ``label="folder"``."""
    if label_map is None:
        return None
    valid = isinstance(label_map, Mapping) and label_map and all(
        isinstance(k, str) and isinstance(v, numbers.Integral) and not isinstance(v, bool) for k, v in label_map.items())
    if not valid:
        raise InvalidArgumentError(f"label_map={label_map!r} must be a non-empty dict of folder name -> int label")
    if label != "folder":
        raise InvalidArgumentError(f"label_map is given with label={label!r}; a label_map labels by folder: leave label='folder'")
    return {name: int(value) for name, value in label_map.items()}
