"""Fixtures of the Estimator tests: two workers on a local-cluster, and the digits as Spark DataFrames."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pandas as pd
import pytest

from zoo_lite import OrcaContext


@pytest.fixture(scope="module")
def two_workers(ray_local_cluster):
    """Two executors, each with its Ray node: the Estimators get two workers."""
    return OrcaContext.get_spark_session()


@pytest.fixture(scope="module")
def digits_frames(two_workers):
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    digits = load_digits()
    x_train, x_test, y_train, y_test = train_test_split(digits.data / 16.0, digits.target, test_size=0.25, random_state=0)

    def frame(x, y, offset):
        return two_workers.createDataFrame(pd.DataFrame({"id": np.arange(len(y)) + offset, "features": list(x), "label": y}))

    return frame(x_train, y_train, 0).repartition(3), frame(x_test, y_test, 10_000)


def shared_estimator_fixtures(make: Callable[[], Any]) -> tuple[Any, Any]:
    """Fixtures ``_shared_linear`` (module scope: one Estimator from ``make()`` and the path of its
    untrained checkpoint) and ``linear`` (that Estimator, back to its untrained model, optimizer
    and epoch counter before each test), for a module's tests that check different things about
    the same kind of fit: it trains as a new one would, on workers that are already up.

    Use: ``_shared_linear, linear = shared_estimator_fixtures(linear_estimator)`` in the module."""

    @pytest.fixture(scope="module", name="_shared_linear")
    def shared(two_workers: Any, tmp_path_factory: pytest.TempPathFactory) -> Any:
        est = make()
        untrained = est.save_checkpoint(str(tmp_path_factory.mktemp("shared") / "untrained.ckpt"))
        yield est, untrained
        est.shutdown()

    @pytest.fixture(name="linear")
    def untrained(_shared_linear: tuple[Any, str]) -> Any:
        est, checkpoint = _shared_linear
        est.load_checkpoint(checkpoint)
        return est

    return shared, untrained
