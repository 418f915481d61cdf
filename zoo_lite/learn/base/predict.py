"""Prediction where the data is: in the Spark tasks that hold each partition, for any framework.

The trained model goes to the executors once (a broadcast, or a file artifact on Spark Connect;
loaded once by each Python worker and kept across tasks); each task runs it over its own rows. A
Spark DataFrame keeps every column and gains one column per model output through ``mapInArrow``:
rows stay in place and in order, nothing passes the driver, and the input is read once (moving it
into Ray and back would copy every column twice, and zipping results with a recomputed input is
only safe for deterministic inputs). A framework says how to load and run its model with a
:class:`PredictRecipe`.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Hashable, Iterator, Optional, Sequence

import numpy as np

from zoo_lite.errors import InvalidArgumentError, streaming_transportably

if TYPE_CHECKING:
    import pyarrow as pa
    import pyspark.sql

    from zoo_lite.data.shard import SparkXShards

__all__ = ["PredictRecipe", "ShippedModel", "predict_spark_df", "predict_xshards", "predict_in_batches", "output_names",
           "per_row", "arrow_column", "spark_type_of", "row_signature", "InputSignature"]

PREDICTION = "prediction"

#: each model input's row shape and dtype, in input order
InputSignature = list[tuple[tuple[int, ...], np.dtype]]


def no_input_signature(model: Any) -> None:
    """For models that do not state their input shapes (the ``input_signature`` of a recipe)."""
    return None


def no_feed_signature(feed: Any) -> None:
    """For frameworks whose feeds do not show their rows' shapes (the ``feed_signature`` of a recipe)."""
    return None


def row_signature(arrays: Sequence[Any]) -> Optional[InputSignature]:
    """Each input's row shape and dtype, from arrays whose first axis is the rows; floating
    inputs as float32 (every framework casts them to its model's dtype). None when an input is
    not numeric (strings, or objects such as the cells of an empty pandas column).

    Examples
    --------
    >>> row_signature([np.zeros((5, 3)), np.arange(5)])
    [((3,), dtype('float32')), ((), dtype('int64'))]
    >>> row_signature([np.array(["a", "b"])]) is None
    True
    """
    signature = []
    for array in arrays:
        dtype = np.dtype(array.dtype)
        if dtype.kind not in "biuf":
            return None
        signature.append((tuple(int(n) for n in array.shape[1:]), np.dtype(np.float32) if dtype.kind == "f" else dtype))
    return signature


@dataclass(frozen=True)
class PredictRecipe:
    """How a framework's model reaches a Spark task and runs there (module-level functions only:
    the recipe is pickled into every task).

    ``load(payload) -> model`` runs once per executor Python worker; ``run(model, inputs,
    batch_size)`` returns one array per model output, one row per input row; ``set_threads(n)``
    sizes the framework's thread pool to the task's CPUs at the start of each task;
    ``input_signature(model)`` gives the row shape and dtype of each input when the model states
    them (Keras), else None (torch), for :mod:`zoo_lite.learn.base.udf`. ``feed_signature(feed)``
    gives them for the rows a worker loaded (a runner's feed), when the feed shows them cheaply,
    else None: the Estimator keeps them for models that do not state theirs. ``strings`` says that
    the model takes string and array<string> feature columns (as object arrays of ``str``, which
    Keras turns into string tensors); without it they are refused on the driver. ``needs`` names
    the framework's top-level modules, which the executors must have.
    """

    load: Callable[[bytes], Any]
    run: Callable[[Any, tuple[np.ndarray, ...], int], list[np.ndarray]]
    set_threads: Callable[[int], None]
    input_signature: Callable[[Any], Optional[InputSignature]] = no_input_signature
    strings: bool = False
    feed_signature: Callable[[Any], Optional[InputSignature]] = no_feed_signature
    needs: tuple[str, ...] = ()


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


#: models loaded in this Python worker, newest last, by the hash of their bytes; a few are kept so
#: that two UDFs (or a UDF and a predict) used in turn do not reload each other's model
_model_cache: "OrderedDict[str, Any]" = OrderedDict()
_KEPT_MODELS = 4


class _AddedFile:
    """Bytes a Connect session holds as a file artifact, read in its tasks (a broadcast's ``value``)."""

    def __init__(self, name: str) -> None:
        self.name = name

    @property
    def value(self) -> bytes:
        from zoo_lite.spark_connect import read_added_file

        return read_added_file(self.name)


