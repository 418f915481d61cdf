"""pandas frames, NumPy arrays and dict shards ⇄ Arrow tables: the first and last step of every
conversion (:mod:`~zoo_lite.data.convert.to_spark` sends these tables into Spark as
:mod:`~zoo_lite.data.convert.ipc_payloads`; :mod:`~zoo_lite.data.convert.from_spark` gets them back).

A shard becomes a table of its own types (:func:`shard_arrow_table`) or of a given schema
(:func:`cast_table`); tables of several shards get one schema (:func:`unify_arrow_schemas`), with
errors naming the column and the partitions when their types do not fit. Spark has no unsigned
integers, so unsigned arrays become the signed type that holds them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterable, Optional, Sequence, TypeVar

import numpy as np
import pandas as pd

from zoo_lite.errors import InvalidArgumentError

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = [
    "ndarray_to_arrow",
    "dict_to_arrow",
    "shard_arrow_table",
    "unify_arrow_schemas",
    "cast_arrow_table",
    "cast_table",
    "record_batches_to_table",
    "record_batches_to_pandas",
]


T = TypeVar("T")


#: Spark has no unsigned integer types: each unsigned dtype goes to the signed one that holds it
_SIGNED_FOR_UNSIGNED = {np.dtype("uint8"): np.dtype("int16"), np.dtype("uint16"): np.dtype("int32"),
                        np.dtype("uint32"): np.dtype("int64"), np.dtype("uint64"): np.dtype("int64")}


def ndarray_to_arrow(values: np.ndarray) -> "pa.Array":
    """An array of rows as an Arrow column: one value per row for ``(rows,)``, a list per row for
    ``(rows, k)``, nested lists keeping the shape for more dimensions (tensor cells); the dtype is
    kept, but unsigned integers become the signed type that holds them (Spark has no unsigned).

    Examples
    --------
    >>> ndarray_to_arrow(np.arange(4, dtype=np.uint8).reshape(2, 1, 2)).to_pylist()
    [[[0, 1]], [[2, 3]]]
    >>> ndarray_to_arrow(np.arange(4, dtype=np.uint8).reshape(2, 1, 2)).type
    ListType(list<item: list<item: int16>>)
    """
    import pyarrow as pa

    values = np.asarray(values)
    if values.dtype in _SIGNED_FOR_UNSIGNED:
        wider = _SIGNED_FOR_UNSIGNED[values.dtype]
        if values.dtype == np.uint64 and values.size and values.max() > np.iinfo(np.int64).max:
            raise InvalidArgumentError("a uint64 array holds values above int64's maximum, which Spark cannot hold")
        values = values.astype(wider)
    column = pa.array(np.ascontiguousarray(values).reshape(-1))
    for level in range(values.ndim - 1, 0, -1):   # innermost dimension first
        lists = int(np.prod(values.shape[:level]))   # how many lists of values.shape[level] items this level has
        offsets = np.arange(lists + 1, dtype=np.int32) * values.shape[level]
        column = pa.ListArray.from_arrays(pa.array(offsets), column)
    return column


def dict_to_arrow(shard: Any) -> "pa.Table":
    """A dict shard of arrays with one row per first-axis entry (``{"x": [n, h, w, c], "y": [n]}``)
    as an Arrow table, one column per key (see :func:`ndarray_to_arrow`).

    Examples
    --------
    >>> table = dict_to_arrow({"x": np.zeros((2, 2, 2), np.float32), "y": np.array([0, 1])})
    >>> table.column_names, table.num_rows, str(table.schema.field("x").type)
    (['x', 'y'], 2, 'list<item: list<item: float>>')
    """
    import pyarrow as pa

    arrays = {str(key): np.asarray(value) for key, value in shard.items()}
    rows = {name: (len(array) if array.ndim else None) for name, array in arrays.items()}
    if None in rows.values() or len(set(rows.values())) > 1:
        raise InvalidArgumentError(
            f"to_spark_df: a dict shard's entries must be arrays with one row per first-axis entry, of equal length; "
            f"got rows {rows}"
        )
    return pa.table({name: ndarray_to_arrow(array) for name, array in arrays.items()})


def shard_arrow_table(shard: Any) -> "pa.Table":
    """A pandas (index left out) or dict-of-arrays shard as an Arrow table of its own types."""
    import pyarrow as pa

    if isinstance(shard, dict):
        return dict_to_arrow(shard)
    if not isinstance(shard, pd.DataFrame):
        raise InvalidArgumentError(
            f"to_spark_df needs pandas DataFrame shards or dicts of arrays, but a shard is a {type(shard).__name__}; "
            "convert the shards with transform_shard first"
        )
    try:
        return pa.Table.from_pandas(shard, preserve_index=False)
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError) as error:
        raise InvalidArgumentError(
            f"to_spark_df: a shard's columns cannot be converted to Arrow: {error}; give each column one type "
            "(e.g. astype(str) for a column mixing strings and numbers)"
        ) from error


def unify_arrow_schemas(indexed_schemas: Sequence[tuple[int, "pa.Schema"]]) -> "pa.Schema":
    """One schema every shard fits: the shards' schemas unified (null -> any type, int -> float),
    or an error naming the column whose types cannot be unified and the partitions involved."""
    import pyarrow as pa

    first_index, first = indexed_schemas[0]
    for index, schema in indexed_schemas[1:]:
        if schema.names != first.names:
            raise InvalidArgumentError(
                f"to_spark_df: partition {index} has columns {schema.names}, but partition {first_index} has "
                f"{first.names}; make every shard have the same columns, or pass schema="
            )
    try:
        return pa.unify_schemas([schema for _, schema in indexed_schemas], promote_options="permissive")
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError) as error:
        for name in first.names:
            seen: dict[str, int] = {}
            for index, schema in indexed_schemas:
                seen.setdefault(str(schema.field(name).type), index)
            try:
                pa.unify_schemas([pa.schema([s.field(name)]) for _, s in indexed_schemas], promote_options="permissive")
            except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError):
                found = ", ".join(f"{t} in partition {i}" for t, i in seen.items())
                raise InvalidArgumentError(
                    f"to_spark_df: column {name!r} has incompatible types across shards ({found}); make the "
                    "column's dtype the same in every shard, or pass schema="
                ) from error
        raise InvalidArgumentError(f"to_spark_df: the shards' schemas cannot be unified: {error}; pass schema=") from error


def cast_arrow_table(table: T, schema: "pa.Schema", partition_index: Optional[int], noun: str = "column") -> T:
    """A table or record batch cast to ``schema``, or an error naming the partition (when known)."""
    import pyarrow as pa

    try:
        return table.cast(schema, safe=True)
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError) as error:
        where = "a partition" if partition_index is None else f"partition {partition_index}"
        raise InvalidArgumentError(
            f"to_spark_df: {where} ({table.schema}) does not fit the schema {schema}: "
            f"{error}; make each {noun}'s dtype and shape the same in every shard, or pass schema="
        ) from error


def cast_table(df: Any, schema: "pa.Schema", partition_index: int) -> "pa.Table":
    """Convert a pandas (or dict-of-arrays) shard to an Arrow table of exactly ``schema``, with a
    clear error on a column that does not fit (instead of nulls or a silent truncation)."""
    import pyarrow as pa

    if isinstance(df, dict):
        return _cast_dict_table(dict_to_arrow(df), schema, partition_index)
    names = list(schema.names)
    if [str(column) for column in df.columns] != names:
        raise InvalidArgumentError(
            f"to_spark_df: partition {partition_index} has columns {list(df.columns)}, but the DataFrame "
            f"schema has {names}; make every shard have the same columns, or pass schema="
        )
    arrays = []
    for field, column in zip(schema, df.columns):
        try:
            arrays.append(pa.Array.from_pandas(df[column], type=field.type, safe=True))
        except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError) as error:
            raise InvalidArgumentError(
                f"to_spark_df: column {column!r} of partition {partition_index} (pandas dtype "
                f"{df[column].dtype}) does not fit the type {field.type} taken from the first shard: "
                f"{error}; pass schema= to to_spark_df, or make the column's dtype the same in every shard"
            ) from error
    return pa.Table.from_arrays(arrays, schema=schema)


def _cast_dict_table(table: "pa.Table", schema: "pa.Schema", partition_index: int) -> "pa.Table":
    if table.column_names != list(schema.names):
        raise InvalidArgumentError(
            f"to_spark_df: partition {partition_index} has keys {table.column_names}, but the DataFrame schema has "
            f"{list(schema.names)}; make every shard have the same keys, or pass schema="
        )
    return cast_arrow_table(table, schema, partition_index, noun="key")


def record_batches_to_table(payloads: Iterable[bytes], schema: "pa.Schema") -> "pa.Table":
    """Join Spark's serialised Arrow record batches (no schema message) into one Arrow table."""
    import pyarrow as pa

    batches = [pa.ipc.read_record_batch(pa.py_buffer(payload), schema) for payload in payloads]
    return pa.Table.from_batches(batches, schema=schema)


def record_batches_to_pandas(payloads: Iterable[bytes], schema: "pa.Schema") -> pd.DataFrame:
    """Join Spark's serialised Arrow record batches (no schema message) into one pandas frame.

    An empty iterable gives an empty frame with the schema's columns and dtypes.
    """
    return record_batches_to_table(payloads, schema).to_pandas(split_blocks=True, self_destruct=True)
