"""The only format-conversion module: pandas ⇄ Arrow ⇄ Spark, and user data (Spark DataFrame,
pandas, dict, Arrow, Vector columns) → model arrays.

Every conversion is vectorised through Arrow: no Row objects and no per-row Python. The Spark
side exchanges Arrow IPC bytes with the executors' Python workers, so data never passes through
the driver.

Model arrays are the per-shard form the Estimators train on: ``{"x": (ndarray, ...), "y":
ndarray}``, one array per model input, ``"y"`` absent for prediction. The columns they are made
of are normalised once, into :class:`Columns`, and checked once per kind of data: on the driver
from the schema for a Spark DataFrame, per shard for pandas and dict shards.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Hashable, Iterable, Iterator, Optional, Sequence, TypeVar, Union

import numpy as np
import pandas as pd

from zoo_lite.errors import ColumnNotFoundError, InvalidArgumentError, raising_transportably
from zoo_lite.data.jvm import arrow_frames

if TYPE_CHECKING:
    import pyarrow as pa
    import pyspark
    import pyspark.sql

__all__ = [
    "Columns",
    "is_spark_df",
    "check_spark_columns",
    "spark_column",
    "spark_df_to_model_arrays_rdd",
    "dense_vectors_of_arrow",
    "shard_to_model_arrays",
    "record_batches_to_pandas",
    "pandas_to_ipc_payloads",
    "ipc_payloads_to_batches",
    "spark_arrow_schema",
    "cast_table",
    "pandas_to_feature_label",
    "spark_df_to_pandas_rdd",
    "spark_df_to_arrow_rdd",
    "pandas_rdd_to_spark_df",
    "arrow_to_model_arrays",
    "pandas_to_model_arrays",
    "dict_to_model_arrays",
    "concat_model_arrays",
    "model_arrays_rows",
]

T = TypeVar("T")

# Rows per Arrow IPC payload on the way into Spark: small enough that one payload never nears a
# JVM array limit, large enough that per-payload overhead is negligible.
PAYLOAD_ROWS = 65_536


def _column_tuple(cols: Union[None, Hashable, Sequence[Hashable]], argument: str) -> Optional[tuple[Hashable, ...]]:
    if cols is None:
        return None
    if isinstance(cols, str):
        return (cols,)
    if isinstance(cols, (list, tuple)) and cols:
        return tuple(cols)
    raise InvalidArgumentError(
        f"{argument}={cols!r} must be a column name or a non-empty list of column names; "
        f"pass e.g. {argument}='a' or {argument}=['a', 'b'], or leave it out"
    )


@dataclass(frozen=True)
class Columns:
    """The feature and label columns (or dict keys) of the data a model is fed, normalised once.

    Build it with :meth:`of`; ``None`` means "not given".

    Attributes
    ----------
    features : tuple or None
        The model's inputs, in order: one input per column (or dict key).
    labels : tuple or None
        The label columns (or keys), which become ``"y"``.

    Examples
    --------
    >>> Columns.of("a", ["t"])
    Columns(features=('a',), labels=('t',))
    >>> Columns()
    Columns(features=None, labels=None)
    """

    features: Optional[tuple[Hashable, ...]] = None
    labels: Optional[tuple[Hashable, ...]] = None

    def __post_init__(self) -> None:
        for argument, cols in (("features", self.features), ("labels", self.labels)):
            if cols is not None and not (isinstance(cols, tuple) and cols):
                raise InvalidArgumentError(
                    f"Columns({argument}={cols!r}): give None or a non-empty tuple of names; "
                    "Columns.of(feature_cols, label_cols) normalises a name or a list"
                )

    @classmethod
    def of(cls, feature_cols: Union[None, Hashable, Sequence[Hashable]] = None,
           label_cols: Union[None, Hashable, Sequence[Hashable]] = None) -> "Columns":
        """Normalise a user's ``feature_cols`` and ``label_cols``: a name becomes a 1-tuple, a
        non-empty list or tuple a tuple, None stays None.

        Parameters
        ----------
        feature_cols : str, list or tuple of names, or None
            The model's input columns (or dict keys).
        label_cols : str, list or tuple of names, or None
            The label columns (or dict keys).

        Returns
        -------
        Columns
            The normalised pair.

        Raises
        ------
        InvalidArgumentError
            An argument is neither None, a string, nor a non-empty list or tuple; the message names
            the argument (``feature_cols=`` or ``label_cols=``) and the value.

        Examples
        --------
        >>> Columns.of(["a", "b"], "t")
        Columns(features=('a', 'b'), labels=('t',))
        >>> Columns.of([])
        Traceback (most recent call last):
        ...
        zoo_lite.errors.InvalidArgumentError: feature_cols=[] must be a column name or a non-empty list of column names; pass e.g. feature_cols='a' or feature_cols=['a', 'b'], or leave it out
        """
        return cls(_column_tuple(feature_cols, "feature_cols"), _column_tuple(label_cols, "label_cols"))


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
    >>> is_spark_df(pd.DataFrame({"a": [1]}))
    False
    """
    return type(data).__name__ == "DataFrame" and type(data).__module__.startswith("pyspark.")


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
    return _cast_arrow_table(table, schema, partition_index, noun="key")


def pandas_to_ipc_payloads(df: Any, schema: "pa.Schema", partition_index: int) -> Iterator[bytes]:
    """Self-contained Arrow IPC streams (schema + one batch each) of a pandas (or dict-of-arrays) shard."""
    return table_payloads(cast_table(df, schema, partition_index))


def ipc_payloads_to_batches(payload_batches: Iterable["pa.RecordBatch"]) -> Iterator["pa.RecordBatch"]:
    """Inside ``mapInArrow``: decode the binary payload column back into the data's batches."""
    import pyarrow as pa

    for payload_batch in payload_batches:
        for payload in payload_batch.column(0).to_pylist():
            with pa.ipc.open_stream(payload) as reader:
                yield from reader


