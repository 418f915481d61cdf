"""The framework seam on the driver: a frozen :class:`Framework` per ML framework, and zoo_lite's
own worker settings, :class:`WorkerConfig`.

:class:`~zoo_lite.learn.base.estimator.GroupEstimator` implements ``fit``, ``evaluate``,
``predict``, checkpoints and recovery once; it asks the Estimator's ``Framework`` for everything
that depends on the framework. Adding a framework means a ``Framework``, a runner
(:class:`~zoo_lite.learn.base.runner.Runner`) and a ``PredictRecipe``.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any, Callable, Mapping, Optional, Sequence

from zoo_lite.errors import InvalidArgumentError
from zoo_lite.learn.base.file_relay import declared_output_paths

if TYPE_CHECKING:
    from zoo_lite.learn.base.predict import PredictRecipe
    from zoo_lite.learn.base.runner import Runner
    from zoo_lite.learn.base.worker_group import WorkerInfo

__all__ = ["Framework", "StateCodec", "WorkerConfig"]


@dataclass(frozen=True)
class StateCodec:
    """The driver's model state as bytes and back (the runners' ``get_state`` / ``set_state`` form).

    ``encode(model, extras)`` gives the bytes of the model with the training state in ``extras``
    (``epoch`` and the framework's own, e.g. optimizer state); ``decode_into(model, blob)``
    loads the bytes' weights into ``model`` and returns their ``extras``.
    """

    encode: Callable[[Any, dict[str, Any]], bytes]
    decode_into: Callable[[Any, bytes], dict[str, Any]]


def _unchanged(data: Any) -> Any:
    return data


@dataclass(frozen=True)
class Framework:
    """What :class:`~zoo_lite.learn.base.estimator.GroupEstimator` needs of one ML framework.

    Parameters
    ----------
    name : str
        As errors name it, e.g. ``"PyTorch"``.
    inputs : str
        Its own kinds of data input, as errors name them.
    runner_factory : callable
        ``(framework, spec, WorkerInfo) -> Runner``, picklable (a module-level class or function).
    state : StateCodec
    predict : PredictRecipe
        How a model runs in a Spark task.
    model_payload : callable
        ``model -> bytes`` that ``predict.load`` takes.
    is_input : callable
        True for the framework's own data inputs.
    batch_size : callable
        ``(data, config, batch_size) -> int``: the global batch of a framework input.
    prepare_input : callable
        ``data -> data`` before a framework input goes to the workers (e.g. a tf.data graph).
    cast_labels : callable
        ``(labels, label_rule) -> labels``: a worker's labels as the loss takes them, by the
        runner's ``label_rule`` (the loss's class-index rule, or the model's float dtype).
    callback_output_paths : callable
        ``callback -> attribute names`` of the paths the callback writes files to (its
        ``output_paths``, plus the framework's own file-writing callbacks); see
        :mod:`zoo_lite.learn.base.file_relay`.
    fresh_process_per_group : bool
        Its collective runtime can be set up once per process (TensorFlow's): on the Spark
        backend, whose Python workers Spark reuses, each worker then runs in a new process.

    Examples
    --------
    >>> from zoo_lite.learn.pytorch.estimator import TORCH
    >>> TORCH.name
    'PyTorch'
    """

    name: str
    inputs: str
    runner_factory: Callable[["Framework", Any, "WorkerInfo"], "Runner"]
    state: StateCodec
    predict: "PredictRecipe"
    model_payload: Callable[[Any], bytes]
    is_input: Callable[[Any], bool]
    batch_size: Callable[[Any, dict[str, Any], int], int]
    cast_labels: Callable[[Any, Any], Any]
    prepare_input: Callable[[Any], Any] = _unchanged
    callback_output_paths: Callable[[Any], Sequence[str]] = declared_output_paths
    fresh_process_per_group: bool = False


#: the shortest WorkerConfig(heartbeat_timeout_s): a loaded host may delay a heartbeat or two
_MIN_HEARTBEAT_TIMEOUT_S = 3.0

#: the keys of the user's ``config`` dict that zoo_lite read before WorkerConfig (deprecated there)
_LEGACY_KEYS = ("collective_timeout_s", "shared_memory_exchange", "gradient_chunk_rows")


@dataclass(frozen=True)
class WorkerConfig:
    """zoo_lite's own settings of the training workers (the user's ``config`` dict is the user's).

    Parameters
    ----------
    collective_timeout_s : float, default 1800
        The bound on one collective step (a gradient exchange, a sum of metrics): a worker that
        waits longer for its peers fails with ``WorkerTimeoutError``.
    shared_memory_exchange : bool, default True
        Workers on one host sum gradients through shared memory (``/dev/shm``) rather than over
        the network collective.
    gradient_chunk_rows : int, default 1024
        Keras: a worker's share of a batch is differentiated in slices of this many rows (the
        same gradient; faster in the CPU's cache). 0 differentiates the share at once.
    standby_workers : bool, default False
        Keep an idle, started copy of each worker beside the group (its process up and its
        framework imported, no CPUs held while the group holds them), so that after a lost worker
        the new group takes over those processes instead of starting new ones: a recovery then
        skips the cold start (3.7 s of 5.1 s for PyTorch on 2 cores, more for Keras; see
        ``benchmarks/RESULTS.md``). The price is one idle process per worker (its memory: the
        framework's size) and the CPU time to start it once, beside the group's first epoch.
        A lost node's standbys are lost with it; where the new group needs a layout the standby
        does not have, it starts cold.
    heartbeat_timeout_s : float, default 30
        Each worker sends a heartbeat every second from a thread of its own; a worker silent this
        long (its process stopped, or hung holding Python's GIL) is treated as lost, as a dead one
        is, and a ``fit`` resumes without waiting ``collective_timeout_s`` for it. At least 3.
        A worker whose whole host went quiet is reported by the node's heartbeat instead
        (``heartbeat_timeout_s`` of ``init_orca_context``), and its node is replaced.
    rendezvous_ports : tuple of two ints, optional
        ``(first, last)``: the workers' rendezvous ports are taken from this range, both ends
        included (open it between the workers' hosts on a firewalled cluster): torch's rank 0
        serves its store on one, each TensorFlow worker's gRPC server listens on one. A taken port
        is skipped; when every port of the range is taken on a host, the start fails with
        ``PortRangeExhaustedError``. Give each worker host at least a few more ports than the
        workers it runs. Default: any free port. gloo's own transport still binds ports the
        system picks (see ``docs/cluster.md``).

    Examples
    --------
    >>> WorkerConfig(collective_timeout_s=60).collective_timeout_s
    60
    >>> WorkerConfig(gradient_chunk_rows=-1)
    Traceback (most recent call last):
    ...
    zoo_lite.errors.InvalidArgumentError: WorkerConfig(gradient_chunk_rows=-1) must be an int >= 0 (0 differentiates a worker's share at once)
    """

    collective_timeout_s: float = 1800.0
    shared_memory_exchange: bool = True
    gradient_chunk_rows: int = 1024
    standby_workers: bool = False
    heartbeat_timeout_s: float = 30.0
    rendezvous_ports: Optional[tuple[int, int]] = None

    def __post_init__(self) -> None:
        timeout = self.collective_timeout_s
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not (timeout > 0 and math.isfinite(timeout)):
            raise InvalidArgumentError(f"WorkerConfig(collective_timeout_s={timeout!r}) must be a positive number of seconds")
        beat = self.heartbeat_timeout_s
        if isinstance(beat, bool) or not isinstance(beat, (int, float)) or not (beat >= _MIN_HEARTBEAT_TIMEOUT_S and math.isfinite(beat)):
            raise InvalidArgumentError(f"WorkerConfig(heartbeat_timeout_s={beat!r}) must be a number of seconds of at least "
                                       f"{_MIN_HEARTBEAT_TIMEOUT_S:g} (workers send a heartbeat every second)")
        if not isinstance(self.shared_memory_exchange, bool):
            raise InvalidArgumentError(f"WorkerConfig(shared_memory_exchange={self.shared_memory_exchange!r}) must be True or False")
        if not isinstance(self.standby_workers, bool):
            raise InvalidArgumentError(f"WorkerConfig(standby_workers={self.standby_workers!r}) must be True or False")
        self._check_rendezvous_ports()
        rows = self.gradient_chunk_rows
        if isinstance(rows, bool) or not isinstance(rows, int) or rows < 0:
            raise InvalidArgumentError(
                f"WorkerConfig(gradient_chunk_rows={rows!r}) must be an int >= 0 (0 differentiates a worker's share at once)"
            )

    def _check_rendezvous_ports(self) -> None:
        ports = self.rendezvous_ports
        if ports is None:
            return
        valid = (isinstance(ports, (tuple, list)) and len(ports) == 2
                 and all(isinstance(port, int) and not isinstance(port, bool) and 1 <= port <= 65535 for port in ports)
                 and ports[0] <= ports[1])
        if not valid:
            raise InvalidArgumentError(f"WorkerConfig(rendezvous_ports={ports!r}) must be (first, last): two port numbers "
                                       "from 1 to 65535, first <= last, both ends included (or None: any free port)")
        object.__setattr__(self, "rendezvous_ports", (ports[0], ports[1]))   # frozen; a list becomes a tuple

    @classmethod
    def resolve(cls, worker_config: Optional["WorkerConfig"], config: Optional[Mapping[str, Any]]) -> "WorkerConfig":
        """The settings of a new Estimator: ``worker_config``, or the defaults updated by the keys
        an older zoo_lite read from the user's ``config`` (with a ``DeprecationWarning``).

        Examples
        --------
        >>> import warnings
        >>> with warnings.catch_warnings(record=True):
        ...     WorkerConfig.resolve(None, {"collective_timeout_s": 30}).collective_timeout_s
        30
        """
        if worker_config is not None and not isinstance(worker_config, WorkerConfig):
            raise InvalidArgumentError(f"worker_config={worker_config!r} must be a zoo_lite WorkerConfig(...)")
        legacy = {key: config[key] for key in _LEGACY_KEYS if config and key in config}
        if "shared_memory_exchange" in legacy:   # read as a truth value before
            legacy["shared_memory_exchange"] = bool(legacy["shared_memory_exchange"])
        if not legacy:
            return worker_config or cls()
        if worker_config is not None:
            raise InvalidArgumentError(f"config has zoo_lite's settings {sorted(legacy)} and worker_config is given too; "
                                       "move them into worker_config=WorkerConfig(...)")
        warnings.warn(f"zoo_lite's settings {sorted(legacy)} in config are deprecated and will be ignored in the next "
                      f"release; pass worker_config=WorkerConfig({', '.join(f'{k}={v!r}' for k, v in legacy.items())})",
                      DeprecationWarning, stacklevel=3)
        known = {f.name for f in fields(cls)}
        return cls(**{key: value for key, value in legacy.items() if key in known})
