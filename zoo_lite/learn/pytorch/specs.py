"""What the user passes to ``from_torch``, checked on the driver and turned into recipes that
every worker can rebuild from: the model, the optimizer, the loss, the metrics, the scheduler."""

from __future__ import annotations

import functools
import inspect
from dataclasses import dataclass, field
from typing import Any, Callable, Optional, Union

import torch
from torch import nn

from zoo_lite.errors import InvalidArgumentError
from zoo_lite.learn.base.creators import positional_arity
from zoo_lite.learn.base.framework import WorkerConfig
from zoo_lite.learn.metrics import Metric

__all__ = ["TorchSpec", "TargetRule", "build_model", "class_indices", "model_dtype"]

ModelArg = Union[nn.Module, Callable[[dict], nn.Module]]


def build_model(model: ModelArg, config: dict[str, Any]) -> nn.Module:
    """The model instance: ``model`` itself, or what the creator ``model(config)`` returns."""
    built = model if isinstance(model, nn.Module) else model(config)
    if not isinstance(built, nn.Module):
        raise InvalidArgumentError(
            f"model: the model creator {getattr(model, '__name__', model)!r} returned a {type(built).__name__}; "
            "it must return a torch.nn.Module"
        )
    return built


def model_dtype(model: nn.Module) -> torch.dtype:
    """The model's floating dtype (its first floating parameter's), float32 if it has none."""
    for parameter in model.parameters():
        if parameter.is_floating_point():
            return parameter.dtype
    return torch.float32


def class_indices(target: torch.Tensor, loss_name: str) -> torch.Tensor:
    """``target`` as int64 class indices, after checking that every value is a whole number.

    Raises
    ------
    InvalidArgumentError
        A value is not a whole number (or is not finite); the message names it and ``loss_name``.

    Examples
    --------
    >>> class_indices(torch.tensor([0.0, 2.0, 1.0], dtype=torch.float64), "CrossEntropyLoss")
    tensor([0, 2, 1])
    """
    indices = target.long()
    not_whole = indices != target   # also true for nan and infinities
    if bool(not_whole.any()):
        value = float(target[not_whole][0])
        raise InvalidArgumentError(
            f"label_cols: the loss {loss_name} takes class indices, but the label {value!r} is not a whole number; "
            "give whole class indices 0..C-1 as labels (label_cols, or the data's y), or use a loss for float targets"
        )
    return indices


#: losses (modules by class, functions by identity) whose target is class indices, and whether a
#: float target of the output's shape is taken as class probabilities instead
_CLASS_INDEX_MODULES = ((nn.CrossEntropyLoss, True), (nn.NLLLoss, False))
_CLASS_INDEX_FUNCTIONS = {torch.nn.functional.cross_entropy: ("torch.nn.functional.cross_entropy", True),
                          torch.nn.functional.nll_loss: ("torch.nn.functional.nll_loss", False)}

#: losses whose target must be floating: integer labels (0/1 in an int column, Orca's ``array<int>``)
#: become the model's float dtype for them, as Orca's float32 cast did; other losses keep integers
_FLOAT_TARGET_MODULES = (nn.MSELoss, nn.L1Loss, nn.SmoothL1Loss, nn.HuberLoss, nn.BCELoss, nn.BCEWithLogitsLoss,
                         nn.KLDivLoss, nn.PoissonNLLLoss, nn.GaussianNLLLoss, nn.SoftMarginLoss,
                         nn.MultiLabelSoftMarginLoss)
_FLOAT_TARGET_FUNCTIONS = frozenset({
    torch.nn.functional.mse_loss, torch.nn.functional.l1_loss, torch.nn.functional.smooth_l1_loss,
    torch.nn.functional.huber_loss, torch.nn.functional.binary_cross_entropy,
    torch.nn.functional.binary_cross_entropy_with_logits, torch.nn.functional.kl_div,
    torch.nn.functional.poisson_nll_loss, torch.nn.functional.soft_margin_loss,
    torch.nn.functional.multilabel_soft_margin_loss,
})


