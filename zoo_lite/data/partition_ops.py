"""Pure per-shard functions behind every :class:`~zoo_lite.data.shard.SparkXShards` method.

Nothing here knows about Spark: each function takes shards (pandas objects, NumPy arrays, or
nested dicts/lists/tuples of them) and returns shards, pieces or small summaries, so all of it is
tested without a cluster. A "row tree" is a pandas object, an ndarray, or a non-empty dict, list or
tuple whose leaves are all row trees of the same length; its rows are its first axis. A "row
list" is Orca's list shard: a list holding no ndarray, pandas object or dict (e.g. ``[1, 2, 3]``);
its rows are its elements, for ``len``, ``repartition`` and joining pieces.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any, Callable, Hashable, Iterable, Iterator, Optional, Sequence, TypeVar, Union

import numpy as np

from zoo_lite.errors import ColumnNotFoundError, InvalidArgumentError, ShardMismatchError

Shard = Any
Piece = tuple[int, Shard]
T = TypeVar("T")

__all__ = [
    "reduction_partial",
    "combine_reduction",
    "is_row_tree",
    "is_row_list",
    "num_rows",
    "shard_length",
    "tree_leaves",
    "slice_rows",
    "concat_shards",
    "split_into_shards",
    "even_pieces",
    "hash_pieces",
    "key_hash",
    "check_columns",
    "require_columns",
    "require_pandas",
    "unique_values",
    "combine_unique",
    "schema_of",
    "moments",
    "combine_moments",
    "null_counts",
    "zip_shard_lists",
    "split_tuple_shard",
    "sample_shard",
    "group_aggregate",
    "merge_shards",
    "deduplicate",
    "bounded_runs",
]


if TYPE_CHECKING:
    import pandas as pd
else:
    class _Pandas:
        """pandas, imported on first use: a training worker fed NumPy arrays slices its rows here
        without ever needing it (0.3 s and 60 MiB less per worker, measured)."""

        def __getattr__(self, name: str) -> Any:
            import pandas

            return getattr(pandas, name)

    pd = _Pandas()


def _pandas_types() -> tuple[type, ...]:
    """pandas' frame and series types, or none while pandas is not imported: then no object is one."""
    pandas = sys.modules.get("pandas")
    return (pandas.DataFrame, pandas.Series) if pandas is not None else ()


# ---------------------------------------------------------------------------------------------
# Row trees: pandas / ndarray leaves nested in dicts, lists and tuples
# ---------------------------------------------------------------------------------------------

def _is_leaf(value: Any) -> bool:
    return isinstance(value, (*_pandas_types(), np.ndarray)) and getattr(value, "ndim", 1) >= 1


def is_row_tree(shard: Shard) -> bool:
    """Whether ``shard`` has rows: a pandas object, an ndarray, or a nest of them."""
    if _is_leaf(shard):
        return True
    if isinstance(shard, dict) and shard:
        return all(is_row_tree(value) for value in shard.values())
    if isinstance(shard, (list, tuple)) and shard:
        return all(is_row_tree(value) for value in shard)
    return False


def _is_plain(value: Any) -> bool:
    if isinstance(value, (list, tuple)):
        return all(_is_plain(item) for item in value)
    return not isinstance(value, (*_pandas_types(), np.ndarray, dict))


def is_row_list(shard: Shard) -> bool:
    """Whether ``shard`` is a list of plain rows (Orca's list shard): a list with no ndarray,
    pandas object or dict in it at any depth. A list of ndarrays is a row tree instead (one
    leaf per model input)."""
    return isinstance(shard, list) and _is_plain(shard)


def tree_leaves(tree: Shard, path: str = "") -> list[tuple[str, Any]]:
    """``(path, leaf)`` pairs of a nest, paths like ``"['x'][0]"``; a leaf is anything not nested."""
    if isinstance(tree, dict):
        return [pair for key, value in tree.items() for pair in tree_leaves(value, f"{path}[{key!r}]")]
    if isinstance(tree, (list, tuple)):
        return [pair for index, value in enumerate(tree) for pair in tree_leaves(value, f"{path}[{index}]")]
    return [(path, tree)]


