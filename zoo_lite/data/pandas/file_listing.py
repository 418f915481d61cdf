"""Where a read starts: the backend chosen, the Spark session, the files ``file_path`` names, and
how the pandas backend groups those files into partitions.

A path is a file, a folder, a glob or a list of them, local, on HDFS or on an object store. The
pandas backend lists object stores through fsspec, with ``storage_options`` resolved once on the
driver; the spark backend leaves the listing to Spark's readers. :func:`file_groups` puts
consecutive files into partitions of about equal bytes (:data:`PARTITION_BYTES` at most), used by
:mod:`~zoo_lite.data.pandas.pandas_backend`.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Mapping, Optional, Sequence

import numpy as np

from zoo_lite.data.filesystems import as_spark_path, check_spark_reads, is_object_store, storage_options_for
from zoo_lite.data.paths import PathLike, expand_paths
from zoo_lite.errors import InvalidArgumentError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["spark_session", "located_files", "PARTITION_BYTES", "file_groups"]


_BACKENDS = ("spark", "pandas")


def _resolve_backend(backend: Optional[str]) -> str:
    from zoo_lite.context import OrcaContext

    chosen = backend or OrcaContext.pandas_read_backend
    if chosen not in _BACKENDS:
        raise InvalidArgumentError(f"backend={chosen!r} is not supported; use one of {list(_BACKENDS)}")
    return chosen


def spark_session() -> "SparkSession":
    """The active context's SparkSession (``OrcaContext.get_spark_session()``)."""
    from zoo_lite.context import OrcaContext

    return OrcaContext.get_spark_session()


def located_files(file_path: PathLike, backend: Optional[str], kwargs: Mapping[str, Any]) -> tuple[str, list[str], dict[str, Any]]:
    """The backend, the files of ``file_path``, and the reader's keywords. The pandas backend lists
    and reads object stores through fsspec, with ``storage_options`` resolved once here (so that
    credentials set in the driver's environment reach the tasks); Spark's readers list them
    themselves, through Hadoop's S3A file system."""
    from zoo_lite.context import require_classic_session

    require_classic_session("Reading files into XShards (zoo_lite.data.pandas)")
    backend, kwargs = _resolve_backend(backend), dict(kwargs)
    paths = [file_path] if isinstance(file_path, str) else list(file_path) if isinstance(file_path, (list, tuple)) else []
    remote = [path for path in paths if isinstance(path, str) and is_object_store(path)]
    if backend == "spark":
        if "storage_options" in kwargs:
            raise InvalidArgumentError(
                f"storage_options={kwargs['storage_options']!r} is for backend='pandas'; Spark's reader takes S3 credentials "
                "from the conf spark.hadoop.fs.s3a.access.key / secret.key / endpoint (init_orca_context(conf={...}))")
        if remote:
            sc = spark_session().sparkContext
            for path in remote:
                check_spark_reads(sc, path, "file_path")
            return backend, [as_spark_path(path) for path in paths], kwargs
        return backend, expand_paths(file_path, "file_path"), kwargs
    options = storage_options_for(remote[0] if remote else "", kwargs.pop("storage_options", None))
    files = expand_paths(file_path, "file_path", options)
    if remote:
        kwargs["storage_options"] = options
    return backend, files, kwargs


#: bytes of files one partition of the pandas backend reads at most (a larger file is one partition
#: alone), as Spark's ``spark.sql.files.maxPartitionBytes``: a worker holds one partition's frame,
#: so its memory follows this, not the size of the data
PARTITION_BYTES = 128 * 1024 * 1024


def file_groups(sizes: Sequence[int], min_groups: int, limit: int = PARTITION_BYTES) -> list[range]:
    """Consecutive files in groups of about equal bytes: as few groups as keep each within
    ``limit`` (a larger file alone), rounded up to a multiple of ``min_groups`` (the cores), so the
    last wave of tasks keeps every core busy; at most one group per file.

    Examples
    --------
    >>> [list(group) for group in file_groups([60, 60, 60, 200, 10], min_groups=2, limit=128)]
    [[0, 1], [2], [3], [4]]
    >>> [list(group) for group in file_groups([10] * 6, min_groups=2, limit=128)]  # 30 and 30, not 60 and 0
    [[0, 1, 2], [3, 4, 5]]
    """
    if not len(sizes):
        return []
    step = max(1, min_groups)
    wanted = step * math.ceil(math.ceil(max(1, sum(sizes)) / limit) / step)
    cumulative = np.concatenate([[0], np.cumsum(sizes, dtype=np.int64)])
    while True:
        groups = _even_groups(sizes, min(wanted, len(sizes)))
        starts, stops = np.array([g.start for g in groups]), np.array([g.stop for g in groups])
        if np.all((stops - starts == 1) | (cumulative[stops] - cumulative[starts] <= limit)):
            return groups
        if wanted >= len(sizes):  # sizes too uneven to balance: cut where the limit is passed
            return [part for group in groups for part in _within_limit(group, sizes, limit)]
        # a group passed the limit where files fell unevenly: more groups, a multiple of the cores
        wanted += step * max(1, wanted // (8 * step))


def _within_limit(group: range, sizes: Sequence[int], limit: int) -> list[range]:
    """``group`` cut greedily where its files would pass ``limit`` bytes (a larger file alone)."""
    parts, start, total = [], group.start, 0
    for index in group:
        if index > start and total + sizes[index] > limit:
            parts.append(range(start, index))
            start, total = index, 0
        total += sizes[index]
    parts.append(range(start, group.stop))
    return parts


def _even_groups(sizes: Sequence[int], count: int) -> list[range]:
    """Consecutive files in ``count`` groups of about equal bytes (by file count when all are
    empty): each file joins the group where its middle byte falls."""
    total = float(sum(sizes))
    if total == 0:
        group_of = np.arange(len(sizes)) * count // len(sizes)
    else:
        middles = np.cumsum(sizes, dtype=np.float64) - np.asarray(sizes, dtype=np.float64) / 2
        group_of = np.minimum((middles * count / total).astype(int), count - 1)
    bounds = [0, *(np.flatnonzero(np.diff(group_of)) + 1).tolist(), len(sizes)]
    return [range(start, stop) for start, stop in zip(bounds[:-1], bounds[1:])]
