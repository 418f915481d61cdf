"""The calls the driver sends its workers that are module-level functions (no closure), so that
they are pickled by reference. They live apart from the Estimator's module on purpose: a worker
that unpickles one imports this small module, not the driver's side of zoo_lite (the Estimator
brings the XShards methods and pandas along: 0.5 s of a new worker's first data load, measured).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from zoo_lite.learn.base.predict import InputSignature
    from zoo_lite.learn.base.runner import Runner

__all__ = ["callback_states", "feed_signature", "get_state", "load_dataset", "load_rows", "relayed_files"]


def get_state(runner: Runner) -> bytes:
    return runner.get_state()


def callback_states(runner: Runner) -> list[dict[str, Any]]:
    return runner.callback_states()


def relayed_files(final: bool, runner: Runner) -> list[tuple[str, bytes]]:
    return runner.relayed_files(final)


def load_rows(key: str, held: list[Any], partition_rows: list[int], one_row: Any, runner: Runner) -> int:
    return runner.load_rows(key, held, partition_rows, one_row)


def load_dataset(key: str, data: Any, batch_size: int, runner: Runner) -> int:
    return runner.load_dataset(key, data, batch_size)


def feed_signature(read: Callable[[Any], InputSignature | None], key: str, runner: Any) -> InputSignature | None:
    """The row signature of the runner's feed ``key``, as the framework's ``read`` finds it."""
    return read(runner.feeds[key])
