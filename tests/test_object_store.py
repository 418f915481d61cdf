"""Data and models in an object store: every ``s3://`` path zoo_lite takes, against a real
S3-compatible server (moto's, started on loopback for this module, with signed requests checked),
each result compared with the same call on local files."""

from __future__ import annotations

import pathlib
from typing import Iterator

import numpy as np
import pandas as pd
import pytest

from tests.s3_server import S3Server, s3_server
from zoo_lite.data.image import read_images
from zoo_lite.data.pandas import read_csv, read_json, read_parquet
from zoo_lite.errors import DataReadError, InvalidArgumentError

pytestmark = pytest.mark.usefixtures("sc")

_AWS_VARIABLES = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_ENDPOINT_URL",
                  "AWS_ENDPOINT_URL_S3", "AWS_DEFAULT_REGION", "AWS_REGION")


@pytest.fixture(scope="module")
def server() -> Iterator[S3Server]:
    with s3_server() as started:
        yield started


@pytest.fixture(autouse=True)
def no_aws_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """No credentials but those a test gives: none from the machine's own environment."""
    for name in _AWS_VARIABLES:
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def bucket(server: S3Server, request: pytest.FixtureRequest) -> str:
    """A new, empty bucket named after the test."""
    name = request.node.name.replace("_", "-")[:50].strip("-").lower()
    server.filesystem().mkdir(name)
    return name


def _upload(server: S3Server, local: pathlib.Path, target: str) -> None:
    server.filesystem().put(f"{local}/", f"{target}/", recursive=True)


def _frame(shards) -> pd.DataFrame:
    return shards.concat_to_pdf().reset_index(drop=True)


# ---------------------------------------------------------------------------------------------
# tables
# ---------------------------------------------------------------------------------------------

def test_many_csv_files_in_a_bucket_read_as_the_same_local_folder(server, bucket, tmp_path):
    rng = np.random.default_rng(0)
    for part in range(12):
        pd.DataFrame({"id": np.arange(part * 50, part * 50 + 50), "value": rng.random(50),
                      "name": [f"n{i % 7}" for i in range(50)]}).to_csv(tmp_path / f"part-{part:02d}.csv", index=False)
    _upload(server, tmp_path, f"{bucket}/csv")

    remote = read_csv(f"s3://{bucket}/csv", storage_options=server.storage_options)

    assert remote.num_partitions() >= 2   # the files are spread over the tasks, as local ones are
    pd.testing.assert_frame_equal(_frame(remote), _frame(read_csv(str(tmp_path))))
    assert len(_frame(remote)) == 600


def test_credentials_set_in_the_driver_after_spark_started_reach_the_tasks(server, bucket, tmp_path, monkeypatch):
    lines = "".join(f'{{"k": {i}, "word": "w{i}"}}\n' for i in range(40))
    (tmp_path / "rows.json").write_text(lines)
    _upload(server, tmp_path, f"{bucket}/json")
    for name, value in server.environment.items():
        monkeypatch.setenv(name, value)   # Spark's Python workers were started without these

    remote = read_json(f"s3://{bucket}/json/rows.json", lines=True)

    pd.testing.assert_frame_equal(_frame(remote), pd.read_json(tmp_path / "rows.json", lines=True))


def test_a_parquet_dataset_in_a_bucket_reads_as_the_same_local_dataset(server, bucket, tmp_path):
    frame = pd.DataFrame({"id": np.arange(300), "score": np.linspace(0, 1, 300), "group": np.arange(300) % 4})
    for part in range(3):
        frame.iloc[part * 100:(part + 1) * 100].to_parquet(tmp_path / f"part-{part}.parquet", index=False)
    _upload(server, tmp_path, f"{bucket}/table")

    remote = read_parquet(f"s3a://{bucket}/table", columns=["id", "score"], storage_options=server.storage_options)

    pd.testing.assert_frame_equal(_frame(remote), _frame(read_parquet(str(tmp_path), columns=["id", "score"])))


def test_an_image_folder_in_a_bucket_reads_as_the_same_local_folder(server, bucket, tmp_path):
    from PIL import Image

    rng = np.random.default_rng(1)
    for label in ("cat", "dog", "owl"):
        (tmp_path / label).mkdir()
        for index in range(3):
            Image.fromarray(rng.integers(0, 255, (14, 10, 3), dtype=np.uint8)).save(tmp_path / label / f"{index}.png")
    (tmp_path / "cat" / "_notes.png").write_bytes(b"left out, as Spark leaves out '_' names")
    _upload(server, tmp_path, f"{bucket}/images")

    remote = read_images(f"s3://{bucket}/images", size=(8, 8), num_partitions=2, storage_options=server.storage_options)
    local = read_images(str(tmp_path), size=(8, 8), num_partitions=2)

    assert remote.classes == local.classes == ["cat", "dog", "owl"]
    for remote_shard, local_shard in zip(remote.collect(), local.collect(), strict=True):
        np.testing.assert_array_equal(remote_shard["x"], local_shard["x"])
        np.testing.assert_array_equal(remote_shard["y"], local_shard["y"])


