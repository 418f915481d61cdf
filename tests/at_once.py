"""Programs that a module's tests check, run two at a time from the module's start.

A program with its own Spark and Ray leaves about a third of the two cores idle (JVM start, Ray
start, waits), so a module whose tests each check the output of one such program runs the
programs of its selected tests :data:`AT_ONCE` at a time, in a module fixture, and each test
waits for its own. A test run on its own (``-k``, a node id) starts only its program.
"""

from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from typing import Callable, Iterator, Mapping, TypeVar

import pytest

T = TypeVar("T")

#: programs run at once: two keep both cores of the suite's machines busy (measured: 67 % of the
#: two cores busy with one example program at a time, 97 % with two)
AT_ONCE = 2


def selected_tests(request: pytest.FixtureRequest) -> set[str]:
    """The names (without parameters) of the selected tests of the requesting module."""
    # getattr: the session also holds doctest items, which have neither
    return {getattr(item, "originalname", "") for item in request.session.items if getattr(item, "module", None) is request.module}


@contextmanager
def started_at_once(calls: Mapping[str, Callable[[], T]], timeout_s: float) -> Iterator[Callable[[str], T]]:
    """Start ``calls`` in their order, :data:`AT_ONCE` at a time; yield ``finished(name)``, which
    waits for that call and returns its result (or raises its error).

    ``timeout_s`` bounds each call (the call enforces it, as ``subprocess.run``'s timeout does);
    a wait is bounded by the calls that may run before it and its own."""
    with ThreadPoolExecutor(AT_ONCE, thread_name_prefix="at-once") as pool:
        runs: dict[str, Future[T]] = {name: pool.submit(call) for name, call in calls.items()}

        def finished(name: str) -> T:
            if name not in runs:
                raise KeyError(f"no program named {name!r} was started; started: {sorted(runs)}")
            return runs[name].result(timeout=timeout_s * len(runs))

        try:
            yield finished
        finally:
            for run in runs.values():
                run.cancel()
