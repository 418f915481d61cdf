"""Actions of :class:`~zoo_lite.data.shard.SparkXShards`: when the lazy shards are computed, and
where they go: kept in memory (``cache``, ``uncache``, ``is_cached``, ``compute``), brought to the
driver (``collect``, ``take``, ``first``, ``head``, ``concat_to_pdf``) or saved to files
(``save_pickle``; :meth:`~zoo_lite.data.shard.XShards.load_pickle` reads them back).

:class:`ActionMethods` is one of the bases of :class:`~zoo_lite.data.shard.SparkXShards` (see
:mod:`zoo_lite.data.shard`): its methods are called, documented and referenced as
``SparkXShards.<method>``, and reach the collection's RDD and plumbing through ``self``.

Every job runs through :func:`~zoo_lite.data.spark_jobs.run_job`, so a stopped context or an
error on an executor surfaces here as the zoo_lite error it is. Orca's eager mode, which caches a
collection when it is made, belongs to the collection itself (:mod:`zoo_lite.data.shard`).
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

import pandas as pd

from zoo_lite.data import partition_ops
from zoo_lite.data.shard_methods.tasks import per_shard
from zoo_lite.data.spark_jobs import run_job
from zoo_lite.errors import InvalidArgumentError, check_positive_int

if TYPE_CHECKING:
    from zoo_lite.data.shard import SparkXShards

__all__ = ["ActionMethods"]


class ActionMethods:
    """The caching and action methods of :class:`~zoo_lite.data.shard.SparkXShards`, which inherits them
    (see :mod:`zoo_lite.data.shard`)."""

    # -- caching ------------------------------------------------------------------------------------

    def cache(self) -> "SparkXShards":
        """Keep the shards in memory after the next action computes them.

        Returns
        -------
        SparkXShards
            ``self``, marked as cached.

        Examples
        --------
        >>> import numpy as np
        >>> from zoo_lite import init_orca_context
        >>> from zoo_lite.data import XShards
        >>> _ = init_orca_context(cores=2)
        >>> shards = XShards.partition(np.arange(4), 2).transform_shard(np.sqrt).cache()
        >>> shards.is_cached(), len(shards)  # the first action computes and keeps the shards
        (True, 4)
        >>> shards.uncache().is_cached()
        False
        """
        self.rdd.cache()
        self._cached = True
        return self

    def uncache(self) -> "SparkXShards":
        """Drop the shards from memory; the next action computes them again.

        Returns
        -------
        SparkXShards
            ``self``, no longer cached.

        Examples
        --------
        >>> import numpy as np
        >>> from zoo_lite import init_orca_context
        >>> from zoo_lite.data import XShards
        >>> _ = init_orca_context(cores=2)
        >>> shards = XShards.partition(np.arange(4), 2).cache()
        >>> shards.uncache() is shards, shards.is_cached()
        (True, False)
        """
        self.rdd.unpersist()
        self._cached = self._eager_cached = False
        return self

    def is_cached(self) -> bool:
        """Whether the shards are kept in memory: after :meth:`cache`, or, in Orca's eager mode
        (``OrcaContext._eager_mode = True``), from creation until a collection is made from them.

        Returns
        -------
        bool
            True after :meth:`cache` or while eagerly cached, False after :meth:`uncache` or
            when never cached.

        Examples
        --------
        >>> import numpy as np
        >>> from zoo_lite import init_orca_context
        >>> from zoo_lite.data import XShards
        >>> _ = init_orca_context(cores=2)
        >>> shards = XShards.partition(np.arange(4), 2)
        >>> shards.is_cached(), shards.cache().is_cached()
        (False, True)
        """
        return self._cached or self._eager_cached

    def compute(self) -> "SparkXShards":
        """Compute the shards now (one job counting them), as Orca's ``compute()``: pending
        transformations run and their errors surface here. Nothing is kept unless :meth:`cache`
        was called first.

        Returns
        -------
        SparkXShards
            ``self``.

        Raises
        ------
        ZooLiteError
            The error a pending transformation raised on an executor.

        Examples
        --------
        >>> import numpy as np
        >>> from zoo_lite import init_orca_context
        >>> from zoo_lite.data import XShards
        >>> _ = init_orca_context(cores=2)
        >>> shards = XShards.partition(np.arange(4), 2).transform_shard(np.sqrt).cache().compute()
        >>> shards.is_cached(), len(shards)
        (True, 4)
        """
        run_job(self._sc, self.rdd.count)
        return self

    # -- actions ------------------------------------------------------------------------------------

    def collect(self) -> list[Any]:
        """All shards on the driver, in partition order.

        Runs every pending transformation; use it for small results only (everything is
        copied to the driver).

        Returns
        -------
        list
            One item per shard.

        Raises
        ------
        ShardFunctionError
            A function given to :meth:`transform_shard` raised on an executor.
        ZooLiteError
            Any other zoo_lite error a pending transformation raised on an executor, as
            itself (e.g. ColumnNotFoundError).
        ContextStoppedError
            The context of this collection has been stopped.

        Examples
        --------
        >>> import pandas as pd
        >>> from zoo_lite import init_orca_context
        >>> from zoo_lite.data import XShards
        >>> _ = init_orca_context(cores=2)
        >>> shards = XShards.partition(pd.DataFrame({"a": [1, 2, 3]}), 2)
        >>> [shard["a"].tolist() for shard in shards.collect()]
        [[1], [2, 3]]
        """
        return run_job(self._sc, self.rdd.collect)

    def take(self, n: int) -> list[Any]:
        """The first ``n`` shards (scanning as few partitions as it can).

        Parameters
        ----------
        n : int
            Number of shards (not rows) to return.

        Returns
        -------
        list
            At most ``n`` shards, in partition order.

        Raises
        ------
        InvalidArgumentError
            ``n`` is not a positive integer.

        Examples
        --------
        >>> import numpy as np
        >>> from zoo_lite import init_orca_context
        >>> from zoo_lite.data import XShards
        >>> _ = init_orca_context(cores=2)
        >>> XShards.partition(np.arange(6), 3).take(2)
        [array([0, 1]), array([2, 3])]
        """
        return run_job(self._sc, functools.partial(self.rdd.take, check_positive_int(n, "n")))

    def first(self) -> Any:
        """The first shard.

        Returns
        -------
        object
            The first shard of the first non-empty partition.

        Raises
        ------
        InvalidArgumentError
            The collection has no shards.

        Examples
        --------
        >>> import pandas as pd
        >>> from zoo_lite import init_orca_context
        >>> from zoo_lite.data import XShards
        >>> _ = init_orca_context(cores=2)
        >>> XShards.partition(pd.DataFrame({"a": [1, 2, 3, 4]}), 2).first()["a"].tolist()
        [1, 2]
        """
        shards = self.take(1)
        if not shards:
            raise InvalidArgumentError("first() of an XShards with no shards")
        return shards[0]

    def head(self, n: int = 5) -> pd.DataFrame:
        """The first ``n`` rows across pandas shards, in order, as one pandas frame.

        Partitions are read one at a time until ``n`` rows are found.

        Parameters
        ----------
        n : int, default 5
            Number of rows.

        Returns
        -------
        pandas.DataFrame
            At most ``n`` rows; an empty frame when there are no shards.

        Raises
        ------
        InvalidArgumentError
            ``n`` is not a positive integer, or a shard is not a pandas DataFrame.

        Examples
        --------
        >>> import pandas as pd
        >>> from zoo_lite import init_orca_context
        >>> from zoo_lite.data import XShards
        >>> _ = init_orca_context(cores=2)
        >>> XShards.partition(pd.DataFrame({"v": range(6)}), 3).head(3)["v"].tolist()
        [0, 1, 2]
        """
        count = check_positive_int(n, "n")
        heads = self.rdd.mapPartitionsWithIndex(per_shard(functools.partial(_head, n=count)))

        def first_frames() -> list[pd.DataFrame]:
            frames: list[pd.DataFrame] = []
            for frame in heads.toLocalIterator(prefetchPartitions=False):   # errors surface while iterating
                frames.append(frame)
                if sum(len(f) for f in frames) >= count:
                    break
            return frames

        frames = run_job(self._sc, first_frames)
        return pd.concat(frames).head(count) if frames else pd.DataFrame()

    def concat_to_pdf(self) -> pd.DataFrame:
        """All pandas shards as one frame on the driver.

        Returns
        -------
        pandas.DataFrame
            The shards concatenated in partition order (a default index is renumbered); an
            empty frame when there are no shards.

        Raises
        ------
        InvalidArgumentError
            A shard is not a pandas DataFrame.

        Examples
        --------
        >>> import pandas as pd
        >>> from zoo_lite import init_orca_context
        >>> from zoo_lite.data import XShards
        >>> _ = init_orca_context(cores=2)
        >>> frame = XShards.partition(pd.DataFrame({"v": [1, 2, 3]}), 2).concat_to_pdf()
        >>> frame["v"].tolist(), len(frame)
        ([1, 2, 3], 3)
        """
        frames = [partition_ops.require_pandas(shard, "concat_to_pdf") for shard in self.collect()]
        return partition_ops.concat_shards(frames)[0] if frames else pd.DataFrame()

    def save_pickle(self, path: str, batchSize: int = 10) -> "SparkXShards":
        """Save the shards as pickle files under ``path`` (must not exist); see :meth:`XShards.load_pickle`.

        Parameters
        ----------
        path : str
            A folder to create; local, ``file://``, ``hdfs://`` or ``s3://``.
        batchSize : int, default 10
            Shards pickled together in one record (Spark's ``saveAsPickleFile`` batch size).

        Returns
        -------
        SparkXShards
            ``self``.

        Raises
        ------
        InvalidArgumentError
            ``path`` exists already, ``batchSize`` is not a positive integer, or ``path`` is a
            folder on the driver's host that executors on other hosts do not see (each would write
            its part to its own disk): on a cluster, save to a shared file system, HDFS or S3.

        Examples
        --------
        >>> import tempfile, numpy as np
        >>> from zoo_lite import init_orca_context
        >>> from zoo_lite.data import XShards
        >>> _ = init_orca_context(cores=2)
        >>> path = tempfile.mkdtemp() + "/saved"
        >>> shards = XShards.partition(np.arange(4), 2)
        >>> shards.save_pickle(path) is shards
        True
        >>> shards.save_pickle(path)
        Traceback (most recent call last):
        ...
        zoo_lite.errors.InvalidArgumentError: path=... already exists; remove it or choose a new path
        """
        from zoo_lite.data.filesystems import as_spark_path, check_spark_reads
        from zoo_lite.data.paths import check_every_host_sees, path_exists

        check_spark_reads(self._sc, path, "path")   # Spark's saveAsPickleFile writes it: s3a:// only
        if path_exists(path):
            raise InvalidArgumentError(f"path={path!r} already exists; remove it or choose a new path")
        check_every_host_sees(self._sc, path, "path")
        run_job(self._sc, functools.partial(self.rdd.saveAsPickleFile, as_spark_path(path), check_positive_int(batchSize, "batchSize")))
        return self


# Module-level shard functions (shipped to executors; they capture plain values only).

def _head(shard: Any, n: int) -> pd.DataFrame:
    return partition_ops.require_pandas(shard, "head").head(n)
