"""Small helpers of Orca's ``zoo.orca.data.image.utils`` that Orca programs import."""

from __future__ import annotations

import itertools
from typing import Iterable, Iterator, TypeVar

from zoo_lite.errors import check_positive_int

T = TypeVar("T")

__all__ = ["chunks"]


def chunks(iterable: Iterable[T], size: int = 10) -> Iterator[list[T]]:
    """The items of ``iterable`` in consecutive lists of ``size`` (the last one may be shorter),
    e.g. to make shards of ``size`` rows inside ``rdd.mapPartitions``.

    Parameters
    ----------
    iterable : iterable
        The items, read once and lazily.
    size : int, default 10
        Items per list.

    Returns
    -------
    iterator of list
        Lists of ``size`` items, in order.

    Raises
    ------
    InvalidArgumentError
        ``size`` is not a positive integer.

    Examples
    --------
    >>> from zoo_lite.data.image.utils import chunks
    >>> list(chunks(range(7), 3))
    [[0, 1, 2], [3, 4, 5], [6]]
    """
    check_positive_int(size, "size")
    iterator = iter(iterable)
    while batch := list(itertools.islice(iterator, size)):
        yield batch
