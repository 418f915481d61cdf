"""Joins of :class:`~zoo_lite.data.shard.SparkXShards`: two collections made into one, by key
(``merge``, exact across shards: both sides are hash-partitioned alike first) or by position
(``zip``, of collections with the same partitioning).

:class:`JoinMethods` is one of the bases of :class:`~zoo_lite.data.shard.SparkXShards` (see
:mod:`zoo_lite.data.shard`): its methods are called, documented and referenced as
``SparkXShards.<method>``, and reach the collection's RDD and plumbing through ``self``.

A join builds its result from the two sides' partitions paired up, so it asks the collection for
``self._new_collection(rdd)`` rather than naming SparkXShards, which this module cannot import.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any, Hashable, Sequence, Union

import pandas as pd

from zoo_lite.data import partition_ops
from zoo_lite.data.shard_methods.tasks import as_list, per_shard
from zoo_lite.errors import InvalidArgumentError, ShardMismatchError

if TYPE_CHECKING:
    from zoo_lite.data.shard import SparkXShards

__all__ = ["JoinMethods"]


class JoinMethods:
    """The join methods of :class:`~zoo_lite.data.shard.SparkXShards`, which inherits them
    (see :mod:`zoo_lite.data.shard`)."""

    def merge(self, right: "SparkXShards", how: str = "inner", on: Union[Hashable, Sequence[Hashable], None] = None) -> "SparkXShards":
        """``pd.merge`` of two pandas collections on the key columns ``on``, exactly across shards.

        Both sides are hash-partitioned by ``on`` into the larger of their partition counts, then
        merged partition by partition.

        Parameters
        ----------
        right : SparkXShards
            The other pandas collection.
        how : {"inner", "left", "right", "outer"}, default "inner"
            The kind of join, as in ``pd.merge``.
        on : column label or list of them
            Key column(s) present on both sides; required.

        Returns
        -------
        SparkXShards
            pandas shards of the merged rows.

        Raises
        ------
        InvalidArgumentError
            ``on`` is missing or ``how`` is not a merge type.
        ColumnNotFoundError
            At the next action: a key column is missing on one side.

        Examples
        --------
        >>> import pandas as pd
        >>> from zoo_lite import init_orca_context
        >>> from zoo_lite.data import XShards
        >>> _ = init_orca_context(cores=2)
        >>> left = XShards.partition(pd.DataFrame({"k": ["a", "b", "a", "c"], "v": [1, 2, 3, 4]}), 2)
        >>> right = XShards.partition(pd.DataFrame({"k": ["a", "b"], "w": [10, 20]}), 2)
        >>> merged = left.merge(right, on="k").concat_to_pdf().sort_values("v")
        >>> merged.to_dict("list")
        {'k': ['a', 'b', 'a'], 'v': [1, 2, 3], 'w': [10, 20, 10]}
        """
        if on is None:
            raise InvalidArgumentError("merge needs on=<column or list of columns> shared by both sides")
        if how not in ("inner", "left", "right", "outer"):
            raise InvalidArgumentError(f"how={how!r} is not a merge type; use 'inner', 'left', 'right' or 'outer'")
        keys = as_list(on)
        count = max(self.num_partitions(), right.num_partitions())
        left_parts, right_parts = self.partition_by(keys, count), right.partition_by(keys, count)
        pairs = left_parts.rdd.glom().zip(right_parts.rdd.glom())
        merged = functools.partial(_merge_pair, how=how, on=keys)
        return self._new_collection(pairs.mapPartitionsWithIndex(per_shard(merged, with_index=True)).flatMap(_identity_list))

    def zip(self, other: "SparkXShards") -> "SparkXShards":
        """Pair shards position by position: shards become ``(self_shard, other_shard)`` tuples.

        Parameters
        ----------
        other : SparkXShards
            A collection with the same partitioning: as many partitions, as many shards in each,
            and as many rows in each pair of shards (e.g. one made from the other by
            :meth:`transform_shard`).

        Returns
        -------
        SparkXShards
            ``(self_shard, other_shard)`` tuples, in the same partitions.

        Raises
        ------
        InvalidArgumentError
            ``other`` is not a SparkXShards.
        ShardMismatchError
            Different partition counts (at once), or different shard or row counts in a
            partition (at the next action).

        Examples
        --------
        >>> import numpy as np
        >>> from zoo_lite import init_orca_context
        >>> from zoo_lite.data import XShards
        >>> _ = init_orca_context(cores=2)
        >>> x = XShards.partition(np.arange(4), 2)
        >>> x.zip(x.transform_shard(np.square)).collect()
        [(array([0, 1]), array([0, 1])), (array([2, 3]), array([4, 9]))]
        >>> x.zip(XShards.partition(np.arange(4), 4))
        Traceback (most recent call last):
        ...
        zoo_lite.errors.ShardMismatchError: The two SparkXShards should have the same number of partitions: zip: this XShards has 2 partitions and other has 4; repartition one of them to match
        """
        if not isinstance(other, JoinMethods):   # i.e. a SparkXShards, the one class built on this one
            raise InvalidArgumentError(f"other should be a SparkXShards: other={other!r} must be a SparkXShards")
        if self.num_partitions() != other.num_partitions():
            raise ShardMismatchError(
                f"The two SparkXShards should have the same number of partitions: zip: this XShards has "
                f"{self.num_partitions()} partitions and other has {other.num_partitions()}; repartition one of them to match"
            )
        pairs = self.rdd.glom().zip(other.rdd.glom())
        zipped = self._derived(pairs.mapPartitionsWithIndex(per_shard(_zip_pair, with_index=True)).flatMap(_identity_list))
        other._release_eager_cache()
        return zipped


# Module-level functions (shipped to executors; they capture plain values only).

def _zip_pair(pair: tuple[list[Any], list[Any]], partition_index: int) -> list[tuple[Any, Any]]:
    return partition_ops.zip_shard_lists(partition_index, pair[0], pair[1])


def _merge_pair(pair: tuple[list[Any], list[Any]], partition_index: int, how: str, on: list[Hashable]) -> list[pd.DataFrame]:
    return partition_ops.merge_shards(partition_index, pair[0], pair[1], how, on)


def _identity_list(items: list[Any]) -> list[Any]:
    return items
