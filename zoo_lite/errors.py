"""The zoo_lite error hierarchy.

Every error a user can see from zoo_lite is a :class:`ZooLiteError`. Errors are picklable, because
they are raised on Spark executors (and later Ray actors) and re-raised on the driver: an error
raised inside a partition function travels back as itself, with its class and attributes intact,
through :func:`encode_remote_error` / :func:`decode_remote_error`.
"""

from __future__ import annotations

import base64
import functools
import numbers
import pickle
import re
import traceback
from typing import Any, Callable, Iterator, Optional, TypeVar

__all__ = [
    "kind_of",
    "ZooLiteError",
    "ContextError",
    "ContextStoppedError",
    "SparkConnectUnsupportedError",
    "ClusterStartError",
    "RayNodeStartError",
    "NoRayNodeError",
    "ExecutorEnvironmentError",
    "EnvironmentPackingError",
    "InvalidArgumentError",
    "UnknownKeywordError",
    "ColumnNotFoundError",
    "ShardMismatchError",
    "DataReadError",
    "ShardFunctionError",
    "RemoteError",
    "WorkerError",
    "WorkerTimeoutError",
    "PortRangeExhaustedError",
    "encode_remote_error",
    "decode_remote_error",
    "raising_transportably",
    "streaming_transportably",
    "check_positive_int",
]


class ZooLiteError(Exception):
    """Base class of every error zoo_lite raises on purpose."""


class ContextError(ZooLiteError):
    """The Orca context is misconfigured, or an operation needs one that is not there."""


class ContextStoppedError(ContextError):
    """An operation needs an active context, but none is active (never started, or stopped)."""


class SparkConnectUnsupportedError(ContextError):
    """An operation needs a classic SparkContext (RDDs, the JVM), and the active context is a Spark
    Connect session, which has none; the message says what to use instead."""


class ClusterStartError(ContextError):
    """A process zoo_lite starts (a standalone Spark daemon, later Ray) failed to come up."""


class RayNodeStartError(ClusterStartError):
    """``ray start`` gave up on a node by itself (its raylet or GCS did not come up in Ray's own
    time); zoo_lite starts Ray once more before it raises this."""


class NoRayNodeError(ContextError):
    """A Spark task that moves data into Ray ran on an executor whose host has no Ray node."""


class ExecutorEnvironmentError(ContextError):
    """The executors' Python cannot run zoo_lite's jobs: it does not start, lacks a package the job
    needs (the environment did not travel with the job to a bare host), or is another version
    than the driver's where Ray needs the same."""


class EnvironmentPackingError(ZooLiteError):
    """A Python environment could not be packed into an archive (:mod:`zoo_lite.env_packing`):
    its packing library is missing, another process held the packing lock too long, or the
    library failed; the message names the environment and the fix."""


class InvalidArgumentError(ZooLiteError, ValueError):
    """An argument has a value zoo_lite cannot work with; the message names both."""


class UnknownKeywordError(InvalidArgumentError, TypeError):
    """A call passed a keyword argument the function does not take; the message names the
    closest ones it takes (:mod:`zoo_lite.keywords`). A TypeError too, as Python's own error
    for such a call is, so that ``except TypeError`` still catches it."""


class ColumnNotFoundError(InvalidArgumentError):
    """A column named in an argument is not in the data."""


class ShardMismatchError(InvalidArgumentError):
    """Two collections, or the leaves of one shard, do not line up (partition or row counts)."""


class DataReadError(ZooLiteError):
    """A reader could not read its input: missing path, empty folder, malformed file."""


class ShardFunctionError(ZooLiteError):
    """A user function failed on one shard.

    Attributes
    ----------
    partition_index : int
        Index of the partition whose shard the function failed on.
    function_name : str
        Name of the user function.
    original : BaseException
        The exception the user function raised; also kept as ``__cause__``.
    """

    def __init__(self, partition_index: int, function_name: str, original: BaseException) -> None:
        self.partition_index = partition_index
        self.function_name = function_name
        self.original = original
        if isinstance(original, RemoteError):   # the stand-in for an original that cannot travel
            kind, text = original.type_name, original.message
        else:
            kind, text = type(original).__name__, str(original)
        super().__init__(f"function {function_name!r} failed on partition {partition_index}: {kind}: {text}")
        self.__cause__ = original

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.partition_index, self.function_name, self.original))


class RemoteError(ZooLiteError):
    """Stands in for a remote exception that could not be pickled; keeps its type, text and traceback."""

    def __init__(self, type_name: str, message: str, remote_traceback: str) -> None:
        self.type_name = type_name
        self.message = message
        self.remote_traceback = remote_traceback
        super().__init__(f"{type_name}: {message}\nremote traceback:\n{remote_traceback}")

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.type_name, self.message, self.remote_traceback))


