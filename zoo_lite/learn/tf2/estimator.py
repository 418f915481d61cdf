"""``Estimator.from_keras``: data-parallel training of a Keras 3 model on the Ray-on-Spark workers.

Orca's signatures over :class:`~zoo_lite.learn.base.estimator.GroupEstimator`, which does the work;
:data:`KERAS` is what it needs of Keras. The workers train with the loop of
:mod:`zoo_lite.learn.tf2.runner`.
"""

from __future__ import annotations

import dataclasses
import logging
import warnings
from typing import Any, Callable, Optional, Sequence

import numpy as np

from zoo_lite.data import Columns
from zoo_lite.data.convert import is_spark_df
from zoo_lite.data.shard import model_arrays_of
from zoo_lite.data.spark_jobs import run_job
from zoo_lite.errors import InvalidArgumentError, check_positive_int, kind_of
from zoo_lite.keywords import suggest_keywords
from zoo_lite.learn.base import checkpoints
from zoo_lite.learn.base.data_inputs import check_has_rows, is_rows_input
from zoo_lite.learn.base.estimator import Cols, EstimatorEntry, FitRequest, GroupEstimator
from zoo_lite.learn.base.framework import Framework, StateCodec, WorkerConfig
from zoo_lite.learn.base.progress import learn_logger
from zoo_lite.learn.base.udf import ModelUDF
from zoo_lite.learn.base.worker_group import Workers
from zoo_lite.learn.metrics import keras_custom_objects, keras_metrics, with_keras_metrics
from zoo_lite.learn.tf2 import datasets
from zoo_lite.learn.tf2.callbacks import check_callbacks, output_paths_of
from zoo_lite.learn.tf2.feeds import as_model_dtype
from zoo_lite.learn.tf2.predict import KERAS_OWN_MODEL_PREDICT, predict_dataset
from zoo_lite.learn.tf2.runner import KerasRunner
from zoo_lite.learn.tf2.specs import (InputShape, KerasSpec, build_from_inputs, check_built, check_compiled, decode_state_into,
                                      encode_state, is_compiled, model_from_bytes, model_to_bytes)

__all__ = ["Estimator", "KerasEstimator", "KERAS"]

KERAS = Framework(
    name="Keras",
    inputs="a tf.data.Dataset, or a creator (config, batch_size) -> tf.data.Dataset",
    runner_factory=KerasRunner,
    state=StateCodec(encode=encode_state, decode_into=decode_state_into),
    predict=KERAS_OWN_MODEL_PREDICT,   # the user's own model, shipped by zoo_lite (see tf2.predict)
    model_payload=model_to_bytes,
    is_input=datasets.is_input,
    batch_size=datasets.global_batch_size,
    cast_labels=as_model_dtype,
    prepare_input=datasets.training_input,   # fit and evaluate: a Dataset without labels is refused on the driver
    callback_output_paths=output_paths_of,
    fresh_process_per_group=True,   # MultiWorkerMirroredStrategy configures TensorFlow's collectives once per process
)


def _unsupported(argument: str, value: Any, default: Any, advice: str) -> None:
    if value is not default and value != default:
        raise InvalidArgumentError(f"{argument}={value!r} is not supported; {advice}")