@dataclass(frozen=True)
class TargetRule:
    """What a loss wants as its target, decided once per loss (a worker builds it next to the loss).

    ``CrossEntropyLoss`` and ``NLLLoss`` (modules, their subclasses, and the functions
    ``torch.nn.functional.cross_entropy`` / ``nll_loss``, also inside ``functools.partial``) take
    class indices: a float target becomes int64 once its values are checked to be whole numbers
    (a Spark ML label column is a double). ``CrossEntropyLoss`` also takes class probabilities:
    a float target with the output's shape stays float. Any other loss gets float targets in the
    model's dtype. Integer targets become the model's float dtype for the losses that only take
    floats (``MSELoss``, ``BCELoss``, ``BCEWithLogitsLoss``, ``L1Loss``... and their functions), and
    are kept as they are for any other loss (a custom loss decides for itself).

    Attributes
    ----------
    class_loss : str or None
        The name of the class-index loss (for error messages), None for any other loss.
    probabilities : bool
        Whether a float target of the output's shape is taken as class probabilities.
    float_target : bool
        Whether the loss only takes float targets, so integer targets are cast.

    Examples
    --------
    >>> rule = TargetRule.of(nn.CrossEntropyLoss())
    >>> rule.target(torch.zeros(2, 3), torch.tensor([2.0, 0.0]), torch.float32)
    tensor([2, 0])
    >>> rule.target(torch.zeros(2, 3), torch.full((2, 3), 1 / 3, dtype=torch.float64), torch.float32).dtype
    torch.float32
    >>> TargetRule.of(nn.MSELoss()).class_loss is None
    True
    >>> TargetRule.of(nn.BCELoss()).target(torch.zeros(2, 1), torch.tensor([[1], [0]]), torch.float32).dtype
    torch.float32
    """

    class_loss: Optional[str] = None
    probabilities: bool = False
    float_target: bool = False

    @staticmethod
    def of(loss: Any) -> "TargetRule":
        """The rule of a built loss (a module or a function; None for no loss)."""
        for module_class, probabilities in _CLASS_INDEX_MODULES:
            if isinstance(loss, module_class):
                return TargetRule(type(loss).__name__, probabilities)
        if isinstance(loss, _FLOAT_TARGET_MODULES):
            return TargetRule(float_target=True)
        function = loss
        while isinstance(function, functools.partial):
            function = function.func
        try:
            if function in _FLOAT_TARGET_FUNCTIONS:
                return TargetRule(float_target=True)
            name, probabilities = _CLASS_INDEX_FUNCTIONS[function]
        except (KeyError, TypeError):   # TypeError: an unhashable callable
            return TargetRule()
        return TargetRule(name, probabilities)

    def indices_for_any_output(self, target_ndim: int) -> bool:
        """Whether a float target of this many dimensions is class indices for any output (a
        probability target has the output's shape, so at least two dimensions with rows)."""
        return self.class_loss is not None and (not self.probabilities or target_ndim == 1)

    def target(self, output: Any, target: torch.Tensor, float_dtype: torch.dtype) -> torch.Tensor:
        """The target the loss gets next to ``output`` (one batch)."""
        if not target.is_floating_point():
            return target.to(float_dtype) if self.float_target else target
        if self.class_loss is None or (self.probabilities and isinstance(output, torch.Tensor) and target.shape == output.shape):
            return target.to(float_dtype)
        return class_indices(target, self.class_loss)


@dataclass(frozen=True)
class _OptimizerRecipe:
    """An optimizer instance's class and hyper-parameters, rebuilt over a worker's parameters."""

    optimizer_class: type
    defaults: dict[str, Any]

    def __call__(self, model: nn.Module, config: dict[str, Any]) -> torch.optim.Optimizer:
        return self.optimizer_class(model.parameters(), **self.defaults)


def _optimizer_creator(optimizer: Any) -> Optional[Callable[[nn.Module, dict], torch.optim.Optimizer]]:
    if optimizer is None:
        return None
    if isinstance(optimizer, torch.optim.Optimizer):
        return _OptimizerRecipe(type(optimizer), dict(optimizer.defaults))
    if not callable(optimizer):
        raise InvalidArgumentError(
            f"optimizer={optimizer!r} must be a torch.optim.Optimizer or a creator (model, config) -> Optimizer"
        )
    arity = positional_arity(optimizer)
    if arity is not None and arity != 2:
        raise InvalidArgumentError(
            f"optimizer: the creator {getattr(optimizer, '__name__', optimizer)!r} takes {arity} positional "
            f"argument(s) {inspect.signature(optimizer)}; it must take (model, config) and return an Optimizer"
        )
    return optimizer


