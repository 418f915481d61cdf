"""Where Keras callbacks passed to ``fit`` run: on the workers, with logs aggregated over all of them.

Every worker gets the same aggregated logs at the end of an epoch, so a callback that steers
training decides the same on every worker. Those run on **every** worker, because each worker
holds its own copy of the model and optimizer: ``EarlyStopping`` (its ``stop_training`` and
``restore_best_weights``), ``LearningRateScheduler``, ``ReduceLROnPlateau``, ``TerminateOnNaN``,
and any callback with ``run_on_every_worker = True``. All others (``ModelCheckpoint``,
``TensorBoard``, ``CSVLogger``, ``LambdaCallback``, your own) run on rank 0 only, so files are
written once. The files of ``ModelCheckpoint``, ``TensorBoard`` and ``CSVLogger`` (and of a
callback of your own that names its path attributes in ``output_paths``) land at their paths on
the driver's host: where rank 0 runs on a host that does not see the path, zoo_lite copies them
there after every epoch (:mod:`zoo_lite.learn.base.file_relay`). If any worker's model asks to
stop, every worker stops after that epoch.
"""

from __future__ import annotations

from typing import Any, Optional, Sequence

from zoo_lite.errors import InvalidArgumentError
from zoo_lite.learn.base.file_relay import declared_output_paths

__all__ = ["callbacks_for_rank", "check_callbacks", "wants_batch_logs", "output_paths_of"]


def _steering_classes() -> tuple[type, ...]:
    import keras

    return (keras.callbacks.EarlyStopping, keras.callbacks.LearningRateScheduler, keras.callbacks.ReduceLROnPlateau,
            keras.callbacks.TerminateOnNaN)


def output_paths_of(callback: Any) -> tuple[str, ...]:
    """The attributes holding the paths a Keras callback writes to (Keras' file writers, and a
    callback's own ``output_paths``).

    Examples
    --------
    >>> import keras
    >>> output_paths_of(keras.callbacks.CSVLogger("log.csv")), output_paths_of(keras.callbacks.EarlyStopping())
    (('filename',), ())
    """
    import keras

    own = {keras.callbacks.ModelCheckpoint: "filepath", keras.callbacks.TensorBoard: "log_dir",
           keras.callbacks.CSVLogger: "filename"}
    builtin = tuple(attribute for kind, attribute in own.items() if isinstance(callback, kind))
    return builtin + tuple(name for name in declared_output_paths(callback) if name not in builtin)


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