def _tree_map(func: Callable[..., Any], *trees: Shard) -> Shard:
    first = trees[0]
    if isinstance(first, dict):
        return {key: _tree_map(func, *(tree[key] for tree in trees)) for key in first}
    if isinstance(first, (list, tuple)):
        mapped = [_tree_map(func, *(tree[i] for tree in trees)) for i in range(len(first))]
        return tuple(mapped) if isinstance(first, tuple) else mapped
    return func(*trees)


def num_rows(shard: Shard) -> Optional[int]:
    """Rows of a row tree (its first leaf's length), or None for any other object."""
    if not is_row_tree(shard):
        return None
    return len(tree_leaves(shard)[0][1])


def shard_length(shard: Shard) -> int:
    """What ``len(xshards)`` counts for one shard: rows of a row tree, else ``len`` or 1."""
    rows = num_rows(shard)
    if rows is not None:
        return rows
    try:
        return len(shard)
    except TypeError:
        return 1


def slice_rows(shard: Shard, start: int, stop: int) -> Shard:
    """Rows ``start:stop`` of every leaf, or of a row list."""
    if is_row_list(shard):
        return shard[start:stop]
    return _tree_map(lambda leaf: leaf.iloc[start:stop] if isinstance(leaf, _pandas_types()) else leaf[start:stop], shard)


def _take_rows(shard: Shard, positions: np.ndarray) -> Shard:
    return _tree_map(lambda leaf: leaf.take(positions) if isinstance(leaf, _pandas_types()) else leaf[positions], shard)


def _has_default_index(leaf: Union[pd.DataFrame, pd.Series]) -> bool:
    return isinstance(leaf.index, pd.RangeIndex) or (leaf.index.name is None and leaf.index.dtype.kind in "iu" and not isinstance(leaf.index, pd.MultiIndex))


def _concat_leaves(*leaves: Any) -> Any:
    if isinstance(leaves[0], _pandas_types()):
        ignore_index = all(_has_default_index(leaf) for leaf in leaves)
        return pd.concat(leaves, ignore_index=ignore_index) if len(leaves) > 1 else (
            leaves[0].reset_index(drop=True) if ignore_index else leaves[0]
        )
    return np.concatenate(leaves) if len(leaves) > 1 else leaves[0]


def concat_shards(shards: Sequence[Shard]) -> list[Shard]:
    """Join pieces of one partition into one shard: row trees leaf by leaf, row lists by list
    concatenation; other shards are kept as they are.

    Pandas pieces keep their index unless every piece has a default integer index, in which case
    the result gets a fresh RangeIndex.
    """
    row_trees = [shard for shard in shards if is_row_tree(shard)]
    row_lists = [shard for shard in shards if is_row_list(shard)]
    others = [shard for shard in shards if not is_row_tree(shard) and not is_row_list(shard)]
    joined = [_tree_map(_concat_leaves, *row_trees)] if row_trees else []
    joined += [[row for rows in row_lists for row in rows]] if row_lists else []
    return [*joined, *others]


def split_into_shards(data: Shard, num_shards: int) -> list[Shard]:
    """Split a row tree along its first axis into ``num_shards`` nearly equal shards.

    Raises
    ------
    InvalidArgumentError
        ``data`` is not a row tree, or has fewer rows than ``num_shards``.
    ShardMismatchError
        The leaves have different numbers of rows (ragged leaves).
    """
    if not is_row_tree(data):
        raise InvalidArgumentError(
            f"data of type {type(data).__name__} cannot be partitioned; pass an ndarray, a pandas "
            "object, or a dict/list/tuple whose leaves are ndarrays"
        )
    lengths = {path or "data": len(leaf) for path, leaf in tree_leaves(data)}
    if len(set(lengths.values())) > 1:
        raise ShardMismatchError(
            f"data has leaves with different numbers of rows {lengths}; every leaf must have the same first dimension"
        )
    rows = next(iter(lengths.values()))
    if rows < num_shards:
        raise InvalidArgumentError(
            f"num_shards={num_shards} is more than the {rows} rows of data; pass num_shards <= {rows}"
        )
    bounds = np.linspace(0, rows, num_shards + 1).astype(int)
    return [slice_rows(data, int(bounds[i]), int(bounds[i + 1])) for i in range(num_shards)]


