"""The only format-conversion module: pandas ⇄ Arrow ⇄ Spark, and pandas → feature/label arrays.

Every conversion is vectorised through Arrow: no Row objects and no per-row Python. The Spark
side exchanges Arrow IPC bytes with the executors' Python workers, so data never passes through
the driver.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Hashable, Iterable, Iterator, Sequence

import numpy as np
import pandas as pd

from zoo_lite.errors import InvalidArgumentError

if TYPE_CHECKING:
    import pyarrow as pa
    import pyspark
    import pyspark.sql

__all__ = [
    "arrow_schema_of_pandas",
    "record_batches_to_pandas",
    "pandas_to_ipc_payloads",
    "ipc_payloads_to_batches",
    "cast_table",
    "pandas_to_feature_label",
    "spark_df_to_pandas_rdd",
    "pandas_rdd_to_spark_df",
]

# Rows per Arrow IPC payload on the way into Spark: small enough that one payload never nears a
# JVM array limit, large enough that per-payload overhead is negligible.
PAYLOAD_ROWS = 65_536


def arrow_schema_of_pandas(df: pd.DataFrame) -> "pa.Schema":
    """The Arrow schema a pandas frame converts to (index not included)."""
    import pyarrow as pa

    return pa.Schema.from_pandas(df, preserve_index=False)


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


def record_batches_to_pandas(payloads: Iterable[bytes], schema: "pa.Schema") -> pd.DataFrame:
    """Join Spark's serialised Arrow record batches (no schema message) into one pandas frame.

    An empty iterable gives an empty frame with the schema's columns and dtypes.
    """
    import pyarrow as pa

    batches = [pa.ipc.read_record_batch(pa.py_buffer(payload), schema) for payload in payloads]
    table = pa.Table.from_batches(batches, schema=schema)
    return table.to_pandas(split_blocks=True, self_destruct=True)


def cast_table(df: pd.DataFrame, schema: "pa.Schema", partition_index: int) -> "pa.Table":
    """Convert a pandas shard to an Arrow table of exactly ``schema``, with a clear error on a
    column that does not fit (instead of nulls or a silent truncation)."""
    import pyarrow as pa

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


def pandas_to_ipc_payloads(df: pd.DataFrame, schema: "pa.Schema", partition_index: int) -> Iterator[bytes]:
    """Self-contained Arrow IPC streams (schema + one batch each) of a pandas shard."""
    import pyarrow as pa

    table = cast_table(df, schema, partition_index)
    for batch in table.to_batches(max_chunksize=PAYLOAD_ROWS):
        sink = pa.BufferOutputStream()
        with pa.ipc.new_stream(sink, schema) as writer:
            writer.write_batch(batch)
        yield sink.getvalue().to_pybytes()


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

def spark_df_to_pandas_rdd(df: "pyspark.sql.DataFrame") -> "pyspark.RDD":
    """An RDD with one pandas frame per partition of ``df``, converted on the executors.

    Spark's executors write each partition as Arrow record batches (``toArrowBatchRdd``); the
    Python workers read them with the schema and build the frame, so nothing passes the driver
    and no Row object is made.
    """
    from pyspark.rdd import RDD
    from pyspark.serializers import NoOpSerializer
    from pyspark.sql.pandas.types import to_arrow_schema

    from zoo_lite.errors import raising_transportably

    session = df.sparkSession
    timezone = session.conf.get("spark.sql.session.timeZone") or "UTC"
    max_rows = int(session.conf.get("spark.sql.execution.arrow.maxRecordsPerBatch") or 10_000)
    schema = to_arrow_schema(df.schema, timezone=timezone, prefers_large_types=False)
    jrdd = df._jdf.toArrowBatchRdd(max_rows, timezone, False, False).toJavaRDD()
    batches = RDD(jrdd, session.sparkContext, NoOpSerializer())

    @raising_transportably
    def to_pandas(payloads: Iterator[bytes]) -> list[pd.DataFrame]:
        return [record_batches_to_pandas(payloads, schema)]

    return batches.mapPartitions(to_pandas, preservesPartitioning=True)


def pandas_rdd_to_spark_df(rdd: "pyspark.RDD", session: "pyspark.sql.SparkSession", schema: "pa.Schema") -> "pyspark.sql.DataFrame":
    """A Spark DataFrame from an RDD of pandas frames, converted on the executors.

    Each shard becomes Arrow IPC payloads in a binary column (one row per 64k data rows); a
    ``mapInArrow`` on the executors decodes them back into record batches of ``schema``.
    """
    from pyspark.sql.pandas.types import from_arrow_schema

    from zoo_lite.errors import raising_transportably

    @raising_transportably
    def to_payload_rows(partition_index: int, shards: Iterator[pd.DataFrame]) -> list[tuple[bytearray]]:
        return [(bytearray(payload),) for shard in shards for payload in pandas_to_ipc_payloads(shard, schema, partition_index)]

    payloads = session.createDataFrame(rdd.mapPartitionsWithIndex(to_payload_rows), "payload binary")
    spark_schema = from_arrow_schema(schema, prefer_timestamp_ntz=False)
    return payloads.mapInArrow(ipc_payloads_to_batches, spark_schema)
