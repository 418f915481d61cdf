"""The image files cut into partitions in path order, and the lazy shards of their decoded images.

The sorted files are cut into contiguous, balanced slices, one per partition, so the same files
always give the same shards. :func:`decoded_shards`, which :func:`~zoo_lite.data.image.read_images`
and :func:`~zoo_lite.data.image.read_parquet` share, builds the SparkXShards whose tasks decode
each slice (:mod:`~zoo_lite.data.image.decoding`) at the first action.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Mapping, Optional, Sequence

from zoo_lite.data import convert
from zoo_lite.data.filesystems import is_object_store
from zoo_lite.data.image.arguments import CHANNELS
from zoo_lite.data.image.decoding import SkippedFiles, decode_partition, images_of_local_files, images_of_tables, skipped_param
from zoo_lite.data.image.labels import Label
from zoo_lite.data.paths import this_host
from zoo_lite.data.shard import SparkXShards
from zoo_lite.errors import raising_transportably

if TYPE_CHECKING:
    from pyspark import RDD, SparkContext
    from pyspark.sql import Column
    from pyspark.sql import DataFrame as SparkDataFrame

__all__ = ["local_file", "decoded_shards"]

# default partitions: no shard holds more than this many bytes of pixels
_SHARD_PIXEL_BYTES = 128 * 2**20


def _spark_context() -> "SparkContext":
    from zoo_lite.context import require_classic_session

    return require_classic_session("Reading images (zoo_lite.data.image)").sparkContext


def local_file(path: str) -> Optional[str]:
    """The local file a Spark path (``file:/data/3.jpg``) names, or None on another filesystem."""
    from urllib.parse import urlsplit

    parts = urlsplit(path)
    return parts.path if parts.scheme == "file" and parts.netloc in ("", "localhost") else None


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


def _partitioned_images(df: Optional["SparkDataFrame"], files: Sequence[str], num_partitions: int) -> "RDD":
    """An RDD whose partition p holds the images of the p-th contiguous slice of the sorted ``files``.

    Local files are read by the decoding tasks themselves, so only their names travel. Files on
    another filesystem (HDFS, S3), and read_parquet's table, are read by Spark's scan of ``df``,
    whose partitions are packed by size, not by name, so the bytes are shuffled into the slices on
    the executors."""
    local_files = [local_file(path) or (path if is_object_store(path) else None) for path in files]
    if df is None or (df.columns == ["path", "content"] and all(local_files)):
        pairs = list(zip(files, local_files))
        starts = _slice_starts(len(files), num_partitions) + [len(files)]
        slices = [pairs[start:end] for start, end in zip(starts, starts[1:])]
        # one element per partition: parallelize keeps a list's order and, with batches of one, its cuts
        rdd = _spark_context().parallelize(slices, num_partitions)
        return rdd.mapPartitions(images_of_local_files, preservesPartitioning=True)
    tables = convert.spark_df_to_arrow_rdd(_in_path_slices(df, files, num_partitions))
    return tables.mapPartitions(images_of_tables, preservesPartitioning=True)


def decoded_shards(df: Optional["SparkDataFrame"], files: Sequence[str], *, num_partitions: Optional[int],
                   reader: str, size: tuple[int, int], mode: str, label: Label, classes: Optional[list[str]],
                   on_error: str, storage_options: Optional[Mapping[str, Any]] = None) -> SparkXShards:
    """Shards of the images ``files`` (local files), or of ``df`` (``path``, ``content`` and maybe
    ``label``), lazily decoded on the executors, with ``classes`` and ``skipped`` attached."""
    import functools

    sc = _spark_context()
    pixel_bytes = size[0] * size[1] * CHANNELS[mode]
    count = _partition_count(num_partitions, len(files), pixel_bytes, sc.defaultParallelism)
    skipped = sc.accumulator(frozenset(), skipped_param(reader))
    decode = functools.partial(
        decode_partition, reader=reader, size=size, mode=mode, label=label, on_error=on_error, skipped=skipped,
        listed_on=this_host(), storage_options=storage_options,
        labelled=label is not None or (df is not None and "label" in df.columns),
        classes={name: index for index, name in enumerate(classes)} if classes is not None and label == "folder" else None,
    )
    images = _partitioned_images(df, files, count)
    shards = SparkXShards(images.mapPartitionsWithIndex(raising_transportably(decode), preservesPartitioning=True))
    shards.classes = classes  # type: ignore[attr-defined]
    shards.skipped = SkippedFiles(skipped)  # type: ignore[attr-defined]
    return shards