class ShippedModel:
    """A model sent to the executors once, with the recipe that loads and runs it: its bytes go as a
    broadcast, or on Spark Connect (which has none) as a file artifact of the session. A Python
    worker loads it at most once: the cache key is the bytes' SHA-256, made on the driver (a
    broadcast read on an executor has no id of its own)."""

    def __init__(self, payload: bytes, recipe: PredictRecipe) -> None:
        from zoo_lite.context import OrcaContext
        from zoo_lite.spark_connect import add_file_once, is_connect_session

        self.token = hashlib.sha256(payload).hexdigest()
        self.recipe = recipe
        spark = OrcaContext.get_spark_session()
        if is_connect_session(spark):
            name = f"zoo_lite-model-{self.token}.bin"
            add_file_once(spark, name, payload)
            self.payload: Any = _AddedFile(name)
        else:
            self.payload = spark.sparkContext.broadcast(payload)

    def load(self) -> Any:
        """The model, from this worker's cache or loaded now."""
        model = _model_cache.get(self.token)
        if model is None:
            model = _model_cache[self.token] = self.recipe.load(self.payload.value)
            while len(_model_cache) > _KEPT_MODELS:
                _model_cache.popitem(last=False)
        _model_cache.move_to_end(self.token)
        return model

    def start_task(self) -> Any:
        """At the start of a Spark task: the framework's threads sized to the task, and the model."""
        self.recipe.set_threads(_task_cpus())
        return self.load()


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


def per_row(outputs: list[np.ndarray]) -> list[np.ndarray]:
    """A ``(rows, 1)`` output becomes one value per row.

    Examples
    --------
    >>> [out.shape for out in per_row([np.zeros((3, 1)), np.zeros((3, 2, 2))])]
    [(3,), (3, 2, 2)]
    """
    return [out.reshape(len(out)) if out.ndim == 2 and out.shape[1] == 1 else out for out in outputs]


def arrow_column(values: np.ndarray) -> "pa.Array":
    """A model output as an Arrow column of float32: one value per row for ``(rows,)``, a list per
    row for ``(rows, k)``, and nested lists keeping the tensor's shape for more dimensions.

    Examples
    --------
    >>> arrow_column(np.arange(4).reshape(2, 1, 2)).to_pylist()
    [[[0.0, 1.0]], [[2.0, 3.0]]]
    """
    from zoo_lite.data.convert import ndarray_to_arrow

    return ndarray_to_arrow(np.asarray(values, dtype=np.float32))


def spark_type_of(ndim: int) -> Any:
    """The Spark type of an output with ``ndim`` dimensions, rows included: float for one value
    per row, ``array<float>`` for a vector, nested arrays for a tensor (as :func:`arrow_column`).

    Examples
    --------
    >>> spark_type_of(1).simpleString(), spark_type_of(3).simpleString()
    ('float', 'array<array<float>>')
    """
    from pyspark.sql import types

    kind: Any = types.FloatType()
    for _ in range(ndim - 1):
        kind = types.ArrayType(kind, containsNull=False)
    return kind


def _probe_outputs(model: Any, recipe: PredictRecipe, first_row: "pa.Table", feature_names: list[str],
                   batch_size: int) -> Optional[tuple[tuple[np.ndarray, ...], list[np.ndarray]]]:
    """The model's inputs and outputs for one row, to type the prediction columns (None if there is no row)."""
    from zoo_lite.data import convert

    if first_row.num_rows == 0:
        return None
    inputs = convert.arrow_to_model_arrays(first_row, feature_names, None, strings=recipe.strings)["x"]
    return inputs, per_row(recipe.run(model, inputs, batch_size))


