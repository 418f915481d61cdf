"""How a Keras model runs in the Spark tasks for ``predict`` (see :mod:`zoo_lite.learn.base.predict`)."""

from __future__ import annotations

from typing import Any

import numpy as np

from zoo_lite.learn.base.predict import PredictRecipe
from zoo_lite.learn.tf2.specs import model_from_bytes

__all__ = ["KERAS_PREDICT", "predict_arrays"]


def _task_threads() -> None:
    """Size TensorFlow's thread pool to the task's CPUs (possible only before TensorFlow starts)."""
    import tensorflow as tf
    from pyspark import TaskContext

    context = TaskContext.get()
    cpus = int(context.cpus()) if context is not None else 1
    try:
        tf.config.threading.set_intra_op_parallelism_threads(cpus)
    except RuntimeError:
        pass  # this Python worker's TensorFlow runtime is already running with its pool


def predict_arrays(model: Any, inputs: tuple[np.ndarray, ...], batch_size: int) -> list[np.ndarray]:
    """Run ``model`` over the input arrays in batches; one array per model output, a row per input row."""
    dtype = str(model.compute_dtype)
    cast = [x.astype(dtype, copy=False) if np.issubdtype(x.dtype, np.floating) else x for x in inputs]
    rows = len(cast[0])
    chunks: list[list[np.ndarray]] = []
    for start in range(0, rows, batch_size):
        batch = [x[start:start + batch_size] for x in cast]
        output = model.predict_on_batch(batch[0] if len(batch) == 1 else batch)
        outputs = list(output.values()) if isinstance(output, dict) else output if isinstance(output, (list, tuple)) else [output]
        chunks.append([np.asarray(o) for o in outputs])
    if not chunks:
        return [np.zeros((0,), dtype=np.float32)]
    return [np.concatenate([chunk[i] for chunk in chunks]) for i in range(len(chunks[0]))]


def _model_from_payload(payload: bytes) -> Any:
    return model_from_bytes(payload, compile=False)


KERAS_PREDICT = PredictRecipe(load=_model_from_payload, run=predict_arrays, prepare_task=_task_threads)