@suggest_keywords
class KerasEstimator(GroupEstimator):
    """A Keras 3 model trained data-parallel on Ray workers inside the Spark executors.

    Built by :meth:`Estimator.from_keras`; see there for the arguments.
    """

    def __init__(self, spec: KerasSpec, model: Any, workers: Workers, model_dir: Optional[str],
                 log_level: int, start_timeout_s: float, max_failures: int = 3) -> None:
        if is_compiled(model) and model.built:   # built now: the driver's and workers' states hold the same optimizer variables
            model.optimizer.build(model.trainable_variables)
        super().__init__(KERAS, spec, model, {"epoch": 0}, workers, start_timeout_s, max_failures, model_dir,
                         learn_logger(log_level))

    # -- a model without an input shape -------------------------------------------------------------

    def _build_from_first_batch(self, data: Any, columns: Columns, batch_size: int, where: str) -> None:
        """Build a model that has no input shape from the shapes of ``data``'s first batch, as
        Keras' ``fit`` does, here on the driver before any worker starts: the driver keeps the
        state and sends its weights to the workers, which build their copies from the same shapes
        (``KerasSpec.build_inputs``)."""
        if self._model.built:
            return
        inputs = self._first_batch_inputs(data, columns, batch_size, where)
        build_from_inputs(self._model, inputs, where)
        if is_compiled(self._model):
            self._model.optimizer.build(self._model.trainable_variables)
        self.spec = dataclasses.replace(self.spec, build_inputs=inputs)

    def _first_batch_inputs(self, data: Any, columns: Columns, batch_size: int, where: str) -> Any:
        """The model's inputs as ``data``'s first batch shows them (one :class:`InputShape` per
        input, rows left open), read on the driver: a row of an XShards or Spark DataFrame (cast
        as the workers cast it), or the element structure of a tf.data input."""
        if is_rows_input(data):
            try:
                features = _first_row_features(data, columns)
            except InvalidArgumentError as error:
                if where != "predict":
                    raise
                raise InvalidArgumentError(
                    f"predict: the model {self._model.name!r} has no input shape, and the first row of data could not "
                    f"be read to build it ({error}); give it an input shape (keras.Input(shape=..., dtype=...))"
                ) from error
            float_dtype = str(self._model.compute_dtype)
            inputs = [InputShape((None, *x.shape[1:]), _input_dtype(x, float_dtype)) for x in features]
            return inputs[0] if len(inputs) == 1 else inputs
        if datasets.is_input(data):
            import tensorflow as tf

            shipped = datasets.shippable(data) if where == "predict" else datasets.training_input(data)
            spec = datasets.row_features_spec(shipped, self.spec.config, batch_size)
            if any(one.shape.rank is None for one in tf.nest.flatten(spec)):
                raise InvalidArgumentError(
                    f"{where}: the model {self._model.name!r} has no input shape, and the data's features have no known rank "
                    f"({spec}) to build it from; give it an input shape (keras.Input(shape=...))")
            return tf.nest.map_structure(lambda one: InputShape((None, *one.shape.as_list()), one.dtype.name), spec)
        raise InvalidArgumentError(f"{where}: data is a {kind_of(data)}; pass an XShards, a Spark DataFrame (with "
                                   f"feature_cols), {KERAS.inputs}")

    def _workers(self) -> Any:
        # the workers build their models as the driver's was built: an unbuilt one has nothing to build them from
        check_built(self._model, "starting the workers")
        return super()._workers()

    def spark_udf(self, batch_size: int = 32, feature_cols: Cols = None, input_shapes: Any = None) -> ModelUDF:
        """The trained model as a PySpark function (see
        :meth:`~zoo_lite.learn.base.estimator.GroupEstimator.spark_udf`, which this is).

        The model must be built: a model without an input shape is built by the first ``fit``,
        ``evaluate`` or ``predict`` (from the data's first batch), and the UDF has no data to
        build it from.

        Raises
        ------
        InvalidArgumentError
            The model is not built yet; and as ``GroupEstimator.spark_udf``.

        Examples
        --------
        >>> import keras
        >>> from zoo_lite import init_orca_context, OrcaContext
        >>> from zoo_lite.learn.tf2 import Estimator
        >>> _ = init_orca_context(cores=2)
        >>> model = keras.Sequential([keras.layers.Dense(1, kernel_initializer="ones")])   # no input shape
        >>> est = Estimator.from_keras(model=model)
        >>> df = OrcaContext.get_spark_session().createDataFrame([([1.0, 2.0],)], "features array<double>")
        >>> est.spark_udf()  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        zoo_lite.errors.InvalidArgumentError: spark_udf: the model 'sequential...' is not built; give it an input shape ...
        >>> _ = est.predict(df, feature_cols=["features"])   # builds it from the first row
        >>> [row.p for row in df.select(est.spark_udf()("features").alias("p")).collect()]
        [3.0]
        """
        check_built(self._model, "spark_udf")
        return super().spark_udf(batch_size, feature_cols, input_shapes)

    def fit(self, data: Any, epochs: int = 1, batch_size: int = 32, verbose: int = 1, callbacks: Optional[Sequence[Any]] = None,
            validation_data: Any = None, class_weight: Optional[dict[int, float]] = None, initial_epoch: int = 0,
            steps_per_epoch: Optional[int] = None, validation_steps: Optional[int] = None, validation_freq: int = 1,
            data_config: Optional[dict[str, Any]] = None, feature_cols: Cols = None, label_cols: Cols = None) -> dict[str, list[Any]]:
        """Train the model from epoch ``initial_epoch`` up to ``epochs`` (as Keras' ``model.fit``).

        Parameters
        ----------
        data
            An XShards of ``{"x": ndarray | tuple, "y": ndarray}`` or of pandas frames (with
            ``feature_cols`` / ``label_cols``), a Spark DataFrame (with ``feature_cols`` /
            ``label_cols``; one model input per feature column), a ``tf.data.Dataset`` of
            ``(features, labels)`` (batched or not), or a creator ``(config, batch_size) -> Dataset``
            (or Orca's ``(config)`` form).
        epochs : int, default 1
        batch_size : int, default 32
            The global batch, split over the workers (a batched Dataset's own batch size wins).
        verbose : {0, 1, 2}, default 1
            0 silent, 1 a progress bar on the driver, 2 one line per epoch.
        callbacks : list of keras.callbacks.Callback, optional
            Run with logs aggregated over all workers (see :mod:`zoo_lite.learn.tf2.callbacks`).
        validation_data
            Same kinds as ``data``; evaluated every ``validation_freq`` epochs.
        class_weight : dict, optional
            ``{class index: weight}`` applied to each row's loss.
        initial_epoch : int, default 0
            The first epoch to train, as Keras counts them.
        steps_per_epoch, validation_steps : int, optional
            Global steps per epoch (and per validation): each step is one global batch of
            ``batch_size`` rows, split over the workers, so every worker runs this many steps
            whatever their number. By default one pass over the data (a shorter epoch when
            given). Required for a tf.data pipeline that repeats forever (``.repeat()``): there
            each epoch goes on where the last one stopped, as Keras' iterator does, and each
            ``fit`` starts the pipeline anew (see :mod:`zoo_lite.learn.tf2.datasets`).
        validation_freq : int, default 1
        data_config
            Orca's argument; only None is supported.
        feature_cols, label_cols : str or list of str, optional
            The columns (or dict-shard keys) of the model's inputs and of the label.

        Returns
        -------
        dict
            Keras' History form: ``loss``, each metric, ``val_*`` with validation data, one value
            per epoch.

        Raises
        ------
        InvalidArgumentError
            A bad argument or input (named in the message).
        WorkerError
            A worker failed (its traceback is in the message), or more than ``max_failures``
            workers were lost.

        Examples
        --------
        >>> import numpy as np, keras
        >>> from zoo_lite import init_orca_context
        >>> from zoo_lite.data import XShards
        >>> from zoo_lite.learn.tf2 import Estimator
        >>> _ = init_orca_context(cores=2)
        >>> x = np.arange(8, dtype="float32").reshape(4, 2)
        >>> shards = XShards.partition({"x": x, "y": x.sum(axis=1)}, num_shards=2)
        >>> model = keras.Sequential([keras.Input(shape=(2,)), keras.layers.Dense(1)])
        >>> model.compile(optimizer="sgd", loss="mse")
        >>> est = Estimator.from_keras(model=model, seed=0)
        >>> sorted(est.fit(shards, epochs=2, batch_size=2, verbose=0))
        ['loss']
        >>> est.shutdown()
        """
        check_compiled(self._model, "fit")
        epochs = check_positive_int(epochs, "epochs")
        batch_size = check_positive_int(batch_size, "batch_size")
        validation_freq = check_positive_int(validation_freq, "validation_freq")
        if not isinstance(initial_epoch, int) or not 0 <= initial_epoch < epochs:
            raise InvalidArgumentError(f"initial_epoch={initial_epoch!r} must be an int in [0, epochs={epochs}); "
                                       "fit trains epochs initial_epoch .. epochs - 1, as Keras does")
        for name, value in (("steps_per_epoch", steps_per_epoch), ("validation_steps", validation_steps)):
            if value is not None:
                check_positive_int(value, name)
        if verbose not in (0, 1, 2):
            raise InvalidArgumentError(f"verbose={verbose!r} must be 0 (silent), 1 (progress bar) or 2 (one line per epoch)")
        _unsupported("data_config", data_config, None, "put the settings your data creator needs into config")
        _check_class_weight(class_weight)
        self._build_from_first_batch(data, Columns.of(feature_cols, label_cols), batch_size, "fit")
        if not self._model.trainable_weights:
            warnings.warn(f"fit: the model {self._model.name!r} has no trainable weights; as Keras' fit does, it computes "
                          "the loss and metrics and changes no weight", UserWarning, stacklevel=2)
        import keras

        user_callbacks = check_callbacks(callbacks)
        histories = [c for c in user_callbacks if type(c) is keras.callbacks.History]
        request = FitRequest(data, validation_data, Columns.of(feature_cols, label_cols), batch_size,
                             range(initial_epoch, epochs), [c for c in user_callbacks if type(c) is not keras.callbacks.History],
                             validation_freq, steps_per_epoch, validation_steps, {"class_weight": class_weight}, verbose)
        for history in histories:
            history.set_model(self._model)
            history.on_train_begin()
        results: dict[str, list[Any]] = {}

        def on_epoch(epoch: int, logs: dict[str, Any]) -> None:
            metrics = {name: value for name, value in logs.items() if name != "epoch_time_s"}
            for name, value in metrics.items():
                results.setdefault(name, []).append(value)
            for history in histories:
                history.on_epoch_end(epoch, dict(metrics))

        self._fit(request, on_epoch)
        return results

    def evaluate(self, data: Any, batch_size: int = 32, num_steps: Optional[int] = None, verbose: int = 1,
                 sample_weight: Any = None, callbacks: Optional[Sequence[Any]] = None, data_config: Optional[dict[str, Any]] = None,
                 feature_cols: Cols = None, label_cols: Cols = None) -> dict[str, float]:
        """Loss and compiled metrics over ``data`` (same kinds as :meth:`fit`), aggregated exactly
        over the workers, named as Keras' ``evaluate(return_dict=True)`` names them.

        ``num_steps`` caps the global batches read (Keras' ``steps``); it is required for a
        tf.data pipeline that repeats forever, which is read from its start.

        Returns
        -------
        dict
            ``loss`` and each compiled metric, as Keras names them, and the same values again
            under Orca's names, ``validation_loss`` and ``validation_<metric>`` (what Orca's
            TF2 Estimator returned), so that code written for either works.

        Raises
        ------
        InvalidArgumentError
            A bad argument or input; ``sample_weight``, ``callbacks`` and ``data_config`` are not supported.

        Examples
        --------
        >>> import numpy as np, keras
        >>> from zoo_lite import init_orca_context
        >>> from zoo_lite.data import XShards
        >>> from zoo_lite.learn.tf2 import Estimator
        >>> _ = init_orca_context(cores=2)
        >>> shards = XShards.partition({"x": np.ones((4, 2), "float32"), "y": np.zeros(4, "float32")}, num_shards=2)
        >>> model = keras.Sequential([keras.Input(shape=(2,)), keras.layers.Dense(1, kernel_initializer="zeros")])
        >>> model.compile(optimizer="sgd", loss="mse")
        >>> est = Estimator.from_keras(model=model)
        >>> est.evaluate(shards, batch_size=2, verbose=0)  # Keras' names, then Orca's
        {'loss': 0.0, 'validation_loss': 0.0}
        >>> est.shutdown()
        """
        check_compiled(self._model, "evaluate")
        if num_steps is not None:
            check_positive_int(num_steps, "num_steps")
        _unsupported("sample_weight", sample_weight, None, "weigh classes with fit's class_weight")
        _unsupported("callbacks", callbacks, None, "evaluate runs no callbacks; pass them to fit")
        _unsupported("data_config", data_config, None, "put the settings your data creator needs into config")
        self._build_from_first_batch(data, Columns.of(feature_cols, label_cols), check_positive_int(batch_size, "batch_size"),
                                     "evaluate")
        results = self._evaluate(data, Columns.of(feature_cols, label_cols), batch_size, num_steps)
        return {**results, **{f"validation_{name}": value for name, value in results.items()}}

    def predict(self, data: Any, batch_size: int = 32, verbose: int = 1, steps: Optional[int] = None,
                callbacks: Optional[Sequence[Any]] = None, data_config: Optional[dict[str, Any]] = None,
                feature_cols: Cols = None, min_partition_num: Optional[int] = None,
                output_cols: Optional[Sequence[str]] = None) -> Any:
        """Predictions of the trained model, next to the input and in its order.

        A Spark DataFrame comes back with every column plus ``prediction`` (float, or
        array<float> for a wider output; ``output_cols`` names one column per model output), an
        XShards with ``"prediction"`` in each dict shard or a ``prediction`` column in each pandas
        shard. Runs in the Spark tasks that hold the data (see :mod:`zoo_lite.learn.base.predict`).
        A ``tf.data.Dataset`` (of features, or of ``(features, labels)`` pairs whose labels are
        left out) or a creator of one gives, as in Orca, an XShards of ``{"prediction": array}``
        whose partitions follow the dataset's order; each Spark task reads its slice of the rows
        (see :func:`zoo_lite.learn.tf2.predict.predict_dataset`).

        Returns
        -------
        SparkXShards or pyspark.sql.DataFrame
            The input's kind, with the predictions added; an XShards for tf.data inputs.

        Raises
        ------
        InvalidArgumentError
            ``data`` is neither an XShards, a Spark DataFrame nor a tf.data input, a DataFrame
            comes without ``feature_cols``, ``output_cols`` does not name one column per output,
            or a Dataset repeats forever or has dict elements.

        Examples
        --------
        >>> import numpy as np, keras
        >>> from zoo_lite import init_orca_context
        >>> from zoo_lite.data import XShards
        >>> from zoo_lite.learn.tf2 import Estimator
        >>> _ = init_orca_context(cores=2)
        >>> model = keras.Sequential([keras.Input(shape=(2,)), keras.layers.Dense(1)])
        >>> model.compile(optimizer="sgd", loss="mse")
        >>> shards = XShards.partition({"x": np.ones((4, 2), "float32")}, num_shards=2)
        >>> [shard["prediction"].shape for shard in Estimator.from_keras(model=model).predict(shards).collect()]
        [(2, 1), (2, 1)]
        >>> import tensorflow as tf
        >>> dataset = tf.data.Dataset.from_tensor_slices((np.ones((5, 2), "float32"), np.zeros(5)))
        >>> sum(len(shard["prediction"]) for shard in Estimator.from_keras(model=model).predict(dataset).collect())
        5
        """
        _unsupported("steps", steps, None, "predict covers all rows")
        _unsupported("callbacks", callbacks, None, "predict runs no callbacks")
        _unsupported("data_config", data_config, None, "put the settings your data creator needs into config")
        self._build_from_first_batch(data, Columns.of(feature_cols), check_positive_int(batch_size, "batch_size"), "predict")
        if datasets.is_input(data):
            return predict_dataset(data, self.framework.model_payload(self._model), self.spec.config, self.spec.seed,
                                   check_positive_int(batch_size, "batch_size"), output_cols)
        return self._predict(data, feature_cols, batch_size, output_cols)

    def save(self, filepath: str, overwrite: bool = True, include_optimizer: bool = True, save_format: Optional[str] = None) -> str:
        """Save the model in Keras' ``.keras`` format (architecture, compile config, weights, optimizer)."""
        if not str(filepath).endswith(".keras"):
            raise InvalidArgumentError(f"save: filepath={filepath!r} must end in '.keras' (Keras 3's format); "
                                       "use save_weights for a '.weights.h5' file")
        _unsupported("save_format", save_format, None, "Keras 3 saves the '.keras' format")
        with checkpoints.written_from_local(filepath) as local:
            self._model.save(local, overwrite=overwrite)
        return filepath

    def load(self, filepath: str, custom_objects: Optional[dict[str, Any]] = None, compile: bool = True) -> None:
        """Replace the model with a saved ``.keras`` model; the workers rebuild it on next use."""
        import keras

        try:
            # zoo_lite's own metric classes (Orca's Accuracy) are known without the user naming them
            objects = {**keras_custom_objects(), **(custom_objects or {})}
            with checkpoints.local_copy(filepath, "load", "Keras model") as local:
                model = keras.models.load_model(local, custom_objects=objects, compile=compile)
        except (FileNotFoundError, ValueError) as error:
            raise InvalidArgumentError(f"load: cannot load a Keras model from filepath={filepath!r}: {error}") from error
        self.shutdown()
        # a model saved without an input shape is built by the next fit, evaluate or predict, as in from_keras
        self.spec = dataclasses.replace(self.spec, model_bytes=model_to_bytes(model), model_creator=None,
                                        compile_args_creator=None, build_inputs=None)
        self._model = model

    def save_weights(self, filepath: str, overwrite: bool = True) -> str:
        """The model's weights to a ``.weights.h5`` file (Keras' ``save_weights``)."""
        with checkpoints.written_from_local(filepath) as local:
            self._model.save_weights(local, overwrite=overwrite)
        return filepath

    def load_weights(self, filepath: str) -> None:
        """Weights from :meth:`save_weights` (or a ``.keras`` file); the workers get them on next use."""
        check_built(self._model, "load_weights")
        try:
            with checkpoints.local_copy(filepath, "load_weights", "weights file") as local:
                self._model.load_weights(local)
        except FileNotFoundError as error:
            raise InvalidArgumentError(f"load_weights: no weights file at filepath={filepath!r}") from error
        self._workers_have_driver_state = False


