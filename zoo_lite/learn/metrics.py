"""Orca's metric objects (``zoo.orca.learn.metrics``), for both Estimators.

An Orca metric names *what* to measure; each Estimator turns it into its framework's own metric
object: a `torchmetrics <https://lightning.ai/docs/torchmetrics>`_ metric for
``Estimator.from_torch(metrics=[...])`` and a Keras 3 metric for ``Estimator.from_keras(metrics=[...])``.
Both keep their state as totals and counts, which the workers add up, so a result over data split
between workers equals the result over all of it. Results are keyed by :meth:`Metric.get_name`
(``"Accuracy"``, ``"MAE"``, ...), with ``val_`` in front for ``fit``'s validation data.

Where Orca's PyTorch metrics and Keras' metrics disagree (clipping, normalising probabilities),
both frameworks follow Keras, so that one metric gives one number in either. Orca's classification
metrics read probabilities: a model that outputs logits gets the binary cases wrong (``Accuracy``
thresholds at 0.5, as Orca's did).

Importing this module imports neither torch nor Keras: each is imported when a metric is first
turned into that framework's object (or, for the torch classes, when a worker unpickles one).
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any, Callable, Optional

from zoo_lite.errors import InvalidArgumentError, check_positive_int

if TYPE_CHECKING:
    import keras
    import torch
    import torchmetrics

__all__ = ["Metric", "AUC", "MAE", "MSE", "Accuracy", "SparseCategoricalAccuracy", "CategoricalAccuracy",
           "BinaryAccuracy", "Top5Accuracy", "BinaryCrossEntropy", "CategoricalCrossEntropy",
           "SparseCategoricalCrossEntropy", "KLDivergence", "Poisson", "keras_custom_objects", "keras_metrics",
           "with_keras_metrics"]

#: Keras' ``backend.epsilon()``: probabilities are clipped to [EPSILON, 1 - EPSILON] before a log
EPSILON = 1e-7

_BACKENDS = {"pytorch": "pytorch", "torch": "pytorch", "tf": "tf", "keras": "tf"}


class Metric:
    """Base class of Orca's metrics: a name, and a recipe per framework.

    A subclass implements :meth:`get_name` and at least one of :meth:`get_pytorch_metric` (a
    ``torchmetrics.Metric``) and :meth:`get_tf_metric` (a ``keras.metrics.Metric``); the
    Estimators call :meth:`get_metric`. Only metrics whose state is totals and counts aggregate
    exactly over the workers.

    Examples
    --------
    >>> class Half(Metric):
    ...     def get_name(self):
    ...         return "Half"
    >>> Half().get_metric("tf")
    Traceback (most recent call last):
    ...
    zoo_lite.errors.InvalidArgumentError: metrics: Half has no Keras implementation (get_tf_metric); pass a keras.metrics.Metric or a metric name string instead, or implement Half.get_tf_metric
    """

    def get_name(self) -> str:
        """The key of this metric's value in the results (``val_`` + it for validation data)."""
        return type(self).__name__

    def get_pytorch_metric(self) -> "torchmetrics.Metric":
        """A new ``torchmetrics.Metric`` computing this metric."""
        raise InvalidArgumentError(
            f"metrics: {self.get_name()} has no PyTorch implementation (get_pytorch_metric); pass a torchmetrics "
            f"Metric or a callable (preds, target) -> tensor instead, or implement {type(self).__name__}.get_pytorch_metric"
        )

    def get_tf_metric(self) -> "keras.metrics.Metric":
        """A new ``keras.metrics.Metric`` computing this metric, named :meth:`get_name`."""
        raise InvalidArgumentError(
            f"metrics: {self.get_name()} has no Keras implementation (get_tf_metric); pass a keras.metrics.Metric "
            f"or a metric name string instead, or implement {type(self).__name__}.get_tf_metric"
        )

    def get_metric(self, backend: str = "pytorch") -> Any:
        """This metric as ``backend``'s object, checked.

        Parameters
        ----------
        backend : {"pytorch", "tf"}
            ``"torch"`` and ``"keras"`` are accepted too. Orca's ``"bigdl"`` and ``"mxnet"`` have
            no Estimator in zoo_lite.

        Raises
        ------
        InvalidArgumentError
            An unknown backend, a metric without that framework's implementation, or an
            implementation of the wrong type.

        Examples
        --------
        >>> type(MAE().get_metric("pytorch")).__name__
        'MeanAbsoluteError'
        """
        framework = _BACKENDS.get(backend) if isinstance(backend, str) else None
        if framework is None:
            raise InvalidArgumentError(
                f"backend={backend!r} is not supported; use 'pytorch' (Estimator.from_torch) or 'tf' (Estimator.from_keras): "
                "zoo_lite has no BigDL or MXNet Estimator"
            )
        if framework == "pytorch":
            import torchmetrics

            built, kind = self.get_pytorch_metric(), torchmetrics.Metric
        else:
            import keras

            built, kind = self.get_tf_metric(), keras.metrics.Metric
        if not isinstance(built, kind):
            method, expected = (("get_pytorch_metric", "torchmetrics.Metric") if framework == "pytorch"
                                else ("get_tf_metric", "keras.metrics.Metric"))
            raise InvalidArgumentError(
                f"metrics: {type(self).__name__}.{method}() returned a {type(built).__name__}; it must return a "
                f"{expected}, whose state the workers can add up"
            )
        return built

    def __repr__(self) -> str:
        arguments = ", ".join(f"{name}={value!r}" for name, value in vars(self).items())
        return f"{type(self).__name__}({arguments})"

    def __eq__(self, other: object) -> bool:
        return type(self) is type(other) and vars(self) == vars(other)

    def __hash__(self) -> int:
        return hash((type(self), tuple(sorted(vars(self).items()))))


