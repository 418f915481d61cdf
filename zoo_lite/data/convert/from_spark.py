"""A Spark DataFrame → RDDs of Arrow tables, pandas frames or model arrays, converted on the
executors (Spark writes each partition as Arrow record batches; nothing passes the driver and no
Row object is made); and the column references and checks that go with it.

The columns fed to a model are checked here once, on the driver and from the schema alone; Vector
columns become arrays on the JVM side. The arrays are made by
:mod:`~zoo_lite.data.convert.model_arrays`; the way back is :mod:`~zoo_lite.data.convert.to_spark`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Hashable, Iterator, Optional, Sequence

from zoo_lite.data.convert.model_arrays import Columns, table_to_model_arrays
from zoo_lite.data.convert.pandas_arrow import record_batches_to_table
from zoo_lite.errors import InvalidArgumentError, raising_transportably, streaming_transportably

if TYPE_CHECKING:
    import pyarrow as pa
    import pyspark
    import pyspark.sql

__all__ = [
    "is_spark_df",
    "spark_df_to_arrow_rdd",
    "spark_df_to_pandas_rdd",
    "spark_column",
    "check_spark_columns",
    "spark_df_to_model_arrays_rdd",
]


def is_spark_df(data: Any) -> bool:
    """True for a pyspark (classic or Connect) DataFrame, without importing pyspark otherwise.

    Parameters
    ----------
    data : object
        Anything.

    Returns
    -------
    bool
        Whether ``data`` is a Spark DataFrame.

    Examples
    --------
    >>> import pandas as pd
    >>> is_spark_df(pd.DataFrame({"a": [1]}))
    False
    """
    return type(data).__name__ == "DataFrame" and type(data).__module__.startswith("pyspark.")


def spark_df_to_arrow_rdd(df: "pyspark.sql.DataFrame", piece_bytes: Optional[int] = None,
                          max_partitions: Optional[int] = None) -> "pyspark.RDD":
    """An RDD with one Arrow table per partition of ``df``, converted on the executors; with
    ``piece_bytes``, one table per run of the partition's record batches that reaches that many
    bytes (see :func:`~zoo_lite.data.partition_ops.bounded_runs`), so that a partition of any size
    is read in bounded pieces. With ``max_partitions``, ``df``'s partitions are first joined into
    that many at most, in the JVM and without a shuffle (an RDD's ``coalesce``: ``df.coalesce``
    would cost a new plan, 0.1 to 0.4 s on the driver here).

    Spark's executors write each partition as Arrow record batches (``toArrowBatchRdd``); the
    Python workers read them with the schema, so nothing passes the driver and no Row object is
    made.
    """
    from pyspark.rdd import RDD
    from pyspark.serializers import NoOpSerializer
    from pyspark.sql.pandas.types import to_arrow_schema

    from zoo_lite.data.partition_ops import bounded_runs
    from zoo_lite.spark_connect import classic_only, is_connect_session

    session = df.sparkSession
    if is_connect_session(session):
        raise classic_only("Turning a Spark DataFrame into XShards", session)
    timezone = session.conf.get("spark.sql.session.timeZone") or "UTC"
    max_rows = int(session.conf.get("spark.sql.execution.arrow.maxRecordsPerBatch") or 10_000)
    schema = to_arrow_schema(df.schema, timezone=timezone, prefers_large_types=False)
    jrdd = df._jdf.toArrowBatchRdd(max_rows, timezone, False, False).toJavaRDD()
    if max_partitions is not None and jrdd.getNumPartitions() > max_partitions:
        jrdd = jrdd.coalesce(max_partitions)
    batches = RDD(jrdd, session.sparkContext, NoOpSerializer())

    @streaming_transportably   # one piece at a time: a piece is what the next step holds
    def to_tables(payloads: Iterator[bytes]) -> Iterator["pa.Table"]:
        return (record_batches_to_table(run, schema) for run in bounded_runs(payloads, len, piece_bytes))

    return batches.mapPartitions(to_tables, preservesPartitioning=True)


def spark_df_to_pandas_rdd(df: "pyspark.sql.DataFrame") -> "pyspark.RDD":
    """An RDD with one pandas frame per partition of ``df``, converted on the executors via Arrow
    (see :func:`spark_df_to_arrow_rdd`)."""
    return spark_df_to_arrow_rdd(df).map(lambda table: table.to_pandas(split_blocks=True, self_destruct=True),
                                         preservesPartitioning=True)


def _check_spark_column_type(data_type: Any, name: str, argument: str, strings: bool = False) -> None:
    from pyspark.ml.linalg import VectorUDT
    from pyspark.sql import types

    inner = data_type
    while isinstance(inner, types.ArrayType):
        inner = inner.elementType
    numeric = isinstance(inner, (types.ByteType, types.ShortType, types.IntegerType, types.LongType,
                                 types.FloatType, types.DoubleType, types.BooleanType))
    if strings and isinstance(inner, types.StringType):
        return
    if not (numeric or isinstance(data_type, VectorUDT)):
        raise InvalidArgumentError(
            f"{argument}: column {name!r} has type {data_type.simpleString()}, which is not numeric; the model is fed "
            "numeric, array<numeric> or Vector columns: encode it first (e.g. StringIndexer, or .cast('double'))"
        )


def spark_column(name: Hashable) -> "pyspark.sql.Column":
    """A Spark reference to the column named exactly ``name``: backtick-quoted, since a bare
    ``"a.b"`` means field ``b`` of struct ``a`` to Spark, with a backtick in the name doubled.

    Examples
    --------
    >>> from zoo_lite import init_orca_context, OrcaContext
    >>> _ = init_orca_context(cores=1)
    >>> df = OrcaContext.get_spark_session().createDataFrame([(1, 2)], ["a.b", "c`d"])
    >>> df.select(spark_column("a.b"), spark_column("c`d")).first()
    Row(a.b=1, c`d=2)
    """
    from pyspark.sql import functions

    return functions.col("`" + str(name).replace("`", "``") + "`")


def _spark_columns(df: "pyspark.sql.DataFrame", cols: Sequence[Hashable], argument: str, strings: bool = False) -> list[Any]:
    """Select expressions for ``cols`` after checking them; Vectors become arrays on the JVM side."""
    from pyspark.ml.functions import vector_to_array
    from pyspark.ml.linalg import VectorUDT

    from zoo_lite.data.partition_ops import require_columns

    fields = {field.name: field for field in df.schema.fields}
    require_columns(list(fields), cols, argument, "the DataFrame has")
    expressions = []
    for name in cols:
        data_type = fields[name].dataType
        _check_spark_column_type(data_type, str(name), argument, strings)
        column = spark_column(name)
        expressions.append(vector_to_array(column).alias(str(name)) if isinstance(data_type, VectorUDT) else column)
    return expressions


def check_spark_columns(df: "pyspark.sql.DataFrame", cols: Sequence[Hashable], argument: str, strings: bool = False) -> None:
    """Raise a clear error, on the driver and from the schema alone, for a column of ``cols``
    that ``df`` lacks or that cannot be fed to a model.

    Parameters
    ----------
    df : pyspark.sql.DataFrame
        The data.
    cols : sequence of str
        The columns to check.
    argument : str
        The argument that named them (``"feature_cols"``), for the message.
    strings : bool, default False
        Also take string and (nested) array<string> columns, for a model that is fed string
        tensors (a Keras model starting with ``StringLookup`` or ``TextVectorization``).

    Raises
    ------
    ColumnNotFoundError
        A column is not in ``df``.
    InvalidArgumentError
        A column is neither numeric, an array of numbers, nor a Vector (nor string, with ``strings``).

    Examples
    --------
    >>> from zoo_lite import init_orca_context, OrcaContext
    >>> _ = init_orca_context(cores=1)
    >>> df = OrcaContext.get_spark_session().createDataFrame([(1.0, "a")], "x double, s string")
    >>> check_spark_columns(df, ["x"], "feature_cols")
    >>> check_spark_columns(df, ["s"], "feature_cols")
    Traceback (most recent call last):
    ...
    zoo_lite.errors.InvalidArgumentError: feature_cols: column 's' has type string, which is not numeric; the model is fed numeric, array<numeric> or Vector columns: encode it first (e.g. StringIndexer, or .cast('double'))
    >>> check_spark_columns(df, ["s"], "feature_cols", strings=True)
    """
    _spark_columns(df, cols, argument, strings)


def spark_df_to_model_arrays_rdd(df: "pyspark.sql.DataFrame", columns: Columns, need_labels: bool = True, *,
                                 argument: str = "data", piece_bytes: Optional[int] = None,
                                 max_partitions: Optional[int] = None) -> "pyspark.RDD":
    """An RDD with the model arrays (``{"x": (ndarray, ...), "y": ndarray}``) of each partition of
    ``df`` (or of each piece of about ``piece_bytes``, of ``max_partitions`` partitions at most,
    see :func:`spark_df_to_arrow_rdd`), converted on the executors through Arrow; lazy.

    The columns are checked here, once, on the driver and from the schema: a missing or
    non-numeric column is an error before any job runs. Vector columns become arrays on the JVM.

    Parameters
    ----------
    df : pyspark.sql.DataFrame
        The data.
    columns : Columns
        ``features`` (required) and ``labels`` (required with ``need_labels``).
    need_labels : bool, default True
        False for prediction: no ``"y"``.
    argument : str, default "data"
        The argument ``df`` was passed as, for error messages.
    piece_bytes : int, optional
        Read each partition in pieces of about this many bytes of Arrow data, one dict each.
    max_partitions : int, optional
        Join ``df``'s partitions into this many at most first.

    Returns
    -------
    pyspark.RDD
        One model-arrays dict per partition of ``df`` (per piece, with ``piece_bytes``).

    Raises
    ------
    InvalidArgumentError
        ``columns.features`` is None, or ``columns.labels`` is None with ``need_labels``; a column
        is neither numeric, an array of numbers, nor a Vector.
    ColumnNotFoundError
        A column of ``columns`` is not in ``df``.

    Examples
    --------
    >>> from zoo_lite import init_orca_context, OrcaContext
    >>> from zoo_lite.data.convert import concat_model_arrays
    >>> _ = init_orca_context(cores=1)
    >>> df = OrcaContext.get_spark_session().createDataFrame([(1.0, [2.0, 3.0], 0)], "a double, v array<double>, t long")
    >>> arrays = concat_model_arrays(spark_df_to_model_arrays_rdd(df, Columns.of(["a", "v"], "t")).collect())
    >>> [x.shape for x in arrays["x"]], arrays["y"].tolist()
    ([(1,), (1, 2)], [0])
    """
    from pyspark.ml.linalg import VectorUDT

    if columns.features is None:
        raise InvalidArgumentError(f"{argument} is a Spark DataFrame: pass feature_cols=[...] naming the model's input columns")
    if need_labels and columns.labels is None:
        raise InvalidArgumentError(f"{argument} is a Spark DataFrame: pass label_cols=[...] naming the label column(s)")
    features, labels = columns.features, columns.labels if need_labels else None
    names = list(dict.fromkeys([*features, *(labels or ())]))
    expressions = [*_spark_columns(df, [c for c in names if c in features], "feature_cols"),
                   *_spark_columns(df, [c for c in names if c not in features], "label_cols")]
    fields = df.schema.fields
    if sorted(map(str, names)) == sorted(field.name for field in fields) and not any(isinstance(field.dataType, VectorUDT) for field in fields):
        # every column is wanted as it is: the frame itself saves analysing a projection (about
        # 0.04 s on the driver, measured in issue 4); the arrays are read by column name
        selected = df
    else:
        selected = df.select(*expressions)

    @raising_transportably
    def to_arrays(table: "pa.Table") -> dict[str, Any]:
        return table_to_model_arrays(table, features, labels)

    return spark_df_to_arrow_rdd(selected, piece_bytes, max_partitions).map(to_arrays, preservesPartitioning=True)
