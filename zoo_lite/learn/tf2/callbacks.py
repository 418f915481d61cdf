"""Where Keras callbacks passed to ``fit`` run: on the workers, with logs aggregated over all of them.

Every worker gets the same aggregated logs at the end of an epoch, so a callback that steers
training decides the same on every worker. Those run on **every** worker, because each worker
holds its own copy of the model and optimizer: ``EarlyStopping`` (its ``stop_training`` and
``restore_best_weights``), ``LearningRateScheduler``, ``ReduceLROnPlateau``, ``TerminateOnNaN``,
and any callback with ``run_on_every_worker = True``. All others (``ModelCheckpoint``,
``TensorBoard``, ``CSVLogger``, ``LambdaCallback``, your own) run on rank 0 only, so files are
written once; their paths must be reachable from the workers (on a cluster: a shared file
system). If any worker's model asks to stop, every worker stops after that epoch.
"""

from __future__ import annotations

from typing import Any, Optional, Sequence

from zoo_lite.errors import InvalidArgumentError

__all__ = ["callbacks_for_rank", "check_callbacks", "wants_batch_logs", "callback_states", "restore_callback_states"]


def _steering_classes() -> tuple[type, ...]:
    import keras

    return (keras.callbacks.EarlyStopping, keras.callbacks.LearningRateScheduler, keras.callbacks.ReduceLROnPlateau,
            keras.callbacks.TerminateOnNaN)


def check_callbacks(callbacks: Optional[Sequence[Any]]) -> list[Any]:
    """The callbacks as a list, each a ``keras.callbacks.Callback``, or a clear error."""
    import keras

    checked = list(callbacks or [])
    for callback in checked:
        if not isinstance(callback, keras.callbacks.Callback):
            raise InvalidArgumentError(
                f"callbacks: {callback!r} is a {type(callback).__name__}; each callback must be a keras.callbacks.Callback"
            )
        if isinstance(callback, keras.callbacks.ProgbarLogger):
            raise InvalidArgumentError("callbacks: ProgbarLogger is not needed; fit(verbose=1) shows one progress bar on the driver")
    return checked


def callbacks_for_rank(callbacks: Sequence[Any], rank: int) -> list[Any]:
    """The callbacks that run on the worker of this rank (see the module docstring).

    Examples
    --------
    >>> import keras
    >>> chosen = callbacks_for_rank([keras.callbacks.EarlyStopping(), keras.callbacks.CSVLogger("log.csv")], rank=1)
    >>> [type(c).__name__ for c in chosen]
    ['EarlyStopping']
    """
    if rank == 0:
        return list(callbacks)
    steering = _steering_classes()
    return [c for c in callbacks if isinstance(c, steering) or getattr(c, "run_on_every_worker", False)]


def wants_batch_logs(callbacks: Sequence[Any]) -> bool:
    """True when a callback overrides a per-step hook that reads logs."""
    import keras

    base = keras.callbacks.Callback
    # LambdaCallback sets its hooks on the instance, so compare the bound functions
    return any(getattr(c.on_train_batch_end, "__func__", None) is not base.on_train_batch_end
               or getattr(c.on_batch_end, "__func__", None) is not base.on_batch_end for c in callbacks)


def _is_plain(value: Any) -> bool:
    """Numbers, strings, arrays and lists of them: callback state that can travel and be restored."""
    import numpy as np

    if value is None or isinstance(value, (bool, int, float, str, np.generic, np.ndarray)):
        return True
    return isinstance(value, (list, tuple)) and all(_is_plain(item) for item in value)


def callback_states(callbacks: Sequence[Any]) -> list[dict[str, Any]]:
    """Each callback's plain state, its attributes but its constructor's settings
    (``EarlyStopping``'s ``wait``, ``best`` and ``best_weights``; ``ReduceLROnPlateau``'s
    counters), for a resumed fit to continue from.

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