def _first_row_features(data: Any, columns: Columns) -> tuple[np.ndarray, ...]:
    """The features of the first row of an XShards or a Spark DataFrame, as model arrays of one
    row, read on the driver (Spark computes as few partitions as it can)."""
    arrays = model_arrays_of(data.limit(1) if is_spark_df(data) else data, columns, need_labels=False)
    # a lambda travels by value: the executors need not import this module (and TensorFlow) for it
    first = lambda shard: tuple(x[:1] for x in shard["x"]) if len(shard["x"][0]) else None  # noqa: E731
    found = run_job(arrays.rdd.context, lambda: arrays.rdd.map(first).filter(lambda row: row is not None).take(1))
    if not found:
        check_has_rows(0)
    return found[0]


def _input_dtype(array: np.ndarray, float_dtype: str) -> str:
    """The dtype a worker feeds ``array`` to the model in (see :func:`as_model_dtype`), by name."""
    if array.dtype.kind in "OUS":
        return "string"   # text, which Keras takes as string tensors
    return str(as_model_dtype(array[:0], float_dtype).dtype)


def _check_class_weight(class_weight: Any) -> None:
    if class_weight is None:
        return
    if not isinstance(class_weight, dict) or not class_weight or \
            not all(isinstance(k, (int, np.integer)) and k >= 0 for k in class_weight):
        raise InvalidArgumentError(f"class_weight={class_weight!r} must be a non-empty dict {{class index: weight}}")


