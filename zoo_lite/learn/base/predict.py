"""Prediction where the data is: in the Spark tasks that hold each partition, for any framework.

The trained model goes to the executors once (a broadcast, loaded once by each Python worker and
kept across tasks); each task runs it over its own rows. A Spark DataFrame keeps every column and
gains one column per model output through ``mapInArrow``: rows stay in place and in order,
nothing passes the driver, and the input is read once (moving it into Ray and back would copy
every column twice, and zipping results with a recomputed input is only safe for deterministic
inputs). A framework says how to load and run its model with a :class:`PredictRecipe`.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Hashable, Iterator, Optional, Sequence

import numpy as np

from zoo_lite.errors import InvalidArgumentError, streaming_transportably

if TYPE_CHECKING:
    import pyarrow as pa
    import pyspark.sql

    from zoo_lite.data.shard import SparkXShards

__all__ = ["PredictRecipe", "predict_spark_df", "predict_xshards", "predict_in_batches", "output_names"]

PREDICTION = "prediction"


@dataclass(frozen=True)
class PredictRecipe:
    """How a framework's model reaches a Spark task and runs there (module-level functions only:
    the recipe is pickled into every task).

    ``load(payload) -> model`` runs once per executor Python worker; ``run(model, inputs,
    batch_size)`` returns one array per model output, one row per input row; ``set_threads(n)``
    sizes the framework's thread pool to the task's CPUs at the start of each task.
    """

    load: Callable[[bytes], Any]
    run: Callable[[Any, tuple[np.ndarray, ...], int], list[np.ndarray]]
    set_threads: Callable[[int], None]


def predict_in_batches(run_batch: Callable[[Any, list[np.ndarray]], list[np.ndarray]], model: Any,
                       inputs: Sequence[np.ndarray], batch_size: int) -> list[np.ndarray]:
    """Run a model over its input arrays ``batch_size`` rows at a time: one array per model
    output, a row per input row. ``run_batch(model, batch)`` gives one batch's outputs.

    Examples
    --------
    >>> double = lambda model, batch: [batch[0] * 2]
    >>> predict_in_batches(double, None, [np.arange(5)], batch_size=2)
    [array([0, 2, 4, 6, 8])]
    """
    chunks = [run_batch(model, [x[start:start + batch_size] for x in inputs]) for start in range(0, len(inputs[0]), batch_size)]
    if not chunks:
        return [np.zeros((0,), dtype=np.float32)]
    return [np.concatenate([chunk[i] for chunk in chunks]) for i in range(len(chunks[0]))]


def _task_cpus() -> int:
    """The CPUs Spark gave the running task (``spark.task.cpus``), 1 outside a task."""
    from pyspark import TaskContext

    context = TaskContext.get()
    return int(context.cpus()) if context is not None else 1


def _start_task(recipe: PredictRecipe, shipped: "_BroadcastModel") -> Any:
    """At the start of a Spark task: the framework's threads sized to the task, and the model."""
    recipe.set_threads(_task_cpus())
    return shipped.load()


_model_cache: dict[str, Any] = {}


class _BroadcastModel:
    """A model sent to the executors once; the cache key is a token made on the driver (a
    broadcast read on an executor has no id of its own). Only the latest model is kept."""

    def __init__(self, payload: bytes, recipe: PredictRecipe) -> None:
        from zoo_lite.context import OrcaContext

        self.token = uuid.uuid4().hex
        self.recipe = recipe
        self.broadcast = OrcaContext.get_spark_context().broadcast(payload)

    def load(self) -> Any:
        model = _model_cache.get(self.token)
        if model is None:
            _model_cache.clear()
            model = _model_cache[self.token] = self.recipe.load(self.broadcast.value)
        return model


def output_names(output_cols: Optional[Sequence[str]], outputs: int) -> list[str]:
    """Column names of the model's outputs: ``output_cols`` when given (one per output), else
    ``prediction`` for one output and ``prediction_<i>`` for several.

    Examples
    --------
    >>> output_names(None, 1), output_names(None, 2), output_names(["score"], 1)
    (['prediction'], ['prediction_0', 'prediction_1'], ['score'])
    """
    if output_cols is not None:
        names = [output_cols] if isinstance(output_cols, str) else list(output_cols)
        if len(names) != outputs or not all(isinstance(name, str) and name for name in names):
            raise InvalidArgumentError(
                f"output_cols={output_cols!r}: the model has {outputs} output(s); give one column name per output"
            )
        return names
    return [PREDICTION] if outputs == 1 else [f"{PREDICTION}_{i}" for i in range(outputs)]


def _per_row(outputs: list[np.ndarray]) -> list[np.ndarray]:
    """A ``(rows, 1)`` output becomes one value per row."""
    return [out.reshape(len(out)) if out.ndim == 2 and out.shape[1] == 1 else out for out in outputs]