class WorkerError(ZooLiteError):
    """A training worker (a Ray actor of an Estimator) failed or died.

    Attributes
    ----------
    rank : int
        The failed worker's rank.
    remote_traceback : str
        The worker's traceback (empty when the worker process died).
    lost : bool
        True when the worker's process or node was lost (killed, out of memory, executor gone),
        as opposed to an error raised by the code it ran; ``fit`` recovers from lost workers.
    """

    def __init__(self, rank: int, message: str, remote_traceback: str = "", lost: bool = False) -> None:
        self.rank = rank
        self.message = message
        self.remote_traceback = remote_traceback
        self.lost = lost
        text = f"worker {rank}: {message}"
        super().__init__(f"{text}\nworker traceback:\n{remote_traceback}" if remote_traceback else text)

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.rank, self.message, self.remote_traceback, self.lost))


class WorkerTimeoutError(ZooLiteError):
    """Training workers did not answer within a configured bound (start-up, connect, shutdown)."""


class PortRangeExhaustedError(ZooLiteError):
    """Every port of ``WorkerConfig(rendezvous_ports=...)`` was taken on a training worker's host."""


def check_positive_int(value: Any, argument: str) -> int:
    """``value`` as an int if it is a positive integer (numpy integers included, booleans not);
    else an error naming ``argument``.

    Examples
    --------
    >>> check_positive_int(3, "epochs")
    3
    """
    return _check_int_at_least(value, argument, 1, "a positive integer")


def check_non_negative_int(value: Any, argument: str) -> int:
    """As :func:`check_positive_int`, with 0 allowed.

    Examples
    --------
    >>> check_non_negative_int(0, "max_failures")
    0
    """
    return _check_int_at_least(value, argument, 0, "an integer >= 0")


def _check_int_at_least(value: Any, argument: str, minimum: int, wanted: str) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < minimum:
        raise InvalidArgumentError(f"{argument}={value!r} must be {wanted}")
    return int(value)


def kind_of(value: Any) -> str:
    """What ``value`` is, for an error message: a builtin's bare type name, else the type with its
    module, so that two classes of one name (``tf.data.Dataset``, ``ray.data.Dataset``) differ.

    Examples
    --------
    >>> import fractions
    >>> kind_of("model"), kind_of(fractions.Fraction(1, 2))
    ('str', 'fractions.Fraction')
    """
    kind = type(value)
    return kind.__qualname__ if kind.__module__ == "builtins" else f"{kind.__module__}.{kind.__qualname__}"


_MARKER_RE = re.compile(r"<<zoo_lite-error:([A-Za-z0-9+/=]+)>>")


def _stand_in(error: BaseException) -> "RemoteError":
    return RemoteError(type(error).__name__, str(error), "".join(traceback.format_exception(error)))


def encode_remote_error(error: BaseException) -> str:
    """Wrap ``error`` in a text marker that survives Spark's stringified remote tracebacks."""
    if isinstance(error, ShardFunctionError):
        try:
            pickle.loads(pickle.dumps(error.original))
        except Exception:  # keep the ShardFunctionError, with a stand-in for what cannot travel
            error = ShardFunctionError(error.partition_index, error.function_name, _stand_in(error.original))
    try:
        payload = pickle.dumps(error)
        pickle.loads(payload)  # an exception may pickle but not unpickle (custom __init__)
    except Exception:
        stand_in = RemoteError(type(error).__name__, str(error), "".join(traceback.format_exception(error)))
        payload = pickle.dumps(stand_in)
    return f"<<zoo_lite-error:{base64.b64encode(payload).decode('ascii')}>>"


def decode_remote_error(text: str) -> Optional[BaseException]:
    """Return the exception encoded in ``text`` by :func:`encode_remote_error`, or None."""
    match = _MARKER_RE.search(text)
    if match is None:
        return None
    return pickle.loads(base64.b64decode(match.group(1)))


class _TransportedError(Exception):
    """Carries an encoded error out of a remote worker; the driver decodes and re-raises it."""


F = TypeVar("F", bound=Callable[..., Any])


def raising_transportably(func: F) -> F:
    """Decorate a function that runs remotely so that any error it raises reaches the driver intact.

    Iterator results are drained inside the wrapper, so that errors raised lazily while the
    iterator is consumed are caught too.
    """

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            result = func(*args, **kwargs)
            if hasattr(result, "__next__"):
                result = list(result)
            return result
        except _TransportedError:
            raise
        except Exception as error:  # noqa: BLE001 - every error must travel back
            raise _transported(error) from None

    return wrapper  # type: ignore[return-value]


def _transported(error: Exception) -> "_TransportedError":
    # readable where Spark shows the text as it is (a DataFrame action), decodable by zoo_lite
    return _TransportedError(f"{type(error).__name__}: {error}\n{encode_remote_error(error)}")


def streaming_transportably(func: Callable[..., Iterator[Any]]) -> Callable[..., Iterator[Any]]:
    """Like :func:`raising_transportably` for a generator function whose output must stream (a
    ``mapInArrow`` function): items are passed on one by one, errors travel back intact."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Iterator[Any]:
        try:
            yield from func(*args, **kwargs)
        except _TransportedError:
            raise
        except Exception as error:  # noqa: BLE001 - every error must travel back
            raise _transported(error) from None

    return wrapper
