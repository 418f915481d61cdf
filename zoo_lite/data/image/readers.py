"""read_images, write_parquet and read_parquet: the image readers' entry points, and the listing of image files.

Only file names pass through the driver: the files are listed here (by Python for a local folder
or file, through fsspec for ``s3://``, by Spark's ``binaryFile`` source otherwise), sorted, and
handed to :func:`~zoo_lite.data.image.partitions.decoded_shards`, which cuts them into partitions
and decodes them on the executors. :func:`write_parquet` writes the table of
:mod:`~zoo_lite.data.image.parquet_table`; :func:`read_parquet` reads it into the same shards as
:func:`read_images` gives for the files. The package docstring of :mod:`zoo_lite.data.image`
tells which files each task reads.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, Mapping, Optional, Union

from zoo_lite.data.filesystems import (
    as_spark_path,
    check_spark_reads,
    filesystem,
    is_object_store,
    missing_object_error,
    storage_errors,
    storage_options_for,
)
from zoo_lite.data.image.arguments import check_choice, check_format, check_mode, check_path, check_size
from zoo_lite.data.image.labels import Label, check_label, check_label_map, label_map_classes, parent_name
from zoo_lite.data.image.parquet_table import CLASSES_KEY, image_table
from zoo_lite.data.image.partitions import decoded_shards, local_file
from zoo_lite.data.paths import check_every_host_sees
from zoo_lite.data.shard import SparkXShards
from zoo_lite.data.spark_jobs import run_job
from zoo_lite.errors import DataReadError, InvalidArgumentError, check_positive_int
from zoo_lite.keywords import suggest_keywords

if TYPE_CHECKING:
    from pyspark.sql import DataFrame as SparkDataFrame
    from pyspark.sql import SparkSession

__all__ = ["IMAGE_EXTENSIONS", "read_images", "write_parquet", "read_parquet"]

#: the file extensions (any case) read_images and write_parquet read; other files are left out
IMAGE_EXTENSIONS = ("bmp", "gif", "jpeg", "jpg", "pbm", "pgm", "png", "ppm", "tif", "tiff", "webp")

_ON_ERROR = ("raise", "skip")
_WRITE_MODES = ("overwrite", "append", "error", "errorifexists", "ignore")
_GLOB_CHARS = ("*", "?", "[", "{")


# ---------------------------------------------------------------------------------------------
# Listing: Spark's binaryFile source, file names on the driver
# ---------------------------------------------------------------------------------------------

def _image_session() -> "SparkSession":
    """A session of the active context for the image readers alone, whose settings must not
    change the user's session."""
    from zoo_lite.context import require_classic_session

    user_session = require_classic_session("Reading images (zoo_lite.data.image)")
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
    local = local_file(path) if path.startswith("file:") else (None if "://" in path else path)
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
    path = check_path(path, "path")
    size, mode, label = check_size(size), check_mode(mode), check_label(label)
    on_error = check_choice(on_error, "on_error", _ON_ERROR)
    if num_partitions is not None:
        num_partitions = check_positive_int(num_partitions, "num_partitions")
    options = storage_options_for(path, storage_options)
    df, files = None, _list_images_by_python(path, "path", options)
    if files is None:
        df, files = _list_images(_image_session(), path, "path")
    classes = sorted({parent_name(file) for file in files}) if label == "folder" else None
    return decoded_shards(df, files, num_partitions=num_partitions, reader="read_images", size=size, mode=mode,
                          label=label, classes=classes, on_error=on_error, storage_options=options)


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
    check_format(format, "write_parquet", ("mnist", "voc"), "write the images with format='image'")
    if (path is None) == (directory is None):
        raise InvalidArgumentError(f"write_parquet: give the images as path= (or Orca's directory=), once; got path={path!r}, directory={directory!r}")
    source = check_path(path if path is not None else directory, "path" if path is not None else "directory")
    output_path = check_path(output_path, "output_path", "the folder to write the table to")
    label = check_label(label)
    label_map = check_label_map(label_map, label)
    on_error = check_choice(on_error, "on_error", _ON_ERROR)
    write_mode = check_choice(write_mode, "write_mode", _WRITE_MODES)
    session = _image_session()
    # Spark's binaryFile source reads the images and its Parquet writer writes the table: s3a:// only
    check_spark_reads(session.sparkContext, source, "path" if path is not None else "directory")
    check_spark_reads(session.sparkContext, output_path, "output_path")
    check_every_host_sees(session.sparkContext, output_path, "output_path")
    source, output_path = as_spark_path(source), as_spark_path(output_path)
    df, files = _list_images(session, source, "path" if path is not None else "directory")
    if label_map is not None:
        mapping, classes = label_map, label_map_classes(label_map)
    elif label == "folder":
        classes = sorted({parent_name(file) for file in files})
        mapping = {name: index for index, name in enumerate(classes)}
    else:
        mapping, classes = None, None
    table = image_table(df, label=label, mapping=mapping, classes=classes, on_error=on_error)
    run_job(session.sparkContext, lambda: table.write.mode(write_mode).parquet(output_path))


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

    check_format(format, "read_parquet", ("tf_dataset", "dataloader"),
                 "read the table into XShards with format='image' and pass them to the Estimator")
    path = check_path(path, "path", "the folder of a table write_parquet wrote")
    size, mode = check_size(size), check_mode(mode)
    on_error = check_choice(on_error, "on_error", _ON_ERROR)
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
    classes = table.schema["label"].metadata.get(CLASSES_KEY) if labelled else None
    columns = [F.col("path"), F.col("image").alias("content")] + ([F.col("label")] if labelled else [])
    files = sorted(run_job(session.sparkContext, table.select("path").toArrow).column("path").to_pylist())
    if not files:
        raise InvalidArgumentError(f"path={path!r} is a table with no image; write_parquet found none to write")
    return decoded_shards(table.select(*columns), files, num_partitions=num_partitions, reader="read_parquet",
                          size=size, mode=mode, label=None, classes=classes, on_error=on_error)
