"""What the user passes to ``from_keras``, checked on the driver and turned into a recipe every
worker rebuilds the model from: Keras' own ``.keras`` format for a model object, or the user's
``model_creator``; plus the state format the driver and the workers exchange (model, optimizer
state and epoch counter in one zip, also used for checkpoint files).

A model without an input shape (a ``keras.Sequential`` of layers with no ``keras.Input``) is built
as Keras' ``fit`` builds it: from the shapes of the first batch (:func:`build_from_inputs`). The
driver does it before the first step, and the recipe keeps those shapes
(:attr:`KerasSpec.build_inputs`) so that every worker builds the same model.

The weights of the state travel as Keras' ``load_weights`` reads them; the lookup tables of
preprocessing layers (the vocabulary of ``TextVectorization``, ``StringLookup``,
``IntegerLookup``) are no weights, so the state also carries each such layer's own assets
(``save_assets`` / ``load_assets``, as the ``.keras`` format stores them), and loading a state
restores them too.
"""

from __future__ import annotations

import io
import json
import os
import pickle
import tempfile
import warnings
import zipfile
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Optional

from zoo_lite.errors import InvalidArgumentError
from zoo_lite.learn.base.framework import WorkerConfig
from zoo_lite.learn.metrics import keras_custom_objects, with_keras_metrics

if TYPE_CHECKING:
    import keras

__all__ = ["KerasSpec", "InputShape", "model_to_bytes", "model_from_bytes", "state_to_bytes", "state_from_bytes",
           "load_state_into", "check_built", "check_compiled", "is_compiled", "build_from_inputs", "lookup_layers"]

_MODEL_ENTRY, _STATE_ENTRY = "model.keras", "state.json"
#: the folder of the state zip that holds the lookup layers' assets, one subfolder per layer (by position)
_LOOKUP_ASSETS = "lookup_assets"


def model_to_bytes(model: "keras.Model") -> bytes:
    """The model in Keras' ``.keras`` format (architecture, compile config, weights, optimizer
    state), a ``Lambda`` layer's lambda carried by value (see :mod:`zoo_lite.learn.tf2.lambdas`)."""
    from zoo_lite.learn.tf2.lambdas import portable_lambdas

    with tempfile.TemporaryDirectory() as folder, portable_lambdas(model), warnings.catch_warnings():
        # a model built later from its first batch is shipped unbuilt first; Keras' warning is for its users' files
        warnings.filterwarnings("ignore", message="You are saving a model that has not yet been built")
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
    """Model, optimizer state and the epoch counter as one zip (the checkpoint format), with the
    assets of the model's lookup layers (their vocabularies; see :func:`lookup_layers`)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_STORED) as archive:
        archive.writestr(_MODEL_ENTRY, model_to_bytes(model))
        archive.writestr(_STATE_ENTRY, json.dumps({"epoch": int(epoch)}))
        for index, layer in enumerate(lookup_layers(model)):
            for name, content in _saved_assets(layer).items():
                archive.writestr(f"{_LOOKUP_ASSETS}/{index}/{name}", content)
    return buffer.getvalue()


def state_from_bytes(blob: bytes) -> tuple[bytes, int]:
    """(``.keras`` bytes, epoch) of :func:`state_to_bytes`' output."""
    with zipfile.ZipFile(io.BytesIO(blob)) as archive:
        return archive.read(_MODEL_ENTRY), int(json.loads(archive.read(_STATE_ENTRY))["epoch"])


def encode_state(model: "keras.Model", extras: dict[str, Any]) -> bytes:
    """The state codec's encoder (see :class:`~zoo_lite.learn.base.framework.StateCodec`)."""
    return state_to_bytes(model, int(extras.get("epoch", 0)))


def decode_state_into(model: "keras.Model", blob: bytes) -> dict[str, Any]:
    """The state codec's decoder: the weights, optimizer state and lookup tables into ``model``;
    the epoch back."""
    keras_bytes, epoch = state_from_bytes(blob)
    load_state_into(model, keras_bytes)
    with zipfile.ZipFile(io.BytesIO(blob)) as archive:
        if _load_lookup_assets(model, archive):
            # Keras' compiled functions hold the tables they were traced with: they are traced again
            model.train_function = model.test_function = model.predict_function = None
    return {"epoch": epoch}


def load_state_into(model: "keras.Model", keras_bytes: bytes) -> None:
    """Weights and optimizer state of a ``.keras`` blob into ``model`` (same architecture), in place."""
    check_built(model, "loading a state")
    if getattr(model, "optimizer", None) is not None:   # (a model for predict only has none)
        model.optimizer.build(model.trainable_variables)   # an unbuilt optimizer would skip its state
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "state.keras")
        with open(path, "wb") as file:
            file.write(keras_bytes)
        model.load_weights(path)


