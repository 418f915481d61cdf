"""An RDD of shards (pandas frames or dicts of arrays) → a Spark DataFrame, converted on the
executors: :func:`pandas_rdd_to_spark_df`, behind ``SparkXShards.to_spark_df``.

Three ways in, one per situation:

- with a schema: each shard is cast to it and sent as IPC payloads that ``mapInArrow`` decodes;
- without, decoded in Python: the shards are converted once, in their own types, into a payload
  table cached on the executors' disk, with a schema record per partition; the driver unifies the
  schemas from those records, and ``mapInArrow`` decodes (and casts where types differ);
- without, decoded by the JVM: the same single pass, as tagged records (a tag byte, then an Arrow
  IPC message) that zoo_lite's JVM helper (:mod:`zoo_lite.data.jvm`, ``ArrowFrames.java``) turns
  into rows with no Python process at action time.

The bytes are made by :mod:`~zoo_lite.data.convert.ipc_payloads`, the tables by
:mod:`~zoo_lite.data.convert.pandas_arrow`.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any, Iterable, Iterator, Optional

from zoo_lite.data.convert.ipc_payloads import (PART_KEY, PAYLOAD_ROWS, ipc_payloads_as, ipc_payloads_to_batches, ipc_schema,
                                                pandas_to_ipc_payloads, schema_payload, table_payloads, target_schema)
from zoo_lite.data.convert.pandas_arrow import cast_arrow_table, shard_arrow_table, unify_arrow_schemas
from zoo_lite.data.jvm import arrow_frames
from zoo_lite.errors import InvalidArgumentError, raising_transportably

if TYPE_CHECKING:
    import pyarrow as pa
    import pyspark
    import pyspark.sql

__all__ = ["pandas_rdd_to_spark_df", "spark_arrow_schema"]


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


@raising_transportably
def _cast_payload_rows(partition_index: int, shards: Iterable[Any], schema: "pa.Schema") -> list[tuple[bytearray]]:
    return [(bytearray(payload),) for shard in shards for payload in pandas_to_ipc_payloads(shard, schema, partition_index)]


#: the cached payload table of a one-pass to_spark_df: one schema record per partition, then its data
_PAYLOAD_TABLE = "part int, kind tinyint, payload binary"
_SCHEMA_RECORD, _DATA_RECORD = 0, 1


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
        target = target_schema([(int(row["part"]), ipc_schema(bytes(row["payload"]))) for row in records])
    except BaseException:
        table.unpersist()
        raise
    data = table.where(f"kind = {_DATA_RECORD}").select("payload")
    spark_schema = from_arrow_schema(target, prefer_timestamp_ntz=False)
    frame = data.mapInArrow(functools.partial(ipc_payloads_as, schema=spark_arrow_schema(spark_schema)), spark_schema)
    weakref.finalize(frame, _unpersist_quietly, table)
    return frame


@raising_transportably
def _own_payload_rows(partition_index: int, shards: Iterable[Any]) -> list[tuple[int, int, bytearray]]:
    """One partition as payload-table rows: its schema record, then its data in its own types
    (shards of one partition unified, so the record speaks for all of them)."""
    tables = _partition_tables(partition_index, shards)
    if not tables:
        return []
    rows = [(partition_index, _SCHEMA_RECORD, bytearray(schema_payload(tables[0].schema, sum(t.num_rows for t in tables))))]
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
    return [table if table.schema.equals(schema) else cast_arrow_table(table, schema, partition_index) for table in tables]


# the JVM-decoded form: each record is a tag byte and an Arrow IPC message (ArrowFrames.java)
_SCHEMA_TAG, _BATCH_TAG = 0, 1


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
        schema_records = [(int(schema.metadata[PART_KEY]), schema) for schema in (ipc_schema(bytes(body)) for body in bodies)]
        target = target_schema(schema_records)
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


def _raw_bytes_rdd(rdd: "pyspark.RDD") -> "pyspark.RDD":
    """``rdd``, whose elements are bytes, handed to the JVM as they are: one byte[] each, unpickled."""
    rdd._bypass_serializer = True  # pyspark's own switch (saveAsTextFile uses it)
    return rdd


def _bytes_rdd_of(jrdd: Any, sc: "pyspark.SparkContext") -> "pyspark.RDD":
    """A Python view of a JVM RDD of byte[]: each element arrives as bytes."""
    from pyspark import RDD
    from pyspark.serializers import NoOpSerializer

    return RDD(jrdd, sc, NoOpSerializer())


@raising_transportably
def _tagged_arrow_records(partition_index: int, shards: Iterable[Any]) -> Iterator[bytes]:
    """One partition as tagged records: its schema record (its own types, shards of the partition
    unified, with its index and row count), then one record batch of at most ``PAYLOAD_ROWS`` rows
    per record."""
    tables = _partition_tables(partition_index, shards)
    if not tables:
        return
    yield _tagged(_SCHEMA_TAG, schema_payload(tables[0].schema, sum(t.num_rows for t in tables), partition_index))
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
            own = ipc_schema(record[1:])
            yield record
        elif own is not None and own.equals(schema):
            yield record
        else:
            batch = pa.ipc.read_record_batch(pa.py_buffer(record)[1:], own)
            yield _tagged(_BATCH_TAG, cast_arrow_table(batch, schema, partition_index).serialize())


def _unpersist_quietly(cached: Any, blocking: bool = False) -> None:
    """Release a cached DataFrame, or JVM RDD (``blocking``: done when this returns, so that Spark's
    own cleaner of unreachable RDDs, which may run right after, finds nothing left to remove
    instead of racing for the same blocks and warning about each)."""
    try:
        cached.unpersist(blocking)
    except Exception:  # noqa: BLE001 - the context may be gone already, and its cache with it
        pass
