"""Predictions on Spark Connect: an Estimator's ``predict`` of a Connect DataFrame, its
``spark_udf`` in DataFrame jobs and in SQL, and ``spark_udf(path)``, for torch and Keras, each equal
to the model's own output on the driver. The model reaches the executors as a file artifact of the
session (a Connect session has no broadcast)."""

from __future__ import annotations

from typing import Iterator

import numpy as np
import pandas as pd
import pytest
import torch

from tests.connect_server import ConnectServer
from zoo_lite import OrcaContext, init_orca_context, stop_orca_context
from zoo_lite.learn import spark_udf

pytestmark = pytest.mark.cluster

_ROWS = np.random.default_rng(0).normal(size=(40, 3)).astype(np.float32)


@pytest.fixture(scope="module")
def connect_spark(connect_server: ConnectServer) -> Iterator:
    stop_orca_context()
    spark = init_orca_context(cluster_mode="spark-connect", remote=connect_server.url)
    yield spark
    stop_orca_context()


@pytest.fixture(scope="module")
def features(connect_spark):
    """The rows, as an ``array<double>`` column ``f`` in 3 partitions, with an ``id`` to keep order by."""
    frame = pd.DataFrame({"id": np.arange(len(_ROWS)), "f": list(_ROWS.astype(np.float64))})
    return connect_spark.createDataFrame(frame).repartition(3)


def _column(df, name: str) -> np.ndarray:
    rows = df.toPandas().sort_values("id")
    return np.stack(rows[name].to_numpy())


def _check_every_way_of_predicting(spark, features, est, expected: np.ndarray, saved: str) -> None:
    predicted = est.predict(features, feature_cols=["f"])
    assert predicted.columns == ["id", "f", "prediction"]
    np.testing.assert_allclose(_column(predicted, "prediction"), expected, rtol=1e-5, atol=1e-6)
    udf = est.spark_udf(input_shapes=(3,))
    np.testing.assert_allclose(_column(features.select("id", udf("f").alias("p")), "p"), expected, rtol=1e-5, atol=1e-6)
    spark.udf.register("model_predict", udf)
    features.createOrReplaceTempView("rows")
    in_sql = spark.sql("SELECT id, model_predict(f) AS p FROM rows")
    np.testing.assert_allclose(_column(in_sql, "p"), expected, rtol=1e-5, atol=1e-6)
    from_file = spark_udf(est.save(saved), input_shapes=(3,))
    np.testing.assert_allclose(_column(features.select("id", from_file("f").alias("p")), "p"), expected, rtol=1e-5,
                               atol=1e-6)


def test_a_torch_model_predicts_on_connect_as_on_the_driver(connect_spark, features, tmp_path):
    from zoo_lite.learn.pytorch import Estimator

    assert OrcaContext.get_session_kind() == "connect"
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 2))
    expected = net(torch.from_numpy(_ROWS)).detach().numpy()
    est = Estimator.from_torch(model=net, loss=torch.nn.MSELoss())
    _check_every_way_of_predicting(connect_spark, features, est, expected, str(tmp_path / "net.pt"))


def test_a_keras_model_predicts_on_connect_as_on_the_driver(connect_spark, features, tmp_path):
    import keras

    from zoo_lite.learn.tf2 import Estimator

    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(4, activation="tanh"), keras.layers.Dense(2)])
    model.compile(optimizer="sgd", loss="mse")
    # called eagerly: model.predict would compile through autograph, whose files stay in the temp dir
    # until this process exits (and another worker's test checks that none is left there)
    expected = np.asarray(model(_ROWS, training=False))
    est = Estimator.from_keras(model=model)
    _check_every_way_of_predicting(connect_spark, features, est, expected, str(tmp_path / "model.keras"))