def lookup_layers(model: "keras.Model") -> list[Any]:
    """The layers of ``model`` (nested ones too, in Keras' order) that keep state outside their
    weights as assets: the lookup tables of ``TextVectorization``, ``StringLookup`` and
    ``IntegerLookup``, and any layer of the user's with ``save_assets`` / ``load_assets``.

    Examples
    --------
    >>> import keras
    >>> words = keras.layers.StringLookup(vocabulary=["a", "b"])
    >>> model = keras.Sequential([keras.Input(shape=(1,), dtype="string"), words])
    >>> lookup_layers(model) == [words]
    True
    """
    return [layer for layer in model._flatten_layers(include_self=False)
            if callable(getattr(layer, "save_assets", None)) and callable(getattr(layer, "load_assets", None))]


def _saved_assets(layer: Any) -> dict[str, bytes]:
    """``{relative path: content}`` of the files ``layer.save_assets`` writes (none for a layer
    whose vocabulary is in its config)."""
    with tempfile.TemporaryDirectory() as folder:
        layer.save_assets(folder)
        found = {}
        for parent, _, names in os.walk(folder):
            for name in names:
                path = os.path.join(parent, name)
                with open(path, "rb") as file:
                    found[os.path.relpath(path, folder).replace(os.sep, "/")] = file.read()
        return found


def _load_lookup_assets(model: "keras.Model", archive: zipfile.ZipFile) -> bool:
    """Give each lookup layer of ``model`` the assets :func:`state_to_bytes` kept for the layer at
    its position, where they differ from its own (a new table costs a rebuild); whether any did.
    A state without them (an older checkpoint) leaves the layers as they are."""
    changed = False
    for index, layer in enumerate(lookup_layers(model)):
        prefix = f"{_LOOKUP_ASSETS}/{index}/"
        kept = {name[len(prefix):]: archive.read(name) for name in archive.namelist() if name.startswith(prefix)}
        if not kept or kept == _saved_assets(layer):
            continue
        with tempfile.TemporaryDirectory() as folder:
            for name, content in kept.items():
                path = os.path.join(folder, *name.split("/"))
                os.makedirs(os.path.dirname(path), exist_ok=True)
                with open(path, "wb") as file:
                    file.write(content)
            layer.load_assets(folder)
        changed = True
    return changed


def _check_keras_model(model: Any, where: str) -> None:
    import keras

    if not isinstance(model, keras.Model):
        raise InvalidArgumentError(f"{where} is a {type(model).__name__}; it must be a keras.Model (Keras 3)")


def check_built(model: Any, where: str) -> None:
    """A built ``keras.Model`` (its weights exist), or a clear error, for what has no data to build
    it from (``fit``, ``evaluate`` and ``predict`` build an unbuilt model from their first batch).

    Examples
    --------
    >>> import keras
    >>> check_built(keras.Sequential([keras.layers.Dense(1)], name="net"), "spark_udf")
    Traceback (most recent call last):
    ...
    zoo_lite.errors.InvalidArgumentError: spark_udf: the model 'net' is not built; give it an input shape (keras.Input(shape=...) or a first layer with input_shape) so that its weights exist, or call fit, evaluate or predict first: as Keras does, they build it from the shapes of their data's first batch
    """
    _check_keras_model(model, where)
    if not model.built:
        raise InvalidArgumentError(
            f"{where}: the model {model.name!r} is not built; give it an input shape (keras.Input(shape=...) or a first "
            "layer with input_shape) so that its weights exist, or call fit, evaluate or predict first: as Keras does, "
            "they build it from the shapes of their data's first batch"
        )


@dataclass(frozen=True)
class InputShape:
    """One model input as a first batch shows it: its shape with the rows left open (``None``
    first) and its dtype name (``"float32"``, ``"int64"``, ``"string"``, ...)."""

    shape: tuple[Optional[int], ...]
    dtype: str

    def describe(self) -> str:
        return f"{self.dtype}{list(self.shape)}"


def build_from_inputs(model: "keras.Model", inputs: Any, where: str) -> None:
    """Build the weights of an unbuilt ``model`` for ``inputs`` (an :class:`InputShape`, or a list,
    tuple or dict of them, as the model is called), as Keras' ``fit`` builds such a model from its
    first batch: the model runs once on symbolic tensors of those shapes, with ``training=False``.

    Raises
    ------
    InvalidArgumentError
        The model cannot take such inputs (the message has Keras' reason and the shapes).

    Examples
    --------
    >>> import keras
    >>> model = keras.Sequential([keras.layers.Dense(4), keras.layers.Dense(1)])
    >>> build_from_inputs(model, InputShape((None, 3), "float32"), "fit")
    >>> model.built, [tuple(w.shape) for w in model.weights]
    (True, [(3, 4), (4,), (4, 1), (1,)])
    """
    import keras
    # not public API: what Keras' own fit builds an unbuilt model with (Trainer._symbolic_build)
    from keras.src.backend import compute_output_spec

    symbolic = keras.tree.map_structure(lambda one: keras.KerasTensor(one.shape, one.dtype), inputs)
    try:
        compute_output_spec(model, symbolic, training=False)
    except Exception as error:  # noqa: BLE001 - whatever Keras raised is named in the message
        raise _unbuildable(model, inputs, where, f"{type(error).__name__}: {str(error).strip().splitlines()[0][:300]}") from error
    if not model.built:
        raise _unbuildable(model, inputs, where, "the model did not build its weights")


