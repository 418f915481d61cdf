"""Orca-style training callbacks: hooks called on every worker with that worker's runner.

A callback is pickled to the workers with each ``fit``; its hooks run there, between the steps,
with the runner (``runner.model``, ``runner.optimizer``, ``runner.rank``, ``runner.epoch``,
``runner.global_step``, ``runner.epoch_stats`` …). Callbacks that write files (checkpoints, event
files) act on rank 0 only.
"""

from __future__ import annotations

from typing import Any, Optional, Sequence

from zoo_lite.errors import InvalidArgumentError

__all__ = ["Callback", "CallbackList", "HOOKS", "callback_states", "restore_callback_states"]

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


def _is_plain(value: Any) -> bool:
    """Numbers, strings, arrays and lists of them: callback state that can travel and be restored."""
    import numpy as np

    if value is None or isinstance(value, (bool, int, float, str, np.generic, np.ndarray)):
        return True
    return isinstance(value, (list, tuple)) and all(_is_plain(item) for item in value)


def callback_states(callbacks: Sequence[Any]) -> list[dict[str, Any]]:
    """Each callback's plain state, its attributes but its constructor's settings and its model
    (Keras' ``EarlyStopping``'s ``wait``, ``best`` and ``best_weights``; ``ReduceLROnPlateau``'s
    counters; an Orca-style callback's own counters), for a fit resumed after a lost worker to
    continue from.

    Examples
    --------
    >>> import keras
    >>> stopper = keras.callbacks.EarlyStopping(patience=3)
    >>> stopper.wait = 2
    >>> callback_states([stopper])[0]["wait"]
    2
    """
    return [{name: value for name, value in vars(callback).items()
             if name not in ("model", "_model") and name not in _settings(callback) and _is_plain(value)}
            for callback in callbacks]


def _settings(callback: Any) -> set[str]:
    """The names of the callback's constructor arguments: the user's settings, not its state (and
    some are derived on first use: EarlyStopping negates ``min_delta`` when it picks its
    comparison, so restoring it onto a fresh callback would negate it twice)."""
    import inspect

    try:
        return set(inspect.signature(type(callback).__init__).parameters) - {"self"}
    except (TypeError, ValueError):
        return set()


def restore_callback_states(callbacks: Sequence[Any], states: Sequence[dict[str, Any]]) -> None:
    """Give each callback the attributes :func:`callback_states` took (after ``on_train_begin``,
    which resets them).

    Examples
    --------
    >>> import keras
    >>> stopper = keras.callbacks.EarlyStopping(patience=3)
    >>> restore_callback_states([stopper], [{"wait": 2}])
    >>> stopper.wait
    2
    """
    if len(states) != len(callbacks):
        raise InvalidArgumentError(f"callback states for {len(states)} callbacks cannot be restored into {len(callbacks)}")
    for callback, state in zip(callbacks, states):
        for name, value in state.items():
            setattr(callback, name, value)