def even_pieces(shard: Shard, num_partitions: int, partition_index: int) -> list[Piece]:
    """Cut a row tree into ``num_partitions`` contiguous pieces, piece j going to partition
    ``(j + partition_index) % num_partitions`` so that small shards do not all land on partition 0.
    A row list is cut the same way; other objects go whole to one partition."""
    rows = len(shard) if is_row_list(shard) else num_rows(shard)
    if rows is None:
        return [(partition_index % num_partitions, shard)]
    bounds = np.linspace(0, rows, num_partitions + 1).astype(int)
    return [
        ((j + partition_index) % num_partitions, slice_rows(shard, int(bounds[j]), int(bounds[j + 1])))
        for j in range(num_partitions)
    ]


# ---------------------------------------------------------------------------------------------
# pandas shards
# ---------------------------------------------------------------------------------------------

def require_pandas(shard: Shard, operation: str) -> pd.DataFrame:
    """Return ``shard`` if it is a DataFrame, else raise an error naming the operation."""
    if not isinstance(shard, pd.DataFrame):
        raise InvalidArgumentError(
            f"{operation} needs pandas DataFrame shards, but a shard is a {type(shard).__name__}; "
            "convert the shards with transform_shard first"
        )
    return shard


def check_columns(df: pd.DataFrame, columns: Sequence[Hashable], argument: str) -> None:
    """Raise ColumnNotFoundError naming ``argument`` if a column is missing from ``df``."""
    require_columns(list(df.columns), columns, argument, "the shards have")


def require_columns(available: Sequence[Hashable], columns: Sequence[Hashable], argument: str, holder_has: str) -> None:
    """Raise ColumnNotFoundError naming ``argument`` if one of ``columns`` is not ``available``;
    ``holder_has`` starts the list of columns there is (``"the DataFrame has"``)."""
    present = set(available)
    missing = [column for column in columns if column not in present]
    if missing:
        raise ColumnNotFoundError(
            f"{argument}={list(columns)!r}: column(s) {missing} not found; {holder_has} columns {list(available)}"
        )


def _normalized_key(column: pd.Series) -> pd.Series:
    """A key column in a dtype-independent form, so equal values hash equally in every shard
    (an int 1 in one shard and a float 1.0 in another where NaN forced a float column)."""
    if pd.api.types.is_bool_dtype(column.dtype) or pd.api.types.is_numeric_dtype(column.dtype):
        values = column.to_numpy(dtype="float64", na_value=np.nan) + 0.0  # -0.0 becomes 0.0
        values[np.isnan(values)] = np.nan  # one NaN bit pattern
        return pd.Series(values, copy=False)
    if pd.api.types.is_datetime64_any_dtype(column.dtype):
        return pd.Series(column.to_numpy(dtype="datetime64[ns]").view("int64"), copy=False)
    values = column.astype(object)
    return values.where(values.notna(), None).reset_index(drop=True)


_MISSING_KEY_HASH = np.uint64(0x9E3779B97F4A7C15)
_HASH_MULTIPLIER = np.uint64(1_000_003)


def key_hash(df: pd.DataFrame, columns: Sequence[Hashable]) -> np.ndarray:
    """A deterministic uint64 hash of each row's key, the same in every process and shard.

    A missing value hashes the same whatever the column's dtype (None or NaN in an object column,
    NaN in a float column, NA, NaT), as pandas treats them all as one missing key."""
    if len(columns) == 0:
        raise InvalidArgumentError("key columns=[]: name at least one key column")
    combined = np.zeros(len(df), dtype=np.uint64)
    for column in columns:
        hashed = pd.util.hash_pandas_object(_normalized_key(df[column]), index=False, categorize=True).to_numpy().copy()
        hashed[df[column].isna().to_numpy()] = _MISSING_KEY_HASH
        combined = combined * _HASH_MULTIPLIER ^ hashed
    return combined