def _unbuildable(model: "keras.Model", inputs: Any, where: str, reason: str) -> InvalidArgumentError:
    import keras

    shapes = keras.tree.map_structure(lambda one: one.describe(), inputs)
    return InvalidArgumentError(
        f"{where}: the model {model.name!r} has no input shape, and building it for the first batch's inputs {shapes} "
        f"failed ({reason}); give it an input shape (keras.Input(shape=...)), or pass data it takes"
    )


def is_compiled(model: Any) -> bool:
    """Whether ``model`` has the optimizer and loss that training and evaluation need."""
    return getattr(model, "optimizer", None) is not None and getattr(model, "loss", None) is not None


def check_compiled(model: Any, where: str) -> None:
    """A compiled ``keras.Model`` with one loss, or a clear error (fit and evaluate need one;
    predict and spark_udf take a model as it is). It may be unbuilt: fit and evaluate build it
    from their first batch."""
    _check_keras_model(model, where)
    if not is_compiled(model):
        raise InvalidArgumentError(
            f"{where}: the model {model.name!r} is not compiled; call model.compile(optimizer=..., loss=...) first, "
            "or pass compile_args_creator=lambda config: {'optimizer': ..., 'loss': ...} (predict and spark_udf "
            "need no compile)"
        )


#: the fields of a KerasSpec that hold the user's objects (see KerasSpec.__getstate__)
_USER_FIELDS = ("model_creator", "compile_args_creator", "config", "metrics")


@dataclass(frozen=True)
class KerasSpec:
    """Everything a worker needs to build its copy of the model.

    Pickled (to the workers), the user's objects (creators, ``config``, metrics) travel as one
    blob that is unpickled on their first use, in :meth:`build_model`: a creator that holds a
    layer adapted on the driver (a ``TextVectorization`` with its vocabulary) or a tensor starts
    TensorFlow's runtime when it is unpickled, and a worker must size TensorFlow's thread pools
    and set up its collectives (``MultiWorkerMirroredStrategy``) before that.
    """

    model_bytes: Optional[bytes]
    model_creator: Optional[Callable[[dict], Any]]
    compile_args_creator: Optional[Callable[[dict], dict]]
    config: dict[str, Any] = field(default_factory=dict)
    seed: int = 0
    worker_config: WorkerConfig = WorkerConfig()
    #: from_keras' ``metrics``, added to a creator's compiled model (a model object has them in its bytes)
    metrics: tuple[Any, ...] = ()
    #: the inputs of the first batch an unbuilt model was built from on the driver (see build_from_inputs)
    build_inputs: Any = None

    def __getstate__(self) -> dict[str, Any]:
        from pyspark import cloudpickle

        from zoo_lite.user_code import user_code_by_value

        state = {name: value for name, value in self.__dict__.items() if name not in _USER_FIELDS}
        if "_user_objects" not in state:
            with user_code_by_value():   # the user's own modules go with them, as the workers may not have them
                state["_user_objects"] = cloudpickle.dumps({name: self.__dict__[name] for name in _USER_FIELDS})
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)   # the user's objects stay pickled until first read (see __getattr__)

    def __getattr__(self, name: str) -> Any:
        """A field of the user's objects, read for the first time in this process since unpickling."""
        blob = self.__dict__.get("_user_objects")
        if name not in _USER_FIELDS or blob is None:
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        self.__dict__.update(pickle.loads(blob))
        del self.__dict__["_user_objects"]
        return self.__dict__[name]

    def build_model(self, must_be_built: bool = True) -> "keras.Model":
        """The model (compiled unless the user gave a model for predict only), with the seed set
        first (so a creator builds the same model everywhere), built from :attr:`build_inputs`
        when it has no input shape. ``must_be_built`` refuses a model left unbuilt (the workers'
        case; the driver builds it later from the first batch)."""
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
        where = "model_creator's model" if self.model_creator is not None else "model"
        if not model.built and self.build_inputs is not None:
            build_from_inputs(model, self.build_inputs, where)
        if must_be_built:
            check_built(model, where)
        return model