def _column_block(df: pd.DataFrame, columns: Sequence[Hashable], argument: str) -> np.ndarray:
    """Stack columns into a 2-D array; a column holding arrays (list/Vector) is expanded in place."""
    blocks = []
    for column in columns:
        values = df[column].to_numpy()
        if values.dtype == object and len(values) and isinstance(values[0], (list, tuple, np.ndarray)):
            try:
                values = np.stack([np.asarray(v) for v in values])
            except ValueError as error:
                raise InvalidArgumentError(f"{argument}: column {column!r} holds arrays of different lengths") from error
        blocks.append(values.reshape(len(df), int(np.prod(values.shape[1:], dtype=np.int64))))
    return np.concatenate(blocks, axis=1) if len(blocks) > 1 else blocks[0]


def pandas_to_feature_label(df: pd.DataFrame, feature_cols: Sequence[Hashable], label_cols: Sequence[Hashable]) -> dict[str, np.ndarray]:
    """Orca's assembled form of a pandas shard: ``{"x": features, "y": labels}`` as 2-D arrays.

    Examples
    --------
    >>> frame = pd.DataFrame({"a": [1.0, 2.0], "b": [3.0, 4.0], "t": [0, 1]})
    >>> pandas_to_feature_label(frame, ["a", "b"], ["t"])["x"].shape
    (2, 2)
    """
    from zoo_lite.data.partition_ops import check_columns

    check_columns(df, feature_cols, "feature_cols")
    check_columns(df, label_cols, "label_cols")
    return {"x": _column_block(df, feature_cols, "feature_cols"), "y": _column_block(df, label_cols, "label_cols")}


# ---------------------------------------------------------------------------------------------
# Spark DataFrame ⇄ RDD of pandas shards, executor-side
# ---------------------------------------------------------------------------------------------

