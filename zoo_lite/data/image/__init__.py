"""Images into XShards (Orca's ``zoo.orca.data.image``).

- :func:`read_images` reads a folder tree or a glob of image files (listed by Spark's
  ``binaryFile`` source, or by Python for a local folder) and decodes and resizes them with
  Pillow on the executors, into shards
  ``{"x": uint8 [n, height, width, channels], "y": int64 [n]}``.
- :func:`write_parquet` (``format="image"``) keeps the same images, with their labels, in a
  Parquet table; :func:`read_parquet` (``format="image"``) reads that table into the same shards
  as :func:`read_images` gives for the files.

Rows are in path order: the files are sorted by their path and cut into contiguous slices, one
per partition, so the same files always give the same shards. Only file names pass through the
driver. The images are read and decoded on the executors at the first action on the shards (the
readers are lazy, as the others are):

- local files (a folder, a file, ``file://``): each decoding task reads its own slice of files, so
  nothing but the names travels; a local folder or file is also listed by Python, which is ~100x
  faster than Spark's listing and leaves out the same names;
- ``s3://`` objects are listed through fsspec (s3fs) on the driver and read the same way, each
  decoding task its own slice, with the options :mod:`zoo_lite.data.filesystems` resolves;
- local globs and other filesystems (``hdfs://``, ``s3a://``) are listed by Spark, and files on other
  filesystems are read by Spark's ``binaryFile`` scan, whose bytes are then shuffled into the
  slices (the scan packs files by size, not by name).
"""

from __future__ import annotations

import logging
import math
import numbers
import os
from typing import TYPE_CHECKING, Any, Callable, Iterator, Mapping, Optional, Sequence, Union

import numpy as np

from zoo_lite.data import convert
from zoo_lite.data.filesystems import as_spark_path, check_spark_reads, filesystem, is_object_store, missing_object_error, storage_errors, storage_options_for
from zoo_lite.data.paths import check_every_host_sees, missing_on_executor, this_host
from zoo_lite.data.shard import SparkXShards
from zoo_lite.data.spark_jobs import run_job
from zoo_lite.errors import (
    DataReadError,
    InvalidArgumentError,
    ShardFunctionError,
    check_positive_int,
    raising_transportably,
    streaming_transportably,
)
from zoo_lite.keywords import suggest_keywords
from zoo_lite.user_code import by_value

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark import RDD, Accumulator, SparkContext
    from pyspark.sql import Column, SparkSession
    from pyspark.sql import DataFrame as SparkDataFrame

__all__ = ["read_images", "write_parquet", "read_parquet", "write_tfrecord", "read_tfrecord", "SkippedFiles", "IMAGE_EXTENSIONS"]

logger = logging.getLogger(__name__)

#: the file extensions (any case) read_images and write_parquet read; other files are left out
IMAGE_EXTENSIONS = ("bmp", "gif", "jpeg", "jpg", "pbm", "pgm", "png", "ppm", "tif", "tiff", "webp")

Label = Union[str, Callable[[str], int], None]

_CHANNELS = {"RGB": 3, "L": 1, "RGBA": 4}
_ON_ERROR = ("raise", "skip")
_FORMATS = ("image", "image_folder")  # "image_folder" is Orca's name for the same thing
_WRITE_MODES = ("overwrite", "append", "error", "errorifexists", "ignore")
_GLOB_CHARS = ("*", "?", "[", "{")
# metadata key, on the table's "label" column, of the class names (index = label)
_CLASSES_KEY = "zoo_lite.classes"
# default partitions: no shard holds more than this many bytes of pixels
_SHARD_PIXEL_BYTES = 128 * 2**20


# ---------------------------------------------------------------------------------------------
# Argument checks (on the driver, before any Spark work)
# ---------------------------------------------------------------------------------------------

def _check_size(size: Any) -> tuple[int, int]:
    fits = (isinstance(size, (tuple, list)) and len(size) == 2
            and all(isinstance(v, numbers.Integral) and not isinstance(v, bool) and v > 0 for v in size))
    if not fits:
        raise InvalidArgumentError(f"size={size!r} must be two positive integers (height, width), e.g. size=(224, 224)")
    return int(size[0]), int(size[1])


def _check_mode(mode: Any) -> str:
    if not isinstance(mode, str) or mode not in _CHANNELS:
        raise InvalidArgumentError(f"mode={mode!r} is not supported; use 'RGB' (3 channels), 'L' (1) or 'RGBA' (4)")
    return mode


def _check_label(label: Any) -> Label:
    if label is None or (isinstance(label, str) and label == "folder"):
        return label
    if callable(label) and not isinstance(label, str):
        return by_value(label, "label")   # the user's function, with the user's module, whenever Spark pickles it
    raise InvalidArgumentError(
        f"label={label!r} is not supported; use 'folder' (the class is the name of the image's folder), "
        "a function taking the file's path and returning an int, or None (no labels)"
    )


def _check_choice(value: Any, argument: str, choices: Sequence[str]) -> str:
    if value not in choices:
        raise InvalidArgumentError(f"{argument}={value!r} is not supported; use one of {list(choices)}")
    return value


