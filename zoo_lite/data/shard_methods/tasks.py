"""What every family of :class:`~zoo_lite.data.shard.SparkXShards` methods builds its Spark tasks
from: :func:`per_shard` makes a function of one shard a task over a partition, and
:func:`as_list` reads a column argument given as one label or as a list of them.

Used by :mod:`zoo_lite.data.shard` (``map_partitions``) and by its sibling family modules.
"""

from __future__ import annotations

from typing import Any, Callable, Hashable, Iterator, Sequence, Union

from zoo_lite.errors import raising_transportably
from zoo_lite.user_code import by_value

__all__ = ["per_shard", "as_list"]


def per_shard(func: Callable[..., Any], *, with_index: bool = False) -> Callable[[int, Iterator[Any]], list[Any]]:
    """A mapPartitionsWithIndex function applying a zoo_lite function to every shard; ``func`` and
    what it holds (the user's function and arguments) travel by value.

    Parameters
    ----------
    func : callable
        ``func(shard)``, or ``func(shard, partition_index)`` with ``with_index=True``.
    with_index : bool, default False
        Also pass the index of the shard's partition.

    Returns
    -------
    callable
        ``run(partition_index, shards)``: the list of ``func``'s results, one per shard; an error
        it raises reaches the driver as itself (:func:`~zoo_lite.errors.raising_transportably`).

    Examples
    --------
    >>> per_shard(len)(0, iter(["ab", "cde"]))
    [2, 3]
    >>> per_shard(lambda shard, index: (index, shard), with_index=True)(4, iter(["x"]))
    [(4, 'x')]
    """
    func = by_value(func, "func")

    @raising_transportably
    def run(index: int, shards: Iterator[Any]) -> list[Any]:
        return [func(shard, index) if with_index else func(shard) for shard in shards]

    return run


def as_list(columns: Union[Hashable, Sequence[Hashable]]) -> list[Hashable]:
    """A column argument as a list: a list or tuple of labels as it is, another value as the one label.

    Parameters
    ----------
    columns : column label or list or tuple of them

    Returns
    -------
    list

    Examples
    --------
    >>> as_list("price"), as_list(("a", "b")), as_list(3)
    (['price'], ['a', 'b'], [3])
    """
    return list(columns) if isinstance(columns, (list, tuple)) else [columns]
