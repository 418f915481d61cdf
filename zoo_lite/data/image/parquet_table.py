"""The Parquet table of images that :func:`~zoo_lite.data.image.write_parquet` writes.

Each row keeps an image file's bytes as they are (encoded), its label, and the size of the stored
image; the class names are metadata of the ``label`` column (:data:`CLASSES_KEY`).
:func:`image_table` computes the table on the executors from Spark's ``binaryFile`` rows, decoding
each file once so that only images that decode are written;
:func:`~zoo_lite.data.image.read_parquet` reads it back.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterator, Mapping, Optional

from zoo_lite.data.image.decoding import skipped_param, undecodable
from zoo_lite.data.image.labels import Label, label_of, parent_name
from zoo_lite.errors import streaming_transportably

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark import Accumulator
    from pyspark.sql import DataFrame as SparkDataFrame

__all__ = ["CLASSES_KEY", "image_table"]

#: metadata key, on the table's "label" column, of the class names (index = label)
CLASSES_KEY = "zoo_lite.classes"


def _table_schema(labelled: bool) -> "pa.Schema":
    """The columns of the table write_parquet writes (``label`` only when there are labels)."""
    import pyarrow as pa

    label = [("label", pa.int64())] if labelled else []
    return pa.schema([("path", pa.string()), ("image", pa.binary()), *label,
                      ("height", pa.int32()), ("width", pa.int32()), ("channels", pa.int32())])


def _image_table_rows(batches: Iterator["pa.RecordBatch"], *, label: Label, classes: Optional[Mapping[str, int]],
                      on_error: str, skipped: "Accumulator") -> Iterator["pa.RecordBatch"]:
    """mapInArrow: every decodable image of the batches as a table row (path, image, label,
    height, width, channels); files outside ``classes`` (a label_map) are left out."""
    import io

    import pyarrow as pa
    from PIL import Image
    from pyspark import TaskContext

    schema = _table_schema(label is not None)
    for batch in batches:
        rows: dict[str, list[Any]] = {name: [] for name in schema.names}
        for path, content in zip(batch.column("path").to_pylist(), batch.column("content").to_pylist()):
            if classes is not None and parent_name(path) not in classes:
                continue
            try:
                with Image.open(io.BytesIO(content)) as image:
                    image.load()  # the whole file: a truncated one fails here, not when it is read back
                    height, width, channels = image.height, image.width, len(image.getbands())
            except Exception as error:  # noqa: BLE001 - Pillow's decoders raise many kinds for a bad file
                undecodable("write_parquet", path, error, on_error, skipped)
                continue
            rows["path"].append(path)
            rows["image"].append(content)
            if label is not None:
                rows["label"].append(label_of(label, path, classes, TaskContext.get().partitionId()))
            rows["height"].append(height)
            rows["width"].append(width)
            rows["channels"].append(channels)
        yield pa.RecordBatch.from_pydict(rows, schema=schema)


def image_table(df: "SparkDataFrame", *, label: Label, mapping: Optional[Mapping[str, int]],
                classes: Optional[list[str]], on_error: str) -> "SparkDataFrame":
    """The table write_parquet writes, computed on the executors from the binaryFile rows."""
    import functools

    from pyspark.sql.pandas.types import from_arrow_schema

    sc = df.sparkSession.sparkContext
    skipped = sc.accumulator(frozenset(), skipped_param("write_parquet"))
    rows = functools.partial(_image_table_rows, label=label, classes=mapping, on_error=on_error, skipped=skipped)
    table = df.mapInArrow(streaming_transportably(rows), from_arrow_schema(_table_schema(label is not None)))
    return table.withMetadata("label", {CLASSES_KEY: classes}) if label is not None else table
