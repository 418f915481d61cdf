"""What the user passes to ``from_torch``, checked on the driver and turned into recipes that
every worker can rebuild from: the model, the optimizer, the loss, the metrics, the scheduler."""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from typing import Any, Callable, Optional, Union

import torch
from torch import nn

from zoo_lite.errors import InvalidArgumentError
from zoo_lite.learn.base.creators import positional_arity

__all__ = ["TorchSpec", "build_model", "model_dtype"]

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
    """Metrics by name: torchmetrics objects by class name, callables by function name."""
    if metrics is None:
        return {}
    if isinstance(metrics, dict):
        items = list(metrics.items())
    else:
        items = [(None, m) for m in (metrics if isinstance(metrics, (list, tuple)) else [metrics])]
    named: dict[str, Any] = {}
    for name, metric in items:
        if not callable(metric):
            raise InvalidArgumentError(f"metrics: {metric!r} is not a torchmetrics Metric or a callable (preds, target) -> tensor")
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

    @staticmethod
    def from_user(model: Any, optimizer: Any, loss: Any, metrics: Any, scheduler_creator: Any,
                  config: Optional[dict[str, Any]], seed: int, sync_stats: bool) -> "TorchSpec":
        if not (isinstance(model, nn.Module) or callable(model)):
            raise InvalidArgumentError(f"model={model!r} must be a torch.nn.Module or a creator config -> nn.Module")
        if config is not None and not isinstance(config, dict):
            raise InvalidArgumentError(f"config={config!r} must be a dict")
        if scheduler_creator is not None and not callable(scheduler_creator):
            raise InvalidArgumentError(f"scheduler_creator={scheduler_creator!r} must be a callable (optimizer, config) -> scheduler")
        return TorchSpec(model, _optimizer_creator(optimizer), _loss_creator(loss), _metrics_dict(metrics),
                         scheduler_creator, dict(config or {}), seed, sync_stats)

    def build_optimizer(self, model: nn.Module) -> Optional[torch.optim.Optimizer]:
        if self.optimizer_creator is None:
            return None
        optimizer = self.optimizer_creator(model, self.config)
        if not isinstance(optimizer, torch.optim.Optimizer):
            raise InvalidArgumentError(
                f"optimizer: the creator returned a {type(optimizer).__name__}; it must return a torch.optim.Optimizer"
            )
        return optimizer

    def build_loss(self) -> Optional[Callable[..., torch.Tensor]]:
        if self.loss_creator is None:
            return None
        loss = self.loss_creator(self.config)
        if not callable(loss):
            raise InvalidArgumentError(f"loss: the creator returned {loss!r}, which is not callable (output, target) -> tensor")
        return loss