# ---------------------------------------------------------------------------------------------
# clear errors
# ---------------------------------------------------------------------------------------------

def test_wrong_credentials_a_missing_bucket_and_a_missing_key_each_get_an_error_naming_the_path(server, bucket, tmp_path):
    (tmp_path / "a.csv").write_text("x\n1\n")
    _upload(server, tmp_path, f"{bucket}/csv")
    wrong = dict(server.storage_options, secret="not-the-secret")

    with pytest.raises(DataReadError, match=rf"file_path='s3://{bucket}/csv': the object store refused access .*AWS_ACCESS_KEY_ID"):
        read_csv(f"s3://{bucket}/csv", storage_options=wrong)
    with pytest.raises(DataReadError, match=r"file_path='s3://no-such-bucket/a.csv': the bucket 'no-such-bucket' does not exist"):
        read_csv("s3://no-such-bucket/a.csv", storage_options=server.storage_options)
    with pytest.raises(DataReadError, match=rf"Path does not exist: file_path='s3://{bucket}/csv/b.csv' \(no such key in bucket"):
        read_csv(f"s3://{bucket}/csv/b.csv", storage_options=server.storage_options)
    with pytest.raises(DataReadError, match=rf"path='s3://{bucket}/none': the bucket|Path does not exist: path='s3://{bucket}/none'"):
        read_images(f"s3://{bucket}/none", size=(4, 4), storage_options=server.storage_options)


def test_spark_readers_without_hadoop_aws_say_which_package_and_conf_to_add(server, bucket):
    with pytest.raises(DataReadError, match=r"org\.apache\.hadoop:hadoop-aws:\d+\.\d+\.\d+.*spark\.hadoop\.fs\.s3a\.access\.key"):
        read_csv(f"s3://{bucket}/csv", backend="spark")
    with pytest.raises(InvalidArgumentError, match=r"storage_options=.* is for backend='pandas'"):
        read_parquet(f"s3://{bucket}/t", backend="spark", storage_options=server.storage_options)
    with pytest.raises(InvalidArgumentError, match=r"storage_options='key=x' must be a dict"):
        read_csv(f"s3://{bucket}/csv", storage_options="key=x")


# ---------------------------------------------------------------------------------------------
# models
# ---------------------------------------------------------------------------------------------

def _server_environment(monkeypatch: pytest.MonkeyPatch, server: S3Server) -> None:
    for name, value in server.environment.items():
        monkeypatch.setenv(name, value)


def test_a_torch_model_saved_to_a_bucket_loads_back_and_serves_as_a_spark_udf(server, bucket, spark, monkeypatch):
    import torch

    from zoo_lite.learn import spark_udf
    from zoo_lite.learn.pytorch import Estimator

    _server_environment(monkeypatch, server)
    torch.manual_seed(0)
    est = Estimator.from_torch(model=torch.nn.Linear(3, 2), loss=torch.nn.MSELoss())
    assert est.save(f"s3://{bucket}/models/linear.pt") == f"s3://{bucket}/models/linear.pt"

    again = Estimator.from_torch(model=torch.nn.Linear(3, 2), loss=torch.nn.MSELoss())
    again.load(f"s3://{bucket}/models/linear.pt")
    for saved, loaded in zip(est.get_model().parameters(), again.get_model().parameters(), strict=True):
        torch.testing.assert_close(saved, loaded)

    rows = spark.createDataFrame([([1.0, 2.0, 3.0],), ([0.0, -1.0, 0.5],)], ["x"])
    predicted = rows.select(spark_udf(f"s3://{bucket}/models/linear.pt", input_shapes=(3,))("x").alias("p")).collect()
    expected = est.get_model()(torch.tensor([[1.0, 2.0, 3.0], [0.0, -1.0, 0.5]])).detach().numpy()
    np.testing.assert_allclose([row.p for row in predicted], expected, rtol=1e-6)
    with pytest.raises(InvalidArgumentError, match=rf"load_checkpoint: no checkpoint at path='s3://{bucket}/models/gone.pt'"):
        again.load(f"s3://{bucket}/models/gone.pt")


