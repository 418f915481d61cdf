"""Long waits say what they wait for: :func:`announced_wait` logs a line once a wait has lasted a
few seconds, and again every half minute, until it ends (docs/waits.md lists every wait). The
lines go to the ``zoo_lite.waits`` logger, printed to stderr unless the application configured
logging."""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from dataclasses import dataclass
from typing import Callable, Generic, Iterator, Optional, TypeVar

__all__ = ["announced_wait", "call_within", "CallOutcome", "printing_logger", "ANNOUNCE_AFTER_S", "ANNOUNCE_EVERY_S"]

T = TypeVar("T")

#: a wait shorter than this says nothing; a longer one says what it waits for, and repeats it
ANNOUNCE_AFTER_S = 5.0
ANNOUNCE_EVERY_S = 30.0


def printing_logger(name: str, level: int = logging.INFO) -> logging.Logger:
    """The logger ``name`` at ``level``, printing to stderr unless the application configured
    logging (then its handlers decide).

    Examples
    --------
    >>> printing_logger("zoo_lite.waits").level == logging.INFO
    True
    """
    logger = logging.getLogger(name)
    logger.setLevel(level)
    if not logger.handlers and not logging.getLogger().handlers:
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("%(asctime)s zoo_lite %(message)s", "%H:%M:%S"))
        logger.addHandler(handler)
        logger.propagate = False
    return logger


@contextlib.contextmanager
def announced_wait(what: str, bound_s: float, after_s: Optional[float] = None,
                   every_s: Optional[float] = None) -> Iterator[None]:
    """Run the body; while it runs longer than ``after_s`` (default :data:`ANNOUNCE_AFTER_S`),
    log (INFO, ``zoo_lite.waits``) ``waiting for <what>: <n> s so far, at most <bound_s> s`` then
    and every ``every_s`` (default :data:`ANNOUNCE_EVERY_S`) after, from a daemon thread.

    Examples
    --------
    >>> import logging, sys, time
    >>> to_stdout = logging.StreamHandler(sys.stdout)
    >>> logging.getLogger("zoo_lite.waits").addHandler(to_stdout)
    >>> with announced_wait("the answer", bound_s=10, after_s=0.1):
    ...     time.sleep(0.3)
    waiting for the answer: 0 s so far, at most 10 s
    >>> logging.getLogger("zoo_lite.waits").removeHandler(to_stdout)
    """
    logger = printing_logger("zoo_lite.waits")
    started = time.monotonic()
    done = threading.Event()

    def announce() -> None:
        delay = ANNOUNCE_AFTER_S if after_s is None else after_s
        while not done.wait(delay):
            logger.info("waiting for %s: %.0f s so far, at most %.0f s", what, time.monotonic() - started, bound_s)
            delay = ANNOUNCE_EVERY_S if every_s is None else every_s

    announcer = threading.Thread(target=announce, name="zoo_lite-wait-notice", daemon=True)
    announcer.start()
    try:
        yield
    finally:
        done.set()
        announcer.join()


@dataclass
class CallOutcome(Generic[T]):
    """How a :func:`call_within` ended: ``finished`` in time, with its ``value`` or the ``error``
    it raised (left to the caller, which knows what it means)."""

    finished: bool
    value: Optional[T] = None
    error: Optional[BaseException] = None


def call_within(func: Callable[[], T], what: str, timeout_s: float, thread_name: str) -> CallOutcome[T]:
    """``func()`` in a daemon thread named ``thread_name``, waited for at most ``timeout_s`` under
    :func:`announced_wait` (``what`` is what the wait is for). A call that has not finished is left
    running: the caller cancels what it started (a Spark job, an RPC).

    Examples
    --------
    >>> call_within(lambda: 6 * 7, "the answer", 10, "example").value
    42
    >>> outcome = call_within(lambda: 1 / 0, "a division", 10, "example")
    >>> outcome.finished, type(outcome.error).__name__
    (True, 'ZeroDivisionError')
    >>> call_within(lambda: time.sleep(1), "a nap", 0.05, "example").finished
    False
    """
    outcome: CallOutcome[T] = CallOutcome(finished=False)

    def run() -> None:
        try:
            outcome.value = func()
        except BaseException as error:  # noqa: BLE001 - handed to the caller
            outcome.error = error
        outcome.finished = True

    thread = threading.Thread(target=run, name=thread_name, daemon=True)
    thread.start()
    with announced_wait(what, timeout_s):
        thread.join(timeout_s)
    return outcome if not thread.is_alive() else CallOutcome(finished=False)
