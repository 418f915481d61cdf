"""Prediction where the data is: in the Spark tasks that hold each partition.

The trained model goes to the executors once (a broadcast, kept by each Python worker across
tasks); each task runs it over its own rows. A Spark DataFrame keeps every column and gains
``prediction`` through ``mapInArrow``: rows stay in place and in order, nothing passes the driver,
and the input is read once (moving it into Ray and back would copy every column twice, and
zipping results with a recomputed input is only safe for deterministic inputs).
"""

from __future__ import annotations

import io
import uuid
from typing import TYPE_CHECKING, Any, Hashable, Iterator, Optional

import numpy as np
import torch
from torch import nn

from zoo_lite.errors import InvalidArgumentError, streaming_transportably
from zoo_lite.learn.pytorch.feeds import tensor_from_array
from zoo_lite.learn.pytorch.specs import model_dtype
from zoo_lite.user_code import user_code_by_value

if TYPE_CHECKING:
    import pyarrow as pa
    import pyspark.sql

    from zoo_lite.data.shard import SparkXShards

__all__ = ["predict_spark_df", "predict_xshards", "predict_arrays"]

PREDICTION = "prediction"
_model_cache: dict[str, nn.Module] = {}


class _BroadcastModel:
    """A model sent to the executors once; each Python worker loads it once and keeps it across tasks.

    The cache key is a token made on the driver: a broadcast read on an executor has no id of its own.
    """

    def __init__(self, model: nn.Module) -> None:
        from zoo_lite.context import OrcaContext

        self.token = uuid.uuid4().hex
        self.broadcast = OrcaContext.get_spark_context().broadcast(model_bytes(model))

    def load(self) -> nn.Module:
        model = _model_cache.get(self.token)
        if model is None:
            _model_cache.clear()
            model = torch.load(io.BytesIO(self.broadcast.value), weights_only=False)
            model.eval()
            _model_cache[self.token] = model
        return model


def _task_threads() -> None:
    from pyspark import TaskContext

    context = TaskContext.get()
    cpus = int(context.cpus()) if context is not None else 1
    if torch.get_num_threads() != cpus:
        torch.set_num_threads(cpus)


def predict_arrays(model: nn.Module, inputs: tuple[np.ndarray, ...], batch_size: int) -> np.ndarray:
    """Run ``model`` over the input arrays in batches; one output row per input row."""
    dtype = model_dtype(model)
    tensors = tuple(tensor_from_array(x, dtype) for x in inputs)
    rows = len(tensors[0])
    outputs = []
    with torch.no_grad():
        for start in range(0, rows, batch_size):
            output = model(*(t[start:start + batch_size] for t in tensors))
            if not isinstance(output, torch.Tensor):
                raise InvalidArgumentError(
                    f"predict: the model returned a {type(output).__name__}; predict supports models that return one tensor"
                )
            outputs.append(output.numpy())
    if not outputs:
        return np.zeros((0,), dtype=np.float32)
    joined = np.concatenate(outputs)
    return joined.reshape(rows) if joined.ndim == 2 and joined.shape[1] == 1 else joined


def model_bytes(model: nn.Module) -> bytes:
    """The whole model as bytes; its class goes by value when it lives in the user's project."""
    from pyspark import cloudpickle

    buffer = io.BytesIO()
    with user_code_by_value():
        torch.save(model, buffer, pickle_module=cloudpickle)
    return buffer.getvalue()


def _prediction_column(predictions: np.ndarray) -> "pa.Array":
    import pyarrow as pa

    flat = np.ascontiguousarray(predictions, dtype=np.float32)
    if flat.ndim == 1:
        return pa.array(flat)
    width = int(np.prod(flat.shape[1:]))
    offsets = np.arange(0, (len(flat) + 1) * width, width, dtype=np.int32)
    return pa.ListArray.from_arrays(pa.array(offsets), pa.array(flat.reshape(-1)))