def spark_df_to_arrow_rdd(df: "pyspark.sql.DataFrame") -> "pyspark.RDD":
    """An RDD with one Arrow table per partition of ``df``, converted on the executors.

    Spark's executors write each partition as Arrow record batches (``toArrowBatchRdd``); the
    Python workers read them with the schema, so nothing passes the driver and no Row object is
    made.
    """
    from pyspark.rdd import RDD
    from pyspark.serializers import NoOpSerializer
    from pyspark.sql.pandas.types import to_arrow_schema

    session = df.sparkSession
    timezone = session.conf.get("spark.sql.session.timeZone") or "UTC"
    max_rows = int(session.conf.get("spark.sql.execution.arrow.maxRecordsPerBatch") or 10_000)
    schema = to_arrow_schema(df.schema, timezone=timezone, prefers_large_types=False)
    jrdd = df._jdf.toArrowBatchRdd(max_rows, timezone, False, False).toJavaRDD()
    batches = RDD(jrdd, session.sparkContext, NoOpSerializer())

    @raising_transportably
    def to_table(payloads: Iterator[bytes]) -> list["pa.Table"]:
        return [record_batches_to_table(payloads, schema)]

    return batches.mapPartitions(to_table, preservesPartitioning=True)


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
                                 argument: str = "data") -> "pyspark.RDD":
    """An RDD with the model arrays (``{"x": (ndarray, ...), "y": ndarray}``) of each partition of
    ``df``, converted on the executors through Arrow; lazy.

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

    Returns
    -------
    pyspark.RDD
        One model-arrays dict per partition of ``df``.

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
        return _table_to_model_arrays(table, features, labels)

    return spark_df_to_arrow_rdd(selected).map(to_arrays, preservesPartitioning=True)


def pandas_rdd_to_spark_df(rdd: "pyspark.RDD", session: "pyspark.sql.SparkSession",
                           schema: Optional["pa.Schema"] = None, decoder: Optional[str] = None) -> "pyspark.sql.DataFrame":
    """A Spark DataFrame from an RDD of pandas frames (or dicts of arrays), converted on the executors.

    Each shard becomes Arrow IPC payloads in a binary column (one row per 64k data rows), and a
    ``mapInArrow`` on the executors decodes them into record batches. With ``schema``, every shard
    is cast to it on its way in. Without, the shards are converted once, each with its own types,
    into a cached payload table: the driver unifies the partitions' schemas from small schema
    records in that cache (a filter in the JVM, no second pass over the shards), and decoding
    casts only the batches whose types differ. The cache is on the executors' local disk, and is
    released when the returned DataFrame object is garbage-collected (or the context stops).

    Without ``schema``, the cached batches are decoded by Spark itself through zoo_lite's JVM
    helper (:mod:`zoo_lite.data.jvm`) where it loads, with no Python process at action time;
    ``decoder`` chooses: None (the helper where it loads, else Python), "jvm" or "python".
    """
    from pyspark.sql.pandas.types import from_arrow_schema

    if decoder not in (None, "jvm", "python"):
        raise InvalidArgumentError(f"decoder={decoder!r}: choose None, 'jvm' or 'python'")
    if schema is None:
        helper = None if decoder == "python" else arrow_frames(session.sparkContext)
        if helper is None and decoder == "jvm":
            raise InvalidArgumentError(f"decoder='jvm': zoo_lite's JVM helper does not load on this Spark ({session.version}); "
                                       "use decoder=None to fall back to Python")
        return _one_pass_spark_df(rdd, session) if helper is None else _jvm_decoded_spark_df(rdd, session, helper)
    spark_schema = from_arrow_schema(schema, prefer_timestamp_ntz=False)
    wire = spark_arrow_schema(spark_schema)  # e.g. pandas' nanoseconds as Spark's microseconds
    payloads = session.createDataFrame(rdd.mapPartitionsWithIndex(functools.partial(_cast_payload_rows, schema=wire)),
                                       "payload binary")
    return payloads.mapInArrow(ipc_payloads_to_batches, spark_schema)


#: the cached payload table of a one-pass to_spark_df: one schema record per partition, then its data
_PAYLOAD_TABLE = "part int, kind tinyint, payload binary"
_SCHEMA_RECORD, _DATA_RECORD = 0, 1
_ROWS_KEY = b"zoo_lite.rows"


def _one_pass_spark_df(rdd: "pyspark.RDD", session: "pyspark.sql.SparkSession") -> "pyspark.sql.DataFrame":
    import weakref

    from pyspark import StorageLevel
    from pyspark.sql.pandas.types import from_arrow_schema

    from zoo_lite.data.spark_jobs import run_job

    table = session.createDataFrame(rdd.mapPartitionsWithIndex(_own_payload_rows), _PAYLOAD_TABLE)
    # on disk, not in the JVM's heap: it is read once or twice, and the heap is what bounds the JVM's memory
    table = table.persist(StorageLevel.DISK_ONLY)
    try:
        records = run_job(session.sparkContext, table.where(f"kind = {_SCHEMA_RECORD}").select("part", "payload").collect)
        target = _target_schema([(int(row["part"]), _ipc_schema(bytes(row["payload"]))) for row in records])
    except BaseException:
        table.unpersist()
        raise
    data = table.where(f"kind = {_DATA_RECORD}").select("payload")
    spark_schema = from_arrow_schema(target, prefer_timestamp_ntz=False)
    frame = data.mapInArrow(functools.partial(ipc_payloads_as, schema=spark_arrow_schema(spark_schema)), spark_schema)
    weakref.finalize(frame, _unpersist_quietly, table)
    return frame


# the JVM-decoded form: each record is a tag byte and an Arrow IPC message (ArrowFrames.java)
_SCHEMA_TAG, _BATCH_TAG = 0, 1
_PART_KEY = b"zoo_lite.part"


def _jvm_decoded_spark_df(rdd: "pyspark.RDD", session: "pyspark.sql.SparkSession", helper: Any) -> "pyspark.sql.DataFrame":
    """One pass, decoded by Spark: the shards become Arrow record batches once, cached on the
    executors' disk with a schema record per partition; the driver unifies the schemas, and the
    JVM helper turns the batches into rows with no Python process at action time. A partition
    whose types are not the unified schema's in Spark's Arrow layout is cast by a Python pass over
    the cache (e.g. int where another partition has float, or pandas' nanosecond timestamps)."""
    import weakref

    from pyspark import StorageLevel
    from pyspark.sql import DataFrame
    from pyspark.sql.pandas.types import from_arrow_schema

    from zoo_lite.data.spark_jobs import run_job

    sc = session.sparkContext
    records = _raw_bytes_rdd(rdd.mapPartitionsWithIndex(_tagged_arrow_records))
    cached = records._jrdd.persist(sc._getJavaStorageLevel(StorageLevel.DISK_ONLY))
    try:
        bodies = run_job(sc, lambda: helper.collectTagged(cached, _SCHEMA_TAG))
        schema_records = [(int(schema.metadata[_PART_KEY]), schema) for schema in (_ipc_schema(bytes(body)) for body in bodies)]
        target = _target_schema(schema_records)
        spark_schema = from_arrow_schema(target, prefer_timestamp_ntz=False)
        wire = spark_arrow_schema(spark_schema)
        batches = cached
        if any(not schema.equals(wire) for _, schema in schema_records):  # metadata is not compared
            cast = functools.partial(_cast_tagged_records, schema=wire)
            batches = _raw_bytes_rdd(_bytes_rdd_of(cached, sc).mapPartitionsWithIndex(cast))._jrdd
        frame = DataFrame(helper.toDataFrame(batches, _BATCH_TAG, spark_schema.json(), session._jsparkSession), session)
    except BaseException:
        cached.unpersist()
        raise
    weakref.finalize(frame, _unpersist_quietly, cached, True)
    return frame


def spark_arrow_schema(spark_schema: "pyspark.sql.types.StructType") -> "pa.Schema":
    """The Arrow schema Spark reads a DataFrame of ``spark_schema`` in: its exact types and field
    names (microsecond UTC timestamps, ``element`` list items), as the JVM decodes by layout.

    Examples
    --------
    >>> from pyspark.sql.types import ArrayType, LongType, StructField, StructType
    >>> spark_arrow_schema(StructType([StructField("a", ArrayType(LongType()))])).field("a").type
    ListType(list<element: int64>)
    """
    from pyspark.sql.pandas.types import to_arrow_schema

    return to_arrow_schema(spark_schema, timezone="UTC", prefers_large_types=False)


def _raw_bytes_rdd(rdd: "pyspark.RDD") -> "pyspark.RDD":
    """``rdd``, whose elements are bytes, handed to the JVM as they are: one byte[] each, unpickled."""
    rdd._bypass_serializer = True  # pyspark's own switch (saveAsTextFile uses it)
    return rdd


def _bytes_rdd_of(jrdd: Any, sc: "pyspark.SparkContext") -> "pyspark.RDD":
    """A Python view of a JVM RDD of byte[]: each element arrives as bytes."""
    from pyspark import RDD
    from pyspark.serializers import NoOpSerializer

    return RDD(jrdd, sc, NoOpSerializer())


def _ipc_schema(body: bytes) -> "pa.Schema":
    import pyarrow as pa

    return pa.ipc.open_stream(body).schema


@raising_transportably
def _tagged_arrow_records(partition_index: int, shards: Iterable[Any]) -> Iterator[bytes]:
    """One partition as tagged records: its schema record (its own types, shards of the partition
    unified, with its index and row count), then one record batch of at most ``PAYLOAD_ROWS`` rows
    per record."""
    tables = _partition_tables(partition_index, shards)
    if not tables:
        return
    yield _tagged(_SCHEMA_TAG, _schema_payload(tables[0].schema, sum(t.num_rows for t in tables), partition_index))
    for table in tables:
        for batch in table.to_batches(max_chunksize=PAYLOAD_ROWS):
            yield _tagged(_BATCH_TAG, batch.serialize())


def _tagged(tag: int, message: Any) -> bytes:
    """A record: the tag byte, then the IPC message (bytes or an Arrow buffer), copied once."""
    return b"".join((bytes((tag,)), message))


@raising_transportably
def _cast_tagged_records(partition_index: int, records: Iterable[bytes], schema: "pa.Schema") -> Iterator[bytes]:
    """A partition's cached records with its batches cast to ``schema`` (the schema record first
    tells the batches' own types); batches already of ``schema`` pass as they are."""
    import pyarrow as pa

    own: Optional["pa.Schema"] = None
    for record in records:
        if record[0] == _SCHEMA_TAG:
            own = _ipc_schema(record[1:])
            yield record
        elif own is not None and own.equals(schema):
            yield record
        else:
            batch = pa.ipc.read_record_batch(pa.py_buffer(record)[1:], own)
            yield _tagged(_BATCH_TAG, _cast_arrow_table(batch, schema, partition_index).serialize())


def _unpersist_quietly(cached: Any, blocking: bool = False) -> None:
    """Release a cached DataFrame, or JVM RDD (``blocking``: done when this returns, so that Spark's
    own cleaner of unreachable RDDs, which may run right after, finds nothing left to remove
    instead of racing for the same blocks and warning about each)."""
    try:
        cached.unpersist(blocking)
    except Exception:  # noqa: BLE001 - the context may be gone already, and its cache with it
        pass


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


def _schema_payload(schema: "pa.Schema", rows: int, partition_index: Optional[int] = None) -> bytes:
    """An IPC stream with only ``schema`` (carrying the partition's row count, and its index when
    given), no batch."""
    import pyarrow as pa

    metadata = {_ROWS_KEY: str(rows).encode()}
    if partition_index is not None:
        metadata[_PART_KEY] = str(partition_index).encode()
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, schema.with_metadata(metadata)):
        pass
    return sink.getvalue().to_pybytes()


