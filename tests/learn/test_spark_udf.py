"""Models as Spark SQL functions (``est.spark_udf``, ``zoo_lite.learn.spark_udf``), on real local
Spark with Ray in local mode: DataFrame jobs, SQL, Structured Streaming, after shutdown, from a
saved file; types and values as ``predict`` gives them; one model load per Python worker."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
from torch import nn

from zoo_lite.errors import InvalidArgumentError
from zoo_lite.learn import spark_udf
from zoo_lite.learn.pytorch import Estimator as TorchEstimator
from zoo_lite.learn.tf2 import Estimator as KerasEstimator

pytestmark = pytest.mark.timeout(300)


@pytest.fixture(scope="module")
def spark(local_ray_spark):
    return local_ray_spark


class TwoHeads(nn.Module):
    """Two inputs (a vector and a scalar column); two values per row."""

    def __init__(self) -> None:
        super().__init__()
        self.linear = nn.Linear(3, 2)

    def forward(self, vector: torch.Tensor, scalar: torch.Tensor) -> torch.Tensor:
        return self.linear(vector) + scalar.reshape(-1, 1)


class RowsSeen(nn.Module):
    """Gives each row the number of rows of the batch it ran in."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.full((x.shape[0],), float(x.shape[0]))


class CountsLoads(nn.Module):
    """Writes its process id to ``log`` each time it is unpickled (each load of the model)."""

    def __init__(self, log: str) -> None:
        super().__init__()
        self.log = log
        self.linear = nn.Linear(2, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.linear(x)

    def __setstate__(self, state: dict) -> None:
        super().__setstate__(state)
        with open(self.log, "a") as handle:
            handle.write(f"{os.getpid()}\n")


def _frame(spark, rows: int = 40, partitions: int = 3):
    rng = np.random.default_rng(0)
    pdf = pd.DataFrame({"id": np.arange(rows), "vector": list(rng.normal(size=(rows, 3))), "scalar": rng.normal(size=rows)})
    return spark.createDataFrame(pdf).repartition(partitions)


def _two_heads_estimator() -> object:
    torch.manual_seed(0)
    return TorchEstimator.from_torch(model=TwoHeads(), loss=nn.MSELoss())


def _sorted_rows(df, column: str) -> list:
    return [row[column] for row in df.orderBy("id").collect()]


def test_the_torch_udf_gives_what_predict_gives_in_select_and_in_sql(spark) -> None:
    est = _two_heads_estimator()
    df = _frame(spark)
    udf = est.spark_udf(batch_size=7, input_shapes=[(3,), ()])
    selected = df.select("id", udf("vector", "scalar").alias("prediction"))
    assert selected.schema["prediction"].dataType.simpleString() == "array<float>"
    expected = _sorted_rows(est.predict(df, feature_cols=["vector", "scalar"]), "prediction")
    got = _sorted_rows(selected, "prediction")
    np.testing.assert_allclose(np.array(got), np.array(expected), rtol=1e-6)
    # the same values by hand, so that the test does not only compare predict with itself
    vectors, scalars = np.stack(_sorted_rows(df, "vector")), np.array(_sorted_rows(df, "scalar"))
    with torch.no_grad():
        by_hand = est.get_model()(torch.tensor(vectors, dtype=torch.float32), torch.tensor(scalars, dtype=torch.float32)).numpy()
    np.testing.assert_allclose(np.array(got), by_hand, rtol=1e-5)

    spark.udf.register("model_predict", udf)
    df.createOrReplaceTempView("rows")
    in_sql = spark.sql("SELECT id, model_predict(vector, scalar) AS p FROM rows ORDER BY id").collect()
    np.testing.assert_allclose(np.array([row.p for row in in_sql]), np.array(got), rtol=1e-6)


def test_feature_cols_are_the_default_columns_and_a_vector_column_is_taken(spark) -> None:
    from pyspark.ml.functions import array_to_vector

    est = _two_heads_estimator()
    df = _frame(spark).withColumn("vector", array_to_vector("vector"))
    udf = est.spark_udf(feature_cols=["vector", "scalar"], input_shapes=[(3,), ()])
    got = _sorted_rows(df.select("id", udf().alias("p")), "p")
    expected = _sorted_rows(est.predict(df, feature_cols=["vector", "scalar"]), "prediction")
    np.testing.assert_allclose(np.array(got), np.array(expected), rtol=1e-6)


def test_a_sparse_vector_column_is_made_dense(spark) -> None:
    from pyspark.ml.linalg import Vectors

    net = nn.Linear(4, 1)
    est = TorchEstimator.from_torch(model=net, loss=nn.MSELoss())
    vectors = [Vectors.sparse(4, [1, 3], [2.0, 5.0]), Vectors.dense([1.0, 2.0, 3.0, 4.0]), Vectors.sparse(4, [], [])]
    df = spark.createDataFrame([(i, v) for i, v in enumerate(vectors)], ["id", "features"])
    got = _sorted_rows(df.select("id", est.spark_udf(input_shapes=(4,))("features").alias("p")), "p")
    dense = torch.tensor([v.toArray() for v in vectors], dtype=torch.float32)
    with torch.no_grad():
        np.testing.assert_allclose(got, net(dense).numpy().ravel(), rtol=1e-5)


def test_the_model_runs_on_batch_size_rows_at_a_time(spark) -> None:
    spark.conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", "25")
    try:
        est = TorchEstimator.from_torch(model=RowsSeen())
        df = spark.range(100).selectExpr("id", "array(cast(id as double)) AS x").repartition(2)
        seen = [row.p for row in df.select(est.spark_udf(batch_size=10, input_shapes=(1,))("x").alias("p")).collect()]
    finally:
        spark.conf.unset("spark.sql.execution.arrow.maxRecordsPerBatch")
    assert max(seen) == 10 and len(seen) == 100


def test_the_model_is_loaded_once_per_python_worker(spark, tmp_path: Path) -> None:
    log = tmp_path / "loads.txt"
    est = TorchEstimator.from_torch(model=CountsLoads(str(log)))
    log.write_text("")   # Estimator.from_torch's own copies of the model do not count
    spark.conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", "50")
    try:
        df = spark.range(2000).selectExpr("id", "array(cast(id as double), 1.0d) AS x").repartition(8)
        udf = est.spark_udf(batch_size=16, input_shapes=(2,))
        log.write_text("")   # nor does the driver's probe of the output shape
        assert df.select(udf("x")).count() == 2000
        rows = df.select(udf("x").alias("p")).collect()
    finally:
        spark.conf.unset("spark.sql.execution.arrow.maxRecordsPerBatch")
    assert len(rows) == 2000
    loads = log.read_text().split()
    # 8 tasks, 40 Arrow batches and 125 model batches per query, twice: one load per Python worker
    assert loads and len(loads) == len(set(loads)) and len(loads) <= 2, loads


def test_keras_states_its_shapes_and_gives_a_struct_for_two_outputs_and_nested_arrays_for_a_tensor(spark) -> None:
    import keras

    inputs = keras.Input(shape=(4,))
    first = keras.layers.Dense(1, name="score")(inputs)
    second = keras.layers.Reshape((2, 3))(keras.layers.Dense(6)(inputs))
    model = keras.Model(inputs, [first, second])   # not compiled: used for predict only
    est = KerasEstimator.from_keras(model=model)
    rng = np.random.default_rng(1)
    x = rng.normal(size=(12, 4)).astype("float32")
    df = spark.createDataFrame(pd.DataFrame({"id": np.arange(12), "x": list(x.astype("float64"))}))
    udf = est.spark_udf(batch_size=5)
    out = df.select("id", udf("x").alias("p"))
    assert out.schema["p"].dataType.simpleString() == "struct<prediction_0:float,prediction_1:array<array<float>>>"
    rows = out.orderBy("id").collect()
    score, tensor = model.predict(x, verbose=0)
    np.testing.assert_allclose([row.p.prediction_0 for row in rows], score.ravel(), rtol=1e-5)
    np.testing.assert_allclose(np.array([row.p.prediction_1 for row in rows]), tensor, rtol=1e-5)
    # predict gives the tensor back with its shape too
    predicted = est.predict(df, feature_cols=["x"])
    assert predicted.schema["prediction_1"].dataType.simpleString() == "array<array<float>>"
    np.testing.assert_allclose(np.array(_sorted_rows(predicted, "prediction_1")), tensor, rtol=1e-5)


def test_an_uncompiled_keras_model_predicts_but_fit_and_evaluate_say_they_need_compile(spark) -> None:
    import keras

    from zoo_lite.data import XShards

    model = keras.Sequential([keras.Input(shape=(2,)), keras.layers.Dense(3)])
    est = KerasEstimator.from_keras(model=model)
    shards = XShards.partition({"x": np.ones((6, 2), "float32"), "y": np.zeros(6, "float32")}, num_shards=2)
    predicted = np.concatenate([shard["prediction"] for shard in est.predict(shards, batch_size=4).collect()])
    np.testing.assert_allclose(predicted, model.predict(np.ones((6, 2), "float32"), verbose=0), rtol=1e-5)
    for call in (lambda: est.fit(shards, epochs=1, verbose=0), lambda: est.evaluate(shards, verbose=0)):
        with pytest.raises(InvalidArgumentError, match=r"the model 'sequential.*' is not compiled; call model.compile"):
            call()


def test_the_udf_keeps_working_after_shutdown_with_the_trained_weights(spark) -> None:
    from zoo_lite.data import XShards

    rng = np.random.default_rng(2)
    x = rng.normal(size=(64, 3)).astype("float32")
    shards = XShards.partition({"x": x, "y": (x @ np.array([1.0, -2.0, 0.5], "float32"))}, num_shards=2)
    net = nn.Linear(3, 1)
    est = TorchEstimator.from_torch(model=net, optimizer=torch.optim.SGD(net.parameters(), lr=0.1), loss=nn.MSELoss(), seed=0)
    est.fit(shards, epochs=5, batch_size=16)
    udf = est.spark_udf(input_shapes=(3,))
    trained = est.get_model()
    est.shutdown()
    df = spark.createDataFrame(pd.DataFrame({"id": np.arange(64), "x": list(x.astype("float64"))}))
    got = _sorted_rows(df.select("id", udf("x").alias("p")), "p")
    with torch.no_grad():
        np.testing.assert_allclose(got, trained(torch.tensor(x)).numpy().ravel(), rtol=1e-5)
    assert not np.allclose(got, 0.0)


def test_a_stream_of_parquet_files_is_scored_with_a_checkpoint(spark, tmp_path: Path) -> None:
    est = _two_heads_estimator()
    udf = est.spark_udf(input_shapes=[(3,), ()])
    source, sink, checkpoint = tmp_path / "in", tmp_path / "out", tmp_path / "checkpoint"
    frame = _frame(spark, rows=30, partitions=1)
    frame.where("id < 15").write.parquet(str(source / "part1"))
    frame.where("id >= 15").write.parquet(str(source / "part2"))
    stream = spark.readStream.schema(frame.schema).option("recursiveFileLookup", "true").parquet(str(source))
    query = (stream.select("id", udf("vector", "scalar").alias("p")).writeStream.format("parquet")
             .option("checkpointLocation", str(checkpoint)).trigger(availableNow=True).start(str(sink)))
    assert query.awaitTermination(180), "the streaming query did not finish within 180 s"
    assert query.exception() is None
    scored = spark.read.parquet(str(sink))
    expected = _sorted_rows(frame.select("id", udf("vector", "scalar").alias("p")), "p")
    np.testing.assert_allclose(np.array(_sorted_rows(scored, "p")), np.array(expected), rtol=1e-6)
    assert (checkpoint / "offsets").is_dir()


def test_a_saved_model_becomes_the_same_udf_without_the_estimator(spark, tmp_path: Path) -> None:
    import keras

    est = _two_heads_estimator()
    df = _frame(spark)
    expected = _sorted_rows(df.select("id", est.spark_udf(input_shapes=[(3,), ()])("vector", "scalar").alias("p")), "p")
    path = est.save(str(tmp_path / "two_heads.pt"))
    from_file = spark_udf(path, input_shapes=[(3,), ()])
    np.testing.assert_allclose(np.array(_sorted_rows(df.select("id", from_file("vector", "scalar").alias("p")), "p")),
                               np.array(expected), rtol=1e-6)
    est.load(path)   # the file is still a checkpoint the Estimator loads

    model = keras.Sequential([keras.Input(shape=(3,)), keras.layers.Dense(2)])
    model.compile(optimizer="sgd", loss="mse")
    keras_est = KerasEstimator.from_keras(model=model)
    keras_path = keras_est.save(str(tmp_path / "model.keras"))
    got = _sorted_rows(df.select("id", spark_udf(keras_path)("vector").alias("p")), "p")
    np.testing.assert_allclose(np.array(got), model.predict(np.stack(_sorted_rows(df, "vector")), verbose=0), rtol=1e-5)


def test_saved_files_that_cannot_become_a_udf_get_clear_errors(spark, tmp_path: Path) -> None:
    weights_only = tmp_path / "weights.pt"
    torch.save(nn.Linear(2, 1).state_dict(), weights_only)
    with pytest.raises(InvalidArgumentError, match=r"holds weights only, without the model"):
        spark_udf(str(weights_only), input_shapes=(2,))
    text = tmp_path / "notes.txt"
    text.write_text("not a model")
    with pytest.raises(InvalidArgumentError, match=r"is neither a Keras '.keras' file nor a torch file"):
        spark_udf(str(text))
    with pytest.raises(InvalidArgumentError, match=r"no saved model at path="):
        spark_udf(str(tmp_path / "missing.pt"))


def test_bad_udf_arguments_and_inputs_get_errors_naming_them(spark) -> None:
    from pyspark.errors import PythonException

    est = _two_heads_estimator()
    with pytest.raises(InvalidArgumentError, match=r"does not state the shape of its inputs; pass input_shapes"):
        est.spark_udf()
    with pytest.raises(InvalidArgumentError, match=r"input_shapes=\[\(3, 0\)\]: give one row's shape per model input"):
        est.spark_udf(input_shapes=[(3, 0)])
    with pytest.raises(InvalidArgumentError, match=r"feature_cols=\['vector'\] names 1 column\(s\), but the model has 2 input"):
        est.spark_udf(feature_cols=["vector"], input_shapes=[(3,), ()])
    with pytest.raises(InvalidArgumentError, match=r"failed on one row of zeros shaped \[\(4,\), \(\)\]"):
        est.spark_udf(input_shapes=[(4,), ()])
    udf = est.spark_udf(feature_cols=["vector", "scalar"], input_shapes=[(3,), ()])
    with pytest.raises(InvalidArgumentError, match=r"the model takes 2 input\(s\) \['vector', 'scalar'\], but the UDF was called with 1"):
        udf("vector")
    df = _frame(spark).selectExpr("id", "slice(vector, 1, 2) AS short", "scalar")
    with pytest.raises(PythonException, match=r"column short \(model input 0 'vector'\) has rows of shape \(2,\), but the model takes rows of shape \(3,\)"):
        df.select(udf("short", "scalar")).collect()