def _check_path(path: Any, argument: str, what: str = "a folder, a file or a glob of image files") -> str:
    if isinstance(path, os.PathLike):
        path = os.fspath(path)
    if not isinstance(path, str) or not path:
        raise InvalidArgumentError(f"{argument}={path!r} must be {what}, as a string")
    return path


def _check_format(format: Any, reader: str, orca_formats: Sequence[str], hint: str) -> None:
    if format in _FORMATS:
        return
    if format in orca_formats:
        raise InvalidArgumentError(f"{reader}(format={format!r}): Orca's format {format!r} is not supported by zoo_lite; {hint}")
    raise InvalidArgumentError(f"{reader}(format={format!r}) is not supported; use format='image'")


# ---------------------------------------------------------------------------------------------
# Listing: Spark's binaryFile source, file names on the driver
# ---------------------------------------------------------------------------------------------

def _image_session() -> "SparkSession":
    """A session of the active context for the image readers alone, whose settings must not
    change the user's session."""
    from zoo_lite.context import OrcaContext

    user_session = OrcaContext.get_spark_session()
    session = user_session.newSession()
    # with adaptive execution, turning the plan into an RDD would run its shuffle right away;
    # without it, the readers stay lazy like the others
    session.conf.set("spark.sql.adaptive.enabled", "false")
    # the scan only moves bytes into the shuffle: a task per core beats one per ~30 small files,
    # which Spark's default cost of opening a file (4 MB, as if read) would make
    session.conf.set("spark.sql.files.openCostInBytes", "0")
    # rows are whole files: Arrow batches of 10,000 of them (the default) could take gigabytes
    session.conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", "256")
    return session


def _spark_context() -> "SparkContext":
    from zoo_lite.context import OrcaContext

    return OrcaContext.get_spark_context()


def _any_case_glob() -> str:
    """A Hadoop glob (Spark's ``pathGlobFilter``) matching the image extensions in any case."""
    def any_case(ext: str) -> str:
        return "".join(f"[{c.lower()}{c.upper()}]" for c in ext)

    return "*.{" + ",".join(any_case(ext) for ext in IMAGE_EXTENSIONS) + "}"


def _spark_path(uri: str) -> str:
    """The ``path`` column's form (Hadoop's ``Path.toString``, decoded) of a URI from ``inputFiles()``."""
    from urllib.parse import unquote, urlsplit

    parts = urlsplit(uri)
    authority = f"//{unquote(parts.netloc)}" if parts.netloc else ""
    return f"{parts.scheme}:{authority}{unquote(parts.path)}" if parts.scheme else unquote(parts.path)


def _input_files(df: "SparkDataFrame") -> list[str]:
    """``df.inputFiles()``, the listing Spark made on the driver (no job), fetched from the JVM in
    one call: ``inputFiles()`` makes one py4j call per file (0.1 s per 2,000 files)."""
    uris = df._jdf.inputFiles()
    # py4j passes a String[] only to a parameter typed Object, as Scala's generic Array[T] is
    joined = df.sparkSession._jvm.scala.collection.immutable.ArraySeq.unsafeWrapArray(uris).mkString("\n")
    names = joined.split("\n") if joined else []
    return names if len(names) == len(uris) else list(uris)  # a name with a newline: one call per file


def _local_file(path: str) -> Optional[str]:
    """The local file a Spark path (``file:/data/3.jpg``) names, or None on another filesystem."""
    from urllib.parse import urlsplit

    parts = urlsplit(path)
    return parts.path if parts.scheme == "file" and parts.netloc in ("", "localhost") else None


def _no_images_error(path: str, argument: str) -> InvalidArgumentError:
    return InvalidArgumentError(
        f"{argument}={path!r} holds no image file (files ending in {', '.join('.' + e for e in IMAGE_EXTENSIONS)}, "
        "any case; names starting with '.' or '_' are left out); pass a folder or glob with images"
    )


def _list_images(session: "SparkSession", path: str, argument: str) -> tuple["SparkDataFrame", list[str]]:
    """The binaryFile DataFrame of the image files named by ``path``, and their paths, sorted."""
    from pyspark.errors import AnalysisException

    reader = (session.read.format("binaryFile").option("recursiveFileLookup", "true")
              .option("pathGlobFilter", _any_case_glob()))
    try:
        # Spark expands a glob itself, with Hadoop's rules, and lists a folder tree on the driver
        df = reader.load(path)
    except AnalysisException as error:
        if "PATH_NOT_FOUND" not in str(error):
            raise
        what = "matches no file" if any(char in path for char in _GLOB_CHARS) else "does not exist"
        raise InvalidArgumentError(f"{argument}={path!r} {what}; pass a folder of images, an image file or a glob of them") from error
    files = sorted(_spark_path(uri) for uri in _input_files(df))
    if not files:
        raise _no_images_error(path, argument)
    return df.select("path", "content"), files


def _is_listed(name: str) -> bool:
    """Whether Spark's file listing keeps a file or folder of this name (it leaves out hidden
    names, and ``_`` names that are not ``key=value`` partition folders)."""
    return not (name.startswith(".") or (name.startswith("_") and "=" not in name))