def hash_pieces(df: pd.DataFrame, columns: Sequence[Hashable], num_partitions: int, argument: str = "cols") -> list[Piece]:
    """Split a frame into one piece per target partition by key hash: a stable sort by target and
    slices, so each row is copied once. Every target gets a piece, empty ones keeping the columns.
    A default (unnamed integer) index, which the joined shard replaces, is not sent: the pieces
    carry RangeIndex slices; any other index travels with its rows."""
    require_pandas(df, "partition_by")
    if len(columns) == 0:
        raise InvalidArgumentError(f"{argument}=[]: name at least one key column to partition by")
    check_columns(df, columns, argument)
    targets = (key_hash(df, columns) % np.uint64(num_partitions)).astype(_smallest_uint(num_partitions))
    order = np.argsort(targets, kind="stable")  # a radix sort for 8- and 16-bit keys: 10x faster than for int64
    bounds = np.concatenate([[0], np.cumsum(np.bincount(targets, minlength=num_partitions))])
    ordered = df.take(order)
    if _has_default_index(df):  # the join gives such pieces a fresh RangeIndex: send none (8 bytes a row less)
        ordered.index = pd.RangeIndex(len(ordered))
    return [(target, ordered.iloc[bounds[target]:bounds[target + 1]]) for target in range(num_partitions)]


def _smallest_uint(num_values: int) -> type:
    """The narrowest unsigned integer type that holds ``0 .. num_values - 1``."""
    return next(kind for kind in (np.uint8, np.uint16, np.uint32, np.uint64) if num_values - 1 <= np.iinfo(kind).max)


def unique_values(shard: Shard) -> np.ndarray:
    """Distinct values of a Series shard, in order of first appearance."""
    if not isinstance(shard, pd.Series):
        raise InvalidArgumentError(
            f"unique() needs Series shards, but a shard is a {type(shard).__name__}; "
            "select one column first, as in shards['column'].unique()"
        )
    return pd.unique(shard)


def combine_unique(per_shard: Iterable[np.ndarray]) -> np.ndarray:
    """Distinct values over all shards, in order of first appearance."""
    arrays = [np.asarray(values) for values in per_shard]
    if not arrays:
        return np.array([])
    return pd.unique(np.concatenate(arrays))


# ---------------------------------------------------------------------------------------------
# Column reductions: a vectorised partial per shard, combined on the driver as pandas would
# ---------------------------------------------------------------------------------------------

REDUCTIONS = ("max", "min", "sum", "mean", "count", "nunique")


def _as_frame(shard: Shard, operation: str) -> pd.DataFrame:
    if isinstance(shard, pd.Series):
        return shard.to_frame()
    if isinstance(shard, pd.DataFrame):
        return shard
    raise InvalidArgumentError(
        f"{operation}() needs pandas Series or DataFrame shards, but a shard is a {type(shard).__name__}; "
        f"select a column of pandas shards first, as in shards['column'].{operation}()"
    )


class NoRows:
    """An empty shard's part of max or min: its columns, and no value (pandas would give NaN,
    which would wrongly win with ``skipna=False``)."""

    def __init__(self, columns: list[Hashable]) -> None:
        self.columns = columns


def reduction_partial(shard: Shard, operation: str, skipna: bool) -> Any:
    """One shard's part of ``operation``, per column: what :func:`combine_reduction` needs."""
    frame = _as_frame(shard, operation)
    try:
        return _partial_of_frame(frame, shard, operation, skipna)
    except TypeError as error:  # pandas cannot order or add the values, e.g. strings and None
        raise InvalidArgumentError(
            f"{operation}() cannot reduce the column(s) {list(frame.columns)} ({error}); drop or fill the missing "
            "values, or select columns of one kind, first"
        ) from error


def _partial_of_frame(frame: pd.DataFrame, shard: Shard, operation: str, skipna: bool) -> Any:
    if operation in ("max", "min"):
        return NoRows(list(frame.columns)) if len(frame) == 0 else getattr(frame, operation)(skipna=skipna)
    if operation == "sum":
        return frame.sum(skipna=skipna, min_count=0)
    if operation == "count":
        return frame.count()
    if operation == "mean":
        numeric = frame.select_dtypes(include=["number", "bool"])
        if isinstance(shard, pd.Series) and numeric.shape[1] == 0:
            raise InvalidArgumentError(f"mean() needs numbers, but the column {shard.name!r} holds {shard.dtype} values")
        counts = numeric.count() if skipna else pd.Series(len(numeric), index=numeric.columns)
        return numeric.sum(skipna=skipna, min_count=0), counts
    if operation == "nunique":  # skipna here is dropna
        return {column: pd.unique(frame[column].dropna() if skipna else frame[column]) for column in frame.columns}
    raise InvalidArgumentError(f"operation={operation!r} is not a reduction; use one of {list(REDUCTIONS)}")


