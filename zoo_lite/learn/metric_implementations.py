"""The torchmetrics and Keras classes that zoo_lite writes itself for Orca's metrics.

:mod:`zoo_lite.learn.metrics` holds Orca's metric objects and the table that names, for each, the
torchmetrics class and the Keras class that compute it. Most are the libraries' own; this module
holds the rest, which that table names: a torchmetrics class with "sum" states for each metric that
torchmetrics computes otherwise than Keras (label shapes, clipping, normalising, thresholds), and
Orca's shape-dependent ``Accuracy`` as a registered Keras metric.

Importing this module imports neither torch nor Keras: its classes subclass theirs, so each is
defined on first use, through the module's ``__getattr__`` (which is also how pickle finds a torch
metric in a worker that unpickles one before anything else asked for it).
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

from zoo_lite.errors import InvalidArgumentError

if TYPE_CHECKING:
    import torch

# the classes (_TORCH_CLASS_NAMES and KerasAccuracy) are public too, but exist once __getattr__ defined them
__all__ = ["EPSILON"]

#: Keras' ``backend.epsilon()``: probabilities are clipped to [EPSILON, 1 - EPSILON] before a log
EPSILON = 1e-7

# -- the torch side: torchmetrics classes with "sum" states ---------------------------------------
#
# They subclass torchmetrics.Metric, so they are defined on first use (this module must not import
# torch). Pickle finds them by name through the module's __getattr__ below, which defines them in
# a worker that unpickles one before anything else asked for them.

_definition_lock = threading.Lock()


def _class_indices(target: "torch.Tensor", rows_shape: "torch.Size", zero_based: bool, name: str) -> "torch.Tensor":
    """Class indices ``(rows,)`` from a ``(rows,)`` or ``(rows, 1)`` label, counted from 0."""
    if target.numel() != rows_shape.numel():
        raise InvalidArgumentError(
            f"metrics: {name} takes one class index per row; the label has shape {tuple(target.shape)} next to class "
            f"scores of shape {tuple(rows_shape) + ('C',)}; give labels (rows,) or (rows, 1), or use CategoricalAccuracy "
            "for one-hot labels"
        )
    indices = target.reshape(rows_shape).long()
    return indices if zero_based else indices - 1


def _is_sparse(preds: "torch.Tensor", target: "torch.Tensor") -> bool:
    """Class scores next to class indices: one more dimension, or a 1-column label next to C > 1 columns."""
    return preds.dim() == target.dim() + 1 or (
        preds.dim() == target.dim() >= 2 and preds.shape[-1] > 1 and target.shape[-1] == 1)


def _check_same_shape(preds: "torch.Tensor", target: "torch.Tensor", name: str) -> None:
    if preds.shape != target.shape:
        raise InvalidArgumentError(
            f"metrics: {name} compares predictions and labels element by element, but the predictions have shape "
            f"{tuple(preds.shape)} and the labels {tuple(target.shape)}; give labels of the model output's shape"
        )


def _accuracy_hits(preds: "torch.Tensor", target: "torch.Tensor", zero_based: bool) -> "torch.Tensor":
    if _is_sparse(preds, target):
        return preds.argmax(dim=-1) == _class_indices(target, preds.shape[:-1], zero_based, "Accuracy")
    _check_same_shape(preds, target, "Accuracy")
    predicted = (preds >= 0.5).long() if preds.is_floating_point() else preds   # Orca's threshold: >= 0.5
    return predicted == target


def _sparse_hits(preds: "torch.Tensor", target: "torch.Tensor", k: int, name: str) -> "torch.Tensor":
    indices = _class_indices(target, preds.shape[:-1], True, name)
    if k == 1:
        return preds.argmax(dim=-1) == indices
    top = preds.topk(min(k, preds.shape[-1]), dim=-1).indices   # k >= C: every label is in the top k, as in Keras
    return (top == indices.unsqueeze(-1)).any(dim=-1)


def _define_torch_classes() -> dict[str, type]:
    import torch
    import torchmetrics

    class TorchMean(torchmetrics.Metric):
        """A mean of per-element (or per-row) values: the states are their sum and their count."""

        is_differentiable = False
        full_state_update = False

        def __init__(self, **kwargs: Any) -> None:
            super().__init__(**kwargs)
            # float64 sums: exact counts, and a sum over many batches that does not drift
            self.add_state("total", default=torch.tensor(0.0, dtype=torch.float64), dist_reduce_fx="sum")
            self.add_state("count", default=torch.tensor(0.0, dtype=torch.float64), dist_reduce_fx="sum")

        def values(self, preds: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
            raise NotImplementedError

        def update(self, preds: torch.Tensor, target: torch.Tensor) -> None:
            if not isinstance(preds, torch.Tensor) or not isinstance(target, torch.Tensor):
                raise InvalidArgumentError(
                    f"metrics: {type(self).__name__[len('Torch'):]} takes one tensor of predictions and one of labels, "
                    f"got a {type(preds).__name__} and a {type(target).__name__}; a model with several outputs needs "
                    "a torchmetrics Metric or a callable of its own"
                )
            values = self.values(preds, target)
            self.total += values.sum(dtype=torch.float64)
            self.count += values.numel()

        def compute(self) -> torch.Tensor:
            return (self.total / self.count.clamp(min=1)).float()

    class TorchAccuracy(TorchMean):
        higher_is_better = True

        def __init__(self, zero_based_label: bool = True, **kwargs: Any) -> None:
            super().__init__(**kwargs)
            self.zero_based_label = zero_based_label

        def values(self, preds: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
            return _accuracy_hits(preds, target, self.zero_based_label)

    class TorchSparseCategoricalAccuracy(TorchMean):
        higher_is_better = True

        def values(self, preds: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
            return _sparse_hits(preds, target, 1, "SparseCategoricalAccuracy")

    class TorchTop5Accuracy(TorchMean):
        higher_is_better = True

        def values(self, preds: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
            return _sparse_hits(preds, target, 5, "Top5Accuracy")

    class TorchCategoricalAccuracy(TorchMean):
        higher_is_better = True

        def values(self, preds: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
            _check_same_shape(preds, target, "CategoricalAccuracy")
            return preds.argmax(dim=-1) == target.argmax(dim=-1)

    class TorchBinaryAccuracy(TorchMean):
        higher_is_better = True

        def values(self, preds: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
            _check_same_shape(preds, target, "BinaryAccuracy")
            return (preds > 0.5).long() == target   # Orca's and Keras' threshold: > 0.5

    class TorchBinaryCrossEntropy(TorchMean):
        higher_is_better = False

        def values(self, preds: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
            _check_same_shape(preds, target, "BinaryCrossEntropy")
            p, t = preds.double().clamp(EPSILON, 1 - EPSILON), target.double()
            return -(t * p.log() + (1 - t) * (1 - p).log())

    class TorchCategoricalCrossEntropy(TorchMean):
        higher_is_better = False

        def values(self, preds: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
            _check_same_shape(preds, target, "CategoricalCrossEntropy")
            p = preds.double()
            p = (p / p.sum(dim=-1, keepdim=True)).clamp(EPSILON, 1 - EPSILON)
            return -(target.double() * p.log()).sum(dim=-1)

    class TorchSparseCategoricalCrossEntropy(TorchMean):
        higher_is_better = False

        def values(self, preds: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
            indices = _class_indices(target, preds.shape[:-1], True, "SparseCategoricalCrossEntropy")
            p = preds.double().clamp(EPSILON, 1 - EPSILON)
            p = p / p.sum(dim=-1, keepdim=True)
            return -p.gather(-1, indices.unsqueeze(-1)).squeeze(-1).log()

    class TorchKLDivergence(TorchMean):
        higher_is_better = False

        def values(self, preds: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
            _check_same_shape(preds, target, "KLDivergence")
            p, t = preds.double().clamp(EPSILON, 1), target.double().clamp(EPSILON, 1)
            return (t * (t / p).log()).sum(dim=-1)

    class TorchPoisson(TorchMean):
        higher_is_better = False

        def values(self, preds: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
            _check_same_shape(preds, target, "Poisson")
            p = preds.double()
            return p - target.double() * (p + EPSILON).log()

    classes = {cls.__name__: cls for cls in (
        TorchMean, TorchAccuracy, TorchSparseCategoricalAccuracy, TorchTop5Accuracy, TorchCategoricalAccuracy,
        TorchBinaryAccuracy, TorchBinaryCrossEntropy, TorchCategoricalCrossEntropy,
        TorchSparseCategoricalCrossEntropy, TorchKLDivergence, TorchPoisson)}
    for name, cls in classes.items():
        cls.__qualname__ = name   # found by pickle as zoo_lite.learn.metric_implementations.<name>
    return classes


_TORCH_CLASS_NAMES = frozenset({
    "TorchMean", "TorchAccuracy", "TorchSparseCategoricalAccuracy", "TorchTop5Accuracy", "TorchCategoricalAccuracy",
    "TorchBinaryAccuracy", "TorchBinaryCrossEntropy", "TorchCategoricalCrossEntropy",
    "TorchSparseCategoricalCrossEntropy", "TorchKLDivergence", "TorchPoisson"})


def _torch_class(name: str) -> type:
    """The torchmetrics class ``name``, defined (once, in this module's namespace) on first use."""
    with _definition_lock:
        if name not in globals():
            globals().update(_define_torch_classes())
    return globals()[name]


def __getattr__(name: str) -> Any:
    # PEP 562: unpickling a torch metric looks its class up here before anything defined it, and
    # zoo_lite.learn.metrics' table names its classes by attribute
    if name in _TORCH_CLASS_NAMES:
        return _torch_class(name)
    if name == "KerasAccuracy":
        return _keras_accuracy_class()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# -- the Keras side: Orca's Accuracy, one class registered for Keras' saving format ------------------

_keras_classes: dict[str, type] = {}


def _keras_accuracy_values(y_true: Any, y_pred: Any, zero_based_label: bool = True) -> Any:
    """Per-element hits of Orca's Accuracy in ``keras.ops`` (shapes are static inside a trace)."""
    import keras
    from keras import ops

    y_true, y_pred = ops.convert_to_tensor(y_true), ops.convert_to_tensor(y_pred)
    pred_rank, true_rank = len(y_pred.shape), len(y_true.shape)
    if pred_rank == true_rank + 1 or (pred_rank == true_rank >= 2 and y_pred.shape[-1] != 1 and y_true.shape[-1] == 1):
        if pred_rank == true_rank:
            y_true = ops.squeeze(y_true, axis=-1)
        labels = ops.cast(y_true, "int64") - (0 if zero_based_label else 1)
        return ops.cast(ops.equal(ops.cast(ops.argmax(y_pred, axis=-1), "int64"), labels), "float32")
    if pred_rank != true_rank:
        raise InvalidArgumentError(
            f"metrics: Accuracy takes labels of the predictions' shape or class indices, got predictions of shape "
            f"{tuple(y_pred.shape)} and labels of shape {tuple(y_true.shape)}"
        )
    is_float = "float" in keras.backend.standardize_dtype(y_pred.dtype)
    predicted = ops.greater_equal(y_pred, 0.5) if is_float else y_pred   # Orca's threshold: >= 0.5
    return ops.cast(ops.equal(ops.cast(predicted, y_true.dtype), y_true), "float32")


def _keras_accuracy_class() -> type:
    """Orca's Accuracy as a Keras metric, registered for Keras' saving format as ``zoo_lite>Accuracy``."""
    with _definition_lock:
        if "Accuracy" not in _keras_classes:
            import keras

            @keras.saving.register_keras_serializable(package="zoo_lite", name="Accuracy")
            class KerasAccuracy(keras.metrics.MeanMetricWrapper):
                def __init__(self, name: str = "Accuracy", dtype: Any = None, zero_based_label: bool = True) -> None:
                    super().__init__(_keras_accuracy_values, name=name, dtype=dtype, zero_based_label=zero_based_label)
                    self.zero_based_label = zero_based_label

                def get_config(self) -> dict[str, Any]:
                    # the function is fixed by the class: only the arguments go to the saved config
                    return {"name": self.name, "dtype": self.dtype, "zero_based_label": self.zero_based_label}

            _keras_classes["Accuracy"] = KerasAccuracy
    return _keras_classes["Accuracy"]