def table_payloads(table: "pa.Table") -> Iterator[bytes]:
    """Self-contained Arrow IPC streams (schema + one batch of at most ``PAYLOAD_ROWS`` rows each) of a table."""
    import pyarrow as pa

    for batch in table.to_batches(max_chunksize=PAYLOAD_ROWS):
        sink = pa.BufferOutputStream()
        with pa.ipc.new_stream(sink, table.schema) as writer:
            writer.write_batch(batch)
        yield sink.getvalue().to_pybytes()


@raising_transportably
def _own_payload_rows(partition_index: int, shards: Iterable[Any]) -> list[tuple[int, int, bytearray]]:
    """One partition as payload-table rows: its schema record, then its data in its own types
    (shards of one partition unified, so the record speaks for all of them)."""
    tables = _partition_tables(partition_index, shards)
    if not tables:
        return []
    rows = [(partition_index, _SCHEMA_RECORD, bytearray(_schema_payload(tables[0].schema, sum(t.num_rows for t in tables))))]
    for table in tables:
        rows.extend((partition_index, _DATA_RECORD, bytearray(payload)) for payload in table_payloads(table))
    return rows


def _partition_tables(partition_index: int, shards: Iterable[Any]) -> list["pa.Table"]:
    """A partition's shards as Arrow tables of one schema: the shards' own types unified, so that
    the partition's schema record speaks for all of them."""
    tables = [shard_arrow_table(shard) for shard in shards]
    if len(tables) < 2:
        return tables
    schema = unify_arrow_schemas([(partition_index, table.schema) for table in tables])
    return [table if table.schema.equals(schema) else _cast_arrow_table(table, schema, partition_index) for table in tables]


def _target_schema(records: Sequence[tuple[int, "pa.Schema"]]) -> "pa.Schema":
    """The DataFrame's schema from the partitions' schema records (each partition's schema, with
    its row count in the metadata): the non-empty partitions' schemas unified (an empty
    partition's types are unknown, e.g. null for a string column)."""
    if not records:
        raise InvalidArgumentError("to_spark_df() on an XShards with no shards: pass schema= to build an empty DataFrame")
    schemas = []
    for part, schema in sorted(records, key=lambda record: record[0]):
        schemas.append((part, int(schema.metadata[_ROWS_KEY]) > 0, schema.remove_metadata()))
    non_empty = [(part, schema) for part, filled, schema in schemas if filled]
    return unify_arrow_schemas(non_empty or [(part, schema) for part, _, schema in schemas[:1]]).remove_metadata()


def _cast_arrow_table(table: T, schema: "pa.Schema", partition_index: Optional[int], noun: str = "column") -> T:
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


def ipc_payloads_as(payload_batches: Iterable["pa.RecordBatch"], schema: "pa.Schema") -> Iterator["pa.RecordBatch"]:
    """Inside ``mapInArrow``: decode the payload column into batches of ``schema``, casting the
    batches of a partition whose own types differ (int where another partition has float)."""
    for batch in ipc_payloads_to_batches(payload_batches):
        yield batch if batch.schema.equals(schema) else _cast_arrow_table(batch, schema, None)