def combine_reduction(partials: Sequence[Any], operation: str, skipna: bool) -> pd.Series:
    """The reduction over all shards, per column, from their :func:`reduction_partial` parts."""
    present = [part for part in partials if not isinstance(part, NoRows)]
    if operation == "mean":
        sums = pd.concat([part[0] for part in present], axis=1).sum(axis=1, skipna=False, min_count=0)
        counts = pd.concat([part[1] for part in present], axis=1).sum(axis=1)
        return (sums / counts.where(counts > 0)).astype("float64")
    if operation == "nunique":
        columns = list(present[0]) if present else []
        return pd.Series({column: len(pd.unique(np.concatenate([np.asarray(part[column], dtype=object) for part in present])))
                          for column in columns}, dtype="int64")
    if not present:  # no shard or only empty ones: NaN per column, as pandas gives for no rows
        columns = partials[0].columns if partials else []
        return pd.Series(np.nan if operation in ("max", "min") else 0, index=columns, dtype="float64" if operation in ("max", "min") else "int64")
    table = pd.concat(present, axis=1)
    if operation in ("max", "min"):
        return getattr(table, operation)(axis=1, skipna=skipna)
    return table.sum(axis=1, skipna=skipna, min_count=0)  # sum and count


def schema_of(shard: Shard) -> dict[str, Any]:
    """A description of a shard's layout: columns and dtypes for pandas, dtype and per-row shape
    for every leaf of a row tree, else the type name."""
    if isinstance(shard, pd.DataFrame):
        return {"type": "pandas", "columns": list(shard.columns), "dtypes": {c: str(t) for c, t in shard.dtypes.items()}}
    if isinstance(shard, pd.Series):
        return {"type": "series", "name": shard.name, "dtype": str(shard.dtype)}
    if is_row_tree(shard):
        return {
            "type": "ndarray",
            "leaves": {path or "data": {"dtype": str(leaf.dtype), "shape": (None, *np.shape(leaf)[1:])} for path, leaf in tree_leaves(shard)},
        }
    return {"type": type(shard).__name__}


def moments(df: pd.DataFrame, columns: Optional[Sequence[Hashable]]) -> pd.DataFrame:
    """Per-column count, mean, M2 (sum of squared deviations), min and max of numeric columns."""
    require_pandas(df, "describe")
    if columns is not None:
        check_columns(df, columns, "cols")
        df = df[list(columns)]
    numeric = df.select_dtypes(include="number")
    stats = pd.DataFrame({
        "count": numeric.count(),
        "mean": numeric.mean(),
        "min": numeric.min(),
        "max": numeric.max(),
    })
    stats["m2"] = ((numeric - stats["mean"]) ** 2).sum()
    return stats


def combine_moments(per_shard: Sequence[pd.DataFrame]) -> pd.DataFrame:
    """Merge per-shard moments exactly (Chan et al.'s parallel variance) into describe()'s rows:
    count, mean, std (sample), min, max."""
    total: Optional[pd.DataFrame] = None
    for stats in per_shard:
        stats = stats.fillna({"mean": 0.0, "m2": 0.0})
        if total is None:
            total = stats.copy()
            continue
        n_a, n_b = total["count"], stats["count"]
        n = n_a + n_b
        delta = stats["mean"] - total["mean"]
        safe_n = n.where(n > 0, 1)
        total["mean"] = total["mean"] + delta * n_b / safe_n
        total["m2"] = total["m2"] + stats["m2"] + delta ** 2 * n_a * n_b / safe_n
        total["min"] = pd.concat([total["min"], stats["min"]], axis=1).min(axis=1)
        total["max"] = pd.concat([total["max"], stats["max"]], axis=1).max(axis=1)
        total["count"] = n
    if total is None:
        return pd.DataFrame(index=["count", "mean", "std", "min", "max"])
    count = total["count"]
    std = np.sqrt(total["m2"] / (count - 1).where(count > 1))
    mean = total["mean"].where(count > 0)
    return pd.DataFrame({"count": count.astype(float), "mean": mean, "std": std, "min": total["min"], "max": total["max"]}).T


