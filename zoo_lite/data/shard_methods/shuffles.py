"""Shuffles of :class:`~zoo_lite.data.shard.SparkXShards`: methods that move rows between
partitions, so that the rows that belong together end up in one shard: ``repartition``,
``partition_by``, ``partition_by_all_columns``, and what is built on them, ``group_by`` and
``deduplicates``.

:class:`ShuffleMethods` is one of the bases of :class:`~zoo_lite.data.shard.SparkXShards` (see
:mod:`zoo_lite.data.shard`): its methods are called, documented and referenced as
``SparkXShards.<method>``, and reach the collection's RDD and plumbing through ``self``.

Every shuffle is one Spark shuffle of whole pieces: each shard is cut once, vectorised
(:func:`~zoo_lite.data.partition_ops.even_pieces`, :func:`~zoo_lite.data.partition_ops.hash_pieces`),
and the pieces that meet in a partition are joined into its one shard (:func:`_shuffle`).
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any, Callable, Hashable, Iterator, Optional, Sequence, Union

from zoo_lite.data import partition_ops
from zoo_lite.data.shard_methods.tasks import as_list
from zoo_lite.data.spark_jobs import ensure_alive
from zoo_lite.errors import InvalidArgumentError, check_positive_int, raising_transportably

if TYPE_CHECKING:
    from pyspark import RDD

    from zoo_lite.data.shard import SparkXShards

__all__ = ["ShuffleMethods"]


class ShuffleMethods:
    """The shuffle methods of :class:`~zoo_lite.data.shard.SparkXShards`, which inherits them
    (see :mod:`zoo_lite.data.shard`)."""

    def repartition(self, num_partitions: int) -> "SparkXShards":
        """``num_partitions`` shards with rows spread evenly (row trees are cut into pieces, and so
        are lists of plain values, whose rows are their elements, as in Orca; other objects move
        whole). Row order is not kept.

        Parameters
        ----------
        num_partitions : int
            Number of partitions (and shards) of the result.

        Returns
        -------
        SparkXShards
            The same rows in ``num_partitions`` partitions.

        Raises
        ------
        InvalidArgumentError
            ``num_partitions`` is not a positive integer.

        Examples
        --------
        >>> import numpy as np
        >>> from zoo_lite import init_orca_context
        >>> from zoo_lite.data import XShards
        >>> _ = init_orca_context(cores=2)
        >>> shards = XShards.partition(np.arange(10), 2).repartition(5)
        >>> shards.num_partitions(), len(shards)
        (5, 10)
        """
        count = check_positive_int(num_partitions, "num_partitions")
        pieces = functools.partial(_even_pieces, num_partitions=count)
        return self._derived(_shuffle(self.rdd, pieces, count))

    def partition_by(self, cols: Union[Hashable, Sequence[Hashable]], num_partitions: Optional[int] = None) -> "SparkXShards":
        """Hash-partition pandas shards by ``cols``: afterwards all rows with equal keys are in one
        shard. Vectorised: each shard is hashed and cut once, pieces move in one shuffle.

        Parameters
        ----------
        cols : column label or list of them
            The key column(s).
        num_partitions : int, optional
            Partitions of the result; by default as many as this collection has.

        Returns
        -------
        SparkXShards
            One pandas shard per partition (possibly empty, with the columns kept).

        Raises
        ------
        InvalidArgumentError
            ``cols`` is empty or ``num_partitions`` is not a positive integer; at the next
            action, a shard is not a pandas DataFrame.
        ColumnNotFoundError
            At the next action: a key column is not in the shards.

        Examples
        --------
        >>> import pandas as pd
        >>> from zoo_lite import init_orca_context
        >>> from zoo_lite.data import XShards
        >>> _ = init_orca_context(cores=2)
        >>> frame = pd.DataFrame({"k": [1, 2, 1, 2, 3], "v": range(5)})
        >>> parts = XShards.partition(frame, 2).partition_by("k", num_partitions=3).collect()
        >>> [sum(key in set(p["k"]) for p in parts) for key in (1, 2, 3)]  # each key in one shard
        [1, 1, 1]
        """
        columns = as_list(cols)
        if not columns:
            raise InvalidArgumentError(f"cols={cols!r}: name at least one key column to partition by")
        count = self.num_partitions() if num_partitions is None else check_positive_int(num_partitions, "num_partitions")
        pieces = functools.partial(_hash_pieces, columns=columns, num_partitions=count)
        return self._derived(_shuffle(self.rdd, pieces, count))

    def group_by(self, columns: Union[Hashable, Sequence[Hashable]], agg: Any, join: bool = False) -> "SparkXShards":
        """Aggregate rows by ``columns`` (pandas ``groupby(...).agg(agg)``), exactly across shards;
        with ``join=True`` the aggregates are joined back onto every row.

        The collection is first hash-partitioned by ``columns`` (:meth:`partition_by`), so every
        group is aggregated in one shard.

        Parameters
        ----------
        columns : column label or list of them
            The group keys. Missing keys form a group of their own.
        agg : str, callable, list or dict
            What pandas' ``DataFrameGroupBy.agg`` takes, e.g. ``"sum"`` or ``{"v": ["min", "max"]}``;
            with several functions per column the result's columns are named ``v_min``, ``v_max``.
        join : bool, default False
            Return every row with its group's aggregates added (suffix ``_agg`` on a name clash)
            instead of one row per group.

        Returns
        -------
        SparkXShards
            pandas shards of the groups (or of the joined rows), as many partitions as before.

        Raises
        ------
        ColumnNotFoundError
            At the next action: a key column is not in the shards.
        InvalidArgumentError
            At the next action: a shard is not a pandas DataFrame.

        Examples
        --------
        >>> import pandas as pd
        >>> from zoo_lite import init_orca_context
        >>> from zoo_lite.data import XShards
        >>> _ = init_orca_context(cores=2)
        >>> shards = XShards.partition(pd.DataFrame({"k": ["a", "b", "a", "c"], "v": [1, 2, 3, 4]}), 2)
        >>> totals = shards.group_by("k", agg="sum").concat_to_pdf().sort_values("k")
        >>> totals.to_dict("list")
        {'k': ['a', 'b', 'c'], 'v': [4, 2, 4]}
        >>> joined = shards.group_by("k", agg={"v": "sum"}, join=True).concat_to_pdf().sort_values("v")
        >>> joined["v_agg"].tolist()
        [4, 2, 4, 4]
        """
        keys = as_list(columns)
        grouped = functools.partial(partition_ops.group_aggregate, columns=keys, agg=agg, join=join)
        return self.partition_by(keys).map_partitions(grouped)

    def deduplicates(self) -> "SparkXShards":
        """Drop duplicate rows across all shards.

        Rows are first hash-partitioned by every column (:meth:`partition_by_all_columns`), so
        all copies of a row meet in one shard; one copy of each is kept.

        Returns
        -------
        SparkXShards
            pandas shards without duplicate rows, as many partitions as before.

        Raises
        ------
        InvalidArgumentError
            The collection has no shards, or a shard is not a pandas DataFrame.

        Examples
        --------
        >>> import pandas as pd
        >>> from zoo_lite import init_orca_context
        >>> from zoo_lite.data import XShards
        >>> _ = init_orca_context(cores=2)
        >>> frame = pd.DataFrame({"k": ["a", "a", "b", "b"], "v": [1, 1, 2, 3]})
        >>> XShards.partition(frame, 2).deduplicates().concat_to_pdf().sort_values("v")["v"].tolist()
        [1, 2, 3]
        """
        return self.partition_by_all_columns().map_partitions(partition_ops.deduplicate)

    def partition_by_all_columns(self) -> "SparkXShards":
        """Hash-partition pandas shards by every column (used to find duplicates).

        The columns are those of the first shard (:meth:`get_schema`).

        Returns
        -------
        SparkXShards
            pandas shards in which equal rows are in the same shard, as many partitions as before.

        Raises
        ------
        InvalidArgumentError
            The collection has no shards, or a shard is not a pandas DataFrame.

        Examples
        --------
        >>> import pandas as pd
        >>> from zoo_lite import init_orca_context
        >>> from zoo_lite.data import XShards
        >>> _ = init_orca_context(cores=2)
        >>> frame = pd.DataFrame({"k": ["a", "b", "a", "b"], "v": [1, 2, 1, 2]})
        >>> parts = XShards.partition(frame, 2).partition_by_all_columns().collect()
        >>> sorted(len(part) for part in parts)  # both copies of each row in one shard
        [0, 4]
        """
        columns = list(self.get_schema()["columns"])
        return self.partition_by(columns)


# Module-level functions: the shuffle, and what it ships to executors (they capture plain values only).

def _shuffle(rdd: "RDD", make_pieces: Callable[[Any, int], list[tuple[int, Any]]], num_partitions: int) -> "RDD":
    """Cut every shard into ``(target, piece)`` pairs, move each piece to its target partition and
    join the pieces there into one shard."""

    ensure_alive(rdd.context)

    @raising_transportably
    def cut(index: int, shards: Iterator[Any]) -> list[tuple[int, Any]]:
        return [pair for shard in shards for pair in make_pieces(shard, index)]

    @raising_transportably
    def join(pairs: Iterator[tuple[int, Any]]) -> list[Any]:
        return partition_ops.concat_shards([piece for _, piece in pairs])

    pairs = rdd.mapPartitionsWithIndex(cut)
    return pairs.partitionBy(num_partitions, _identity_partition).mapPartitions(join, preservesPartitioning=True)


def _identity_partition(target: int) -> int:
    return target


def _even_pieces(shard: Any, partition_index: int, num_partitions: int) -> list[tuple[int, Any]]:
    return partition_ops.even_pieces(shard, num_partitions, partition_index)


def _hash_pieces(shard: Any, partition_index: int, columns: list[Hashable], num_partitions: int) -> list[tuple[int, Any]]:
    return partition_ops.hash_pieces(shard, columns, num_partitions)
