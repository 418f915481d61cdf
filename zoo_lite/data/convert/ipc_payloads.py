"""Arrow tables ⇄ Arrow IPC bytes, the form shards cross into Spark in (binary column values read
by ``mapInArrow``, or records cached on the executors' disk): no Spark here, only the bytes.

- payloads: self-contained IPC streams (schema and one batch of at most :data:`PAYLOAD_ROWS`
  rows), made from a table or a shard, and decoded back into record batches inside ``mapInArrow``;
- schema records: a stream with only a partition's schema (its own types, with its row count and
  index in the metadata), from which the driver unifies the DataFrame's schema
  (:func:`target_schema`) without a second pass over the shards.

:mod:`~zoo_lite.data.convert.to_spark` puts them into Spark; the tables come from
:mod:`~zoo_lite.data.convert.pandas_arrow`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterable, Iterator, Optional, Sequence

from zoo_lite.data.convert.pandas_arrow import cast_arrow_table, cast_table, unify_arrow_schemas
from zoo_lite.errors import InvalidArgumentError

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = [
    "PAYLOAD_ROWS",
    "PART_KEY",
    "table_payloads",
    "pandas_to_ipc_payloads",
    "ipc_payloads_to_batches",
    "ipc_payloads_as",
    "schema_payload",
    "ipc_schema",
    "target_schema",
]


# Rows per Arrow IPC payload on the way into Spark: small enough that one payload never nears a
# JVM array limit, large enough that per-payload overhead is negligible.
PAYLOAD_ROWS = 65_536


def table_payloads(table: "pa.Table") -> Iterator[bytes]:
    """Self-contained Arrow IPC streams (schema + one batch of at most ``PAYLOAD_ROWS`` rows each) of a table."""
    import pyarrow as pa

    for batch in table.to_batches(max_chunksize=PAYLOAD_ROWS):
        sink = pa.BufferOutputStream()
        with pa.ipc.new_stream(sink, table.schema) as writer:
            writer.write_batch(batch)
        yield sink.getvalue().to_pybytes()


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


def ipc_payloads_as(payload_batches: Iterable["pa.RecordBatch"], schema: "pa.Schema") -> Iterator["pa.RecordBatch"]:
    """Inside ``mapInArrow``: decode the payload column into batches of ``schema``, casting the
    batches of a partition whose own types differ (int where another partition has float)."""
    for batch in ipc_payloads_to_batches(payload_batches):
        yield batch if batch.schema.equals(schema) else cast_arrow_table(batch, schema, None)


# a schema record's metadata: the partition's row count, and its index (which the JVM-decoded form needs)
_ROWS_KEY = b"zoo_lite.rows"
PART_KEY = b"zoo_lite.part"


def schema_payload(schema: "pa.Schema", rows: int, partition_index: Optional[int] = None) -> bytes:
    """An IPC stream with only ``schema`` (carrying the partition's row count, and its index when
    given), no batch."""
    import pyarrow as pa

    metadata = {_ROWS_KEY: str(rows).encode()}
    if partition_index is not None:
        metadata[PART_KEY] = str(partition_index).encode()
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, schema.with_metadata(metadata)):
        pass
    return sink.getvalue().to_pybytes()


def ipc_schema(body: bytes) -> "pa.Schema":
    """The schema of an IPC stream (a schema record's, with its metadata)."""
    import pyarrow as pa

    return pa.ipc.open_stream(body).schema


def target_schema(records: Sequence[tuple[int, "pa.Schema"]]) -> "pa.Schema":
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
