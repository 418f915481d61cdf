"""``Lambda`` layers' Python functions, carried by value in the model bytes zoo_lite ships.

Keras 3 saves a ``Lambda`` layer's lambda as bare bytecode and rebuilds it with the globals of a
Keras module, so a lambda that uses a module (``lambda x: tf.identity(x)``, Orca's identity model)
breaks once saved and loaded, even by Keras itself; and its safe mode refuses to load one at all.
zoo_lite ships the user's own model, from the user's process, to its workers and to the Spark
executors (for ``predict``). In the bytes it makes for that (:func:`portable_lambdas` around the
save), each such function is replaced by a :class:`PickledFunction`: the function pickled by
cloudpickle, which keeps its globals and closure (modules by reference). Only zoo_lite's own
loader of the user's own model (``safe_mode=False``, see :func:`custom_objects`) knows that class;
a file loaded from disk under Keras' safe mode, e.g. by ``zoo_lite.learn.spark_udf(path)``, does
not, and is refused instead of unpickling code.
"""

from __future__ import annotations

import base64
import contextlib
import types
from typing import TYPE_CHECKING, Any, Callable, Iterator, Optional

from zoo_lite.errors import InvalidArgumentError

if TYPE_CHECKING:
    import keras

__all__ = ["PickledFunction", "portable_lambdas", "custom_objects"]

_REGISTERED_NAME = "zoo_lite>PickledFunction"


class PickledFunction:
    """A Python function saved by value (cloudpickle), callable as the function.

    Parameters
    ----------
    function : callable, optional
        The function to carry.
    payload : str, optional
        Its pickled form (base64), as :meth:`get_config` gives it; give this or ``function``.

    Examples
    --------
    >>> double = PickledFunction(lambda x: x * 2)
    >>> PickledFunction.from_config(double.get_config())(21)
    42
    """

    def __init__(self, function: Optional[Callable[..., Any]] = None, payload: Optional[str] = None) -> None:
        import cloudpickle

        from zoo_lite.user_code import user_code_by_value

        if (function is None) == (payload is None):
            raise InvalidArgumentError("PickledFunction needs exactly one of function= or payload=")
        if payload is None:
            with user_code_by_value():
                payload = base64.b64encode(cloudpickle.dumps(function)).decode("ascii")
        self.payload = payload
        self.function = function if function is not None else cloudpickle.loads(base64.b64decode(payload))
        self.__name__ = getattr(self.function, "__name__", "function")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.function(*args, **kwargs)

    def get_config(self) -> dict[str, str]:
        """The pickled function, for Keras' serialization."""
        return {"payload": self.payload}

    @classmethod
    def from_config(cls, config: dict[str, str]) -> "PickledFunction":
        """The function back (runs the pickle: only for the user's own model)."""
        return cls(payload=config["payload"])


def _is_python_lambda(function: Any) -> bool:
    return isinstance(function, types.LambdaType) and function.__name__ == "<lambda>"


@contextlib.contextmanager
def portable_lambdas(model: "keras.Model") -> Iterator[None]:
    """Within the block, every ``Lambda`` layer of ``model`` whose function is a Python lambda holds
    it as a :class:`PickledFunction` (saved by value); restored afterwards.

    Examples
    --------
    >>> import keras
    >>> model = keras.Sequential([keras.Input(shape=(1,)), keras.layers.Lambda(lambda x: x + 1)])
    >>> with portable_lambdas(model):
    ...     type(model.layers[0].function).__name__
    'PickledFunction'
    >>> model.layers[0].function.__name__
    '<lambda>'
    """
    import keras

    swapped = []
    try:
        for layer in model._flatten_layers(include_self=False):
            if isinstance(layer, keras.layers.Lambda) and _is_python_lambda(layer.function):
                swapped.append((layer, layer.function))
                layer.function = PickledFunction(layer.function)
        yield
    finally:
        for layer, function in swapped:
            layer.function = function


def custom_objects() -> dict[str, Any]:
    """What Keras needs to load the bytes :func:`portable_lambdas` made (the user's own model only)."""
    return {_REGISTERED_NAME: PickledFunction, "PickledFunction": PickledFunction}
