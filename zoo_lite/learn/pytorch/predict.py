"""How a PyTorch model runs in the Spark tasks for ``predict`` (see :mod:`zoo_lite.learn.base.predict`)."""

from __future__ import annotations

import io
from typing import Any, Optional

import numpy as np
import torch
from torch import nn

from zoo_lite.errors import InvalidArgumentError
from zoo_lite.learn.base.predict import InputSignature, PredictRecipe, predict_in_batches, row_signature
from zoo_lite.learn.pytorch.feeds import ArrayFeed, DatasetFeed, tensor_from_array
from zoo_lite.learn.pytorch.specs import model_dtype
from zoo_lite.user_code import user_code_by_value

__all__ = ["TORCH_PREDICT", "MODEL_BY_VALUE", "INPUT_SIGNATURE", "predict_arrays", "model_bytes", "feed_signature",
           "stored_signature", "saved_signature"]

#: the key of a ``TorchEstimator.save`` file that holds :func:`model_bytes` of the model
MODEL_BY_VALUE = "model_by_value"
#: the key of a ``TorchEstimator.save`` file that holds the row shape and dtype of each model input
#: (:func:`stored_signature`), when the Estimator had seen rows; older files have none
INPUT_SIGNATURE = "input_signature"


def _set_threads(cpus: int) -> None:
    if torch.get_num_threads() != cpus:
        torch.set_num_threads(cpus)


def predict_arrays(model: nn.Module, inputs: tuple[np.ndarray, ...], batch_size: int) -> list[np.ndarray]:
    """Run ``model`` over the input arrays in batches; its one output, one row per input row."""
    return predict_in_batches(_predict_batch, model, inputs, batch_size)


def _predict_batch(model: nn.Module, batch: list[np.ndarray]) -> list[np.ndarray]:
    dtype = model_dtype(model)
    with torch.no_grad():
        output = model(*(tensor_from_array(x, dtype) for x in batch))
    if not isinstance(output, torch.Tensor):
        raise InvalidArgumentError(
            f"predict: the model returned a {type(output).__name__}; predict supports models that return one tensor"
        )
    return [output.numpy()]


def model_bytes(model: nn.Module) -> bytes:
    """The whole model as bytes; its class goes by value when it lives in the user's project."""
    from pyspark import cloudpickle

    buffer = io.BytesIO()
    with user_code_by_value():
        torch.save(model, buffer, pickle_module=cloudpickle)
    return buffer.getvalue()


def _model_from_bytes(payload: bytes) -> nn.Module:
    model = torch.load(io.BytesIO(payload), weights_only=False)
    model.eval()
    return model


def _row_template(tensor: torch.Tensor) -> np.ndarray:
    """An array of no rows with ``tensor``'s row shape and a NumPy dtype for it (floating types,
    bfloat16 included, as float32: the model's dtype is taken at the call)."""
    dtype = np.float32 if tensor.is_floating_point() else torch.empty(0, dtype=tensor.dtype).numpy().dtype
    return np.empty((0, *tensor.shape[1:]), dtype=dtype)


def feed_signature(feed: Any) -> Optional[InputSignature]:
    """The row shape and dtype of each model input in a torch worker's feed: the tensors of the
    rows it holds (an empty share keeps their shapes), or one row of a DataLoader's dataset
    (the first of this worker's share, collated as training does). None when the batch is not
    tensors, or the dataset fails on that row (training reports its errors).

    Examples
    --------
    >>> feed = ArrayFeed({"x": (np.zeros((4, 3), "float32"), np.arange(4))}, [4], [(0, 0, 4)], 1, torch.float32)
    >>> feed_signature(feed)
    [((3,), dtype('float32')), ((), dtype('int64'))]
    """
    if isinstance(feed, ArrayFeed):
        inputs = feed.inputs
    elif isinstance(feed, DatasetFeed):
        try:
            inputs, _, rows = next(iter(feed.eval_batches(1)), ((), None, 0))
        except Exception:  # noqa: BLE001 - the dataset's own error, which training reports
            return None
        if not rows:
            return None
    else:
        return None
    if not inputs or not all(isinstance(x, torch.Tensor) for x in inputs):
        return None
    return row_signature([_row_template(x) for x in inputs])


def stored_signature(signature: InputSignature) -> list[tuple[tuple[int, ...], str]]:
    """``signature`` in plain values, as a saved file keeps it (under :data:`INPUT_SIGNATURE`)."""
    return [(tuple(shape), np.dtype(dtype).str) for shape, dtype in signature]


def saved_signature(saved: dict[str, Any]) -> Optional[InputSignature]:
    """The input signature a ``TorchEstimator.save`` file keeps; None for a file without one
    (saved before the Estimator saw rows, or by an older zoo_lite) or with one it cannot read.

    Examples
    --------
    >>> saved_signature({INPUT_SIGNATURE: stored_signature([((3,), np.dtype("float32"))])})
    [((3,), dtype('float32'))]
    >>> saved_signature({}) is None
    True
    """
    try:
        return [(tuple(int(n) for n in shape), np.dtype(dtype)) for shape, dtype in saved[INPUT_SIGNATURE]] or None
    except (KeyError, TypeError, ValueError):
        return None


TORCH_PREDICT = PredictRecipe(load=_model_from_bytes, run=predict_arrays, set_threads=_set_threads,
                              feed_signature=feed_signature, needs=("torch",))
