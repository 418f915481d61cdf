"""Decoding and resizing image files with Pillow on the executors, and the files that do not decode.

:func:`decode_partition` turns one partition's images (their bytes, or the local or object-store
files to read them from) into one shard ``{"x": uint8 [n, height, width, channels], "y": int64 [n]}``;
:mod:`~zoo_lite.data.image.partitions` decides which images each partition gets. A file Pillow
cannot decode raises :class:`~zoo_lite.errors.DataReadError` or, with ``on_error="skip"``, is
added to an accumulator that :class:`SkippedFiles` reads on the driver.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Iterator, Mapping, Optional, Union

import numpy as np

from zoo_lite.data.filesystems import filesystem, is_object_store, storage_errors
from zoo_lite.data.image.arguments import CHANNELS
from zoo_lite.data.image.labels import Label, label_of
from zoo_lite.data.paths import missing_on_executor
from zoo_lite.errors import DataReadError

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark import Accumulator

__all__ = ["SkippedFiles", "skipped_param", "undecodable", "images_of_tables", "images_of_local_files", "decode_partition"]

# the package's logger, not this module's: users (and the tests) filter the readers' warnings by it
logger = logging.getLogger(__package__)


def skipped_param(reader: str) -> Any:
    """The accumulator type of the files ``reader`` skipped: a union of paths, whose merges on the
    driver log a warning."""
    from pyspark.accumulators import AccumulatorParam

    class SkippedParam(AccumulatorParam):
        """Union of the skipped paths (a partition computed twice adds nothing), with a warning on
        the driver, where each task's paths are merged: executors' logs are not where users look."""

        def zero(self, value: frozenset) -> frozenset:
            return frozenset()

        def addInPlace(self, value1: frozenset, value2: frozenset) -> frozenset:
            from pyspark import TaskContext

            merged = value1 | value2
            added = sorted(merged - value1)
            if added and TaskContext.get() is None:
                shown = ", ".join(repr(p) for p in added[:5]) + (", ..." if len(added) > 5 else "")
                logger.warning("%s skipped %d undecodable image file(s) (%d in all so far; on_error='skip'): %s",
                               reader, len(added), len(merged), shown)
            return merged

    return SkippedParam()


class SkippedFiles:
    """The undecodable files a reader left out with ``on_error="skip"``.

    They are found where the files are decoded, on the executors, so the list fills as actions
    compute the shards' partitions (each merge also logs a warning with the count, on the driver).

    Attributes
    ----------
    paths : list of str
        The skipped files' paths, sorted (as Spark names them, e.g. ``file:/data/cat/3.jpg``).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> from PIL import Image
    >>> from zoo_lite import init_orca_context
    >>> from zoo_lite.data.image import read_images
    >>> _ = init_orca_context(cores=2)
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> Image.new("RGB", (8, 8)).save(folder / "good.png")
    >>> _ = (folder / "bad.png").write_bytes(b"not an image")
    >>> shards = read_images(str(folder), size=(4, 4), label=None, on_error="skip")
    >>> len(shards.skipped)  # nothing computed yet
    0
    >>> sum(len(shard["x"]) for shard in shards.collect())
    1
    >>> [path.rsplit("/", 1)[-1] for path in shards.skipped.paths]
    ['bad.png']
    """

    def __init__(self, accumulator: "Accumulator") -> None:
        self._accumulator = accumulator

    @property
    def paths(self) -> list[str]:
        return sorted(self._accumulator.value)

    def __len__(self) -> int:
        return len(self._accumulator.value)

    def __repr__(self) -> str:
        return f"SkippedFiles({self.paths!r})"


def _decode(content: bytes, size: tuple[int, int], mode: str) -> np.ndarray:
    """One image file's bytes as a uint8 array [height, width, channels]: Pillow decodes, converts
    to ``mode``, then resizes (bilinear, antialiased) to ``size``."""
    import io

    from PIL import Image

    with Image.open(io.BytesIO(content)) as image:
        converted = image.convert(mode)  # before resizing: a palette image resizes only by nearest pixel
    pixels = np.asarray(converted.resize((size[1], size[0]), Image.Resampling.BILINEAR), dtype=np.uint8)
    return pixels[..., np.newaxis] if pixels.ndim == 2 else pixels


def undecodable(reader: str, path: str, error: Exception, on_error: str, skipped: "Accumulator") -> None:
    """Raise the error for a file Pillow cannot decode, or count it as skipped."""
    if on_error == "raise":
        raise DataReadError(
            f"{reader}: cannot decode {path!r} as an image ({type(error).__name__}: {error}); "
            "pass on_error='skip' to leave undecodable files out"
        ) from error
    skipped.add(frozenset([path]))


# one image to decode: its path as Spark names it, its bytes (or a local file to read them
# from), and its stored label (read_parquet's tables) or None
Image_ = tuple[str, Union[bytes, str], Optional[int]]


def images_of_tables(tables: Iterator["pa.Table"]) -> Iterator[Image_]:
    """The images of a partition's tables of ``path``, ``content`` (and ``label``), in path order."""
    for table in tables:
        paths = table.column("path").to_pylist()
        contents = table.column("content")
        stored = table.column("label").to_pylist() if "label" in table.column_names else None
        for i in sorted(range(len(paths)), key=paths.__getitem__):
            yield paths[i], contents[i].as_py(), stored[i] if stored is not None else None