def _is_image_name(name: str) -> bool:
    return name.rpartition(".")[2].lower() in IMAGE_EXTENSIONS and "." in name


def _list_images_by_python(path: str, argument: str, storage_options: Mapping[str, Any]) -> Optional[list[str]]:
    """The image files of a local folder or file, or of an object store (through fsspec, with
    ``storage_options``), as :func:`_list_images` names and sorts them; None for a local glob or
    another filesystem, which Spark lists."""
    if is_object_store(path):
        return _list_object_store_images(path, argument, storage_options)
    return _list_local_images(path, argument)


def _list_object_store_images(path: str, argument: str, storage_options: Mapping[str, Any]) -> list[str]:
    """The image files below an object-store folder, or matching a glob, listed through fsspec
    (Spark's own listing would need hadoop-aws); each is then read by the task that decodes it."""
    fs, name = filesystem(path, storage_options, argument)
    with storage_errors(path, argument):
        if any(char in name for char in _GLOB_CHARS):
            found = [match for match in fs.glob(name) if fs.isfile(match)]
        elif fs.isdir(name):
            root = name.rstrip("/")
            found = [entry for entry in fs.find(name) if all(_is_listed(part) for part in entry[len(root):].split("/") if part)]
        elif fs.exists(name):
            found = [name]
        else:
            raise DataReadError(missing_object_error(fs, path, argument))
    images = sorted(fs.unstrip_protocol(entry) for entry in found if _is_image_name(entry.rsplit("/", 1)[-1]))
    if not images:
        raise _no_images_error(path, argument)
    return images


def _list_local_images(path: str, argument: str) -> Optional[list[str]]:
    """The image files of a local folder or file, as :func:`_list_images` names and sorts them,
    listed by Python (about 100x faster than Spark's listing job-free as it is); None for a
    glob or another filesystem, which Spark lists."""
    local = _local_file(path) if path.startswith("file:") else (None if "://" in path else path)
    if local is None or any(char in path for char in _GLOB_CHARS) or not os.path.exists(local):
        return None  # Spark's listing gives the errors of a missing path too
    root = os.path.abspath(local)
    if os.path.isfile(root):
        found = [root] if _is_image_name(os.path.basename(root)) else []
    else:
        found = []
        for folder, subfolders, names in os.walk(root, followlinks=True):
            subfolders[:] = [name for name in subfolders if _is_listed(name)]
            found.extend(os.path.join(folder, name) for name in names if _is_listed(name) and _is_image_name(name))
    if not found:
        raise _no_images_error(path, argument)
    return sorted(f"file:{file}" for file in found)


def _parent_name(path: str) -> str:
    """The name of the folder a file is in (its class with ``label="folder"``)."""
    parts = path.rsplit("/", 2)
    return parts[-2] if len(parts) == 3 else ""


# ---------------------------------------------------------------------------------------------
# Partitioning: contiguous slices of the sorted paths
# ---------------------------------------------------------------------------------------------

def _partition_count(num_partitions: Optional[int], count: int, pixel_bytes: int, default_parallelism: int) -> int:
    """``num_partitions``, or enough for every core and for shards of at most ~128 MB of pixels;
    never more than one per image."""
    if num_partitions is None:
        num_partitions = max(default_parallelism, math.ceil(count * pixel_bytes / _SHARD_PIXEL_BYTES))
    return min(num_partitions, count)


def _slice_index(boundaries: Sequence[str], low: int, high: int) -> "Column":
    """The partition (``low`` .. ``high``) of a row's path: a balanced tree of comparisons with
    the first path of each partition, so that a row makes log2(partitions) of them."""
    from pyspark.sql import functions as F

    if low == high:
        return F.lit(low)
    middle = (low + high + 1) // 2
    return F.when(F.col("path") < boundaries[middle - 1], _slice_index(boundaries, low, middle - 1)) \
        .otherwise(_slice_index(boundaries, middle, high))