@suggest_keywords
class Estimator(EstimatorEntry):
    """Orca's entry point: ``Estimator.from_keras(...)`` (import from ``zoo_lite.learn.tf2``)."""

    @staticmethod
    def from_keras(model: Any = None, metrics: Any = None, *, model_creator: Optional[Callable[[dict], Any]] = None,
                   config: Optional[dict[str, Any]] = None, compile_args_creator: Optional[Callable[[dict], dict]] = None,
                   workers_per_node: Optional[int] = None, backend: str = "ray", model_dir: Optional[str] = None,
                   seed: Optional[int] = None, keras_model: Any = None, verbose: bool = False, cpu_binding: bool = False,
                   log_level: int = logging.INFO, start_timeout_s: float = 180.0, max_failures: int = 3,
                   worker_config: Optional[WorkerConfig] = None, num_workers: Optional[int] = None) -> KerasEstimator:
        """A Keras Estimator trained on ``num_workers`` Ray workers (by default one per Ray node).

        Parameters
        ----------
        model : keras.Model, optional
            A compiled model (``keras_model=`` is the same, in Orca's older form). It goes
            to the workers in Keras' ``.keras`` format, compile config included, with the
            vocabularies of its lookup layers (``TextVectorization`` adapted on the driver). A
            model used only for ``predict`` and ``spark_udf`` (a featuriser) needs no ``compile``;
            ``fit`` and ``evaluate`` then say that they need one. A model without an input shape
            (a ``keras.Sequential`` of layers and no ``keras.Input``) is built as Keras' ``fit``
            builds it, from the shapes of the first batch of the first ``fit``, ``evaluate`` or
            ``predict``, on the driver; the workers build theirs from the same shapes.
        metrics : metric or list of metrics, optional
            Added to the compiled model's metrics (second positional argument, as in Orca's
            ``from_keras(keras_model, metrics)``): Orca metrics from :mod:`zoo_lite.learn.metrics`
            (``Accuracy()``, ``MAE()``, ..., reported under their Orca names), ``keras.metrics.Metric``
            objects or Keras metric names. A model object is compiled again with them here; a
            ``model_creator``'s model on every worker, after ``compile_args_creator``. The model must
            be compiled (by the user, the creator or ``compile_args_creator``).
        model_creator : callable, optional
            ``config -> compiled keras.Model``, Orca's form; run on the driver and on every
            worker. Give either ``model`` or ``model_creator``. Its model may have no input shape
            (see ``model``); layers it captures (a ``TextVectorization`` adapted on the driver)
            reach the workers with their vocabularies, and the driver's state (weights, optimizer
            state, lookup tables) replaces what each worker's creator made.
        config : dict, optional
            Passed to the creators; the user's own.
        compile_args_creator : callable, optional
            ``config -> dict`` of ``model.compile`` arguments, applied to the model after it is built.
        workers_per_node : int, optional
            Orca's: this many workers on every Ray node (1 when neither this nor ``num_workers``
            is given).
        backend : {"ray", "spark", "tf2"}
            ``"ray"`` (and Orca's ``"tf2"``) trains on Ray actors inside the Spark executors;
            ``"spark"`` trains in the tasks of a Spark barrier stage, with no Ray (for clusters that
            cannot run Ray, and short jobs: see docs/backends.md). ``"horovod"`` is not provided.
        model_dir : str, optional
            When set, every epoch writes a checkpoint there (``epoch=<n>.ckpt``).
        seed : int, optional
            Seeds the model creator, shuffling and workers: the same call twice gives the same model.
        max_failures : int, default 3
            Lost workers (a killed process, a lost node) a ``fit`` recovers from: the driver keeps
            the model, optimizer, epoch and the callbacks' state after every epoch, and the fit
            resumes from the last completed epoch on a new group on the nodes alive. Past this
            many, the last ``WorkerError`` is raised with every attempt's cause. 0 turns recovery off.
        worker_config : WorkerConfig, optional
            zoo_lite's own worker settings (collective timeout, shared-memory exchange, gradient
            slices). The keys ``collective_timeout_s``, ``shared_memory_exchange`` and
            ``gradient_chunk_rows`` of ``config`` still work, with a ``DeprecationWarning``.
        num_workers : int, optional
            The total number of training workers, spread over the Ray nodes as evenly as they
            allow (the first nodes get one more), so a script trains on the same number of
            workers on a laptop and on a cluster. Give this or ``workers_per_node``, not both.

        Returns
        -------
        KerasEstimator

        Raises
        ------
        InvalidArgumentError
            A bad argument, named in the message (e.g. a model Keras cannot rebuild on the workers).

        Examples
        --------
        >>> import numpy as np, keras
        >>> from zoo_lite import init_orca_context
        >>> from zoo_lite.data import XShards
        >>> from zoo_lite.learn.tf2 import Estimator
        >>> _ = init_orca_context(cores=2)
        >>> x = np.random.default_rng(0).normal(size=(64, 2)).astype("float32")
        >>> shards = XShards.partition({"x": x, "y": x @ np.array([1.0, -1.0], dtype="float32")}, num_shards=2)
        >>> model = keras.Sequential([keras.Input(shape=(2,)), keras.layers.Dense(1)])
        >>> model.compile(optimizer=keras.optimizers.SGD(0.1), loss="mse")
        >>> est = Estimator.from_keras(model=model, seed=0)
        >>> history = est.fit(shards, epochs=20, batch_size=16, verbose=0)
        >>> history["loss"][-1] < 0.01
        True
        >>> est.shutdown()
        """
        if keras_model is not None:
            if model is not None:
                raise InvalidArgumentError("pass the model once: model= or keras_model=, not both")
            model = keras_model
        if (model is None) == (model_creator is None):
            raise InvalidArgumentError(
                "from_keras needs exactly one of model= (a compiled keras.Model) or model_creator= (config -> compiled "
                f"keras.Model); got {'both' if model is not None else 'neither'}"
            )
        workers, config, seed = EstimatorEntry._checked_common(backend, workers_per_node, config, seed, num_workers)
        for name, creator in (("model_creator", model_creator), ("compile_args_creator", compile_args_creator)):
            if creator is not None and not callable(creator):
                raise InvalidArgumentError(f"{name}={creator!r} must be a callable taking config")
        extra_metrics = () if metrics is None else tuple(metrics) if isinstance(metrics, (list, tuple)) else (metrics,)
        keras_metrics(list(extra_metrics))   # checked here, on the driver; each model gets its own metric objects
        spec = KerasSpec(None, model_creator, compile_args_creator, config, seed, WorkerConfig.resolve(worker_config, config),
                         extra_metrics)
        if model is not None:
            spec, model = _spec_of_model(spec, model)
        else:
            model = spec.build_model(must_be_built=False)   # the driver's copy, for get_model, save and predict
        return KerasEstimator(spec, model, workers, model_dir, log_level, start_timeout_s, max_failures)