def _arrow_column(values: np.ndarray) -> "pa.Array":
    import pyarrow as pa

    flat = np.ascontiguousarray(values, dtype=np.float32)
    if flat.ndim == 1:
        return pa.array(flat)
    width = int(np.prod(flat.shape[1:]))
    offsets = np.arange(0, (len(flat) + 1) * width, width, dtype=np.int32)
    return pa.ListArray.from_arrays(pa.array(offsets), pa.array(flat.reshape(-1)))


def _probe_outputs(model: Any, recipe: PredictRecipe, first_row: "pa.Table", feature_names: list[str],
                   batch_size: int) -> Optional[list[np.ndarray]]:
    """The model's outputs on one row, to type the prediction columns (None if there is no row)."""
    from zoo_lite.data import convert

    if first_row.num_rows == 0:
        return None
    return _per_row(recipe.run(model, convert.arrow_to_model_arrays(first_row, feature_names, None)["x"], batch_size))


def predict_spark_df(df: "pyspark.sql.DataFrame", model: Any, payload: bytes, recipe: PredictRecipe,
                     feature_cols: list[Hashable], batch_size: int,
                     output_cols: Optional[Sequence[str]] = None) -> "pyspark.sql.DataFrame":
    """``df`` with one column per model output (float, or array<float> for wider outputs), in order.

    ``model`` is the driver's copy (to type the new columns); ``payload`` is what the executors
    load it from with ``recipe.load``.
    """
    from pyspark.ml.functions import vector_to_array
    from pyspark.ml.linalg import VectorUDT
    from pyspark.sql import functions, types

    from zoo_lite.data import convert
    from zoo_lite.data.convert import check_spark_columns

    check_spark_columns(df, feature_cols, "feature_cols")
    # Vector features are read through temporary array columns; the Vector columns themselves pass through
    fields = {field.name: field.dataType for field in df.schema.fields}
    read_as = {name: f"__zoo_lite_feature_{i}" if isinstance(fields[name], VectorUDT) else str(name)
               for i, name in enumerate(feature_cols)}
    extra = [vector_to_array(functions.col(f"`{name}`")).alias(tmp) for name, tmp in read_as.items() if tmp != name]
    source = df.select("*", *extra) if extra else df
    feature_names = list(read_as.values())
    probe = _probe_outputs(model, recipe, source.select(*[functions.col(f"`{c}`") for c in feature_names]).limit(1).toArrow(),
                           feature_names, batch_size)
    names = output_names(output_cols, len(probe) if probe is not None else 1)
    taken = [name for name in names if name in df.columns]
    if taken:
        raise InvalidArgumentError(f"data already has the column(s) {taken}; rename or drop them, or pass output_cols=[...]")
    widths = [out.ndim for out in probe] if probe is not None else [1] * len(names)
    column_types = [types.FloatType() if ndim == 1 else types.ArrayType(types.FloatType(), containsNull=False) for ndim in widths]
    schema = types.StructType(df.schema.fields + [types.StructField(name, kind, nullable=False)
                                                  for name, kind in zip(names, column_types)])
    shipped = _BroadcastModel(payload, recipe)
    keep = len(df.columns)

    @streaming_transportably
    def predict(batches: Iterator["pa.RecordBatch"]) -> Iterator["pa.RecordBatch"]:
        import pyarrow as pa

        net = _start_task(recipe, shipped)
        for batch in batches:
            inputs = convert.arrow_to_model_arrays(pa.Table.from_batches([batch]), feature_names, None)["x"]
            columns = [_arrow_column(out) for out in _per_row(recipe.run(net, inputs, batch_size))]
            yield pa.RecordBatch.from_arrays(batch.columns[:keep] + columns, names=batch.schema.names[:keep] + names)

    return source.mapInArrow(predict, schema)


def predict_xshards(shards: "SparkXShards", payload: bytes, recipe: PredictRecipe, feature_cols: Optional[list[Hashable]],
                    batch_size: int, output_cols: Optional[Sequence[str]] = None) -> "SparkXShards":
    """Each shard with its predictions: dict shards gain ``"prediction"`` (or ``output_cols``),
    pandas shards a column each. The model's inputs are ``feature_cols`` (columns, or a dict
    shard's keys), else a dict shard's ``"x"``."""
    import pandas as pd

    from zoo_lite.data import convert

    shipped = _BroadcastModel(payload, recipe)

    columns = convert.Columns.of(feature_cols)

    def predict(shard: Any) -> Any:
        net = _start_task(recipe, shipped)
        inputs = convert.shard_to_model_arrays(shard, columns, need_labels=False)["x"]   # checks the columns
        outputs = _per_row(recipe.run(net, inputs, batch_size))
        names = output_names(output_cols, len(outputs))
        if isinstance(shard, pd.DataFrame):
            return shard.assign(**{name: list(out) if out.ndim > 1 else out for name, out in zip(names, outputs)})
        return {**shard, **dict(zip(names, outputs))}

    return shards.map_partitions(predict)
