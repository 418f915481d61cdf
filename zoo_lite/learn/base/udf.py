"""A trained model as a Spark SQL function: one UDF for DataFrame jobs, SQL and Structured Streaming.

The model travels as a broadcast of the bytes :class:`~zoo_lite.learn.base.predict.PredictRecipe`
loads (on Spark Connect, as a file artifact of the session); each Python worker loads it once and
keeps it, keyed by a hash of those bytes, so batches, tasks and micro-batches reuse it. The UDF is an Arrow UDF (iterator of batches): Spark hands it
Arrow columns, which become the model's input arrays through the same conversion as ``fit`` and
``predict`` (:func:`zoo_lite.data.convert.arrow_to_model_arrays`), and the predictions go back as
Arrow with the types of ``predict``'s ``prediction`` column.

The model's input row shapes fix the UDF's result type: a Keras model states them; a torch model
does not, so they come from the rows its Estimator saw (``fit``, ``evaluate``, ``predict``; kept in
the file ``save`` writes), or from ``input_shapes`` (as PySpark's ``predict_batch_udf`` asks for
``input_tensor_shapes``), which wins over both.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterator, Optional, Sequence, Union

import numpy as np

from zoo_lite.errors import InvalidArgumentError
from zoo_lite.learn.base.predict import (ShippedModel, InputSignature, PredictRecipe, arrow_column, output_names, per_row,
                                         spark_type_of)

if TYPE_CHECKING:
    import pyarrow as pa
    import pyspark.sql

__all__ = ["ModelUDF", "model_udf", "check_input_shapes"]

Shape = tuple[int, ...]


def check_input_shapes(input_shapes: Any, argument: str = "input_shapes") -> Optional[list[Shape]]:
    """``input_shapes`` as one row shape per model input (``(4,)`` or ``[(4,), (2, 3)]``), checked.

    Examples
    --------
    >>> check_input_shapes((4,)), check_input_shapes([(4,), (2, 3)]), check_input_shapes(None)
    ([(4,)], [(4,), (2, 3)], None)
    >>> check_input_shapes([(4, -1)])
    Traceback (most recent call last):
    ...
    zoo_lite.errors.InvalidArgumentError: input_shapes=[(4, -1)]: give one row's shape per model input, as tuples of positive ints (e.g. [(4,)] for rows of 4 features, or [(28, 28), (3,)] for two inputs)
    """
    if input_shapes is None:
        return None
    shapes = [input_shapes] if isinstance(input_shapes, tuple) and all(isinstance(n, int) for n in input_shapes) else input_shapes
    valid = isinstance(shapes, (list, tuple)) and len(shapes) > 0 and all(
        isinstance(shape, (list, tuple)) and all(isinstance(n, (int, np.integer)) and not isinstance(n, bool) and n > 0 for n in shape)
        for shape in shapes)
    if not valid:
        raise InvalidArgumentError(
            f"{argument}={input_shapes!r}: give one row's shape per model input, as tuples of positive ints (e.g. [(4,)] "
            "for rows of 4 features, or [(28, 28), (3,)] for two inputs)"
        )
    return [tuple(int(n) for n in shape) for shape in shapes]


@dataclass(frozen=True)
class _Signature:
    """What the UDF takes and gives: each model input's name and row shape, each output's row shape."""

    input_names: tuple[str, ...]
    input_shapes: tuple[Shape, ...]
    output_shapes: tuple[Shape, ...]

    def spark_type(self) -> Any:
        from pyspark.sql import types

        kinds = [spark_type_of(len(shape) + 1) for shape in self.output_shapes]
        if len(kinds) == 1:
            return kinds[0]
        names = output_names(None, len(kinds))
        return types.StructType([types.StructField(name, kind, nullable=False) for name, kind in zip(names, kinds)])


def _probe_output_shapes(model: Any, recipe: PredictRecipe, input_shapes: Sequence[Shape], dtypes: Sequence[Any]) -> tuple[Shape, ...]:
    """The row shape of each model output, from one all-zero row (run on the driver)."""
    inputs = tuple(np.zeros((1, *shape), dtype=dtype) for shape, dtype in zip(input_shapes, dtypes))
    try:
        outputs = per_row(recipe.run(model, inputs, 1))
    except Exception as error:  # noqa: BLE001 - the model's own errors, shown to the user
        raise InvalidArgumentError(
            f"spark_udf: the model failed on one row of zeros shaped {list(input_shapes)} (input_shapes): "
            f"{type(error).__name__}: {str(error).strip()[:300]}; give the shape of one row of each model input"
        ) from error
    return tuple(tuple(out.shape[1:]) for out in outputs)


def _model_inputs(columns: Sequence["pa.Array"], signature: _Signature, column_names: Sequence[str]) -> tuple[np.ndarray, ...]:
    """The model's input arrays of one Arrow batch, each checked against the input's row shape."""
    import pyarrow as pa

    from zoo_lite.data import convert

    names = [f"{name} (model input {i}{'' if model == str(i) else ' ' + repr(model)})"
             for i, (name, model) in enumerate(zip(column_names, signature.input_names))]
    plain = {name: convert.dense_vectors_of_arrow(column) for name, column in zip(names, columns)}
    inputs = convert.arrow_to_model_arrays(pa.table(plain), names, None)["x"]
    for name, values, shape in zip(names, inputs, signature.input_shapes):
        if tuple(values.shape[1:]) != shape:
            raise InvalidArgumentError(
                f"spark_udf: column {name} has rows of shape {tuple(values.shape[1:])}, but the model takes rows of "
                f"shape {shape}; pass the model's feature columns in order"
            )
    return inputs


def _result(outputs: list[np.ndarray], signature: _Signature) -> "pa.Array":
    import pyarrow as pa

    columns = [arrow_column(out) for out in per_row(outputs)]
    if len(columns) == 1:
        return columns[0]
    return pa.StructArray.from_arrays(columns, names=output_names(None, len(columns)))


class ModelUDF:
    """A model as a PySpark function: call it with the feature columns (one per model input, in
    order), or register it for SQL with ``spark.udf.register(name, udf)``.

    It gives what ``predict`` puts in its ``prediction`` column: a float for one value per row,
    ``array<float>`` (nested for a tensor) for more, and a struct with one field per output
    (``prediction_0``, ...) for a model with several outputs.
    """

    def __init__(self, shipped: ShippedModel, signature: _Signature, batch_size: int,
                 feature_cols: Optional[tuple[str, ...]]) -> None:
        self._shipped = shipped
        self._signature = signature
        self._batch_size = batch_size
        self._feature_cols = feature_cols
        self._sql_udf = self._udf([f"argument {i}" for i in range(len(signature.input_names))])

    @property
    def returnType(self) -> Any:  # noqa: N802 - PySpark's name: spark.udf.register reads it
        return self._signature.spark_type()

    def __getattr__(self, name: str) -> Any:
        # evalType, func, deterministic, asNondeterministic...: what spark.udf.register reads of a UDF
        if name.startswith("__") or name.startswith("_"):
            raise AttributeError(name)
        return getattr(self._sql_udf, name)

    def __call__(self, *cols: Union[str, "pyspark.sql.Column"]) -> "pyspark.sql.Column":
        """The prediction column for the feature columns ``cols`` (by default ``feature_cols``)."""
        if not cols and self._feature_cols:
            cols = self._feature_cols
        expected = len(self._signature.input_names)
        if len(cols) != expected:
            raise InvalidArgumentError(
                f"spark_udf: the model takes {expected} input(s) {list(self._signature.input_names)}, but the UDF was called "
                f"with {len(cols)} column(s) {[str(c) for c in cols]}; pass one column per model input, in order"
            )
        return self._udf([c if isinstance(c, str) else str(c) for c in cols])(*cols)

    def _udf(self, column_names: Sequence[str]) -> Any:
        from pyspark.sql.functions import ArrowUDFType, arrow_udf

        shipped, signature, batch_size, names = self._shipped, self._signature, self._batch_size, list(column_names)

        def predict(batches: Iterator[Any]) -> Iterator["pa.Array"]:
            model = shipped.start_task()
            for batch in batches:
                columns = batch if isinstance(batch, tuple) else (batch,)
                if len(columns) != len(signature.input_names):
                    raise InvalidArgumentError(
                        f"spark_udf: the model takes {len(signature.input_names)} input(s) {list(signature.input_names)}, "
                        f"but the UDF was called with {len(columns)} column(s); pass one column per model input, in order"
                    )
                yield _result(shipped.recipe.run(model, _model_inputs(columns, signature, names), batch_size), signature)

        with warnings.catch_warnings():   # PySpark prefers type hints, which cannot say "any number of columns"
            warnings.simplefilter("ignore", UserWarning)
            return arrow_udf(predict, signature.spark_type(), ArrowUDFType.SCALAR_ITER)


def model_udf(model: Any, payload: bytes, recipe: PredictRecipe, batch_size: int, feature_cols: Any = None,
              input_shapes: Any = None, seen: Optional[InputSignature] = None) -> ModelUDF:
    """A :class:`ModelUDF` for ``model`` (the driver's copy, run once on a row of zeros for its
    output shapes), whose executors load ``payload`` with ``recipe``.

    The input row shapes are ``input_shapes`` when given, else what the model states
    (``recipe.input_signature``), else ``seen``: the row shapes and dtypes of the rows the
    Estimator saw (whose dtypes also make the row of zeros, so that an integer input, such as an
    embedding's, stays integer). ``feature_cols`` name the inputs in errors and are the UDF's
    default columns.
    """
    from zoo_lite.data.convert import Columns
    from zoo_lite.errors import check_positive_int

    check_positive_int(batch_size, "batch_size")
    stated = recipe.input_signature(model)
    known = stated or seen
    shapes = check_input_shapes(input_shapes) or ([shape for shape, _ in known] if known else None)
    if shapes is None:
        raise InvalidArgumentError(
            "spark_udf: this model does not state the shape of its inputs; pass input_shapes=[(4,)] (one row's shape "
            "per model input, e.g. (4,) for 4 features) so that the UDF's result type is known before it runs. An "
            "Estimator learns them from the rows it fits, evaluates or predicts on (XShards, Spark DataFrames, "
            "DataLoaders), and its save keeps them for zoo_lite.learn.spark_udf(path)"
        )
    features = Columns.of(feature_cols).features
    if features is not None and len(features) != len(shapes):
        raise InvalidArgumentError(
            f"spark_udf: feature_cols={list(features)} names {len(features)} column(s), but the model has {len(shapes)} "
            "input(s); give one column per model input, in order"
        )
    names = tuple(str(name) for name in features) if features else tuple(str(i) for i in range(len(shapes)))
    dtypes = [dtype for _, dtype in known] if known and len(known) == len(shapes) else [np.float32] * len(shapes)
    signature = _Signature(names, tuple(shapes), _probe_output_shapes(model, recipe, shapes, dtypes))
    _check_executors_can_run(recipe)
    return ModelUDF(ShippedModel(payload, recipe), signature, batch_size, names if features else None)


def _check_executors_can_run(recipe: PredictRecipe) -> None:
    """A query runs the UDF in the user's own job, where a missing environment shows as Spark's raw
    error: the executors are asked first, once per context (:mod:`zoo_lite.executor_python`)."""
    from zoo_lite.context import OrcaContext
    from zoo_lite.executor_python import JOB_MODULES, check_executor_pythons_once
    from zoo_lite.spark_connect import context_of

    check_executor_pythons_once(context_of(OrcaContext.get_spark_session()), (*JOB_MODULES, *recipe.needs),
                                same_version=False, purpose="spark_udf")
