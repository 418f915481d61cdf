"""What the user passes to ``from_keras``, checked on the driver and turned into a recipe every
worker rebuilds the model from: Keras' own ``.keras`` format for a model object, or the user's
``model_creator``; plus the state format the driver and the workers exchange (model, optimizer
state and epoch counter in one zip, also used for checkpoint files)."""

from __future__ import annotations

import io
import json
import os
import tempfile
import zipfile
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Optional

from zoo_lite.errors import InvalidArgumentError
from zoo_lite.learn.base.framework import WorkerConfig
from zoo_lite.learn.metrics import keras_custom_objects, with_keras_metrics

if TYPE_CHECKING:
    import keras

__all__ = ["KerasSpec", "model_to_bytes", "model_from_bytes", "state_to_bytes", "state_from_bytes",
           "load_state_into", "check_built", "check_compiled", "is_compiled"]

_MODEL_ENTRY, _STATE_ENTRY = "model.keras", "state.json"


def model_to_bytes(model: "keras.Model") -> bytes:
    """The model in Keras' ``.keras`` format (architecture, compile config, weights, optimizer
    state), a ``Lambda`` layer's lambda carried by value (see :mod:`zoo_lite.learn.tf2.lambdas`)."""
    from zoo_lite.learn.tf2.lambdas import portable_lambdas

    with tempfile.TemporaryDirectory() as folder, portable_lambdas(model):
        path = os.path.join(folder, "model.keras")
        model.save(path)
        with open(path, "rb") as file:
            return file.read()


def model_from_bytes(blob: bytes, compile: bool = True, safe_mode: bool = True) -> "keras.Model":
    """A model from :func:`model_to_bytes`' output (compiled with zoo_lite's Orca metrics too).

    ``safe_mode`` is Keras': True refuses Python code in the saved form (a ``Lambda`` layer's
    lambda). zoo_lite passes False only for the user's own model, which it saved itself in the
    user's process and ships to the workers and executors (see :meth:`KerasSpec.build_model`);
    a file read from disk (``zoo_lite.learn.spark_udf(path)``) keeps Keras' safe mode.
    """
    import keras

    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "model.keras")
        with open(path, "wb") as file:
            file.write(blob)
        objects = keras_custom_objects()
        if not safe_mode:   # the user's own model: its lambdas come back from their pickles
            from zoo_lite.learn.tf2.lambdas import custom_objects

            objects = {**objects, **custom_objects()}
        return keras.models.load_model(path, compile=compile, custom_objects=objects, safe_mode=safe_mode)


def state_to_bytes(model: "keras.Model", epoch: int) -> bytes:
    """Model, optimizer state and the epoch counter as one zip (the checkpoint format)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_STORED) as archive:
        archive.writestr(_MODEL_ENTRY, model_to_bytes(model))
        archive.writestr(_STATE_ENTRY, json.dumps({"epoch": int(epoch)}))
    return buffer.getvalue()


def state_from_bytes(blob: bytes) -> tuple[bytes, int]:
    """(``.keras`` bytes, epoch) of :func:`state_to_bytes`' output."""
    with zipfile.ZipFile(io.BytesIO(blob)) as archive:
        return archive.read(_MODEL_ENTRY), int(json.loads(archive.read(_STATE_ENTRY))["epoch"])


def encode_state(model: "keras.Model", extras: dict[str, Any]) -> bytes:
    """The state codec's encoder (see :class:`~zoo_lite.learn.base.framework.StateCodec`)."""
    return state_to_bytes(model, int(extras.get("epoch", 0)))


def decode_state_into(model: "keras.Model", blob: bytes) -> dict[str, Any]:
    """The state codec's decoder: the weights and optimizer state into ``model``; the epoch back."""
    keras_bytes, epoch = state_from_bytes(blob)
    load_state_into(model, keras_bytes)
    return {"epoch": epoch}


def load_state_into(model: "keras.Model", keras_bytes: bytes) -> None:
    """Weights and optimizer state of a ``.keras`` blob into ``model`` (same architecture), in place."""
    if model.optimizer is not None:
        model.optimizer.build(model.trainable_variables)   # an unbuilt optimizer would skip its state
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "state.keras")
        with open(path, "wb") as file:
            file.write(keras_bytes)
        model.load_weights(path)


def check_built(model: Any, where: str) -> None:
    """A built ``keras.Model`` (its weights exist), or a clear error; all that predict needs."""
    import keras

    if not isinstance(model, keras.Model):
        raise InvalidArgumentError(f"{where} is a {type(model).__name__}; it must be a keras.Model (Keras 3)")
    if not model.built:
        raise InvalidArgumentError(
            f"{where}: the model {model.name!r} is not built; give it an input shape (keras.Input(shape=...) or a first "
            "layer with input_shape) so that its weights exist"
        )


def is_compiled(model: Any) -> bool:
    """Whether ``model`` has the optimizer and loss that training and evaluation need."""
    return getattr(model, "optimizer", None) is not None and getattr(model, "loss", None) is not None


def check_compiled(model: Any, where: str) -> None:
    """A built, compiled ``keras.Model`` with one loss, or a clear error (fit and evaluate need one;
    predict and spark_udf take a model as it is)."""
    check_built(model, where)
    if not is_compiled(model):
        raise InvalidArgumentError(
            f"{where}: the model {model.name!r} is not compiled; call model.compile(optimizer=..., loss=...) first, "
            "or pass compile_args_creator=lambda config: {'optimizer': ..., 'loss': ...} (predict and spark_udf "
            "need no compile)"
        )


@dataclass(frozen=True)
class KerasSpec:
    """Everything a worker needs to build its copy of the model."""

    model_bytes: Optional[bytes]
    model_creator: Optional[Callable[[dict], Any]]
    compile_args_creator: Optional[Callable[[dict], dict]]
    config: dict[str, Any] = field(default_factory=dict)
    seed: int = 0
    worker_config: WorkerConfig = WorkerConfig()
    #: from_keras' ``metrics``, added to a creator's compiled model (a model object has them in its bytes)
    metrics: tuple[Any, ...] = ()

    def build_model(self) -> "keras.Model":
        """The model (compiled unless the user gave a model for predict only), with the seed set first (so a creator builds the same model everywhere)."""
        import keras

        keras.utils.set_random_seed(self.seed)
        if self.model_bytes is not None:
            # safe_mode off: these bytes are the user's own model object, saved by zoo_lite in the user's
            # process; loading them runs no code the user did not already run (a Lambda's lambda is theirs)
            model = model_from_bytes(self.model_bytes, safe_mode=False)
        else:
            assert self.model_creator is not None
            model = self.model_creator(self.config)
            if not isinstance(model, keras.Model):
                raise InvalidArgumentError(
                    f"model_creator {getattr(self.model_creator, '__name__', self.model_creator)!r} returned a "
                    f"{type(model).__name__}; it must return a keras.Model"
                )
        if self.compile_args_creator is not None:
            compile_args = self.compile_args_creator(self.config)
            if not isinstance(compile_args, dict):
                raise InvalidArgumentError(
                    f"compile_args_creator returned a {type(compile_args).__name__}; it must return a dict of "
                    "model.compile arguments, e.g. {'optimizer': 'sgd', 'loss': 'mse'}"
                )
            model.compile(**compile_args)
        if self.metrics and self.model_creator is not None:   # (a model loaded from bytes has its metrics)
            with_keras_metrics(model, list(self.metrics))
        check_built(model, "model_creator's model" if self.model_creator is not None else "model")
        return model