@raising_transportably
def _cast_payload_rows(partition_index: int, shards: Iterable[Any], schema: "pa.Schema") -> list[tuple[bytearray]]:
    return [(bytearray(payload),) for shard in shards for payload in pandas_to_ipc_payloads(shard, schema, partition_index)]


# ---------------------------------------------------------------------------------------------
# Model arrays: the per-shard form the Estimators train on
#   {"x": (ndarray, ...), "y": ndarray}  one array per model input; "y" absent for prediction
# ---------------------------------------------------------------------------------------------

def _arrow_column_to_numpy(column: "pa.ChunkedArray", name: Hashable, argument: str, strings: bool = False) -> np.ndarray:
    """A numeric or (nested) fixed-width list column as one ndarray, vectorised (no per-row work);
    with ``strings``, string columns too, as object arrays of ``str``."""
    import pyarrow as pa
    import pyarrow.compute as pc

    array = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    if array.null_count:
        raise InvalidArgumentError(f"{argument}: column {name!r} has {array.null_count} null value(s); fill or drop them first")
    shape = [len(array)]
    while pa.types.is_list(array.type) or pa.types.is_large_list(array.type) or pa.types.is_fixed_size_list(array.type):
        lengths = pc.list_value_length(array).to_numpy(zero_copy_only=False)
        width = int(lengths[0]) if len(lengths) else 0
        if len(lengths) and not (lengths == width).all():
            # error path only: the levels above are regular, so element i of this level is in row i // per_row
            level, odd = len(shape), int(np.argmax(lengths != width))
            per_row = int(np.prod(shape[1:], dtype=np.int64))
            raise InvalidArgumentError(
                f"{argument}: column {name!r} holds arrays of different lengths ({int(lengths.min())} to "
                f"{int(lengths.max())}) at nesting level {level}: length {width} in row 0 and length {int(lengths[odd])} in "
                f"row {odd // per_row}; every row of a column must have the same shape"
            )
        shape.append(width)
        array = array.flatten()
        if array.null_count:
            raise InvalidArgumentError(f"{argument}: column {name!r} has null elements inside its arrays; fill them first")
    if strings and (pa.types.is_string(array.type) or pa.types.is_large_string(array.type)):
        return array.to_numpy(zero_copy_only=False).reshape(shape)   # object array of str: Keras makes a string tensor
    if not (pa.types.is_integer(array.type) or pa.types.is_floating(array.type) or pa.types.is_boolean(array.type)):
        raise InvalidArgumentError(
            f"{argument}: column {name!r} has type {column.type}, which is not numeric; the model is fed numeric, "
            "array-of-numeric or Vector columns: encode it first (e.g. StringIndexer, or a numeric cast)"
        )
    return array.to_numpy(zero_copy_only=False).reshape(shape)


def _vector_struct_to_numpy(array: "pa.StructArray") -> np.ndarray:
    """A Spark ML Vector column as it reaches an Arrow UDF (a struct of type, size, indices and
    values; type 1 is dense, 0 sparse) as a dense ``(rows, size)`` float64 array, vectorised."""
    import pyarrow.compute as pc

    rows = len(array)
    fields = dict(zip([field.name for field in array.type], array.flatten()))   # flatten() honours a slice's offset
    kinds = fields["type"].to_numpy(zero_copy_only=False)
    values = fields["values"]
    counts = pc.list_value_length(values).fill_null(0).to_numpy(zero_copy_only=False)
    sizes = np.where(kinds == 1, counts, fields["size"].fill_null(0).to_numpy(zero_copy_only=False))
    if rows and not (sizes == sizes[0]).all():
        raise InvalidArgumentError(f"a Vector column holds vectors of different sizes ({int(sizes.min())} to {int(sizes.max())})")
    out = np.zeros((rows, int(sizes[0]) if rows else 0), dtype=np.float64)
    flat_values = values.flatten().to_numpy(zero_copy_only=False)
    row_of_value = np.repeat(np.arange(rows), counts)
    # a dense vector's values fill its row in order; a sparse one's go where its indices say
    starts = np.cumsum(counts) - counts
    column_of_value = np.arange(len(flat_values)) - np.repeat(starts, counts)
    sparse_values = np.repeat(kinds != 1, counts)
    column_of_value[sparse_values] = fields["indices"].flatten().to_numpy(zero_copy_only=False)
    out[row_of_value, column_of_value] = flat_values
    return out


def _fixed_width(values: np.ndarray) -> "pa.Array":
    import pyarrow as pa

    return pa.FixedSizeListArray.from_arrays(pa.array(values.reshape(-1)), values.shape[1])


def _is_vector_struct(array: Any) -> bool:
    import pyarrow as pa

    return pa.types.is_struct(array.type) and {field.name for field in array.type} == {"type", "size", "indices", "values"}


def dense_vectors_of_arrow(column: "pa.Array") -> "pa.Array":
    """``column`` as a model input: a Spark ML Vector column as it reaches an Arrow UDF (a struct of
    type, size, indices and values) becomes fixed-width lists of its dense values; any other
    column is returned as it is.

    Examples
    --------
    >>> import pyarrow as pa
    >>> sparse_and_dense = pa.array([{"type": 0, "size": 3, "indices": [2], "values": [5.0]},
    ...                              {"type": 1, "size": None, "indices": None, "values": [1.0, 2.0, 3.0]}])
    >>> dense_vectors_of_arrow(sparse_and_dense).to_pylist()
    [[0.0, 0.0, 5.0], [1.0, 2.0, 3.0]]
    """
    return _fixed_width(_vector_struct_to_numpy(column)) if _is_vector_struct(column) else column


def _labels(blocks: list[np.ndarray]) -> np.ndarray:
    """One label column as it is; several as one 2-D block."""
    if len(blocks) == 1:
        return blocks[0]
    return np.concatenate([block.reshape(len(block), -1) for block in blocks], axis=1)