class AUC(Metric):
    """Area under the ROC curve of a binary (0/1) label, one column or several (all pooled).

    Computed over ``threshold_num`` thresholds evenly spread on [0, 1], so the value approximates
    the exact AUC (closer with more thresholds) and the state is a fixed-size table of counts that
    the workers add up. PyTorch: ``torchmetrics`` ``BinaryAUROC(thresholds=threshold_num)``
    (trapezoids); Keras: ``keras.metrics.AUC(num_thresholds=threshold_num)`` (interpolated), so
    the two differ in the last digits.

    Parameters
    ----------
    threshold_num : int, default 200
        The number of thresholds, at least 2.

    Examples
    --------
    >>> import torch
    >>> auc = AUC(threshold_num=20).get_metric("pytorch")
    >>> auc.update(torch.tensor([0.1, 0.4, 0.35, 0.8]), torch.tensor([0, 0, 1, 1]))
    >>> round(float(auc.compute()), 2)
    0.75
    """

    def __init__(self, threshold_num: int = 200) -> None:
        threshold_num = check_positive_int(threshold_num, "threshold_num")
        if threshold_num < 2:
            raise InvalidArgumentError(f"threshold_num={threshold_num!r} must be at least 2 (the thresholds 0 and 1)")
        self.threshold_num = threshold_num

    def get_name(self) -> str:
        return "AUC"

    def get_pytorch_metric(self) -> "torchmetrics.Metric":
        from torchmetrics.classification import BinaryAUROC

        return BinaryAUROC(thresholds=self.threshold_num)

    def get_tf_metric(self) -> "keras.metrics.Metric":
        import keras

        return keras.metrics.AUC(num_thresholds=self.threshold_num, name=self.get_name())


class MAE(Metric):
    """Mean absolute error over every element of the label.

    Examples
    --------
    >>> import torch
    >>> mae = MAE().get_metric("pytorch")
    >>> mae.update(torch.tensor([[1.0, -2.0], [1.0, 1.0]]), torch.tensor([[0.0, 1.0], [0.0, 1.0]]))
    >>> float(mae.compute())
    1.25
    """

    def get_name(self) -> str:
        return "MAE"

    def get_pytorch_metric(self) -> "torchmetrics.Metric":
        from torchmetrics.regression import MeanAbsoluteError

        return MeanAbsoluteError()

    def get_tf_metric(self) -> "keras.metrics.Metric":
        import keras

        return keras.metrics.MeanAbsoluteError(name=self.get_name())


