"""Fixtures of the Estimator tests: two workers on a local-cluster, and the digits as Spark DataFrames."""

from __future__ import annotations

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