def _spec_of_model(spec: KerasSpec, model: Any) -> tuple[KerasSpec, Any]:
    """The spec of a model object, checked: compiled (or compiled here by ``compile_args_creator``)
    and rebuildable from Keras' format, which is how the workers get it."""
    import keras

    if not isinstance(model, keras.Model):
        raise InvalidArgumentError(f"model is a {type(model).__name__}; it must be a keras.Model (Keras 3), or pass model_creator")
    if spec.compile_args_creator is not None:
        model.compile(**spec.compile_args_creator(spec.config))
    if spec.metrics:   # into the compile config, so that the saved form the workers load has them
        with_keras_metrics(model, list(spec.metrics))
    if is_compiled(model) and model.built:   # saved with its variables, so the reload below matches it
        model.optimizer.build(model.trainable_variables)
    try:
        blob = model_to_bytes(model)
        model_from_bytes(blob, safe_mode=False)   # as the workers load it: the user's own model (see KerasSpec.build_model)
    except Exception as error:  # noqa: BLE001 - Keras raises many kinds here; all mean the same to the user
        raise InvalidArgumentError(
            f"model: Keras cannot rebuild the model {model.name!r} from its saved form ({type(error).__name__}: "
            f"{str(error).strip().splitlines()[0][:300]}); a subclassed model needs get_config/from_config, or pass "
            "model_creator=lambda config: <build and compile the model> instead"
        ) from error
    return dataclasses.replace(spec, model_bytes=blob, compile_args_creator=None, metrics=()), model