def _loss_creator(loss: Any) -> Optional[Callable[[dict], Callable[..., torch.Tensor]]]:
    """A creator ``config -> loss function`` for each form ``loss`` may take."""
    if loss is None:
        return None
    if isinstance(loss, nn.Module):
        return _Constant(loss)
    if isinstance(loss, type) and issubclass(loss, nn.Module):
        return _Instantiate(loss)
    if callable(loss):
        # one argument: Orca's creator (config); two or more: a loss function (output, target)
        return loss if positional_arity(loss) == 1 else _Constant(loss)
    raise InvalidArgumentError(f"loss={loss!r} must be a loss module, a loss function (output, target) or a creator (config)")


@dataclass(frozen=True)
class _Constant:
    value: Any

    def __call__(self, config: dict[str, Any]) -> Any:
        return self.value


@dataclass(frozen=True)
class _Instantiate:
    cls: type

    def __call__(self, config: dict[str, Any]) -> Any:
        return self.cls()


def _metrics_dict(metrics: Any) -> dict[str, Any]:
    """Metrics by name: Orca metrics (``zoo_lite.learn.metrics``) by Orca's name, as their
    torchmetrics object; torchmetrics objects by class name, callables by function name."""
    if metrics is None:
        return {}
    if isinstance(metrics, dict):
        items = list(metrics.items())
    else:
        items = [(None, m) for m in (metrics if isinstance(metrics, (list, tuple)) else [metrics])]
    named: dict[str, Any] = {}
    for name, metric in items:
        if isinstance(metric, Metric):   # Orca's form: results keyed "Accuracy", as Orca keyed them
            name, metric = name or metric.get_name(), metric.get_metric("pytorch")
        elif not callable(metric) or isinstance(metric, type):
            raise InvalidArgumentError(
                f"metrics: {metric!r} ({type(metric).__name__}) is not a metric; pass Orca metrics from "
                "zoo_lite.learn.metrics (e.g. Accuracy()), torchmetrics Metric objects or callables (preds, target) -> tensor"
            )
        key = name or getattr(metric, "__name__", None) or type(metric).__name__
        if key in named:
            raise InvalidArgumentError(f"metrics: two metrics are named {key!r}; pass a dict {{name: metric}} to name them")
        named[key] = metric
    return named


@dataclass(frozen=True)
class TorchSpec:
    """Everything a worker needs to build its model, optimizer, loss, metrics and scheduler."""

    model: ModelArg
    optimizer_creator: Optional[Callable[[nn.Module, dict], torch.optim.Optimizer]]
    loss_creator: Optional[Callable[[dict], Any]]
    metrics: dict[str, Any]
    scheduler_creator: Optional[Callable[[torch.optim.Optimizer, dict], Any]]
    config: dict[str, Any] = field(default_factory=dict)
    seed: int = 0
    sync_stats: bool = True
    worker_config: WorkerConfig = WorkerConfig()

    @staticmethod
    def from_user(model: Any, optimizer: Any, loss: Any, metrics: Any, scheduler_creator: Any,
                  config: dict[str, Any], seed: int, sync_stats: bool, worker_config: WorkerConfig) -> "TorchSpec":
        if not (isinstance(model, nn.Module) or callable(model)):
            raise InvalidArgumentError(f"model={model!r} must be a torch.nn.Module or a creator config -> nn.Module")
        if scheduler_creator is not None and not callable(scheduler_creator):
            raise InvalidArgumentError(f"scheduler_creator={scheduler_creator!r} must be a callable (optimizer, config) -> scheduler")
        return TorchSpec(model, _optimizer_creator(optimizer), _loss_creator(loss), _metrics_dict(metrics),
                         scheduler_creator, config, seed, sync_stats, worker_config)

    def build_optimizer(self, model: nn.Module) -> Optional[torch.optim.Optimizer]:
        if self.optimizer_creator is None:
            return None
        optimizer = self.optimizer_creator(model, self.config)
        if not isinstance(optimizer, torch.optim.Optimizer):
            raise InvalidArgumentError(
                f"optimizer: the creator returned a {type(optimizer).__name__}; it must return a torch.optim.Optimizer"
            )
        return optimizer

    def build_scheduler(self, optimizer: Optional[torch.optim.Optimizer]) -> Any:
        """The learning-rate scheduler of ``optimizer`` from ``scheduler_creator``, or None
        (no creator, or no optimizer)."""
        if self.scheduler_creator is None or optimizer is None:
            return None
        return self.scheduler_creator(optimizer, self.config)

    def build_loss(self) -> Optional[Callable[..., torch.Tensor]]:
        if self.loss_creator is None:
            return None
        loss = self.loss_creator(self.config)
        if not callable(loss):
            raise InvalidArgumentError(f"loss: the creator returned {loss!r}, which is not callable (output, target) -> tensor")
        return loss