def _table_to_model_arrays(table: "pa.Table", feature_cols: Sequence[Hashable],
                           label_cols: Optional[Sequence[Hashable]], strings: bool = False) -> dict[str, Any]:
    """Model arrays of a table whose columns were checked already (by name: ``str(column)``);
    ``strings`` takes string feature columns (labels stay numeric)."""
    return _assemble_model_arrays(
        lambda c, argument: _arrow_column_to_numpy(table.column(str(c)), c, argument, strings and argument == "feature_cols"),
        feature_cols, label_cols)


def _assemble_model_arrays(column_array: Callable[[Hashable, str], np.ndarray], feature_cols: Sequence[Hashable],
                           label_cols: Optional[Sequence[Hashable]]) -> dict[str, Any]:
    """``{"x": one array per feature column, "y": the labels}``; ``column_array(column, argument)``
    converts one column, ``argument`` naming it in errors."""
    arrays: dict[str, Any] = {"x": tuple(column_array(c, "feature_cols") for c in feature_cols)}
    if label_cols:
        arrays["y"] = _labels([column_array(c, "label_cols") for c in label_cols])
    return arrays


def arrow_to_model_arrays(table: "pa.Table", feature_cols: Sequence[Hashable],
                          label_cols: Optional[Sequence[Hashable]], *, strings: bool = False) -> dict[str, Any]:
    """Model arrays from an Arrow table: one input per name in ``feature_cols`` (an array column is
    one input of that width) and the label columns as ``"y"``. With ``strings``, string and
    (nested, fixed-length) list<string> feature columns become object arrays of ``str`` (for a
    Keras model that takes string tensors); otherwise they are refused.

    Examples
    --------
    >>> import pyarrow as pa
    >>> table = pa.table({"a": [1.0, 2.0], "v": [[1, 2], [3, 4]], "t": [0, 1]})
    >>> arrays = arrow_to_model_arrays(table, ["a", "v"], ["t"])
    >>> [x.shape for x in arrays["x"]], arrays["y"].tolist()
    ([(2,), (2, 2)], [0, 1])
    >>> words = arrow_to_model_arrays(pa.table({"w": [["a", "b"], ["c", "d"]]}), ["w"], None, strings=True)["x"][0]
    >>> words.shape, words.dtype, words[1, 0]
    ((2, 2), dtype('O'), 'c')
    """
    _check_table_columns(table, feature_cols, "feature_cols")
    _check_table_columns(table, list(label_cols or []), "label_cols")
    return _table_to_model_arrays(table, feature_cols, label_cols, strings)


def _check_table_columns(table: "pa.Table", columns: Sequence[Hashable], argument: str) -> None:
    from zoo_lite.data.partition_ops import require_columns

    require_columns(table.column_names, [str(column) for column in columns], argument, "the data has")


def pandas_to_model_arrays(df: pd.DataFrame, feature_cols: Sequence[Hashable],
                           label_cols: Optional[Sequence[Hashable]]) -> dict[str, Any]:
    """Model arrays from a pandas shard (see :func:`arrow_to_model_arrays`).

    A column whose cells are arrays (ndarrays of any number of dimensions, or nested lists) is
    one model input of shape ``(rows, *cell_shape)``, in the cells' dtype; label columns too.

    Parameters
    ----------
    df : pandas.DataFrame
        The shard.
    feature_cols : sequence of column labels
        The model's inputs, one per column, in order.
    label_cols : sequence of column labels or None
        The label columns, which become ``"y"``; None for none.

    Returns
    -------
    dict
        ``{"x": (ndarray, ...), "y": ndarray}``, ``"y"`` absent without ``label_cols``.

    Raises
    ------
    ColumnNotFoundError
        A column is not in ``df``.
    InvalidArgumentError
        A column is not numeric, has missing values (None, NaN), or holds cells of different
        shapes; the message names the argument, the column and the offending row(s).

    Examples
    --------
    >>> frame = pd.DataFrame({"a": [1.0, 2.0], "b": [3, 4], "t": [0.5, 1.5]})
    >>> arrays = pandas_to_model_arrays(frame, ["a", "b"], ["t"])
    >>> len(arrays["x"]), arrays["y"].tolist()
    (2, [0.5, 1.5])
    >>> images = pd.DataFrame({"img": [np.zeros((2, 3), np.float32), np.ones((2, 3), np.float32)], "t": [0, 1]})
    >>> x = pandas_to_model_arrays(images, ["img"], ["t"])["x"][0]
    >>> x.shape, x.dtype
    ((2, 2, 3), dtype('float32'))
    >>> ragged = pd.DataFrame({"img": [np.zeros((2, 3)), np.zeros((1, 3))]})
    >>> pandas_to_model_arrays(ragged, ["img"], None)
    Traceback (most recent call last):
    ...
    zoo_lite.errors.InvalidArgumentError: feature_cols: column 'img' holds cells of different shapes: (2, 3) in row 0 and (1, 3) in row 1; every row of a column must have the same shape
    """
    from zoo_lite.data.partition_ops import check_columns

    check_columns(df, feature_cols, "feature_cols")
    check_columns(df, list(label_cols or []), "label_cols")
    converted: dict[Hashable, np.ndarray] = {}

    def column_array(column: Hashable, argument: str) -> np.ndarray:
        # a column that is both a feature and a label is converted once
        if column not in converted:
            converted[column] = _pandas_column_to_numpy(df[column], column, argument)
        return converted[column]

    return _assemble_model_arrays(column_array, feature_cols, label_cols)


# Cells that make a pandas column of arrays (one tensor per row)
_ARRAY_CELLS = (np.ndarray, list, tuple)