def null_counts(df: pd.DataFrame) -> pd.Series:
    """Missing values per column of one shard."""
    return require_pandas(df, "get_null_sum").isnull().sum()


def zip_shard_lists(partition_index: int, left: list[Shard], right: list[Shard]) -> list[tuple[Shard, Shard]]:
    """Pair the shards of one partition of two collections, checking counts line up."""
    if len(left) != len(right):
        raise ShardMismatchError(
            f"The two SparkXShards should have the same number of elements in each partition: zip: partition "
            f"{partition_index} holds {len(left)} shard(s) on the left and {len(right)} on the right; zip needs "
            "collections with the same partitioning (e.g. one made from the other by transform_shard)"
        )
    for left_shard, right_shard in zip(left, right):
        left_rows, right_rows = num_rows(left_shard), num_rows(right_shard)
        if left_rows is not None and right_rows is not None and left_rows != right_rows:
            raise ShardMismatchError(
                f"The two SparkXShards should have the same number of elements in each partition: zip: partition "
                f"{partition_index} has {left_rows} row(s) on the left and {right_rows} on the right; zip needs "
                "shards with equal row counts"
            )
    return list(zip(left, right))


def split_tuple_shard(shard: Shard, expected_length: int) -> tuple[Shard, ...]:
    """Check that a shard is a list/tuple of ``expected_length`` items and return them."""
    if not isinstance(shard, (list, tuple)):
        raise InvalidArgumentError(f"split() needs list or tuple shards, but a shard is a {type(shard).__name__}")
    if len(shard) != expected_length:
        raise ShardMismatchError(
            f"split(): shards have different lengths ({expected_length} and {len(shard)}); every shard must "
            "have the same number of items"
        )
    return tuple(shard)


def sample_shard(df: pd.DataFrame, frac: float, replace: bool, seed: Optional[int], partition_index: int) -> pd.DataFrame:
    """A row sample of one shard; with a seed, each partition draws from its own derived stream."""
    require_pandas(df, "sample")
    random_state = None if seed is None else np.random.default_rng([seed, partition_index]).integers(2**32)
    return df.sample(frac=frac, replace=replace, random_state=random_state)


def group_aggregate(df: pd.DataFrame, columns: Sequence[Hashable], agg: Any, join: bool) -> pd.DataFrame:
    """``groupby(columns).agg(agg)`` of one shard holding every row of its groups; with
    ``join``, the aggregates joined back onto the rows (suffix ``_agg`` on clashes)."""
    require_pandas(df, "group_by")
    check_columns(df, columns, "columns")
    grouped = df.groupby(list(columns), dropna=False).agg(agg)
    if isinstance(grouped.columns, pd.MultiIndex):
        grouped.columns = ["_".join(str(level) for level in column) for column in grouped.columns]
    grouped = grouped.reset_index()
    if not join:
        return grouped
    return df.merge(grouped, on=list(columns), how="left", suffixes=("", "_agg"))


def merge_shards(partition_index: int, left: list[pd.DataFrame], right: list[pd.DataFrame], how: str, on: Sequence[Hashable]) -> list[pd.DataFrame]:
    """``pd.merge`` of the co-partitioned left and right shards of one partition. A side with no
    shard at all (a collection with no shards) contributes no rows."""
    if not left or not right:
        kept = left if how in ("left", "outer") else right if how in ("right", "outer") else []
        return concat_shards(kept) if kept else []
    left_df, right_df = concat_shards(left)[0], concat_shards(right)[0]
    check_columns(left_df, on, "on")
    check_columns(right_df, on, "on")
    return [left_df.merge(right_df, how=how, on=list(on))]


def deduplicate(df: pd.DataFrame) -> pd.DataFrame:
    """Drop duplicate rows of a shard that holds every copy of its rows."""
    return require_pandas(df, "deduplicates").drop_duplicates()


# -- partitions spread over workers --------------------------------------------------------------

RowRange = tuple[int, int, int]  # (partition index, first row, end row)


def partition_weight(shards: Sequence[Shard]) -> int:
    """Rows of a partition (a list of shards); a shard that is not a row tree counts as one."""
    return sum(1 if num_rows(shard) is None else int(num_rows(shard)) for shard in shards)