class MSE(Metric):
    """Mean squared error over every element of the label.

    Examples
    --------
    >>> import keras, numpy as np
    >>> mse = MSE().get_metric("tf")
    >>> _ = mse.update_state(np.array([[1.0, 1.0], [1.0, 1.0]]), np.array([[1.0, -2.0], [1.0, 1.0]]))
    >>> float(mse.result()), mse.name
    (2.25, 'MSE')
    """

    def get_name(self) -> str:
        return "MSE"

    def get_pytorch_metric(self) -> "torchmetrics.Metric":
        from torchmetrics.regression import MeanSquaredError

        return MeanSquaredError()

    def get_tf_metric(self) -> "keras.metrics.Metric":
        import keras

        return keras.metrics.MeanSquaredError(name=self.get_name())


class Accuracy(Metric):
    """Top-1 accuracy of a multi-class model, or accuracy of a binary one, chosen by shape.

    - Class scores ``(rows, C)`` next to class indices ``(rows,)`` or ``(rows, 1)``: the class
      with the highest score is compared with the label.
    - A prediction of the label's shape (e.g. a sigmoid output ``(rows, 1)``): a probability of at
      least 0.5 counts as 1, and every element is compared with the label.

    Parameters
    ----------
    zero_based_label : bool, default True
        Whether the class indices start from 0; with False they start from 1. Only for class
        scores: a binary label is 0 or 1.

    Examples
    --------
    >>> import torch
    >>> accuracy = Accuracy().get_metric("pytorch")
    >>> accuracy.update(torch.tensor([[0.2, 0.8], [0.9, 0.1], [0.3, 0.7]]), torch.tensor([1, 1, 1]))
    >>> round(float(accuracy.compute()), 4)
    0.6667
    >>> accuracy = Accuracy().get_metric("pytorch")
    >>> accuracy.update(torch.tensor([[0.9], [0.2], [0.6]]), torch.tensor([[1.0], [0.0], [0.0]]))
    >>> round(float(accuracy.compute()), 4)
    0.6667
    """

    def __init__(self, zero_based_label: bool = True) -> None:
        if not isinstance(zero_based_label, bool):
            raise InvalidArgumentError(f"zero_based_label={zero_based_label!r} must be True (labels 0..C-1) or False (1..C)")
        self.zero_based_label = zero_based_label

    def get_name(self) -> str:
        return "Accuracy"

    def get_pytorch_metric(self) -> "torchmetrics.Metric":
        return _torch_class("_TorchAccuracy")(zero_based_label=self.zero_based_label)

    def get_tf_metric(self) -> "keras.metrics.Metric":
        return _keras_accuracy_class()(name=self.get_name(), zero_based_label=self.zero_based_label)


class SparseCategoricalAccuracy(Metric):
    """Top-1 accuracy of class scores ``(rows, C)`` against class indices ``(rows,)`` or ``(rows, 1)``.

    Examples
    --------
    >>> import torch
    >>> accuracy = SparseCategoricalAccuracy().get_metric("pytorch")
    >>> accuracy.update(torch.tensor([[0.1, 0.9, 0.8], [0.05, 0.95, 0.0]]), torch.tensor([[2], [1]]))
    >>> float(accuracy.compute())
    0.5
    """

    def get_name(self) -> str:
        return "SparseCategoricalAccuracy"

    def get_pytorch_metric(self) -> "torchmetrics.Metric":
        return _torch_class("_TorchSparseCategoricalAccuracy")()

    def get_tf_metric(self) -> "keras.metrics.Metric":
        import keras

        return keras.metrics.SparseCategoricalAccuracy(name=self.get_name())


class CategoricalAccuracy(Metric):
    """Top-1 accuracy of class scores against one-hot labels of the same shape.

    Examples
    --------
    >>> import torch
    >>> accuracy = CategoricalAccuracy().get_metric("pytorch")
    >>> accuracy.update(torch.tensor([[0.1, 0.9, 0.8], [0.05, 0.95, 0.0]]), torch.tensor([[0, 0, 1], [0, 1, 0]]))
    >>> float(accuracy.compute())
    0.5
    """

    def get_name(self) -> str:
        return "CategoricalAccuracy"

    def get_pytorch_metric(self) -> "torchmetrics.Metric":
        return _torch_class("_TorchCategoricalAccuracy")()

    def get_tf_metric(self) -> "keras.metrics.Metric":
        import keras

        return keras.metrics.CategoricalAccuracy(name=self.get_name())