def predict_spark_df(df: "pyspark.sql.DataFrame", model: nn.Module, feature_cols: list[Hashable],
                     batch_size: int) -> "pyspark.sql.DataFrame":
    """``df`` with a ``prediction`` column (float, or array<float> for wider outputs), in order."""
    from pyspark.ml.functions import vector_to_array
    from pyspark.ml.linalg import VectorUDT
    from pyspark.sql import functions, types

    from zoo_lite.data import convert
    from zoo_lite.learn.base.data_inputs import check_spark_columns

    if PREDICTION in df.columns:
        raise InvalidArgumentError(f"data already has a column {PREDICTION!r}; rename or drop it before predict")
    check_spark_columns(df, feature_cols, "feature_cols")
    # Vector features are read through temporary array columns; the Vector columns themselves pass through
    fields = {field.name: field.dataType for field in df.schema.fields}
    read_as = {name: f"__zoo_lite_feature_{i}" if isinstance(fields[name], VectorUDT) else str(name)
               for i, name in enumerate(feature_cols)}
    extra = [vector_to_array(functions.col(f"`{name}`")).alias(tmp) for name, tmp in read_as.items() if tmp != name]
    source = df.select("*", *extra) if extra else df
    probe = _probe_output(model, source.select(*[functions.col(f"`{c}`") for c in read_as.values()]).limit(1).toArrow(),
                          list(read_as.values()), batch_size)
    prediction_type = types.FloatType() if probe.ndim == 1 else types.ArrayType(types.FloatType(), containsNull=False)
    schema = types.StructType(df.schema.fields + [types.StructField(PREDICTION, prediction_type, nullable=False)])
    shipped = _BroadcastModel(model)
    keep = len(df.columns)
    feature_names = list(read_as.values())

    @streaming_transportably
    def predict(batches: Iterator["pa.RecordBatch"]) -> Iterator["pa.RecordBatch"]:
        import pyarrow as pa

        _task_threads()
        net = shipped.load()
        for batch in batches:
            table = pa.Table.from_batches([batch])
            inputs = convert.arrow_to_model_arrays(table, feature_names, None)["x"]
            column = _prediction_column(predict_arrays(net, inputs, batch_size))
            yield pa.RecordBatch.from_arrays(batch.columns[:keep] + [column], names=batch.schema.names[:keep] + [PREDICTION])

    return source.mapInArrow(predict, schema)


def _probe_output(model: nn.Module, first_row: "pa.Table", feature_names: list[str], batch_size: int) -> np.ndarray:
    """The model's output on one row, to type the prediction column (a zero row if there is none)."""
    from zoo_lite.data import convert

    if first_row.num_rows == 0:
        return np.zeros((0,), dtype=np.float32)
    return predict_arrays(model, convert.arrow_to_model_arrays(first_row, feature_names, None)["x"], batch_size)


def predict_xshards(shards: "SparkXShards", model: nn.Module, feature_cols: Optional[list[Hashable]],
                    batch_size: int) -> "SparkXShards":
    """Each shard with its predictions: dict shards gain ``"prediction"``, pandas shards a column."""
    import pandas as pd

    from zoo_lite.data import convert

    shipped = _BroadcastModel(model)

    def predict(shard: Any) -> Any:
        _task_threads()
        net = shipped.load()
        if isinstance(shard, pd.DataFrame):
            if feature_cols is None:
                raise InvalidArgumentError("predict: the XShards holds pandas DataFrames; pass feature_cols")
            predictions = predict_arrays(net, convert.pandas_to_model_arrays(shard, feature_cols, None)["x"], batch_size)
            return shard.assign(**{PREDICTION: list(predictions) if predictions.ndim > 1 else predictions})
        predictions = predict_arrays(net, convert.dict_to_model_arrays(shard)["x"], batch_size)
        return {**shard, PREDICTION: predictions}

    return shards._map(predict)
