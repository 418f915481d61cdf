"""Element-wise methods of :class:`~zoo_lite.data.shard.SparkXShards`: each shard is changed on
its own, on the executor that holds it, and no row moves to another partition:
``transform_shard``, ``[key]``, ``select``, ``sort_values`` (each shard sorted, as in Orca),
``drop_missing_value``, ``sample``, ``assembleFeatureLabelCols`` and ``split``.

:class:`ElementwiseMethods` is one of the bases of :class:`~zoo_lite.data.shard.SparkXShards` (see
:mod:`zoo_lite.data.shard`): its methods are called, documented and referenced as
``SparkXShards.<method>``, and reach the collection's RDD and plumbing through ``self``.

Rows that must meet across shards are the business of :mod:`.shuffles`.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any, Callable, Hashable, Optional, Sequence, Union

import pandas as pd

from zoo_lite.data import convert, partition_ops
from zoo_lite.data.shard_methods.tasks import as_list
from zoo_lite.errors import ColumnNotFoundError, InvalidArgumentError, ShardFunctionError
from zoo_lite.user_code import by_value

if TYPE_CHECKING:
    from zoo_lite.data.shard import SparkXShards

__all__ = ["ElementwiseMethods"]


class ElementwiseMethods:
    """The element-wise methods of :class:`~zoo_lite.data.shard.SparkXShards`, which inherits them
    (see :mod:`zoo_lite.data.shard`)."""

    def transform_shard(self, func: Callable[..., Any], *args: Any) -> "SparkXShards":
        """Apply ``func(shard, *args)`` to every shard, lazily.

        An exception in ``func`` surfaces at the next action as :class:`ShardFunctionError`
        with the partition index; the original exception is its ``__cause__``.

        Parameters
        ----------
        func : callable
            Called on the executors as ``func(shard, *args)``; its return value is the new
            shard. It must be picklable (a module-level function, a lambda, a partial).
        *args
            Extra positional arguments passed to ``func`` after the shard.

        Returns
        -------
        SparkXShards
            The results, one per shard, in the same partitions.

        Raises
        ------
        InvalidArgumentError
            ``func`` is not callable.
        ShardFunctionError
            At the next action: ``func`` raised on a shard.

        Examples
        --------
        >>> import numpy as np
        >>> from zoo_lite import init_orca_context
        >>> from zoo_lite.data import XShards
        >>> _ = init_orca_context(cores=2)
        >>> shards = XShards.partition(np.arange(4), 2)
        >>> shards.transform_shard(np.multiply, 3).collect()
        [array([0, 3]), array([6, 9])]
        >>> shards.transform_shard(lambda a: a["price"]).collect()
        Traceback (most recent call last):
        ...
        zoo_lite.errors.ShardFunctionError: function '<lambda>' failed on partition ...
        """
        if not callable(func):
            raise InvalidArgumentError(f"func={func!r} is not callable; pass a function taking a shard")
        shipped = by_value(func, "func")   # an error that names the user's function, if it cannot travel
        return self.map_partitions(functools.partial(_call_user_function, func=shipped, args=args, name=shipped.name),
                                   with_index=True)

    def __getitem__(self, key: Any) -> "SparkXShards":
        """``shard[key]`` of every shard, e.g. a column of pandas shards as Series shards.

        Parameters
        ----------
        key : object
            A column label of pandas shards, a key of dict shards, a position of tuple shards.

        Returns
        -------
        SparkXShards
            ``shard[key]`` of every shard, in the same partitions.

        Raises
        ------
        ColumnNotFoundError
            At the next action: ``key`` is not a column of a pandas shard.
        InvalidArgumentError
            At the next action: ``key`` is not in a shard of another kind.

        Examples
        --------
        >>> import pandas as pd
        >>> from zoo_lite import init_orca_context
        >>> from zoo_lite.data import XShards
        >>> _ = init_orca_context(cores=2)
        >>> shards = XShards.partition(pd.DataFrame({"a": [1, 2, 3, 4], "b": [5, 6, 7, 8]}), 2)
        >>> [series.tolist() for series in shards["b"].collect()]
        [[5, 6], [7, 8]]
        """
        return self._mapped(functools.partial(_select_key, key=key), transient=True)  # a view, as in Orca

    def select(self, cols: Union[Hashable, Sequence[Hashable]]) -> "SparkXShards":
        """Only the columns ``cols`` of pandas shards.

        Parameters
        ----------
        cols : column label or list of them
            The columns to keep, in this order.

        Returns
        -------
        SparkXShards
            pandas shards with only ``cols``, in the same partitions.

        Raises
        ------
        ColumnNotFoundError
            At the next action: a column is not in the shards.
        InvalidArgumentError
            At the next action: a shard is not a pandas DataFrame.

        Examples
        --------
        >>> import pandas as pd
        >>> from zoo_lite import init_orca_context
        >>> from zoo_lite.data import XShards
        >>> _ = init_orca_context(cores=2)
        >>> shards = XShards.partition(pd.DataFrame({"a": [1, 2], "b": [3, 4], "c": [5, 6]}), 2)
        >>> list(shards.select(["c", "a"]).first().columns)
        ['c', 'a']
        """
        return self.map_partitions(functools.partial(_select_columns, columns=as_list(cols)))

    def sort_values(self, col_names: Union[Hashable, Sequence[Hashable]], ascending: bool = True) -> "SparkXShards":
        """Sort the rows of each pandas shard (Orca's per-shard semantics): rows do not move
        between shards, so the collection as a whole is not sorted.

        Parameters
        ----------
        col_names : column label or list of them
            The columns to sort by.
        ascending : bool, default True
            Sort in ascending order; False for descending.

        Returns
        -------
        SparkXShards
            Each shard sorted, in the same partitions.

        Raises
        ------
        ColumnNotFoundError
            At the next action: a column is not in the shards.
        InvalidArgumentError
            At the next action: a shard is not a pandas DataFrame.

        Examples
        --------
        >>> import pandas as pd
        >>> from zoo_lite import init_orca_context
        >>> from zoo_lite.data import XShards
        >>> _ = init_orca_context(cores=2)
        >>> shards = XShards.partition(pd.DataFrame({"v": [1, 2, 3, 4]}), 2)
        >>> [shard["v"].tolist() for shard in shards.sort_values("v", ascending=False).collect()]
        [[2, 1], [4, 3]]
        """
        return self.map_partitions(functools.partial(_sort_values, columns=as_list(col_names), ascending=ascending))

    def drop_missing_value(self) -> "SparkXShards":
        """Drop rows with a missing value from each pandas shard.

        Returns
        -------
        SparkXShards
            The shards without their rows that hold a missing value (NaN, None, NaT).

        Raises
        ------
        InvalidArgumentError
            At the next action: a shard is not a pandas DataFrame.

        Examples
        --------
        >>> import pandas as pd
        >>> from zoo_lite import init_orca_context
        >>> from zoo_lite.data import XShards
        >>> _ = init_orca_context(cores=2)
        >>> shards = XShards.partition(pd.DataFrame({"a": [1.0, None, 3.0, 4.0]}), 2)
        >>> shards.drop_missing_value().concat_to_pdf()["a"].tolist()
        [1.0, 3.0, 4.0]
        """
        return self.map_partitions(_drop_missing)

    def sample(self, frac: float, replace: bool = False, random_state: Optional[int] = None) -> "SparkXShards":
        """A fraction ``frac`` of each shard's rows; with ``random_state`` the same every time.

        Parameters
        ----------
        frac : float
            The fraction of rows to draw from each shard, in [0, 1] (any non-negative value
            with ``replace=True``).
        replace : bool, default False
            Draw with replacement.
        random_state : int, optional
            Seed; each partition draws from its own stream derived from it.

        Returns
        -------
        SparkXShards
            The sampled pandas shards, in the same partitions.

        Raises
        ------
        InvalidArgumentError
            ``frac`` is out of range; at the next action, a shard is not a pandas DataFrame.

        Examples
        --------
        >>> import pandas as pd
        >>> from zoo_lite import init_orca_context
        >>> from zoo_lite.data import XShards
        >>> _ = init_orca_context(cores=2)
        >>> shards = XShards.partition(pd.DataFrame({"v": range(8)}), 2)
        >>> half = shards.sample(0.5, random_state=7)
        >>> len(half), half.concat_to_pdf().equals(shards.sample(0.5, random_state=7).concat_to_pdf())
        (4, True)
        """
        if not 0 <= frac <= (float("inf") if replace else 1):
            raise InvalidArgumentError(f"frac={frac!r} must be in [0, 1] without replace")
        return self.map_partitions(functools.partial(_sample, frac=frac, replace=replace, seed=random_state), with_index=True)

    def assembleFeatureLabelCols(self, featureCols: Sequence[Hashable], labelCols: Sequence[Hashable]) -> "SparkXShards":
        """Each pandas shard as ``{"x": features, "y": labels}`` (2-D arrays), Orca's training form.

        Parameters
        ----------
        featureCols : list of column labels
            Columns stacked, in this order, into ``x`` of shape ``(rows, len(featureCols))``.
        labelCols : list of column labels
            Columns stacked into ``y`` of shape ``(rows, len(labelCols))``.

        Returns
        -------
        SparkXShards
            One ``{"x": ndarray, "y": ndarray}`` dict per shard.

        Raises
        ------
        ColumnNotFoundError
            At the next action: a feature or label column is not in the shards.

        Examples
        --------
        >>> import pandas as pd
        >>> from zoo_lite import init_orca_context
        >>> from zoo_lite.data import XShards
        >>> _ = init_orca_context(cores=2)
        >>> frame = pd.DataFrame({"a": [1.0, 2.0, 3.0, 4.0], "b": [0.5] * 4, "t": [0, 1, 0, 1]})
        >>> first = XShards.partition(frame, 2).assembleFeatureLabelCols(["a", "b"], ["t"]).first()
        >>> first["x"].shape, first["y"].ravel().tolist()
        ((2, 2), [0, 1])
        """
        return self.map_partitions(functools.partial(convert.pandas_to_feature_label, feature_cols=as_list(featureCols), label_cols=as_list(labelCols)))

    def split(self) -> list["SparkXShards"]:
        """For shards that are tuples/lists of k items: k collections, one per position.

        Returns
        -------
        list of SparkXShards
            ``k`` collections; the i-th holds item i of every shard, in the same partitions.

        Raises
        ------
        InvalidArgumentError
            The first shard is not a list or tuple (checked at once, with one small job); at the
            next action, another shard is not.
        ShardMismatchError
            At the next action: shards hold different numbers of items.

        Examples
        --------
        >>> import numpy as np
        >>> from zoo_lite import init_orca_context
        >>> from zoo_lite.data import XShards
        >>> _ = init_orca_context(cores=2)
        >>> features, labels = XShards.partition((np.arange(4), np.arange(4) * 10), 2).split()
        >>> labels.collect()
        [array([ 0, 10]), array([20, 30])]
        """
        first = self.first()
        if not isinstance(first, (list, tuple)):
            raise InvalidArgumentError(f"split() needs list or tuple shards, but a shard is a {type(first).__name__}")
        checked = self._mapped(functools.partial(partition_ops.split_tuple_shard, expected_length=len(first)), transient=True)
        parts = [checked.map_partitions(functools.partial(_item, position=i)) for i in range(len(first))]
        self._release_eager_cache()
        return parts


# Module-level shard functions (shipped to executors; they capture plain values only).

def _call_user_function(shard: Any, partition_index: int, func: Callable[..., Any], args: tuple[Any, ...], name: str) -> Any:
    """``func(shard, *args)``; an error of the user's function becomes ShardFunctionError naming
    it and the partition."""
    try:
        return func(shard, *args)
    except Exception as error:  # noqa: BLE001 - any user error is reported with its partition
        raise ShardFunctionError(partition_index, name, error) from error


def _select_key(shard: Any, key: Any) -> Any:
    # the messages start with Orca's words, which Orca code matches
    try:
        return shard[key]
    except (KeyError, IndexError) as error:
        if isinstance(shard, pd.DataFrame):
            raise ColumnNotFoundError(
                f"Invalid key for this XShards: key={key!r} is not a column; the shards have columns {list(shard.columns)}"
            ) from error
        keys = f" (its keys are {list(shard)})" if isinstance(shard, dict) else ""
        raise InvalidArgumentError(f"Invalid key for this XShards: key={key!r} is not in a shard of type "
                                   f"{type(shard).__name__}{keys}") from error
    except TypeError as error:
        raise InvalidArgumentError(
            f"No selection operation available for this XShards: its shards are {type(shard).__name__}, which "
            f"cannot be indexed by key={key!r}; select from pandas, dict, list or tuple shards"
        ) from error


def _select_columns(shard: Any, columns: list[Hashable]) -> pd.DataFrame:
    frame = partition_ops.require_pandas(shard, "select")
    partition_ops.check_columns(frame, columns, "cols")
    return frame[columns]


def _sort_values(shard: Any, columns: list[Hashable], ascending: bool) -> pd.DataFrame:
    frame = partition_ops.require_pandas(shard, "sort_values")
    partition_ops.check_columns(frame, columns, "col_names")
    return frame.sort_values(columns, ascending=ascending)


def _drop_missing(shard: Any) -> pd.DataFrame:
    return partition_ops.require_pandas(shard, "drop_missing_value").dropna()


def _sample(shard: Any, partition_index: int, frac: float, replace: bool, seed: Optional[int]) -> pd.DataFrame:
    return partition_ops.sample_shard(shard, frac, replace, seed, partition_index)


def _item(shard: Any, position: int) -> Any:
    return shard[position]