class BinaryAccuracy(Metric):
    """Accuracy of probabilities against 0/1 labels of the same shape: a probability above 0.5
    counts as 1, and every element is compared with its label.

    Examples
    --------
    >>> import torch
    >>> accuracy = BinaryAccuracy().get_metric("pytorch")
    >>> accuracy.update(torch.tensor([0.98, 1.0, 0.0, 0.6]), torch.tensor([1, 1, 0, 0]))
    >>> float(accuracy.compute())
    0.75
    """

    def get_name(self) -> str:
        return "BinaryAccuracy"

    def get_pytorch_metric(self) -> "torchmetrics.Metric":
        return _torch_class("_TorchBinaryAccuracy")()

    def get_tf_metric(self) -> "keras.metrics.Metric":
        import keras

        return keras.metrics.BinaryAccuracy(name=self.get_name(), threshold=0.5)


class Top5Accuracy(Metric):
    """How often the class index ``(rows,)`` or ``(rows, 1)`` is among the 5 highest class scores.

    Examples
    --------
    >>> import torch
    >>> accuracy = Top5Accuracy().get_metric("pytorch")
    >>> scores = torch.tensor([[0.1, 0.9, 0.8, 0.4, 0.5, 0.2], [0.05, 0.95, 0.0, 0.4, 0.5, 0.2]])
    >>> accuracy.update(scores, torch.tensor([2, 2]))
    >>> float(accuracy.compute())
    0.5
    """

    def get_name(self) -> str:
        return "Top5Accuracy"

    def get_pytorch_metric(self) -> "torchmetrics.Metric":
        return _torch_class("_TorchTop5Accuracy")()

    def get_tf_metric(self) -> "keras.metrics.Metric":
        import keras

        return keras.metrics.SparseTopKCategoricalAccuracy(k=5, name=self.get_name())


class BinaryCrossEntropy(Metric):
    """Binary cross-entropy of probabilities against 0/1 labels of the same shape, averaged over
    every element (probabilities clipped to [1e-7, 1 - 1e-7]).

    Examples
    --------
    >>> import torch
    >>> entropy = BinaryCrossEntropy().get_metric("pytorch")
    >>> entropy.update(torch.tensor([[0.6, 0.4], [0.4, 0.6]]), torch.tensor([[0, 1], [0, 0]]))
    >>> round(float(entropy.compute()), 6)
    0.814924
    """

    def get_name(self) -> str:
        return "BinaryCrossEntropy"

    def get_pytorch_metric(self) -> "torchmetrics.Metric":
        return _torch_class("_TorchBinaryCrossEntropy")()

    def get_tf_metric(self) -> "keras.metrics.Metric":
        import keras

        return keras.metrics.BinaryCrossentropy(name=self.get_name())


class CategoricalCrossEntropy(Metric):
    """Cross-entropy of class probabilities against one-hot labels, averaged over rows (each row's
    probabilities are scaled to sum to 1, then clipped, as Keras does).

    Examples
    --------
    >>> import torch
    >>> entropy = CategoricalCrossEntropy().get_metric("pytorch")
    >>> entropy.update(torch.tensor([[0.05, 0.95, 0.0], [0.1, 0.8, 0.1]]), torch.tensor([[0, 1, 0], [0, 0, 1]]))
    >>> round(float(entropy.compute()), 6)
    1.176939
    """

    def get_name(self) -> str:
        return "CategoricalCrossEntropy"

    def get_pytorch_metric(self) -> "torchmetrics.Metric":
        return _torch_class("_TorchCategoricalCrossEntropy")()

    def get_tf_metric(self) -> "keras.metrics.Metric":
        import keras

        return keras.metrics.CategoricalCrossentropy(name=self.get_name())


