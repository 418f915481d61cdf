"""Root conftest: the docstring examples share one Spark context.

An example is written as a user's script: it calls ``init_orca_context(cores=2)`` itself (with
``init_ray_on_spark=True`` when it needs Ray) and leaves the context running; for a user,
``stop_orca_context`` runs at exit. Under pytest, starting Spark for every example would cost
~5 s each (and Ray ~10 s), so one ``local[2]`` context, started through ``init_orca_context`` as
the ``sc`` fixture of ``tests/conftest.py`` starts it, is shared by the examples:

- before an example that calls ``init_orca_context(``, the shared context is started unless a
  ``local[2]`` context is active, and Ray on it too if the example asks for
  ``init_ray_on_spark=True``; the example's own call then returns the running context, and the
  warning that call gives is silenced for doctests;
- an example that calls ``stop_orca_context(`` is about the context's life itself (those of
  ``zoo_lite/context.py``): it runs from no active context, as a user's script would, and leaves
  none. Such examples are moved after all other tests, so that they stop the shared context
  once, at the end, rather than forcing it (and Ray) to start again after each of them;
- other examples get nothing;
- the session's end stops the shared context, Ray included.
"""

from __future__ import annotations

import os
from typing import Iterator

import pytest

_ALREADY_ACTIVE = r"init_orca_context\(\) was called while a zoo_lite context is active"
_SHARED_MASTER = "local[2]"


def pytest_configure(config: pytest.Config) -> None:
    from tests.jvm_settings import suite_jvm_environment

    # inherited by the Spark the suite starts in this process and in the jobs it runs (a pytest
    # started by a test inherits them, and keeps them)
    for name, value in suite_jvm_environment().items():
        os.environ.setdefault(name, value)


def _calls(item: pytest.Item, code: str) -> bool:
    return isinstance(item, pytest.DoctestItem) and any(code in example.source for example in item.dtest.examples)


def _owns_lifecycle(item: pytest.Item) -> bool:
    return _calls(item, "stop_orca_context(")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if _calls(item, "init_orca_context("):
            item.add_marker(pytest.mark.filterwarnings(f"ignore:{_ALREADY_ACTIVE}:UserWarning"))
    items[:] = [item for item in items if not _owns_lifecycle(item)] + [item for item in items if _owns_lifecycle(item)]


@pytest.fixture(scope="session")
def _doctest_context_stopped_at_end() -> Iterator[None]:
    yield
    from zoo_lite import stop_orca_context

    stop_orca_context()


@pytest.fixture(autouse=True)
def _shared_context_for_doctests(request: pytest.FixtureRequest) -> Iterator[None]:
    item = request.node
    if _owns_lifecycle(item):
        from zoo_lite import stop_orca_context

        stop_orca_context()
        yield
        stop_orca_context()
        return
    if _calls(item, "init_orca_context("):
        from zoo_lite import OrcaContext, init_orca_context, stop_orca_context

        request.getfixturevalue("_doctest_context_stopped_at_end")
        if OrcaContext.is_active() and OrcaContext.get_spark_context().master != _SHARED_MASTER:
            stop_orca_context()
        if not OrcaContext.is_active():
            init_orca_context(cluster_mode="local", cores=2, memory="2g")
        if _calls(item, "init_ray_on_spark=True"):
            from zoo_lite.context import ray_context_started_on_demand

            ray_context_started_on_demand()
    yield
