"""Reductions of :class:`~zoo_lite.data.shard.SparkXShards`: one answer from all the shards,
computed with one job: ``len``, ``get_schema``, ``unique``, ``max``, ``min``, ``sum``, ``mean``,
``count``, ``nunique``, ``max_values``, ``min_values``, ``get_null_sum`` and ``describe``.

:class:`ReductionMethods` is one of the bases of :class:`~zoo_lite.data.shard.SparkXShards` (see
:mod:`zoo_lite.data.shard`): its methods are called, documented and referenced as
``SparkXShards.<method>``, and reach the collection's RDD and plumbing through ``self``.

Each shard is reduced on its executor to a small partial result (``self._gather``), and the
partial results are combined exactly on the driver (:mod:`~zoo_lite.data.partition_ops`'s
``combine_*``); no row moves.
"""

from __future__ import annotations

import functools
from typing import Any, Hashable, Optional, Sequence

import numpy as np
import pandas as pd

from zoo_lite.data import partition_ops
from zoo_lite.data.shard_methods.tasks import as_list

__all__ = ["ReductionMethods"]


class ReductionMethods:
    """The reduction methods of :class:`~zoo_lite.data.shard.SparkXShards`, which inherits them
    (see :mod:`zoo_lite.data.shard`)."""

    def __len__(self) -> int:
        """Total rows of row-tree shards (pandas, ndarray, dicts of them); ``len`` or 1 of others
        (so a list shard counts its elements, as in Orca).

        Returns
        -------
        int
            The sum over all shards, computed with one job.

        Examples
        --------
        >>> import numpy as np
        >>> from zoo_lite import init_orca_context
        >>> from zoo_lite.data import XShards
        >>> _ = init_orca_context(cores=2)
        >>> len(XShards.partition({"x": np.zeros((5, 3)), "y": np.ones(5)}, 2))
        5
        """
        return int(sum(self._gather(partition_ops.shard_length)))

    def get_schema(self) -> dict[str, Any]:
        """Layout of the first shard: columns and dtypes for pandas shards, leaf dtypes and shapes
        for array shards.

        Returns
        -------
        dict
            ``{"type": "pandas", "columns": [...], "dtypes": {column: dtype}}`` for pandas
            shards; ``{"type": "series", "name": ..., "dtype": ...}`` for Series shards;
            ``{"type": "ndarray", "leaves": {path: {"dtype": ..., "shape": (None, ...)}}}`` for
            arrays and dicts/lists/tuples of them (``None`` stands for the rows); else
            ``{"type": <type name>}``.

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
        >>> XShards.partition(pd.DataFrame({"k": ["a", "b"], "v": [1, 2]}), 2).get_schema()
        {'type': 'pandas', 'columns': ['k', 'v'], 'dtypes': {'k': 'object', 'v': 'int64'}}
        """
        return partition_ops.schema_of(self.first())

    def unique(self) -> np.ndarray:
        """Distinct values of Series shards, in order of first appearance.

        Returns
        -------
        numpy.ndarray
            The distinct values over all shards (empty when there are no shards).

        Raises
        ------
        InvalidArgumentError
            A shard is not a pandas Series: select a column first, as in ``shards["col"].unique()``.

        Examples
        --------
        >>> import pandas as pd
        >>> from zoo_lite import init_orca_context
        >>> from zoo_lite.data import XShards
        >>> _ = init_orca_context(cores=2)
        >>> frame = pd.DataFrame({"city": ["a", "b", "a", "c"]})
        >>> XShards.partition(frame, 2)["city"].unique().tolist()
        ['a', 'b', 'c']
        """
        return partition_ops.combine_unique(self._gather(partition_ops.unique_values))

    def max_values(self, col_name: Hashable) -> Any:
        """Largest value of a column across pandas shards.

        Parameters
        ----------
        col_name : column label
            The column.

        Returns
        -------
        scalar
            The largest non-missing value; NaN when the column holds no value at all.

        Raises
        ------
        ColumnNotFoundError
            ``col_name`` is not a column of the shards.
        InvalidArgumentError
            A shard is not a pandas DataFrame.

        Examples
        --------
        >>> import pandas as pd
        >>> from zoo_lite import init_orca_context
        >>> from zoo_lite.data import XShards
        >>> _ = init_orca_context(cores=2)
        >>> shards = XShards.partition(pd.DataFrame({"v": [3.5, None, 9.0, 1.0]}), 2)
        >>> float(shards.max_values("v"))
        9.0
        """
        return self._column_extreme(col_name, "max")

    def min_values(self, col_name: Hashable) -> Any:
        """Smallest value of a column across pandas shards (the counterpart of :meth:`max_values`).

        Parameters
        ----------
        col_name : column label
            The column.

        Returns
        -------
        scalar
            The smallest non-missing value; NaN when the column holds no value at all.

        Raises
        ------
        ColumnNotFoundError
            ``col_name`` is not a column of the shards.
        InvalidArgumentError
            A shard is not a pandas DataFrame.

        Examples
        --------
        >>> import pandas as pd
        >>> from zoo_lite import init_orca_context
        >>> from zoo_lite.data import XShards
        >>> _ = init_orca_context(cores=2)
        >>> shards = XShards.partition(pd.DataFrame({"v": [3.5, None, 9.0, 1.0]}), 2)
        >>> float(shards.min_values("v"))
        1.0
        """
        return self._column_extreme(col_name, "min")

    def _column_extreme(self, col_name: Hashable, operation: str) -> Any:
        """``max`` or ``min`` of a column's non-missing values over all shards (NaN if none)."""
        values = self._gather(functools.partial(_column_extreme, column=col_name, operation=operation))
        present = [value for value in values if pd.notna(value)]
        return (max if operation == "max" else min)(present) if present else np.nan

    # -- column reductions: one vectorised pass per shard, combined on the driver -------------------

    def _reduce(self, operation: str, skipna: bool) -> Any:
        parts = self._gather(functools.partial(_reduction_part, operation=operation, skipna=skipna))
        result = partition_ops.combine_reduction([part for _, part in parts], operation, skipna)
        if parts and all(is_series for is_series, _ in parts):  # Series shards reduce to one value, as a Series does
            return result.iloc[0] if len(result) else result.dtype.type(np.nan if operation in ("max", "min", "mean") else 0)
        return result

    def max(self, skipna: bool = True) -> Any:
        """Largest value of Series shards (``shards["col"].max()``), or of each column of
        DataFrame shards, as pandas' ``max`` of all the rows together.

        Parameters
        ----------
        skipna : bool, default True
            Leave missing values out; with False a missing value makes the result NaN.

        Returns
        -------
        scalar or pandas.Series
            One value for Series shards; a Series by column for DataFrame shards. NaN where
            there is no value.

        Raises
        ------
        InvalidArgumentError
            A shard is not a pandas Series or DataFrame.

        Examples
        --------
        >>> import pandas as pd
        >>> from zoo_lite import init_orca_context
        >>> from zoo_lite.data import XShards
        >>> _ = init_orca_context(cores=2)
        >>> shards = XShards.partition(pd.DataFrame({"high": [3.5, None, 9.0, 1.0]}), 2)
        >>> float(shards["high"].max()), float(shards["high"].min())
        (9.0, 1.0)
        """
        return self._reduce("max", skipna)

    def min(self, skipna: bool = True) -> Any:
        """Smallest value of Series shards, or of each column of DataFrame shards (see :meth:`max`).

        Parameters
        ----------
        skipna : bool, default True
            Leave missing values out; with False a missing value makes the result NaN.

        Returns
        -------
        scalar or pandas.Series
            One value for Series shards; a Series by column for DataFrame shards.

        Examples
        --------
        >>> import pandas as pd
        >>> from zoo_lite import init_orca_context
        >>> from zoo_lite.data import XShards
        >>> _ = init_orca_context(cores=2)
        >>> lowest = XShards.partition(pd.DataFrame({"a": [3, 1], "b": ["x", "w"]}), 2).min()
        >>> int(lowest["a"]), lowest["b"]
        (1, 'w')
        """
        return self._reduce("min", skipna)

    def sum(self, skipna: bool = True) -> Any:
        """Sum of Series shards, or of each column of DataFrame shards (0 for no rows, as pandas).

        Parameters
        ----------
        skipna : bool, default True
            Leave missing values out; with False a missing value makes the result NaN.

        Returns
        -------
        scalar or pandas.Series
            One value for Series shards; a Series by column for DataFrame shards.

        Examples
        --------
        >>> import pandas as pd
        >>> from zoo_lite import init_orca_context
        >>> from zoo_lite.data import XShards
        >>> _ = init_orca_context(cores=2)
        >>> int(XShards.partition(pd.DataFrame({"n": [1, 2, 3, 4]}), 2)["n"].sum())
        10
        """
        return self._reduce("sum", skipna)

    def mean(self, skipna: bool = True) -> Any:
        """Mean of Series shards, or of each numeric column of DataFrame shards, over all rows
        (exact: the sums and counts of the shards are combined, not their means).

        Parameters
        ----------
        skipna : bool, default True
            Leave missing values out; with False a missing value makes the result NaN.

        Returns
        -------
        float or pandas.Series
            One value for Series shards; a Series by numeric column for DataFrame shards. NaN
            where there is no value.

        Raises
        ------
        InvalidArgumentError
            Series shards that do not hold numbers, or shards that are not pandas.

        Examples
        --------
        >>> import pandas as pd
        >>> from zoo_lite import init_orca_context
        >>> from zoo_lite.data import XShards
        >>> _ = init_orca_context(cores=2)
        >>> float(XShards.partition(pd.DataFrame({"v": [1.0, 2.0, 3.0, None, 9.0]}), 2)["v"].mean())
        3.75
        """
        return self._reduce("mean", skipna)

    def count(self) -> Any:
        """Number of non-missing values of Series shards, or of each column of DataFrame shards.

        Returns
        -------
        int or pandas.Series
            One count for Series shards; a Series by column for DataFrame shards.

        Examples
        --------
        >>> import pandas as pd
        >>> from zoo_lite import init_orca_context
        >>> from zoo_lite.data import XShards
        >>> _ = init_orca_context(cores=2)
        >>> int(XShards.partition(pd.DataFrame({"v": [1.0, None, 3.0]}), 2)["v"].count())
        2
        """
        return self._reduce("count", True)

    def nunique(self, dropna: bool = True) -> Any:
        """Number of distinct values of Series shards, or of each column of DataFrame shards.

        Parameters
        ----------
        dropna : bool, default True
            Leave missing values out; with False a missing value counts as one value.

        Returns
        -------
        int or pandas.Series
            One count for Series shards; a Series by column for DataFrame shards.

        Examples
        --------
        >>> import pandas as pd
        >>> from zoo_lite import init_orca_context
        >>> from zoo_lite.data import XShards
        >>> _ = init_orca_context(cores=2)
        >>> shards = XShards.partition(pd.DataFrame({"city": ["a", "b", None, "a"]}), 2)
        >>> int(shards["city"].nunique()), int(shards["city"].nunique(dropna=False))
        (2, 3)
        """
        return self._reduce("nunique", dropna)

    def get_null_sum(self) -> pd.Series:
        """Missing values per column across pandas shards.

        Returns
        -------
        pandas.Series
            The count of missing values (NaN, None, NaT) of each column, indexed by column.

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
        >>> frame = pd.DataFrame({"a": [1.0, None, None, 4.0], "b": ["x", None, "y", "z"]})
        >>> XShards.partition(frame, 2).get_null_sum().to_dict()
        {'a': 2, 'b': 1}
        """
        counts = self._gather(partition_ops.null_counts)
        return functools.reduce(lambda a, b: a.add(b, fill_value=0), counts) if counts else pd.Series(dtype="int64")

    def describe(self, cols: Optional[Sequence[Hashable]] = None) -> pd.DataFrame:
        """Exact count, mean, std, min and max of numeric columns across pandas shards.

        Each shard contributes its count, mean and sum of squared deviations, which are merged
        exactly on the driver; no rows move.

        Parameters
        ----------
        cols : column label or list of them, optional
            The columns to describe; by default every numeric column.

        Returns
        -------
        pandas.DataFrame
            Rows ``count``, ``mean``, ``std`` (sample standard deviation), ``min`` and ``max``;
            one column per described column.

        Raises
        ------
        ColumnNotFoundError
            A column of ``cols`` is not in the shards.
        InvalidArgumentError
            A shard is not a pandas DataFrame.

        Examples
        --------
        >>> import pandas as pd
        >>> from zoo_lite import init_orca_context
        >>> from zoo_lite.data import XShards
        >>> _ = init_orca_context(cores=2)
        >>> shards = XShards.partition(pd.DataFrame({"v": [1.0, 2.0, 3.0, 4.0], "k": list("abcd")}), 2)
        >>> shards.describe()["v"].round(3).to_dict()
        {'count': 4.0, 'mean': 2.5, 'std': 1.291, 'min': 1.0, 'max': 4.0}
        """
        columns = None if cols is None else as_list(cols)
        return partition_ops.combine_moments(self._gather(functools.partial(partition_ops.moments, columns=columns)))


# Module-level shard functions (shipped to executors; they capture plain values only).

def _column_extreme(shard: Any, column: Hashable, operation: str) -> Any:
    frame = partition_ops.require_pandas(shard, f"{operation}_values")
    partition_ops.check_columns(frame, [column], "col_name")
    return getattr(frame[column], operation)()


def _reduction_part(shard: Any, operation: str, skipna: bool) -> tuple[bool, Any]:
    return isinstance(shard, pd.Series), partition_ops.reduction_partial(shard, operation, skipna)