class SparseCategoricalCrossEntropy(Metric):
    """Cross-entropy of class probabilities ``(rows, C)`` against class indices ``(rows,)`` or
    ``(rows, 1)``, averaged over rows (probabilities clipped, then scaled to sum to 1, as Keras does).

    Examples
    --------
    >>> import torch
    >>> entropy = SparseCategoricalCrossEntropy().get_metric("pytorch")
    >>> entropy.update(torch.tensor([[0.05, 0.95, 0.0], [0.1, 0.8, 0.1]]), torch.tensor([1, 2]))
    >>> round(float(entropy.compute()), 6)
    1.176939
    """

    def get_name(self) -> str:
        return "SparseCategoricalCrossEntropy"

    def get_pytorch_metric(self) -> "torchmetrics.Metric":
        return _torch_class("_TorchSparseCategoricalCrossEntropy")()

    def get_tf_metric(self) -> "keras.metrics.Metric":
        import keras

        return keras.metrics.SparseCategoricalCrossentropy(name=self.get_name())


class KLDivergence(Metric):
    """Kullback-Leibler divergence from the predicted distribution to the label's, summed over the
    last axis and averaged over rows (both clipped to [1e-7, 1], as Keras does).

    Examples
    --------
    >>> import torch
    >>> divergence = KLDivergence().get_metric("pytorch")
    >>> divergence.update(torch.tensor([[0.6, 0.4], [0.4, 0.6]]), torch.tensor([[0.0, 1.0], [0.0, 0.0]]))
    >>> round(float(divergence.compute()), 5)
    0.45814
    """

    def get_name(self) -> str:
        return "KLDivergence"

    def get_pytorch_metric(self) -> "torchmetrics.Metric":
        return _torch_class("_TorchKLDivergence")()

    def get_tf_metric(self) -> "keras.metrics.Metric":
        import keras

        return keras.metrics.KLDivergence(name=self.get_name())


