"""How a Keras model runs in the Spark tasks for ``predict`` (see :mod:`zoo_lite.learn.base.predict`).

Two recipes differ only in how the model is loaded on the executors. :data:`KERAS_OWN_MODEL_PREDICT`
is the Estimator's (``predict``, ``spark_udf``): its bytes are the user's own model, which zoo_lite
saved in the user's process, so Keras' safe mode is off there and a ``Lambda`` layer's Python lambda
loads (Keras 3 refuses it by default); the user already runs that code on the driver. For
:data:`KERAS_PREDICT`, used by ``zoo_lite.learn.spark_udf(path)`` on a file read from disk, which
may come from anyone, Keras' safe mode stays on. Both let ``predict`` feed string and
array<string> columns as string tensors (a model that starts with ``StringLookup`` or
``TextVectorization``); ``spark_udf`` takes numeric columns only.
"""

from __future__ import annotations

import functools
import os
import sys
from typing import TYPE_CHECKING, Any, Collection, Optional, Sequence

import numpy as np

from zoo_lite.learn.base.predict import InputSignature, PredictRecipe, predict_in_batches, row_signature
from zoo_lite.learn.tf2.feeds import HeldRowsFeed
from zoo_lite.learn.tf2.specs import model_from_bytes

if TYPE_CHECKING:
    from zoo_lite.data import SparkXShards

__all__ = ["KERAS_PREDICT", "KERAS_OWN_MODEL_PREDICT", "predict_arrays", "input_signature", "feed_signature", "autograph_modules",
           "remove_autograph_files", "predict_dataset"]

#: the prefix of the modules (and their files) that TensorFlow's autograph writes
_AUTOGRAPH_PREFIX = "__autograph_generated_file"
_removed_autograph_modules: set[str] = set()


def autograph_modules() -> set[str]:
    """The names of the modules TensorFlow's autograph has written and imported in this process."""
    return {name for name in list(sys.modules) if name.startswith(_AUTOGRAPH_PREFIX)}


def remove_autograph_files(keep: Collection[str] = frozenset()) -> list[str]:
    """Delete the files TensorFlow's autograph wrote in this process, but those of the modules
    named in ``keep``; returns their paths.

    Autograph writes each function it converts to ``<temp dir>/__autograph_generated_file*.py``,
    imports it as a module, and deletes the file only at a normal exit of the process (an
    ``atexit`` hook). Ray ends its worker processes by killing them and Spark's Python workers
    leave through ``os._exit``, so the files of those processes stayed in the temp dir for good.
    The modules are imported once written (a file is only read again to show source lines, and
    TensorFlow expects temp files to disappear), so zoo_lite deletes the files as soon as the
    work that converted them is done. Only files of this process's own modules are touched (and
    in a process that is not zoo_lite's, such as the driver, only those of zoo_lite's own work:
    the modules in ``keep`` were there before it).

    Examples
    --------
    >>> before = autograph_modules()
    >>> isinstance(remove_autograph_files(keep=before), list)
    True
    """
    removed = []
    for name in autograph_modules():
        if name in _removed_autograph_modules or name in keep:
            continue
        module = sys.modules.get(name)
        # the source, and its bytecode if an import of the module cached it in __pycache__
        paths = [getattr(module, "__file__", None), getattr(module, "__cached__", None)]
        failed = False
        for path in paths:
            if not isinstance(path, str) or not os.path.basename(path).startswith(_AUTOGRAPH_PREFIX):
                continue
            try:
                os.remove(path)
                removed.append(path)
            except FileNotFoundError:
                pass
            except OSError:
                failed = True   # e.g. a permission problem: tried again next time
        if not failed:
            _removed_autograph_modules.add(name)
    return removed


def _set_threads(cpus: int) -> None:
    """Size TensorFlow's thread pool (possible only before TensorFlow starts)."""
    import tensorflow as tf

    try:
        tf.config.threading.set_intra_op_parallelism_threads(cpus)
    except RuntimeError:
        pass  # this Python worker's TensorFlow runtime is already running with its pool


def predict_arrays(model: Any, inputs: tuple[np.ndarray, ...], batch_size: int) -> list[np.ndarray]:
    """Run ``model`` over the input arrays in batches; one array per model output, a row per input
    row. The files autograph writes for the model's predict function are deleted after the run
    (see :func:`remove_autograph_files`)."""
    before = autograph_modules()
    try:
        return predict_in_batches(_predict_batch, model, inputs, batch_size)
    finally:
        remove_autograph_files(keep=before)   # on the driver, the user's own stay


def _predict_batch(model: Any, batch: list[np.ndarray]) -> list[np.ndarray]:
    dtype = str(model.compute_dtype)
    cast = [x.astype(dtype, copy=False) if np.issubdtype(x.dtype, np.floating) else x for x in batch]
    output = model.predict_on_batch(cast[0] if len(cast) == 1 else cast)
    outputs = list(output.values()) if isinstance(output, dict) else output if isinstance(output, (list, tuple)) else [output]
    return [np.asarray(o) for o in outputs]