def slice_partition(shards: Sequence[Shard], start: int, stop: int) -> list[Shard]:
    """Rows ``start:stop`` of a partition whose shards are read as one sequence of rows; a shard
    that is not a row tree is one unsplittable row."""
    sliced: list[Shard] = []
    offset = 0
    for shard in shards:
        rows = num_rows(shard)
        weight = 1 if rows is None else rows
        begin, end = max(start, offset), min(stop, offset + weight)
        if begin < end:
            sliced.append(shard if rows is None or (begin == offset and end == offset + weight) else slice_rows(shard, begin - offset, end - offset))
        offset += weight
    return sliced


def assign_row_ranges(partition_rows: Sequence[int], partition_nodes: Sequence[Optional[str]],
                      worker_nodes: Sequence[Optional[str]]) -> list[list[RowRange]]:
    """Give each worker a set of row ranges so that every row goes to exactly one worker and the
    row counts differ by at most one.

    Whole partitions go first, each to a worker on the partition's own node when one has room;
    the rest are cut to fill the remaining quotas. Empty partitions are skipped.

    Examples
    --------
    >>> assign_row_ranges([3, 5], ["a", "b"], ["b", "a"])
    [[(1, 0, 4)], [(0, 0, 3), (1, 4, 5)]]
    """
    total, workers = sum(partition_rows), len(worker_nodes)
    quota = [total // workers + (1 if i < total % workers else 0) for i in range(workers)]
    ranges: list[list[RowRange]] = [[] for _ in range(workers)]
    remaining_rows = {index: rows for index, rows in enumerate(partition_rows) if rows > 0}
    by_size = sorted(remaining_rows, key=lambda index: (-partition_rows[index], index))
    for index in by_size:  # whole partitions on their own node
        local = [w for w in range(workers) if worker_nodes[w] is not None and worker_nodes[w] == partition_nodes[index]
                 and quota[w] >= partition_rows[index]]
        if local:
            worker = max(local, key=lambda w: (quota[w], -w))
            ranges[worker].append((index, 0, partition_rows[index]))
            quota[worker] -= partition_rows[index]
            del remaining_rows[index]
    for index in sorted(remaining_rows):  # the rest, cut where needed; local workers first
        start, end = 0, remaining_rows[index]
        order = sorted(range(workers), key=lambda w: (worker_nodes[w] != partition_nodes[index], w))
        for worker in order:
            if start == end:
                break
            take = min(quota[worker], end - start)
            if take > 0:
                ranges[worker].append((index, start, start + take))
                quota[worker] -= take
                start += take
    return [sorted(worker_ranges) for worker_ranges in ranges]


def partition_nbytes(shards: Sequence[Shard]) -> int:
    """In-memory bytes of a partition's row-tree leaves (object columns count their pointers only)."""
    total = 0
    for shard in shards:
        if not is_row_tree(shard):
            continue
        for _, leaf in tree_leaves(shard):
            if isinstance(leaf, pd.DataFrame):
                total += int(leaf.memory_usage(index=False, deep=False).sum())
            elif isinstance(leaf, pd.Series):
                total += int(leaf.memory_usage(index=False, deep=False))
            else:
                total += int(getattr(leaf, "nbytes", 0))
    return total


def bounded_runs(items: Iterable[T], size_of: Callable[[T], int], limit: Optional[int]) -> Iterator[list[T]]:
    """Consecutive runs of ``items``, read one at a time: a run ends once its sizes reach
    ``limit`` (an item of ``limit`` or more is a run of its own). With ``limit=None`` all items
    are one run. There is always at least one run: empty if there are no items.

    Where a task reads many partitions at once, this keeps what it holds bounded.

    Examples
    --------
    >>> list(bounded_runs([3, 1, 1, 5, 2], size_of=int, limit=4))
    [[3, 1], [1, 5], [2]]
    >>> list(bounded_runs([3, 1], size_of=int, limit=None)), list(bounded_runs([], size_of=int, limit=4))
    ([[3, 1]], [[]])
    """
    run: list[T] = []
    size = 0
    ended_one = False
    for item in items:
        run.append(item)
        size += size_of(item)
        if limit is not None and size >= limit:
            yield run
            run, size, ended_one = [], 0, True
    if run or not ended_one:
        yield run