def _pandas_column_to_numpy(column: pd.Series, name: Hashable, argument: str) -> np.ndarray:
    """One pandas column as one model input: through Arrow, which is fastest for numbers, 1-D
    array cells and nested lists; cells Arrow refuses (N-d ndarrays) are stacked with NumPy."""
    if column.dtype != object:
        return _arrow_column_to_numpy(_pandas_column_to_arrow(column, name, argument), name, argument)
    values = column.to_numpy()
    if not len(values):
        # an empty shard has no cell to take a shape or dtype from; concat_model_arrays skips it
        return np.empty(0)
    try:
        return _arrow_column_to_numpy(_pandas_column_to_arrow(column, name, argument), name, argument)
    except InvalidArgumentError as error:
        if not any(isinstance(cell, _ARRAY_CELLS) for cell in values):
            raise  # strings, dicts, objects: Arrow's error is the clear one
        return _stack_cells(values, name, argument, error)


def _stack_cells(values: np.ndarray, name: Hashable, argument: str, arrow_error: InvalidArgumentError) -> np.ndarray:
    """Array cells as one ``(rows, *cell_shape)`` array; any cell that keeps them from stacking
    into one numeric array without NaN is an error naming its row."""
    try:
        stacked = np.stack(values)  # one pass over the cells, in C
    except (ValueError, TypeError):
        stacked = None
    # NaN is a missing value, as in a numeric column; min() propagates it and, unlike isnan().any(),
    # makes no temporary array (about 2.5x faster)
    if stacked is not None and stacked.dtype.kind in "biuf" and not (
            stacked.dtype.kind == "f" and stacked.size and np.isnan(stacked.min())):
        return stacked
    error = _bad_cell_error(values, name, argument)
    if error is None:
        raise arrow_error
    raise error from arrow_error


def _shape_text(shape: tuple[int, ...]) -> str:
    return f"{shape} (a scalar)" if shape == () else str(shape)


def _bad_cell_error(values: np.ndarray, name: Hashable, argument: str) -> Optional[InvalidArgumentError]:
    """The first cell of a column of array cells that cannot join the others, as an error naming
    its row (error path only: one Python pass over the cells)."""
    where = f"{argument}: column {name!r}"
    first: Optional[tuple[int, tuple[int, ...]]] = None
    for row, cell in enumerate(values):
        if pd.api.types.is_scalar(cell) and pd.isna(cell):
            return InvalidArgumentError(f"{where} has a missing cell ({cell!r}) in row {row}; fill or drop the rows with missing cells first")
        try:
            array = np.asarray(cell)
        except ValueError:
            return InvalidArgumentError(
                f"{where} holds a nested list whose sublists differ in length in row {row}; every cell must be a "
                "rectangular array"
            )
        if array.dtype == object and any(element is None for element in array.flat):
            return InvalidArgumentError(f"{where} has None elements inside its cell in row {row}; fill them first")
        if array.dtype.kind not in "biuf":
            return InvalidArgumentError(
                f"{where} holds a {type(cell).__name__} cell of dtype {array.dtype} in row {row}, which is not numeric; the "
                "model is fed numeric cells: encode or cast them first"
            )
        if array.dtype.kind == "f" and np.isnan(array).any():
            return InvalidArgumentError(f"{where} has NaN elements inside its cell in row {row}; fill them first")
        if first is None:
            first = (row, array.shape)
        elif array.shape != first[1]:
            return InvalidArgumentError(
                f"{where} holds cells of different shapes: {_shape_text(first[1])} in row {first[0]} and "
                f"{_shape_text(array.shape)} in row {row}; every row of a column must have the same shape"
            )
    return None


def _pandas_column_to_arrow(column: pd.Series, name: Hashable, argument: str) -> "pa.Array":
    import pyarrow as pa

    try:
        return pa.array(column, from_pandas=True)
    except (pa.ArrowInvalid, pa.ArrowTypeError) as error:
        raise InvalidArgumentError(
            f"{argument}: column {name!r} (pandas dtype {column.dtype}) cannot be fed to a model: {error}"
        ) from error


def dict_to_model_arrays(shard: Any, columns: Optional[Columns] = None) -> dict[str, Any]:
    """Check an ``{"x": ndarray | tuple of ndarrays, "y": ndarray}`` shard and give it the normal
    form (``"x"`` always a tuple). With ``columns.features``, the shard's entries of those keys
    are the inputs instead, in that order, and its ``columns.labels`` entries are ``"y"``.

    Examples
    --------
    >>> arrays = dict_to_model_arrays({"x": np.zeros((3, 2)), "y": np.ones(3)})
    >>> len(arrays["x"]), arrays["y"].shape
    (1, (3,))
    """
    if columns is not None and columns.features is not None:
        inputs = _dict_entries(shard, columns.features, "feature_cols")
        labels = _dict_entries(shard, columns.labels or (), "label_cols")
    else:
        if not isinstance(shard, dict) or "x" not in shard:
            raise InvalidArgumentError(
                f"a shard is a {type(shard).__name__} with keys {sorted(map(str, shard)) if isinstance(shard, dict) else '-'}; "
                "the Estimators take XShards of {'x': ndarray or tuple of ndarrays, 'y': ndarray}, or pandas shards with "
                "feature_cols and label_cols"
            )
        several = isinstance(shard["x"], (tuple, list))
        values = tuple(shard["x"]) if several else (shard["x"],)
        inputs = list(zip([f"x[{i}]" for i in range(len(values))] if several else ["x"], values))
        labels = [("y", shard["y"])] if shard.get("y") is not None else []
    features = [(key, _as_numeric_array(value, key)) for key, value in inputs]
    targets = [(key, _as_numeric_array(value, key)) for key, value in labels]
    rows = {key: len(array) for key, array in (*features, *targets)}
    if len(set(rows.values())) > 1:
        raise InvalidArgumentError(f"a shard's features and labels have different row counts {rows}; every entry needs one row per sample")
    arrays: dict[str, Any] = {"x": tuple(array for _, array in features)}
    if targets:
        arrays["y"] = _labels([array for _, array in targets])
    return arrays