def predict_spark_df(df: "pyspark.sql.DataFrame", model: Any, payload: bytes, recipe: PredictRecipe,
                     feature_cols: list[Hashable], batch_size: int, output_cols: Optional[Sequence[str]] = None,
                     seen: Callable[[InputSignature], None] = lambda signature: None) -> "pyspark.sql.DataFrame":
    """``df`` with one column per model output (float, or array<float> for wider outputs), in order.

    ``model`` is the driver's copy (to type the new columns); ``payload`` is what the executors
    load it from with ``recipe.load``. ``seen`` gets the row signature of the row read on the
    driver to type the columns (when it has one and it is numeric).
    """
    from pyspark.ml.functions import vector_to_array
    from pyspark.ml.linalg import VectorUDT
    from pyspark.sql import functions, types

    from zoo_lite.data import convert
    from zoo_lite.data.convert import check_spark_columns

    check_spark_columns(df, feature_cols, "feature_cols", strings=recipe.strings)
    # Vector features are read through temporary array columns; the Vector columns themselves pass through
    fields = {field.name: field.dataType for field in df.schema.fields}
    read_as = {name: f"__zoo_lite_feature_{i}" if isinstance(fields[name], VectorUDT) else str(name)
               for i, name in enumerate(feature_cols)}
    extra = [vector_to_array(functions.col(f"`{name}`")).alias(tmp) for name, tmp in read_as.items() if tmp != name]
    source = df.select("*", *extra) if extra else df
    feature_names = list(read_as.values())
    probed = _probe_outputs(model, recipe, source.select(*[functions.col(f"`{c}`") for c in feature_names]).limit(1).toArrow(),
                            feature_names, batch_size)
    probe = probed[1] if probed is not None else None
    signature = row_signature(probed[0]) if probed is not None else None
    if signature is not None:
        seen(signature)
    names = output_names(output_cols, len(probe) if probe is not None else 1)
    taken = [name for name in names if name in df.columns]
    if taken:
        raise InvalidArgumentError(f"data already has the column(s) {taken}; rename or drop them, or pass output_cols=[...]")
    column_types = [spark_type_of(out.ndim) for out in probe] if probe is not None else [types.FloatType()] * len(names)
    schema = types.StructType(df.schema.fields + [types.StructField(name, kind, nullable=False)
                                                  for name, kind in zip(names, column_types)])
    shipped = ShippedModel(payload, recipe)
    keep = len(df.columns)

    @streaming_transportably
    def predict(batches: Iterator["pa.RecordBatch"]) -> Iterator["pa.RecordBatch"]:
        import pyarrow as pa

        net = shipped.start_task()
        for batch in batches:
            inputs = convert.arrow_to_model_arrays(pa.Table.from_batches([batch]), feature_names, None, strings=recipe.strings)["x"]
            columns = [arrow_column(out) for out in per_row(recipe.run(net, inputs, batch_size))]
            yield pa.RecordBatch.from_arrays(batch.columns[:keep] + columns, names=batch.schema.names[:keep] + names)

    return source.mapInArrow(predict, schema)


def _outputs_without_rows(net: Any, recipe: PredictRecipe, inputs: tuple[np.ndarray, ...],
                          known: Optional[InputSignature]) -> list[np.ndarray]:
    """The predictions of a shard without rows: zero rows of each output, with the output's row
    shape (what the other shards' predictions have, so that they concatenate).

    The model runs on one all-zero row, cut to none after (a model may refuse an empty batch),
    shaped as the model states its inputs, else as the shard's arrays show them, else as
    ``known`` (the rows the Estimator saw: an empty pandas column has lost its rows' width); the
    first that the model takes. When none does, one empty 1-D array, as the model gives no shape.
    """
    tried: list[InputSignature] = []
    for candidate in (lambda: recipe.input_signature(net), lambda: row_signature(inputs), lambda: known):
        try:
            signature = candidate()
            if not signature or len(signature) != len(inputs) or signature in tried:
                continue
            tried.append(signature)
            zeros = tuple(np.zeros((1, *shape), dtype=dtype) for shape, dtype in signature)
            return [np.asarray(out)[:0] for out in recipe.run(net, zeros, 1)]
        except Exception:  # noqa: BLE001 - this shape does not fit the model: the next one is tried
            continue
    return [np.zeros((0,), dtype=np.float32)]


def predict_xshards(shards: "SparkXShards", payload: bytes, recipe: PredictRecipe, feature_cols: Optional[list[Hashable]],
                    batch_size: int, output_cols: Optional[Sequence[str]] = None,
                    known: Optional[InputSignature] = None) -> "SparkXShards":
    """Each shard with its predictions: dict shards gain ``"prediction"`` (or ``output_cols``),
    pandas shards a column each. The model's inputs are ``feature_cols`` (columns, or a dict
    shard's keys), else a dict shard's ``"x"``.

    Predictions keep the model's output shape, as the model's own ``predict`` gives them: a
    one-unit output is ``(rows, 1)`` (in a pandas column, a one-value array per row). A shard
    without rows gets zero rows of each output's shape (see :func:`_outputs_without_rows`;
    ``known`` is the signature of the rows the Estimator saw, None if it saw none), found in its
    own task, so no Spark job is added.
    """
    import pandas as pd

    from zoo_lite.data import convert

    shipped = ShippedModel(payload, recipe)
    columns = convert.Columns.of(feature_cols)

    def predict(shard: Any) -> Any:
        net = shipped.start_task()
        inputs = convert.shard_to_model_arrays(shard, columns, need_labels=False)["x"]   # checks the columns
        if len(inputs[0]):
            outputs = [np.asarray(out) for out in recipe.run(net, inputs, batch_size)]
        else:
            outputs = _outputs_without_rows(net, recipe, inputs, known)
        names = output_names(output_cols, len(outputs))
        if isinstance(shard, pd.DataFrame):
            return shard.assign(**{name: list(out) if out.ndim > 1 else out for name, out in zip(names, outputs)})
        return {**shard, **dict(zip(names, outputs))}

    return shards.map_partitions(predict)