class Poisson(Metric):
    """Poisson deviance ``pred - label * log(pred + 1e-7)``, averaged over every element.

    Examples
    --------
    >>> import torch
    >>> poisson = Poisson().get_metric("pytorch")
    >>> poisson.update(torch.tensor([[1.0, 1.0], [0.0, 0.0]]), torch.tensor([[0.0, 1.0], [0.0, 0.0]]))
    >>> round(float(poisson.compute()), 6)
    0.5
    """

    def get_name(self) -> str:
        return "Poisson"

    def get_pytorch_metric(self) -> "torchmetrics.Metric":
        return _torch_class("_TorchPoisson")()

    def get_tf_metric(self) -> "keras.metrics.Metric":
        import keras

        return keras.metrics.Poisson(name=self.get_name())


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

    class _TorchMean(torchmetrics.Metric):
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
                    f"metrics: {type(self).__name__[len('_Torch'):]} takes one tensor of predictions and one of labels, "
                    f"got a {type(preds).__name__} and a {type(target).__name__}; a model with several outputs needs "
                    "a torchmetrics Metric or a callable of its own"
                )
            values = self.values(preds, target)
            self.total += values.sum(dtype=torch.float64)
            self.count += values.numel()

        def compute(self) -> torch.Tensor:
            return (self.total / self.count.clamp(min=1)).float()

    class _TorchAccuracy(_TorchMean):
        higher_is_better = True

        def __init__(self, zero_based_label: bool = True, **kwargs: Any) -> None:
            super().__init__(**kwargs)
            self.zero_based_label = zero_based_label

        def values(self, preds: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
            return _accuracy_hits(preds, target, self.zero_based_label)

    class _TorchSparseCategoricalAccuracy(_TorchMean):
        higher_is_better = True

        def values(self, preds: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
            return _sparse_hits(preds, target, 1, "SparseCategoricalAccuracy")

    class _TorchTop5Accuracy(_TorchMean):
        higher_is_better = True

        def values(self, preds: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
            return _sparse_hits(preds, target, 5, "Top5Accuracy")

    class _TorchCategoricalAccuracy(_TorchMean):
        higher_is_better = True

        def values(self, preds: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
            _check_same_shape(preds, target, "CategoricalAccuracy")
            return preds.argmax(dim=-1) == target.argmax(dim=-1)

    class _TorchBinaryAccuracy(_TorchMean):
        higher_is_better = True

        def values(self, preds: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
            _check_same_shape(preds, target, "BinaryAccuracy")
            return (preds > 0.5).long() == target   # Orca's and Keras' threshold: > 0.5

    class _TorchBinaryCrossEntropy(_TorchMean):
        higher_is_better = False

        def values(self, preds: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
            _check_same_shape(preds, target, "BinaryCrossEntropy")
            p, t = preds.double().clamp(EPSILON, 1 - EPSILON), target.double()
            return -(t * p.log() + (1 - t) * (1 - p).log())

    class _TorchCategoricalCrossEntropy(_TorchMean):
        higher_is_better = False

        def values(self, preds: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
            _check_same_shape(preds, target, "CategoricalCrossEntropy")
            p = preds.double()
            p = (p / p.sum(dim=-1, keepdim=True)).clamp(EPSILON, 1 - EPSILON)
            return -(target.double() * p.log()).sum(dim=-1)

    class _TorchSparseCategoricalCrossEntropy(_TorchMean):
        higher_is_better = False

        def values(self, preds: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
            indices = _class_indices(target, preds.shape[:-1], True, "SparseCategoricalCrossEntropy")
            p = preds.double().clamp(EPSILON, 1 - EPSILON)
            p = p / p.sum(dim=-1, keepdim=True)
            return -p.gather(-1, indices.unsqueeze(-1)).squeeze(-1).log()

    class _TorchKLDivergence(_TorchMean):
        higher_is_better = False

        def values(self, preds: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
            _check_same_shape(preds, target, "KLDivergence")
            p, t = preds.double().clamp(EPSILON, 1), target.double().clamp(EPSILON, 1)
            return (t * (t / p).log()).sum(dim=-1)

    class _TorchPoisson(_TorchMean):
        higher_is_better = False

        def values(self, preds: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
            _check_same_shape(preds, target, "Poisson")
            p = preds.double()
            return p - target.double() * (p + EPSILON).log()

    classes = {cls.__name__: cls for cls in (
        _TorchMean, _TorchAccuracy, _TorchSparseCategoricalAccuracy, _TorchTop5Accuracy, _TorchCategoricalAccuracy,
        _TorchBinaryAccuracy, _TorchBinaryCrossEntropy, _TorchCategoricalCrossEntropy,
        _TorchSparseCategoricalCrossEntropy, _TorchKLDivergence, _TorchPoisson)}
    for name, cls in classes.items():
        cls.__qualname__ = name   # found by pickle as zoo_lite.learn.metrics.<name>
    return classes


_TORCH_CLASS_NAMES = frozenset({
    "_TorchMean", "_TorchAccuracy", "_TorchSparseCategoricalAccuracy", "_TorchTop5Accuracy", "_TorchCategoricalAccuracy",
    "_TorchBinaryAccuracy", "_TorchBinaryCrossEntropy", "_TorchCategoricalCrossEntropy",
    "_TorchSparseCategoricalCrossEntropy", "_TorchKLDivergence", "_TorchPoisson"})


def _torch_class(name: str) -> type:
    """The torchmetrics class ``name``, defined (once, in this module's namespace) on first use."""
    with _definition_lock:
        if name not in globals():
            globals().update(_define_torch_classes())
    return globals()[name]


def __getattr__(name: str) -> Any:
    # PEP 562: unpickling a torch metric looks its class up here before anything defined it
    if name in _TORCH_CLASS_NAMES:
        return _torch_class(name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# -- the Keras side: built-in Keras metrics, and one registered class for Orca's Accuracy ----------

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
            class _KerasAccuracy(keras.metrics.MeanMetricWrapper):
                def __init__(self, name: str = "Accuracy", dtype: Any = None, zero_based_label: bool = True) -> None:
                    super().__init__(_keras_accuracy_values, name=name, dtype=dtype, zero_based_label=zero_based_label)
                    self.zero_based_label = zero_based_label

                def get_config(self) -> dict[str, Any]:
                    # the function is fixed by the class: only the arguments go to the saved config
                    return {"name": self.name, "dtype": self.dtype, "zero_based_label": self.zero_based_label}

            _keras_classes["Accuracy"] = _KerasAccuracy
    return _keras_classes["Accuracy"]


def keras_custom_objects() -> dict[str, Any]:
    """The Keras classes behind these metrics, registered for Keras' saving format.

    A model compiled with ``Accuracy()`` is saved with a ``zoo_lite>Accuracy`` metric; the
    Estimator calls this before it loads one, and so should code that loads such a ``.keras``
    file itself: ``keras.models.load_model(path, custom_objects=keras_custom_objects())``.

    Returns
    -------
    dict
        ``{registered name: class}``.

    Examples
    --------
    >>> sorted(keras_custom_objects())
    ['zoo_lite>Accuracy']
    """
    return {"zoo_lite>Accuracy": _keras_accuracy_class()}


def _name_of(metric: Any) -> Optional[str]:
    return metric if isinstance(metric, str) else getattr(metric, "name", None) or getattr(metric, "__name__", None)


def keras_metrics(metrics: Any, argument: str = "metrics") -> list[Any]:
    """Orca metrics, Keras metrics and metric names as what ``model.compile(metrics=...)`` takes.

    Parameters
    ----------
    metrics
        One metric or a list of them: Orca metrics (this module's), ``keras.metrics.Metric``
        objects, Keras metric names (``"mae"``) or functions ``(y_true, y_pred) -> values``.
    argument : str
        The argument named in errors.

    Raises
    ------
    InvalidArgumentError
        Something that is none of these, or two metrics with one name.

    Examples
    --------
    >>> [m if isinstance(m, str) else m.name for m in keras_metrics([MAE(), "mse"])]
    ['MAE', 'mse']
    """
    import keras

    items = list(metrics) if isinstance(metrics, (list, tuple)) else [metrics]
    converted: list[Any] = []
    for item in items:
        if isinstance(item, Metric):
            converted.append(item.get_metric("tf"))
        elif isinstance(item, (str, keras.metrics.Metric)) or (callable(item) and not isinstance(item, type)):
            converted.append(item)
        else:
            raise InvalidArgumentError(
                f"{argument}: {item!r} ({type(item).__name__}) is not a metric; pass Orca metrics from "
                "zoo_lite.learn.metrics (e.g. Accuracy()), keras.metrics.Metric objects or Keras metric names such as 'mae'"
            )
    names = [_name_of(m) for m in converted]
    repeated = sorted({n for n in names if n is not None and names.count(n) > 1})
    if repeated:
        raise InvalidArgumentError(f"{argument}: two metrics are named {repeated[0]!r}; give each metric its own name")
    return converted


def with_keras_metrics(model: "keras.Model", metrics: Any, argument: str = "metrics") -> None:
    """Add ``metrics`` (as :func:`keras_metrics` takes them) to a compiled model's metrics, in place.

    The model is compiled again with its own compile arguments, the same optimizer object (its
    state kept) and its metrics followed by ``metrics``.

    Raises
    ------
    InvalidArgumentError
        The model is not compiled, its metrics are given per output (a dict), or a metric repeats a name.

    Examples
    --------
    >>> import keras
    >>> model = keras.Sequential([keras.Input(shape=(2,)), keras.layers.Dense(1)])
    >>> model.compile(optimizer="sgd", loss="mse", metrics=["mae"])
    >>> with_keras_metrics(model, [MSE()])
    >>> [m if isinstance(m, str) else m["config"]["name"] for m in model.get_compile_config()["metrics"]]
    ['mae', 'MSE']
    """
    compiled = getattr(model, "_compile_config", None)   # Keras' record of the compile() arguments
    if getattr(model, "optimizer", None) is None or compiled is None:
        raise InvalidArgumentError(
            f"{argument}: the model {getattr(model, 'name', model)!r} is not compiled, so there is nothing to add "
            f"{argument} to; compile it first (model.compile(optimizer=..., loss=...), or compile_args_creator=), or put "
            "the metrics into model.compile(metrics=...)"
        )
    arguments = dict(compiled.config)
    own = arguments.get("metrics")
    if isinstance(own, dict):
        raise InvalidArgumentError(
            f"{argument}: the model {model.name!r} was compiled with metrics per output ({sorted(own)}); add the metrics "
            "to model.compile(metrics=...) yourself"
        )
    own = [] if own is None else list(own) if isinstance(own, (list, tuple)) else [own]
    arguments["metrics"] = keras_metrics(own + list(metrics if isinstance(metrics, (list, tuple)) else [metrics]), argument)
    model.compile(**arguments)