def input_signature(model: Any) -> Optional[list[tuple[tuple[int, ...], Any]]]:
    """Each input's row shape and dtype, as the model states them; None when a dimension other
    than the rows is open (``keras.Input(shape=(None, 3))``)."""
    inputs = getattr(model, "inputs", None)
    if not inputs:
        return None
    shapes = [tuple(tensor.shape[1:]) for tensor in inputs]
    if any(dim is None for shape in shapes for dim in shape):
        return None
    return [(tuple(int(dim) for dim in shape), np.dtype(tensor.dtype)) for shape, tensor in zip(shapes, inputs)]


def feed_signature(feed: Any) -> Optional[InputSignature]:
    """The row shape and dtype of each input in a Keras worker's feed of rows (an XShards or a
    Spark DataFrame); None for a tf.data feed, which shows them only by running its pipeline
    (and a model with fixed input shapes states them anyway).

    Examples
    --------
    >>> feed = HeldRowsFeed({"x": (np.zeros((4, 3)),)}, [4], [(0, 0, 4)], 1, "float32")
    >>> feed_signature(feed)
    [((3,), dtype('float32'))]
    """
    return row_signature(feed.features) if isinstance(feed, HeldRowsFeed) else None


def _model_from_payload(payload: bytes) -> Any:
    return model_from_bytes(payload, compile=False)


def _own_model_from_payload(payload: bytes) -> Any:
    return model_from_bytes(payload, compile=False, safe_mode=False)   # the user's own model (see the module's text)


#: a saved file's model (``spark_udf(path)``): loaded under Keras' safe mode
KERAS_PREDICT = PredictRecipe(load=_model_from_payload, run=predict_arrays, set_threads=_set_threads,
                              input_signature=input_signature, strings=True, feed_signature=feed_signature,
                              needs=("keras", "tensorflow"))
#: the Estimator's own model: loaded with Keras' safe mode off, so that Lambda layers load
KERAS_OWN_MODEL_PREDICT = PredictRecipe(load=_own_model_from_payload, run=predict_arrays, set_threads=_set_threads,
                                        input_signature=input_signature, strings=True, feed_signature=feed_signature,
                                        needs=("keras", "tensorflow"))


def _predictions_only(shard: dict[str, Any]) -> dict[str, Any]:
    return {name: value for name, value in shard.items() if name != "x"}


def predict_dataset(data: Any, payload: bytes, config: dict[str, Any], seed: int, batch_size: int,
                    output_cols: Optional[Sequence[str]] = None) -> "SparkXShards":
    """Predictions of the model in ``payload`` over a tf.data input (a Dataset or a creator), as
    Orca gave them: a SparkXShards of ``{"prediction": array}`` (or one key per ``output_cols``),
    its partitions in the dataset's order, each array with the model's output shape (``(rows, 1)``
    for one unit, as Keras' ``model.predict`` gives it). A Dataset is checked here (an endless one, or dict
    elements, are an ``InvalidArgumentError``); a creator when it runs, in the tasks.

    Examples
    --------
    >>> import numpy as np, keras, tensorflow as tf
    >>> from zoo_lite import init_orca_context
    >>> _ = init_orca_context(cores=2)
    >>> model = keras.Sequential([keras.Input(shape=(1,)), keras.layers.Dense(1, kernel_initializer="ones")])
    >>> from zoo_lite.learn.tf2.specs import model_to_bytes
    >>> data = tf.data.Dataset.from_tensor_slices((np.arange(5.0)[:, None], np.zeros(5)))
    >>> shards = predict_dataset(data, model_to_bytes(model), {}, seed=0, batch_size=2)
    >>> np.concatenate([shard["prediction"] for shard in shards.collect()]).tolist()
    [[0.0], [1.0], [2.0], [3.0], [4.0]]
    """
    from zoo_lite.context import OrcaContext
    from zoo_lite.data import SparkXShards
    from zoo_lite.learn.base.predict import predict_xshards
    from zoo_lite.learn.tf2 import datasets

    shipped = datasets.shippable(data)
    if isinstance(shipped, datasets.DatasetGraph):
        datasets.predict_slice_checks(shipped.dataset(seed, 0))
    sc = OrcaContext.get_spark_context()
    slices = sc.defaultParallelism
    indices = SparkXShards(sc.parallelize(range(slices), slices), transient=True)
    features = indices.map_partitions(functools.partial(datasets.predict_slice, data=shipped, slices=slices, config=config,
                                                        batch_size=batch_size, seed=seed))
    return predict_xshards(features, payload, KERAS_OWN_MODEL_PREDICT, None, batch_size, output_cols).map_partitions(_predictions_only)