def _slice_starts(count: int, num_partitions: int) -> list[int]:
    """Where each of ``num_partitions`` contiguous, balanced slices of ``count`` files starts."""
    return [p * count // num_partitions for p in range(num_partitions)]


def _in_path_slices(df: "SparkDataFrame", files: Sequence[str], num_partitions: int) -> "SparkDataFrame":
    """``df`` moved so that partition p holds the p-th contiguous slice of the sorted ``files``
    (a shuffle on the executors, bytes included: Spark's scan packs files by size, not by name)."""
    boundaries = [files[start] for start in _slice_starts(len(files), num_partitions)[1:]]
    return df.repartitionById(num_partitions, _slice_index(boundaries, 0, num_partitions - 1))


# ---------------------------------------------------------------------------------------------
# Skipped files: counted on the executors, reported on the driver
# ---------------------------------------------------------------------------------------------

def _skipped_param(reader: str) -> Any:
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


# ---------------------------------------------------------------------------------------------
# Decoding, on the executors
# ---------------------------------------------------------------------------------------------

def _decode(content: bytes, size: tuple[int, int], mode: str) -> np.ndarray:
    """One image file's bytes as a uint8 array [height, width, channels]: Pillow decodes, converts
    to ``mode``, then resizes (bilinear, antialiased) to ``size``."""
    import io

    from PIL import Image

    with Image.open(io.BytesIO(content)) as image:
        converted = image.convert(mode)  # before resizing: a palette image resizes only by nearest pixel
    pixels = np.asarray(converted.resize((size[1], size[0]), Image.Resampling.BILINEAR), dtype=np.uint8)
    return pixels[..., np.newaxis] if pixels.ndim == 2 else pixels


def _undecodable(reader: str, path: str, error: Exception, on_error: str, skipped: "Accumulator") -> None:
    """Raise the error for a file Pillow cannot decode, or count it as skipped."""
    if on_error == "raise":
        raise DataReadError(
            f"{reader}: cannot decode {path!r} as an image ({type(error).__name__}: {error}); "
            "pass on_error='skip' to leave undecodable files out"
        ) from error
    skipped.add(frozenset([path]))


def _label_of(label: Label, path: str, classes: Optional[Mapping[str, int]], partition_index: int) -> int:
    if classes is not None:
        folder = _parent_name(path)
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


# one image to decode: its path as Spark names it, its bytes (or a local file to read them
# from), and its stored label (read_parquet's tables) or None
Image_ = tuple[str, Union[bytes, str], Optional[int]]


def _images_of_tables(tables: Iterator["pa.Table"]) -> Iterator[Image_]:
    """The images of a partition's tables of ``path``, ``content`` (and ``label``), in path order."""
    for table in tables:
        paths = table.column("path").to_pylist()
        contents = table.column("content")
        stored = table.column("label").to_pylist() if "label" in table.column_names else None
        for i in sorted(range(len(paths)), key=paths.__getitem__):
            yield paths[i], contents[i].as_py(), stored[i] if stored is not None else None


def _images_of_local_files(slices: Iterator[list[tuple[str, str]]]) -> Iterator[Image_]:
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


def _decode_partition(partition_index: int, images: Iterator[Image_], *, reader: str, size: tuple[int, int],
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
            _undecodable(reader, path, error, on_error, skipped)
            continue
        if stored is not None:
            labels.append(stored)
        elif label is not None:
            labels.append(_label_of(label, path, classes, partition_index))
    x = np.stack(pixels) if pixels else np.empty((0, *size, _CHANNELS[mode]), dtype=np.uint8)
    return [{"x": x, "y": np.asarray(labels, dtype=np.int64)} if labelled else {"x": x}]


def _partitioned_images(df: Optional["SparkDataFrame"], files: Sequence[str], num_partitions: int) -> "RDD":
    """An RDD whose partition p holds the images of the p-th contiguous slice of the sorted ``files``.

    Local files are read by the decoding tasks themselves, so only their names travel. Files on
    another filesystem (HDFS, S3), and read_parquet's table, are read by Spark's scan of ``df``,
    whose partitions are packed by size, not by name, so the bytes are shuffled into the slices on
    the executors."""
    local_files = [_local_file(path) or (path if is_object_store(path) else None) for path in files]
    if df is None or (df.columns == ["path", "content"] and all(local_files)):
        pairs = list(zip(files, local_files))
        starts = _slice_starts(len(files), num_partitions) + [len(files)]
        slices = [pairs[start:end] for start, end in zip(starts, starts[1:])]
        # one element per partition: parallelize keeps a list's order and, with batches of one, its cuts
        rdd = _spark_context().parallelize(slices, num_partitions)
        return rdd.mapPartitions(_images_of_local_files, preservesPartitioning=True)
    tables = convert.spark_df_to_arrow_rdd(_in_path_slices(df, files, num_partitions))
    return tables.mapPartitions(_images_of_tables, preservesPartitioning=True)


def _decoded_shards(df: Optional["SparkDataFrame"], files: Sequence[str], *, num_partitions: Optional[int],
                    reader: str, size: tuple[int, int], mode: str, label: Label, classes: Optional[list[str]],
                    on_error: str, storage_options: Optional[Mapping[str, Any]] = None) -> SparkXShards:
    """Shards of the images ``files`` (local files), or of ``df`` (``path``, ``content`` and maybe
    ``label``), lazily decoded on the executors, with ``classes`` and ``skipped`` attached."""
    import functools

    sc = _spark_context()
    pixel_bytes = size[0] * size[1] * _CHANNELS[mode]
    count = _partition_count(num_partitions, len(files), pixel_bytes, sc.defaultParallelism)
    skipped = sc.accumulator(frozenset(), _skipped_param(reader))
    decode = functools.partial(
        _decode_partition, reader=reader, size=size, mode=mode, label=label, on_error=on_error, skipped=skipped,
        listed_on=this_host(), storage_options=storage_options,
        labelled=label is not None or (df is not None and "label" in df.columns),
        classes={name: index for index, name in enumerate(classes)} if classes is not None and label == "folder" else None,
    )
    images = _partitioned_images(df, files, count)
    shards = SparkXShards(images.mapPartitionsWithIndex(raising_transportably(decode), preservesPartitioning=True))
    shards.classes = classes  # type: ignore[attr-defined]
    shards.skipped = SkippedFiles(skipped)  # type: ignore[attr-defined]
    return shards


# ---------------------------------------------------------------------------------------------
# Public API
# ---------------------------------------------------------------------------------------------

@suggest_keywords
def read_images(path: Union[str, "os.PathLike[str]"], size: tuple[int, int], label: Label = "folder", mode: str = "RGB",
                on_error: str = "raise", num_partitions: Optional[int] = None, *,
                storage_options: Optional[Mapping[str, Any]] = None) -> SparkXShards:
    """Read image files into XShards of uint8 pixel arrays, decoded and resized on the executors.

    Parameters
    ----------
    path : str
        A folder (every image file below it, at any depth), an image file, or a glob such as
        ``"/data/*/*.jpg"`` (Hadoop's glob rules); local, ``file://``, ``hdfs://``, or ``s3://``
        (listed and read through s3fs, the ``s3`` extra, by the tasks that decode the files).
        Image files are those ending in one of :data:`IMAGE_EXTENSIONS`, in any case; names
        starting with ``.`` or ``_`` are left out, as Spark does.
    size : (int, int)
        ``(height, width)`` every image is resized to (Pillow, bilinear with antialiasing).
    label : "folder", callable or None, default "folder"
        ``"folder"``: the class of an image is the name of its folder; classes are numbered in
        the sorted order of the names. A callable gets the file's path (as Spark names it, e.g.
        ``"file:/data/cat/3.jpg"``) and returns the int label. None: no labels.
    mode : {"RGB", "L", "RGBA"}, default "RGB"
        The Pillow mode images are converted to: 3, 1 or 4 channels (the channel axis is kept).
    on_error : {"raise", "skip"}, default "raise"
        What to do with a file Pillow cannot decode: raise an error naming it, or leave it out
        (counted in ``shards.skipped``, and logged as a warning on the driver).
    num_partitions : int, optional
        Number of partitions (one shard each). By default Spark's default parallelism, or more
        so that no shard holds more than ~128 MB of pixels; never more than the number of files.
    storage_options : dict, optional
        Options of an ``s3://`` path (``key``, ``secret``, ``endpoint_url``, ...), as pandas
        takes them; by default from Spark's ``fs.s3a.*`` conf and the driver's ``AWS_*``
        environment (see :mod:`zoo_lite.data.filesystems`).

    Returns
    -------
    SparkXShards
        One shard per partition, ``{"x": uint8 [n, height, width, channels], "y": int64 [n]}``
        (no ``"y"`` with ``label=None``). The files are sorted by path and cut into contiguous
        slices, so rows follow path order within a shard and from one shard to the next. The
        returned object (not the collections its methods derive) also has ``classes`` (the
        class names, index = label, with ``label="folder"``; else None) and ``skipped``
        (a :class:`SkippedFiles`).

    Raises
    ------
    InvalidArgumentError
        ``size``, ``mode``, ``label``, ``on_error`` or ``num_partitions`` has a value it cannot
        take; ``path`` does not exist, or holds or matches no image file.
    DataReadError
        At the first action, with ``on_error="raise"``: a file Pillow cannot decode (the message
        names it).
    ShardFunctionError
        At the first action: the ``label`` function failed on a path.
    ContextStoppedError
        No context is active: call :func:`~zoo_lite.init_orca_context` first.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> from PIL import Image
    >>> from zoo_lite import init_orca_context
    >>> from zoo_lite.data.image import read_images
    >>> _ = init_orca_context(cores=2)
    >>> root = pathlib.Path(tempfile.mkdtemp())
    >>> for name, colour in [("cat", "red"), ("dog", "blue"), ("dog", "green")]:
    ...     (root / name).mkdir(exist_ok=True)
    ...     Image.new("RGB", (40, 30), colour).save(root / name / f"{colour}.png")
    >>> shards = read_images(str(root), size=(16, 16))
    >>> shards.classes
    ['cat', 'dog']
    >>> [(shard["x"].shape, shard["y"].tolist()) for shard in shards.collect()]
    [((1, 16, 16, 3), [0]), ((2, 16, 16, 3), [1, 1])]
    >>> read_images(str(root / "*" / "*.png"), size=(8, 8), mode="L", label=None).first()["x"].shape
    (1, 8, 8, 1)
    """
    path = _check_path(path, "path")
    size, mode, label = _check_size(size), _check_mode(mode), _check_label(label)
    on_error = _check_choice(on_error, "on_error", _ON_ERROR)
    if num_partitions is not None:
        num_partitions = check_positive_int(num_partitions, "num_partitions")
    options = storage_options_for(path, storage_options)
    df, files = None, _list_images_by_python(path, "path", options)
    if files is None:
        df, files = _list_images(_image_session(), path, "path")
    classes = sorted({_parent_name(file) for file in files}) if label == "folder" else None
    return _decoded_shards(df, files, num_partitions=num_partitions, reader="read_images", size=size, mode=mode,
                           label=label, classes=classes, on_error=on_error, storage_options=options)


def _table_schema(labelled: bool) -> "pa.Schema":
    """The columns of the table write_parquet writes (``label`` only when there are labels)."""
    import pyarrow as pa

    label = [("label", pa.int64())] if labelled else []
    return pa.schema([("path", pa.string()), ("image", pa.binary()), *label,
                      ("height", pa.int32()), ("width", pa.int32()), ("channels", pa.int32())])


def _image_table_rows(batches: Iterator["pa.RecordBatch"], *, label: Label, classes: Optional[Mapping[str, int]],
                      on_error: str, skipped: "Accumulator") -> Iterator["pa.RecordBatch"]:
    """mapInArrow: every decodable image of the batches as a table row (path, image, label,
    height, width, channels); files outside ``classes`` (a label_map) are left out."""
    import io

    import pyarrow as pa
    from PIL import Image
    from pyspark import TaskContext

    schema = _table_schema(label is not None)
    for batch in batches:
        rows: dict[str, list[Any]] = {name: [] for name in schema.names}
        for path, content in zip(batch.column("path").to_pylist(), batch.column("content").to_pylist()):
            if classes is not None and _parent_name(path) not in classes:
                continue
            try:
                with Image.open(io.BytesIO(content)) as image:
                    image.load()  # the whole file: a truncated one fails here, not when it is read back
                    height, width, channels = image.height, image.width, len(image.getbands())
            except Exception as error:  # noqa: BLE001 - Pillow's decoders raise many kinds for a bad file
                _undecodable("write_parquet", path, error, on_error, skipped)
                continue
            rows["path"].append(path)
            rows["image"].append(content)
            if label is not None:
                rows["label"].append(_label_of(label, path, classes, TaskContext.get().partitionId()))
            rows["height"].append(height)
            rows["width"].append(width)
            rows["channels"].append(channels)
        yield pa.RecordBatch.from_pydict(rows, schema=schema)


def _label_map_classes(label_map: Mapping[str, int]) -> Optional[list[str]]:
    """The class names in label order if ``label_map``'s labels are 0 .. k-1, else None."""
    by_label = sorted(label_map, key=label_map.__getitem__)
    return by_label if [label_map[name] for name in by_label] == list(range(len(by_label))) else None


def _check_label_map(label_map: Any, label: Label) -> Optional[dict[str, int]]:
    if label_map is None:
        return None
    valid = isinstance(label_map, Mapping) and label_map and all(
        isinstance(k, str) and isinstance(v, numbers.Integral) and not isinstance(v, bool) for k, v in label_map.items())
    if not valid:
        raise InvalidArgumentError(f"label_map={label_map!r} must be a non-empty dict of folder name -> int label")
    if label != "folder":
        raise InvalidArgumentError(f"label_map is given with label={label!r}; a label_map labels by folder: leave label='folder'")
    return {name: int(value) for name, value in label_map.items()}


@suggest_keywords
def write_parquet(format: str, output_path: str, path: Optional[str] = None, *, directory: Optional[str] = None,
                  label: Label = "folder", label_map: Optional[Mapping[str, int]] = None, on_error: str = "raise",
                  write_mode: str = "overwrite") -> None:
    """Write image files, with their labels, to a Parquet table that :func:`read_parquet` reads.

    The table keeps each file's bytes as they are (encoded, e.g. JPEG): it is as small as the
    files, loses nothing, and can be read back at any ``size`` and ``mode``, decoded the same
    way as :func:`read_images` does. Every file is decoded once while writing, so the table
    holds only images that decode.

    Parameters
    ----------
    format : {"image", "image_folder"}
        ``"image_folder"`` is Orca's name; both mean the same. Orca's ``"mnist"`` and ``"voc"``
        are not supported.
    output_path : str
        The folder the table is written to (Spark's Parquet writer; local, hdfs://, or s3a:// with
        ``hadoop-aws`` on Spark's classpath, see :func:`~zoo_lite.data.filesystems.check_spark_reads`).
    path : str
        The images: a folder, a file or a glob, as for :func:`read_images`.
    directory : str, optional
        Orca's name for ``path``; give one of the two.
    label : "folder", callable or None, default "folder"
        As for :func:`read_images`. With ``"folder"`` the class names are stored in the table
        (metadata of its ``label`` column) and come back as ``shards.classes``.
    label_map : dict of str to int, optional
        Orca's ``label_map``: the label of each folder name; images in other folders are left
        out. The class names are stored if the labels are 0 .. k-1.
    on_error : {"raise", "skip"}, default "raise"
        What to do with a file Pillow cannot decode: raise an error naming it, or leave it out
        (with a warning giving the count).
    write_mode : {"overwrite", "append", "error", "errorifexists", "ignore"}, default "overwrite"
        Spark's save mode, when ``output_path`` exists (Orca's name and default).

    Returns
    -------
    None
        The table at ``output_path`` has the columns ``path`` (string), ``image`` (binary, the
        file's bytes), ``label`` (int64; not there with ``label=None``), ``height``, ``width``
        and ``channels`` (int32, of the stored image).

    Raises
    ------
    InvalidArgumentError
        An argument has a value it cannot take (see :func:`read_images`), ``format`` is not an
        image format, ``path`` and ``directory`` are both or neither given, ``label_map`` is
        not a dict of folder name to int, or ``output_path`` is a folder on the driver's host that
        executors on other hosts do not see (on a cluster: write to a shared file system, HDFS or S3).
    DataReadError
        With ``on_error="raise"``: a file Pillow cannot decode (the message names it).
    ContextStoppedError
        No context is active: call :func:`~zoo_lite.init_orca_context` first.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> from PIL import Image
    >>> from zoo_lite import init_orca_context, OrcaContext
    >>> from zoo_lite.data.image import write_parquet
    >>> _ = init_orca_context(cores=2)
    >>> root = pathlib.Path(tempfile.mkdtemp())
    >>> for name in ("cat", "dog"):
    ...     (root / name).mkdir()
    ...     Image.new("RGB", (20, 10), "white").save(root / name / "1.png")
    >>> write_parquet("image", str(root / "table"), str(root))
    >>> table = OrcaContext.get_spark_session().read.parquet(str(root / "table"))
    >>> sorted((row.label, row.height, row.width, row.channels) for row in table.collect())
    [(0, 10, 20, 3), (1, 10, 20, 3)]
    """
    _check_format(format, "write_parquet", ("mnist", "voc"), "write the images with format='image'")
    if (path is None) == (directory is None):
        raise InvalidArgumentError(f"write_parquet: give the images as path= (or Orca's directory=), once; got path={path!r}, directory={directory!r}")
    source = _check_path(path if path is not None else directory, "path" if path is not None else "directory")
    output_path = _check_path(output_path, "output_path", "the folder to write the table to")
    label = _check_label(label)
    label_map = _check_label_map(label_map, label)
    on_error = _check_choice(on_error, "on_error", _ON_ERROR)
    write_mode = _check_choice(write_mode, "write_mode", _WRITE_MODES)
    session = _image_session()
    # Spark's binaryFile source reads the images and its Parquet writer writes the table: s3a:// only
    check_spark_reads(session.sparkContext, source, "path" if path is not None else "directory")
    check_spark_reads(session.sparkContext, output_path, "output_path")
    check_every_host_sees(session.sparkContext, output_path, "output_path")
    source, output_path = as_spark_path(source), as_spark_path(output_path)
    df, files = _list_images(session, source, "path" if path is not None else "directory")
    if label_map is not None:
        mapping, classes = label_map, _label_map_classes(label_map)
    elif label == "folder":
        classes = sorted({_parent_name(file) for file in files})
        mapping = {name: index for index, name in enumerate(classes)}
    else:
        mapping, classes = None, None
    table = _image_table(df, label=label, mapping=mapping, classes=classes, on_error=on_error)
    run_job(session.sparkContext, lambda: table.write.mode(write_mode).parquet(output_path))


def _image_table(df: "SparkDataFrame", *, label: Label, mapping: Optional[Mapping[str, int]],
                 classes: Optional[list[str]], on_error: str) -> "SparkDataFrame":
    """The table write_parquet writes, computed on the executors from the binaryFile rows."""
    import functools

    from pyspark.sql.pandas.types import from_arrow_schema

    sc = df.sparkSession.sparkContext
    skipped = sc.accumulator(frozenset(), _skipped_param("write_parquet"))
    rows = functools.partial(_image_table_rows, label=label, classes=mapping, on_error=on_error, skipped=skipped)
    table = df.mapInArrow(streaming_transportably(rows), from_arrow_schema(_table_schema(label is not None)))
    return table.withMetadata("label", {_CLASSES_KEY: classes}) if label is not None else table


@suggest_keywords
def read_parquet(format: str, path: str, size: tuple[int, int], mode: str = "RGB", on_error: str = "raise",
                 num_partitions: Optional[int] = None) -> SparkXShards:
    """Read a table written by :func:`write_parquet` into the shards :func:`read_images` gives.

    The stored file bytes are decoded and resized on the executors exactly as
    :func:`read_images` does, and cut into partitions by path the same way: the same files,
    ``size``, ``mode`` and ``num_partitions`` give equal shards. The call reads the table's
    ``path`` column (one job) to cut the partitions; the images are read at the first action.

    Parameters
    ----------
    format : {"image", "image_folder"}
        Orca's ``"tf_dataset"`` and ``"dataloader"`` are not supported: Estimators take XShards.
    path : str
        The folder of the table.
    size : (int, int)
        ``(height, width)`` every image is resized to.
    mode : {"RGB", "L", "RGBA"}, default "RGB"
        The Pillow mode images are converted to: 3, 1 or 4 channels.
    on_error : {"raise", "skip"}, default "raise"
        As for :func:`read_images`.
    num_partitions : int, optional
        As for :func:`read_images`.

    Returns
    -------
    SparkXShards
        As :func:`read_images`: ``{"x", "y"}`` shards (no ``"y"`` if the table has no labels),
        with ``classes`` (stored by :func:`write_parquet`, or None) and ``skipped``.

    Raises
    ------
    InvalidArgumentError
        An argument has a value it cannot take, or ``path`` is not a table of images written by
        :func:`write_parquet` (it has no ``path`` and ``image`` columns).
    DataReadError
        ``path`` does not exist; at the first action with ``on_error="raise"``, a stored image
        Pillow cannot decode.
    ContextStoppedError
        No context is active: call :func:`~zoo_lite.init_orca_context` first.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> from PIL import Image
    >>> from zoo_lite import init_orca_context
    >>> from zoo_lite.data.image import read_parquet, write_parquet
    >>> _ = init_orca_context(cores=2)
    >>> root = pathlib.Path(tempfile.mkdtemp())
    >>> for name in ("cat", "dog"):
    ...     (root / "images" / name).mkdir(parents=True)
    ...     Image.new("RGB", (20, 10), "white").save(root / "images" / name / "1.png")
    >>> write_parquet("image_folder", str(root / "table"), directory=str(root / "images"), label_map={"cat": 0, "dog": 1})
    >>> shards = read_parquet("image", str(root / "table"), size=(5, 5))
    >>> shards.classes, [shard["y"].tolist() for shard in shards.collect()]
    (['cat', 'dog'], [[0], [1]])
    """
    from pyspark.errors import AnalysisException
    from pyspark.sql import functions as F

    _check_format(format, "read_parquet", ("tf_dataset", "dataloader"),
                  "read the table into XShards with format='image' and pass them to the Estimator")
    path = _check_path(path, "path", "the folder of a table write_parquet wrote")
    size, mode = _check_size(size), _check_mode(mode)
    on_error = _check_choice(on_error, "on_error", _ON_ERROR)
    if num_partitions is not None:
        num_partitions = check_positive_int(num_partitions, "num_partitions")
    session = _image_session()
    check_spark_reads(session.sparkContext, path, "path")
    path = as_spark_path(path)
    try:
        table = session.read.parquet(path)
    except AnalysisException as error:
        if "PATH_NOT_FOUND" not in str(error):
            raise
        raise DataReadError(f"path={path!r} does not exist; pass the output_path write_parquet wrote to") from error
    if not {"path", "image"} <= set(table.columns):
        raise InvalidArgumentError(
            f"path={path!r} is not a table of images (its columns are {table.columns}, with no 'path' and 'image'); "
            "write one with write_parquet(format='image', ...)"
        )
    labelled = "label" in table.columns
    classes = table.schema["label"].metadata.get(_CLASSES_KEY) if labelled else None
    columns = [F.col("path"), F.col("image").alias("content")] + ([F.col("label")] if labelled else [])
    files = sorted(run_job(session.sparkContext, table.select("path").toArrow).column("path").to_pylist())
    if not files:
        raise InvalidArgumentError(f"path={path!r} is a table with no image; write_parquet found none to write")
    return _decoded_shards(table.select(*columns), files, num_partitions=num_partitions, reader="read_parquet",
                           size=size, mode=mode, label=None, classes=classes, on_error=on_error)


# ---------------------------------------------------------------------------------------------
# Orca's TFRecord functions: importable, so that Orca programs load, and refused when called
# ---------------------------------------------------------------------------------------------

def write_tfrecord(format: str, output_path: str, *args: Any, **kwargs: Any) -> None:
    """Not provided: Orca wrote ImageNet-style TFRecords; zoo_lite keeps images in Parquet.

    Raises
    ------
    InvalidArgumentError
        Always, saying what to use instead.

    Examples
    --------
    >>> from zoo_lite.data.image import write_tfrecord
    >>> write_tfrecord("imagenet", "/tmp/out", imagenet_path="/data")
    Traceback (most recent call last):
    ...
    zoo_lite.errors.InvalidArgumentError: write_tfrecord is not provided by zoo_lite: keep images with their labels in a Parquet table with write_parquet('image', output_path, path), and read them back with read_parquet('image', ...) or read_images(path, size)
    """
    raise InvalidArgumentError(
        "write_tfrecord is not provided by zoo_lite: keep images with their labels in a Parquet table with "
        "write_parquet('image', output_path, path), and read them back with read_parquet('image', ...) or read_images(path, size)"
    )


def read_tfrecord(format: str, path: str, *args: Any, **kwargs: Any) -> Any:
    """Not provided: read TFRecord files with ``tf.data.TFRecordDataset`` in a data creator.

    Raises
    ------
    InvalidArgumentError
        Always, saying what to use instead.

    Examples
    --------
    >>> from zoo_lite.data.image import read_tfrecord
    >>> read_tfrecord("imagenet", "/data/records")
    Traceback (most recent call last):
    ...
    zoo_lite.errors.InvalidArgumentError: read_tfrecord is not provided by zoo_lite: read TFRecord files with tf.data.TFRecordDataset inside a data creator passed to Estimator.from_keras(...).fit, or keep images in Parquet with write_parquet('image', ...)
    """
    raise InvalidArgumentError(
        "read_tfrecord is not provided by zoo_lite: read TFRecord files with tf.data.TFRecordDataset inside a data "
        "creator passed to Estimator.from_keras(...).fit, or keep images in Parquet with write_parquet('image', ...)"
    )
