"""Orca-style training callbacks: hooks called on every worker with that worker's runner.

A callback is pickled to the workers with each ``fit``; its hooks run there, between the steps,
with the runner (``runner.model``, ``runner.optimizer``, ``runner.rank``, ``runner.epoch``,
``runner.global_step``, ``runner.epoch_stats`` …). Callbacks that write files (checkpoints, event
files) act on rank 0 only.
"""

from __future__ import annotations

from typing import Any, Optional, Sequence

from zoo_lite.errors import InvalidArgumentError

__all__ = ["Callback", "CallbackList", "HOOKS"]

HOOKS = (
    "before_run", "after_run",
    "before_train_epoch", "after_train_epoch",
    "before_train_iter", "after_train_iter",
    "before_val_epoch", "after_val_epoch",
    "before_val_iter", "after_val_iter",
)


class Callback:
    """Base class of training callbacks; override the hooks you need (each gets the runner).

    ``before_run`` / ``after_run`` wrap a whole ``fit``; ``*_epoch`` an epoch; ``*_iter`` one step.
    The ``val`` hooks wrap validation during ``fit`` and ``evaluate``.

    Examples
    --------
    >>> class CountSteps(Callback):
    ...     def before_run(self, runner): self.steps = 0
    ...     def after_train_iter(self, runner): self.steps += 1
    >>> counter = CountSteps()
    >>> CallbackList([counter]).call("before_run", runner=None); counter.steps
    0
    """

    def before_run(self, runner: Any) -> None: ...
    def after_run(self, runner: Any) -> None: ...
    def before_train_epoch(self, runner: Any) -> None: ...
    def after_train_epoch(self, runner: Any) -> None: ...
    def before_train_iter(self, runner: Any) -> None: ...
    def after_train_iter(self, runner: Any) -> None: ...
    def before_val_epoch(self, runner: Any) -> None: ...
    def after_val_epoch(self, runner: Any) -> None: ...
    def before_val_iter(self, runner: Any) -> None: ...
    def after_val_iter(self, runner: Any) -> None: ...


class CallbackList:
    """Calls one hook on each callback, in order; skips the per-step hooks nobody overrides."""

    def __init__(self, callbacks: Optional[Sequence[Callback]] = None) -> None:
        callbacks = list(callbacks or [])
        for callback in callbacks:
            if not isinstance(callback, Callback):
                raise InvalidArgumentError(
                    f"callbacks: {callback!r} is a {type(callback).__name__}; each callback must subclass "
                    "zoo_lite.learn.pytorch.callbacks.Callback"
                )
        self.callbacks = callbacks
        # per-step hooks run thousands of times an epoch: call only the overridden ones
        self._active = {hook: [c for c in callbacks if getattr(type(c), hook) is not getattr(Callback, hook)] for hook in HOOKS}

    def call(self, hook: str, runner: Any) -> None:
        for callback in self._active[hook]:
            getattr(callback, hook)(runner)
