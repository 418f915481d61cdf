"""How a PyTorch model runs in the Spark tasks for ``predict`` (see :mod:`zoo_lite.learn.base.predict`)."""

from __future__ import annotations

import io

import numpy as np
import torch
from torch import nn

from zoo_lite.errors import InvalidArgumentError
from zoo_lite.learn.base.predict import PredictRecipe, predict_in_batches
from zoo_lite.learn.pytorch.feeds import tensor_from_array
from zoo_lite.learn.pytorch.specs import model_dtype
from zoo_lite.user_code import user_code_by_value

__all__ = ["TORCH_PREDICT", "MODEL_BY_VALUE", "predict_arrays", "model_bytes"]

#: the key of a ``TorchEstimator.save`` file that holds :func:`model_bytes` of the model
MODEL_BY_VALUE = "model_by_value"


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


TORCH_PREDICT = PredictRecipe(load=_model_from_bytes, run=predict_arrays, set_threads=_set_threads)
