"""The shapes of predictions, as a new user meets them (issue 31), on real local Spark with Ray in
local mode: a torch Estimator's UDF and saved file know the row shapes of the rows it saw; XShards
predictions keep the model's output shape (``(n, 1)`` for one unit, as Keras' ``model.predict``
gives it); a shard without rows gets predictions of shape ``(0, k...)``, so that the shards'
predictions concatenate."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
from torch import nn

from zoo_lite.data import SparkXShards, XShards
from zoo_lite.errors import InvalidArgumentError
from zoo_lite.learn import spark_udf
from zoo_lite.learn.pytorch import Estimator as TorchEstimator
from zoo_lite.learn.tf2 import Estimator as KerasEstimator
from tests.learn.models import TwoInputs

pytestmark = pytest.mark.timeout(300)


@pytest.fixture(scope="module")
def spark(local_ray_spark):
    return local_ray_spark


def _regression(rows: int = 32, width: int = 3, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(rows, width)).astype("float32")
    return {"x": x, "y": (x @ np.arange(1, width + 1, dtype="float32"))[:, None]}


def _linear_estimator(width: int = 3, outputs: int = 1, **kwargs) -> object:
    torch.manual_seed(0)
    net = nn.Linear(width, outputs)
    return TorchEstimator.from_torch(model=net, optimizer=torch.optim.SGD(net.parameters(), lr=0.05), loss=nn.MSELoss(),
                                     seed=0, **kwargs)


def _frame(spark, x: np.ndarray):
    return spark.createDataFrame(pd.DataFrame({"id": np.arange(len(x)), "x": list(x.astype("float64"))}))


def _udf_values(df, udf, *columns: str) -> np.ndarray:
    return np.array([row.p for row in df.select("id", udf(*columns).alias("p")).orderBy("id").collect()])


def _by_hand(est, *inputs: np.ndarray) -> np.ndarray:
    with torch.no_grad():
        return est.get_model()(*(torch.from_numpy(np.asarray(x, dtype="float32")) for x in inputs)).numpy()


def _stacked(shards: SparkXShards) -> np.ndarray:
    return np.concatenate([shard["prediction"] for shard in shards.collect()])


# -- 1. the torch UDF knows the row shapes of the rows its Estimator saw --------------------------------

def test_after_fit_on_dict_shards_the_udf_and_the_saved_file_need_no_input_shapes(spark, tmp_path: Path) -> None:
    data = _regression()
    est = _linear_estimator()
    est.fit(XShards.partition(data, num_shards=2), epochs=2, batch_size=8)
    df = _frame(spark, data["x"])
    got = _udf_values(df, est.spark_udf(), "x")
    np.testing.assert_allclose(got, _by_hand(est, data["x"]).ravel(), rtol=1e-5)

    path = est.save(str(tmp_path / "model.pt"))
    est.shutdown()
    from_file = _udf_values(df, spark_udf(path), "x")   # an inference job without the training code
    np.testing.assert_allclose(from_file, got, rtol=1e-6)


def test_after_evaluate_on_pandas_shards_with_two_feature_columns_the_udf_takes_both(spark) -> None:
    rng = np.random.default_rng(1)
    pdf = pd.DataFrame({"id": np.arange(24), "a": list(rng.normal(size=(24, 2))), "b": rng.normal(size=24),
                        "label": rng.normal(size=24)})
    torch.manual_seed(0)
    est = TorchEstimator.from_torch(model=TwoInputs(), loss=nn.MSELoss())
    est.evaluate(XShards.partition(pdf, num_shards=2), batch_size=8, feature_cols=["a", "b"], label_cols=["label"])
    df = spark.createDataFrame(pdf)
    got = _udf_values(df, est.spark_udf(feature_cols=["a", "b"]))
    np.testing.assert_allclose(got, _by_hand(est, np.stack(pdf["a"]), pdf["b"].to_numpy()).ravel(), rtol=1e-5)
    est.shutdown()


def test_after_fit_on_a_spark_dataframe_the_udf_needs_no_input_shapes(spark) -> None:
    data = _regression(seed=2)
    df = spark.createDataFrame(pd.DataFrame({"id": np.arange(32), "x": list(data["x"].astype("float64")),
                                             "y": data["y"].ravel().astype("float64")}))
    est = _linear_estimator()
    est.fit(df, epochs=1, batch_size=8, feature_cols=["x"], label_cols=["y"])
    np.testing.assert_allclose(_udf_values(df, est.spark_udf(), "x"), _by_hand(est, data["x"]).ravel(), rtol=1e-5)
    est.shutdown()


def test_after_predict_on_a_spark_dataframe_the_udf_needs_no_input_shapes(spark) -> None:
    data = _regression(seed=3)
    df = _frame(spark, data["x"])
    est = _linear_estimator(outputs=2)
    est.predict(df, feature_cols=["x"])   # runs no worker: the driver reads one row to type the column
    got = _udf_values(df, est.spark_udf(), "x")
    np.testing.assert_allclose(got, _by_hand(est, data["x"]), rtol=1e-5)


def test_after_fit_on_a_dataloader_the_udf_needs_no_input_shapes(spark) -> None:
    data = _regression(seed=4)
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.from_numpy(data["x"]), torch.from_numpy(data["y"])),
                                         batch_size=8, shuffle=True)
    est = _linear_estimator()
    est.fit(loader, epochs=1)
    np.testing.assert_allclose(_udf_values(_frame(spark, data["x"]), est.spark_udf(), "x"), _by_hand(est, data["x"]).ravel(),
                               rtol=1e-5)
    est.shutdown()


def test_an_integer_input_keeps_its_dtype_for_the_udf(spark) -> None:
    class Embedded(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.embedding = nn.Embedding(10, 2)

        def forward(self, ids: torch.Tensor) -> torch.Tensor:
            return self.embedding(ids).sum(dim=1)

    ids = np.random.default_rng(5).integers(0, 10, size=(16, 3))
    torch.manual_seed(0)
    est = TorchEstimator.from_torch(model=Embedded(), loss=nn.MSELoss())
    est.evaluate(XShards.partition({"x": ids, "y": np.zeros((16, 2), "float32")}, num_shards=2), batch_size=4)
    df = spark.createDataFrame(pd.DataFrame({"id": np.arange(16), "ids": list(ids)}))
    with torch.no_grad():
        expected = est.get_model()(torch.from_numpy(ids)).numpy()
    np.testing.assert_allclose(_udf_values(df, est.spark_udf(), "ids"), expected, rtol=1e-6)
    est.shutdown()


def test_explicit_input_shapes_win_and_nothing_known_is_a_clear_error(spark, tmp_path: Path) -> None:
    from pyspark.errors import PythonException

    class RowSum(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x.sum(dim=1)

    est = TorchEstimator.from_torch(model=RowSum(), loss=nn.MSELoss())
    old_style = est.save(str(tmp_path / "never_saw_rows.pt"))   # as files saved before shapes were kept
    with pytest.raises(InvalidArgumentError, match=r"does not state the shape of its inputs; pass input_shapes=.*fits, "
                                                   r"evaluates or predicts on"):
        est.spark_udf()
    with pytest.raises(InvalidArgumentError, match=r"does not state the shape of its inputs; pass input_shapes"):
        spark_udf(old_style)
    wide = np.arange(20, dtype="float64").reshape(4, 5)
    np.testing.assert_allclose(_udf_values(_frame(spark, wide), spark_udf(old_style, input_shapes=(5,)), "x"), wide.sum(axis=1))

    est.evaluate(XShards.partition({"x": np.ones((4, 3), "float32"), "y": np.zeros(4, "float32")}, num_shards=2), batch_size=2)
    with pytest.raises(PythonException, match=r"has rows of shape \(5,\), but the model takes rows of shape \(3,\)"):
        _udf_values(_frame(spark, wide), est.spark_udf(), "x")   # the rows it saw were 3 wide
    np.testing.assert_allclose(_udf_values(_frame(spark, wide), est.spark_udf(input_shapes=(5,)), "x"), wide.sum(axis=1))
    est.shutdown()


def test_a_spark_backend_fit_remembers_the_row_shapes_too(spark) -> None:
    data = _regression(seed=6)
    est = _linear_estimator(backend="spark", num_workers=1)
    est.fit(XShards.partition(data, num_shards=2), epochs=1, batch_size=8)
    np.testing.assert_allclose(_udf_values(_frame(spark, data["x"]), est.spark_udf(), "x"), _by_hand(est, data["x"]).ravel(),
                               rtol=1e-5)


# -- 2. XShards predictions keep the model's output shape ----------------------------------------------

def test_a_one_unit_keras_output_stays_n_by_1_in_xshards_as_keras_gives_it_and_a_float_column_in_a_dataframe(spark) -> None:
    import keras

    model = keras.Sequential([keras.Input(shape=(3,)), keras.layers.Dense(1)])
    est = KerasEstimator.from_keras(model=model)
    x = _regression(rows=10, seed=7)["x"]
    predicted = est.predict(XShards.partition({"x": x}, num_shards=2)).collect()
    assert [shard["prediction"].shape for shard in predicted] == [(5, 1), (5, 1)]
    np.testing.assert_allclose(np.concatenate([shard["prediction"] for shard in predicted]), model.predict(x, verbose=0),
                               rtol=1e-5)
    df = est.predict(_frame(spark, x), feature_cols=["x"])
    assert df.schema["prediction"].dataType.simpleString() == "float"


def test_a_one_unit_torch_output_stays_n_by_1_in_xshards_too(spark) -> None:
    x = _regression(rows=10, seed=8)["x"]
    est = _linear_estimator()
    predicted = est.predict(XShards.partition({"x": x}, num_shards=2)).collect()
    assert [shard["prediction"].shape for shard in predicted] == [(5, 1), (5, 1)]
    np.testing.assert_allclose(np.concatenate([shard["prediction"] for shard in predicted]), _by_hand(est, x), rtol=1e-5)
    pandas_shards = XShards.partition(pd.DataFrame({"x": list(x)}), num_shards=2)
    cells = [cell for shard in est.predict(pandas_shards, feature_cols=["x"]).collect() for cell in shard["prediction"]]
    np.testing.assert_allclose(np.stack(cells), _by_hand(est, x), rtol=1e-5)   # one (1,) array per row, as Orca gave
    assert est.predict(_frame(spark, x), feature_cols=["x"]).schema["prediction"].dataType.simpleString() == "float"


# -- 3. a shard without rows predicts (0, k...) --------------------------------------------------------

def _with_an_empty_shard(x: np.ndarray) -> SparkXShards:
    """Dict shards whose first one has no rows left, as a filter by class leaves them."""
    keep_second_half = lambda shard: {"x": shard["x"][shard["x"][:, 0] > 0.5]}   # noqa: E731
    x = x.copy()
    x[: len(x) // 2, 0] = 0.0
    x[len(x) // 2:, 0] = 1.0
    return XShards.partition({"x": x}, num_shards=2).transform_shard(keep_second_half)


def test_an_empty_shard_of_a_two_output_keras_model_predicts_zero_rows_of_each_output_shape(spark) -> None:
    import keras

    inputs = keras.Input(shape=(4,))
    model = keras.Model(inputs, [keras.layers.Dense(3)(inputs), keras.layers.Reshape((2, 2))(keras.layers.Dense(4)(inputs))])
    est = KerasEstimator.from_keras(model=model)
    shards = _with_an_empty_shard(np.random.default_rng(9).normal(size=(8, 4)).astype("float32"))
    predicted = est.predict(shards).collect()
    assert [shard["prediction_0"].shape for shard in predicted] == [(0, 3), (4, 3)]
    assert [shard["prediction_1"].shape for shard in predicted] == [(0, 2, 2), (4, 2, 2)]
    rows = np.concatenate([shard["x"] for shard in predicted])
    first, second = model.predict(rows, verbose=0)
    np.testing.assert_allclose(np.concatenate([shard["prediction_0"] for shard in predicted]), first, rtol=1e-5)
    np.testing.assert_allclose(np.concatenate([shard["prediction_1"] for shard in predicted]), second, rtol=1e-5)


def test_an_empty_shard_of_a_torch_model_predicts_zero_rows_of_the_output_shape(spark) -> None:
    est = _linear_estimator(width=4, outputs=3)
    shards = _with_an_empty_shard(np.random.default_rng(10).normal(size=(8, 4)).astype("float32"))
    predicted = est.predict(shards).collect()
    assert [shard["prediction"].shape for shard in predicted] == [(0, 3), (4, 3)]
    np.testing.assert_allclose(_stacked(est.predict(shards)), _by_hand(est, np.concatenate([s["x"] for s in predicted])),
                               rtol=1e-5)


def test_after_fit_an_empty_shard_left_by_partition_by_predicts_zero_rows_of_the_output_shape(spark) -> None:
    rng = np.random.default_rng(11)
    pdf = pd.DataFrame({"key": ["a"] * 12, "x": list(rng.normal(size=(12, 3)).astype("float32")),
                        "y": list(rng.normal(size=(12, 2)))})
    by_key = XShards.partition(pdf, num_shards=2).partition_by("key", num_partitions=3)   # one key: two shards stay empty
    as_arrays = by_key.transform_shard(lambda df: {"x": np.array(df["x"].tolist(), dtype="float32"),
                                                   "y": np.array(df["y"].tolist(), dtype="float32")})
    est = _linear_estimator(outputs=2)
    est.fit(as_arrays, epochs=1, batch_size=4)
    predicted = est.predict(as_arrays).collect()
    assert sorted(shard["prediction"].shape for shard in predicted) == [(0, 2), (0, 2), (12, 2)]
    rows = np.concatenate([shard["x"] for shard in predicted if len(shard["x"])])
    np.testing.assert_allclose(_stacked(est.predict(as_arrays)), _by_hand(est, rows), rtol=1e-5)
    est.shutdown()