def _dict_entries(shard: Any, keys: Sequence[Hashable], argument: str) -> list[tuple[Hashable, Any]]:
    """The entries of ``keys`` of a dict shard, in that order."""
    if not isinstance(shard, dict):
        raise InvalidArgumentError(
            f"{argument}={list(keys)!r} names columns of pandas shards or keys of dict shards, but a shard is a "
            f"{type(shard).__name__}; pass XShards of pandas frames or dicts of ndarrays"
        )
    missing = [key for key in keys if key not in shard]
    if missing:
        raise ColumnNotFoundError(
            f"{argument}={list(keys)!r}: key(s) {missing} not in a dict shard, whose keys are {list(shard)}; "
            f"name keys every shard has in {argument}"
        )
    return [(key, shard[key]) for key in keys]


def shard_to_model_arrays(shard: Any, columns: Columns, need_labels: bool = True) -> dict[str, Any]:
    """Model arrays of one shard of an XShards: a pandas frame (columns ``columns.features``,
    labels ``columns.labels``), or a dict (its ``columns`` keys, or ``{"x": ..., "y": ...}``
    without ``columns.features``). The columns are checked here, once per shard.

    Parameters
    ----------
    shard : pandas.DataFrame or dict
        One shard.
    columns : Columns
        The feature and label columns (or dict keys).
    need_labels : bool, default True
        True to train or evaluate: the result must have ``"y"``. False to predict: labels are
        left out of pandas shards and selected dict entries.

    Returns
    -------
    dict
        ``{"x": (ndarray, ...), "y": ndarray}``, ``"y"`` absent without labels.

    Raises
    ------
    InvalidArgumentError
        A pandas shard without ``columns.features``; a dict shard neither of the ``{"x", "y"}``
        form nor with the keys named; non-numeric data, entries of different row counts; no
        labels with ``need_labels``.
    ColumnNotFoundError
        A column (or dict key) of ``columns`` is not in the shard.

    Examples
    --------
    >>> shard = {"age": np.array([30.0, 40.0]), "height": np.array([1.7, 1.8]), "label": np.array([0, 1])}
    >>> arrays = shard_to_model_arrays(shard, Columns.of(["height", "age"], "label"))
    >>> [x.tolist() for x in arrays["x"]], arrays["y"].tolist()
    ([[1.7, 1.8], [30.0, 40.0]], [0, 1])
    >>> shard_to_model_arrays(shard, Columns.of(["age", "weight"], "label"))
    Traceback (most recent call last):
    ...
    zoo_lite.errors.ColumnNotFoundError: feature_cols=['age', 'weight']: key(s) ['weight'] not in a dict shard, whose keys are ['age', 'height', 'label']; name keys every shard has in feature_cols
    """
    labels = columns.labels if need_labels else None
    if isinstance(shard, pd.DataFrame):
        if columns.features is None:
            raise InvalidArgumentError("the XShards holds pandas DataFrames: pass feature_cols (and label_cols to train or evaluate)")
        arrays = pandas_to_model_arrays(shard, columns.features, labels)
    else:
        arrays = dict_to_model_arrays(shard, Columns(columns.features, labels))
    if need_labels and "y" not in arrays:
        if columns.features is None:
            raise InvalidArgumentError("a shard has no 'y' entry; training and evaluation need {'x': ..., 'y': ...} shards")
        raise InvalidArgumentError(
            f"feature_cols={list(columns.features)!r} was given without label_cols; training and evaluation need "
            "label_cols=[...] too"
        )
    return arrays


def _as_numeric_array(value: Any, key: Hashable) -> np.ndarray:
    array = np.asarray(value)
    if array.ndim == 0 or array.dtype.kind not in "biuf":
        raise InvalidArgumentError(
            f"shard entry {key!r} is {type(value).__name__} of dtype {array.dtype} with shape {array.shape}; "
            "it must be a numeric ndarray with one row per sample"
        )
    return array


def model_arrays_rows(arrays: dict[str, Any]) -> int:
    """Rows of a model-arrays shard."""
    return len(arrays["x"][0])


def concat_model_arrays(shards: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Join model-arrays shards into one (each array concatenated along rows; always a copy, so
    the result is writable even when the shards were read-only views of Ray's object store).

    Examples
    --------
    >>> one = {"x": (np.zeros((2, 3)),), "y": np.zeros(2)}
    >>> joined = concat_model_arrays([one, one])
    >>> joined["x"][0].shape, joined["y"].shape
    ((4, 3), (4,))
    """
    if not shards:
        raise InvalidArgumentError("concat_model_arrays needs at least one shard")
    # an empty shard's array columns have width 0, which would not concatenate with the others
    shards = [shard for shard in shards if model_arrays_rows(shard)] or list(shards[:1])
    widths = {len(shard["x"]) for shard in shards}
    if len(widths) > 1:
        raise InvalidArgumentError(f"shards have different numbers of model inputs {sorted(widths)}; give every shard the same 'x' form")
    with_labels = sum("y" in shard for shard in shards)
    if 0 < with_labels < len(shards):
        raise InvalidArgumentError(
            f"{with_labels} of {len(shards)} shards have labels ('y'); give every shard a 'y' entry, or none of them"
        )
    joined: dict[str, Any] = {"x": tuple(np.concatenate([shard["x"][i] for shard in shards]) for i in range(widths.pop()))}
    if with_labels:
        joined["y"] = np.concatenate([shard["y"] for shard in shards])
    return joined
