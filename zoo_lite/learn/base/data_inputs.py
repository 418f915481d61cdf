"""Data inputs shared by the Estimators: XShards and Spark DataFrames become rows held by the workers.

An input is turned into *model arrays* (``{"x": (ndarray, ...), "y": ndarray}``, see
:mod:`zoo_lite.data.convert`) on the executors, put into Ray from there
(:meth:`SparkXShards.to_ray`), and spread over the workers, local partitions first. Column
errors on a Spark DataFrame are found on the driver from its schema, before any job runs.
Framework-specific inputs (DataLoader, tf.data, creator functions) are the framework's own.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Hashable, Optional, Sequence, Union

from zoo_lite.errors import InvalidArgumentError, raising_transportably

if TYPE_CHECKING:
    import pyspark.sql

    from zoo_lite.data.ray_xshards import RayXShards
    from zoo_lite.data.shard import SparkXShards

__all__ = ["normalize_cols", "is_spark_df", "is_rows_input", "check_spark_columns", "to_model_array_shards", "rows_in_ray"]


def normalize_cols(cols: Union[None, str, Sequence[Hashable]], argument: str) -> Optional[list[Hashable]]:
    """``"a"`` → ``["a"]``; a sequence → a list; None stays None.

    Examples
    --------
    >>> normalize_cols("a", "feature_cols"), normalize_cols(("a", "b"), "feature_cols")
    (['a'], ['a', 'b'])
    """
    if cols is None:
        return None
    if isinstance(cols, str):
        return [cols]
    if isinstance(cols, (list, tuple)) and cols:
        return list(cols)
    raise InvalidArgumentError(f"{argument}={cols!r} must be a column name or a non-empty list of column names")


def is_spark_df(data: Any) -> bool:
    """True for a pyspark (classic or Connect) DataFrame, without importing pyspark otherwise."""
    return type(data).__name__ == "DataFrame" and type(data).__module__.startswith("pyspark.")


def is_rows_input(data: Any) -> bool:
    """True for the inputs this module turns into worker rows: XShards and Spark DataFrames."""
    from zoo_lite.data.shard import SparkXShards

    return isinstance(data, SparkXShards) or is_spark_df(data)


def _check_spark_column_type(data_type: Any, name: str, argument: str) -> None:
    from pyspark.ml.linalg import VectorUDT
    from pyspark.sql import types

    inner = data_type
    while isinstance(inner, types.ArrayType):
        inner = inner.elementType
    numeric = isinstance(inner, (types.ByteType, types.ShortType, types.IntegerType, types.LongType,
                                 types.FloatType, types.DoubleType, types.BooleanType))
    if not (numeric or isinstance(data_type, VectorUDT)):
        raise InvalidArgumentError(
            f"{argument}: column {name!r} has type {data_type.simpleString()}, which is not numeric; the model is fed "
            "numeric, array<numeric> or Vector columns: encode it first (e.g. StringIndexer, or .cast('double'))"
        )


def _spark_columns(df: "pyspark.sql.DataFrame", cols: list[Hashable], argument: str) -> list[Any]:
    """Select expressions for ``cols`` after checking them; Vectors become arrays on the JVM side."""
    from pyspark.ml.functions import vector_to_array
    from pyspark.ml.linalg import VectorUDT
    from pyspark.sql import functions

    from zoo_lite.data.partition_ops import require_columns

    fields = {field.name: field for field in df.schema.fields}
    require_columns(list(fields), cols, argument, "the DataFrame has")
    expressions = []
    for name in cols:
        data_type = fields[name].dataType
        _check_spark_column_type(data_type, str(name), argument)
        column = functions.col(f"`{name}`")
        expressions.append(vector_to_array(column).alias(str(name)) if isinstance(data_type, VectorUDT) else column)
    return expressions


def check_spark_columns(df: "pyspark.sql.DataFrame", cols: list[Hashable], argument: str) -> None:
    """Raise a clear error, on the driver, for a missing or non-numeric column of ``df``."""
    _spark_columns(df, cols, argument)


def _spark_df_to_model_arrays(df: "pyspark.sql.DataFrame", feature_cols: list[Hashable],
                              label_cols: Optional[list[Hashable]]) -> "SparkXShards":
    from zoo_lite.data import convert
    from zoo_lite.data.shard import SparkXShards

    from pyspark.ml.linalg import VectorUDT

    names = list(dict.fromkeys([*feature_cols, *(label_cols or [])]))
    expressions = [*_spark_columns(df, [c for c in names if c in feature_cols], "feature_cols"),
                   *_spark_columns(df, [c for c in names if c not in feature_cols], "label_cols")]
    fields = df.schema.fields
    if sorted(map(str, names)) == sorted(field.name for field in fields) and not any(isinstance(field.dataType, VectorUDT) for field in fields):
        # every column is wanted as it is: the frame itself saves analysing a projection (about
        # 0.04 s on the driver, measured in issue 4); the arrays are read by column name
        selected = df
    else:
        selected = df.select(*expressions)

    @raising_transportably
    def to_arrays(table: Any) -> dict[str, Any]:
        return convert.arrow_to_model_arrays(table, feature_cols, label_cols)

    return SparkXShards(convert.spark_df_to_arrow_rdd(selected).map(to_arrays, preservesPartitioning=True))


def _xshards_to_model_arrays(shards: "SparkXShards", feature_cols: Optional[list[Hashable]],
                             label_cols: Optional[list[Hashable]], need_labels: bool) -> "SparkXShards":
    import pandas as pd

    from zoo_lite.data import convert

    def to_arrays(shard: Any) -> dict[str, Any]:
        if isinstance(shard, pd.DataFrame):
            if feature_cols is None:
                raise InvalidArgumentError("the XShards holds pandas DataFrames: pass feature_cols (and label_cols to train or evaluate)")
            return convert.pandas_to_model_arrays(shard, feature_cols, label_cols)
        arrays = convert.dict_to_model_arrays(shard)
        if need_labels and "y" not in arrays:
            raise InvalidArgumentError("a shard has no 'y' entry; training and evaluation need {'x': ..., 'y': ...} shards")
        return arrays

    return shards._map(to_arrays)


def to_model_array_shards(data: Any, feature_cols: Union[None, str, Sequence[Hashable]] = None,
                          label_cols: Union[None, str, Sequence[Hashable]] = None, *,
                          need_labels: bool = True, argument: str = "data") -> "SparkXShards":
    """An XShards of model arrays from an XShards or a Spark DataFrame (lazy; checks what it can
    on the driver).

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> from zoo_lite import init_orca_context, stop_orca_context
    >>> from zoo_lite.data import XShards
    >>> _ = init_orca_context(cores=2)
    >>> shards = XShards.partition(pd.DataFrame({"a": [1.0, 2.0, 3.0], "t": [0, 1, 0]}), num_shards=2)
    >>> [s["y"].tolist() for s in to_model_array_shards(shards, "a", "t").collect()]
    [[0], [1, 0]]
    >>> stop_orca_context()
    """
    from zoo_lite.data.shard import SparkXShards

    features = normalize_cols(feature_cols, "feature_cols")
    labels = normalize_cols(label_cols, "label_cols")
    if is_spark_df(data):
        if features is None:
            raise InvalidArgumentError(f"{argument} is a Spark DataFrame: pass feature_cols=[...] naming the model's input columns")
        if need_labels and labels is None:
            raise InvalidArgumentError(f"{argument} is a Spark DataFrame: pass label_cols=[...] naming the label column(s)")
        return _spark_df_to_model_arrays(data, features, labels if need_labels else None)
    if isinstance(data, SparkXShards):
        if need_labels and features is not None and labels is None:
            raise InvalidArgumentError(f"{argument}: feature_cols was given without label_cols; pass label_cols=[...] too")
        return _xshards_to_model_arrays(data, features, labels if need_labels else None, need_labels)
    raise InvalidArgumentError(f"{argument} is a {type(data).__name__}; expected an XShards or a Spark DataFrame here")


def rows_in_ray(data: Any, feature_cols: Union[None, str, Sequence[Hashable]] = None,
                label_cols: Union[None, str, Sequence[Hashable]] = None, *, need_labels: bool = True,
                argument: str = "data") -> "RayXShards":
    """Model arrays of ``data`` in Ray's object store, put there by the executors; an empty
    input is an error."""
    in_ray = to_model_array_shards(data, feature_cols, label_cols, need_labels=need_labels, argument=argument).to_ray()
    if len(in_ray) == 0:
        in_ray.release()
        raise InvalidArgumentError(f"{argument} has no rows; training, evaluation and prediction need at least one row")
    return in_ray