def test_a_keras_model_saved_to_a_bucket_loads_back_with_its_weights(server, bucket, monkeypatch):
    import keras

    from zoo_lite.learn.tf2 import Estimator

    _server_environment(monkeypatch, server)
    model = keras.Sequential([keras.Input(shape=(4,)), keras.layers.Dense(3)])
    model.compile(optimizer="sgd", loss="mse")
    est = Estimator.from_keras(model=model)
    est.save(f"s3://{bucket}/models/dense.keras")
    est.save_weights(f"s3://{bucket}/models/dense.weights.h5")

    rebuilt = keras.Sequential([keras.Input(shape=(4,)), keras.layers.Dense(3)])
    rebuilt.compile(optimizer="sgd", loss="mse")
    loaded, weights_only = Estimator.from_keras(model=rebuilt), Estimator.from_keras(model=rebuilt)
    loaded.load(f"s3://{bucket}/models/dense.keras")
    weights_only.load_weights(f"s3://{bucket}/models/dense.weights.h5")

    for other in (loaded, weights_only):
        for saved, got in zip(model.get_weights(), other.get_model().get_weights(), strict=True):
            np.testing.assert_array_equal(saved, got)
    assert sorted(server.filesystem().ls(f"{bucket}/models")) == [f"{bucket}/models/dense.keras", f"{bucket}/models/dense.weights.h5"]


def test_a_fit_keeps_its_epochs_in_a_bucket_model_dir_and_resumes_from_the_latest(server, bucket, monkeypatch):
    import torch

    from zoo_lite.data import XShards
    from zoo_lite.learn.pytorch import Estimator

    _server_environment(monkeypatch, server)
    rng = np.random.default_rng(2)
    x = rng.normal(size=(64, 3)).astype("float32")
    shards = XShards.partition({"x": x, "y": (x @ np.array([[1.0], [-2.0], [0.5]], "float32"))}, num_shards=2)
    model_dir = f"s3://{bucket}/run"

    def sgd(model, config):
        return torch.optim.SGD(model.parameters(), lr=config["lr"])

    def linear():
        return torch.nn.Linear(3, 1)

    est = Estimator.from_torch(model=linear(), optimizer=sgd, loss=torch.nn.MSELoss(), model_dir=model_dir, config={"lr": 0.1})
    try:
        est.fit(shards, epochs=2, batch_size=16)
        latest = Estimator.latest_checkpoint(model_dir)
        assert latest == f"{model_dir}/epoch=2.ckpt"
        assert sorted(server.filesystem().ls(f"{bucket}/run")) == [f"{bucket}/run/epoch=1.ckpt", f"{bucket}/run/epoch=2.ckpt"]
        resumed = Estimator.from_torch(model=linear(), optimizer=sgd, loss=torch.nn.MSELoss(), config={"lr": 0.1})
        resumed.load_checkpoint(latest)
        for trained, loaded in zip(est.get_model().parameters(), resumed.get_model().parameters(), strict=True):
            torch.testing.assert_close(trained, loaded)
        assert Estimator.latest_checkpoint(f"s3://{bucket}/no-run") is None
    finally:
        est.shutdown()


def test_image_tables_written_and_read_by_spark_need_hadoop_aws_and_say_so(server, bucket, tmp_path):
    from PIL import Image

    from zoo_lite.data import XShards
    from zoo_lite.data.image import read_parquet as read_image_table
    from zoo_lite.data.image import write_parquet

    (tmp_path / "cat").mkdir()
    Image.new("RGB", (4, 4), "red").save(tmp_path / "cat" / "1.png")
    with pytest.raises(DataReadError, match=rf"output_path='s3://{bucket}/table': .*hadoop-aws"):
        write_parquet("image", f"s3://{bucket}/table", str(tmp_path))
    with pytest.raises(DataReadError, match=rf"path='s3a://{bucket}/table': .*hadoop-aws"):
        read_image_table("image", f"s3a://{bucket}/table", size=(4, 4))
    with pytest.raises(DataReadError, match=rf"path='s3://{bucket}/pickled': .*hadoop-aws"):
        XShards.partition(np.arange(4), num_shards=2).save_pickle(f"s3://{bucket}/pickled")
    with pytest.raises(DataReadError, match=rf"path='s3://{bucket}/pickled': .*hadoop-aws"):
        XShards.load_pickle(f"s3://{bucket}/pickled")


def test_hdfs_without_libhdfs_says_what_every_host_needs():
    from zoo_lite.data.paths import expand_paths

    with pytest.raises(DataReadError, match=r"file_path='hdfs://127\.0\.0\.1:8020/data': pyarrow's HadoopFileSystem could not start"
                                            r"(.|\n)*needs libhdfs(.|\n)*backend='spark'"):
        expand_paths("hdfs://127.0.0.1:8020/data")