def images_of_local_files(slices: Iterator[list[tuple[str, str]]]) -> Iterator[Image_]:
    """The images of a partition's slice of ``(Spark path, local file)`` pairs, read where they
    are decoded."""
    for files in slices:
        for path, local in files:
            yield path, local, None


def _file_bytes(reader: str, path: str, source: Union[bytes, str], listed_on: str,
                storage_options: Optional[Mapping[str, Any]] = None) -> bytes:
    if isinstance(source, bytes):
        return source
    if is_object_store(source):
        fs, name = filesystem(source, storage_options, reader)
        with storage_errors(source, reader):
            return fs.cat_file(name)
    try:
        with open(source, "rb") as file:
            return file.read()
    except FileNotFoundError as error:   # listed on the driver's host: not on this one, or gone since
        raise DataReadError(missing_on_executor(reader, source, listed_on)) from error
    except OSError as error:  # listed on the driver, unreadable here: not a decoding error
        raise DataReadError(f"{reader}: cannot read {path!r} ({type(error).__name__}: {error}); "
                            "was it moved or deleted after the call that listed it?") from error


def decode_partition(partition_index: int, images: Iterator[Image_], *, reader: str, size: tuple[int, int],
                     mode: str, label: Label, labelled: bool, classes: Optional[Mapping[str, int]], on_error: str,
                     skipped: "Accumulator", listed_on: str,
                     storage_options: Optional[Mapping[str, Any]] = None) -> list[dict[str, np.ndarray]]:
    """One partition's shard of its images, in their order (with ``"y"`` if ``labelled``); local
    files were listed on host ``listed_on``, object-store files are opened with ``storage_options``."""
    pixels, labels = [], []
    for path, source, stored in images:
        content = _file_bytes(reader, path, source, listed_on, storage_options)
        try:
            pixels.append(_decode(content, size, mode))
        except Exception as error:  # noqa: BLE001 - Pillow's decoders raise many kinds for a bad file
            undecodable(reader, path, error, on_error, skipped)
            continue
        if stored is not None:
            labels.append(stored)
        elif label is not None:
            labels.append(label_of(label, path, classes, partition_index))
    x = np.stack(pixels) if pixels else np.empty((0, *size, CHANNELS[mode]), dtype=np.uint8)
    return [{"x": x, "y": np.asarray(labels, dtype=np.int64)} if labelled else {"x": x}]
