"""init_orca_context on a Spark Connect server: connecting, SPARK_REMOTE, adopting a session, what
stop_orca_context ends, and the clear refusals of what still needs a classic SparkContext."""

from __future__ import annotations

import sys
import time
import warnings

import numpy as np
import pandas as pd
import pytest
import torch
from pyspark.sql.utils import is_remote

from tests.connect_server import ConnectServer
from zoo_lite import OrcaContext, init_orca_context, stop_orca_context
from zoo_lite.errors import ClusterStartError, ContextError, InvalidArgumentError, SparkConnectUnsupportedError

pytestmark = pytest.mark.cluster

#: the advice every refusal gives: the classic session that does what was asked
_ADVICE = r"needs a classic SparkContext .* start a classic session instead, e\.g\. init_orca_context\(cluster_mode="


def _connect_session_type() -> type:
    from pyspark.sql.connect.session import SparkSession

    return SparkSession


def test_spark_connect_mode_returns_a_connect_session_and_reports_its_kind(connect_server: ConnectServer, no_context):
    spark = init_orca_context(cluster_mode="spark-connect", remote=connect_server.url)
    assert isinstance(spark, _connect_session_type())
    assert OrcaContext.get_session_kind() == "connect"
    assert OrcaContext.get_spark_session() is spark and OrcaContext.get_sql_context() is spark
    assert spark.range(10).selectExpr("sum(id) AS total").first().total == 45
    with pytest.raises(SparkConnectUnsupportedError, match=r"OrcaContext\.get_spark_context\(\) " + _ADVICE):
        OrcaContext.get_spark_context()
    stop_orca_context()
    assert spark.is_stopped, "stop_orca_context() left the session zoo_lite opened"
    assert not OrcaContext.is_active()
    assert not is_remote(), "the process is still marked as a Spark Connect client: no classic session could start"
    # the server is not zoo_lite's: it stays up for the next client
    again = init_orca_context(cluster_mode="spark-connect", remote=connect_server.url)
    assert again is not spark and again.range(3).count() == 3


def test_the_conf_reaches_the_session_and_a_server_side_setting_is_an_error(connect_server: ConnectServer, no_context):
    spark = init_orca_context(cluster_mode="spark-connect", remote=connect_server.url,
                              conf={"spark.sql.shuffle.partitions": "7"})
    assert spark.conf.get("spark.sql.shuffle.partitions") == "7"
    stop_orca_context()
    with pytest.raises(InvalidArgumentError, match=r"conf\['spark.executor.memory'\]='3g' cannot be set from a Spark "
                                                   r"Connect client .* set it where the Connect server at sc://"):
        init_orca_context(cluster_mode="spark-connect", remote=connect_server.url, conf={"spark.executor.memory": "3g"})
    assert not OrcaContext.is_active()


def test_spark_remote_is_used_by_spark_connect_mode_and_by_the_default_mode(connect_server: ConnectServer, no_context,
                                                                            monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("SPARK_REMOTE", connect_server.url)
    spark = init_orca_context(cluster_mode="spark-connect")
    assert isinstance(spark, _connect_session_type()) and spark.range(4).count() == 4
    stop_orca_context()
    with pytest.warns(UserWarning, match=r"SPARK_REMOTE='sc://127\.0\.0\.1:\d+' is set: zoo_lite opens a Spark Connect "
                                         r"session there .* unset SPARK_REMOTE for a local session"):
        spark = init_orca_context()
    assert OrcaContext.get_session_kind() == "connect" and spark.range(2).count() == 2
    stop_orca_context()
    with pytest.raises(ContextError, match=r"SPARK_REMOTE='sc://.*' is set, so pyspark would open a Spark Connect "
                                           r"session, and cluster_mode='local-cluster' needs a classic one"):
        init_orca_context(cluster_mode="local-cluster", num_nodes=2, cores=1)


def test_an_active_connect_session_is_adopted_and_left_open(connect_server: ConnectServer, no_context):
    users = _connect_session_type().builder.remote(connect_server.url).getOrCreate()
    try:
        with pytest.warns(UserWarning, match=r"a Spark Connect session \(sc://127\.0\.0\.1:\d+\) is already active; "
                                             r"zoo_lite uses it as it is"):
            assert init_orca_context(cores=2) is users
        assert OrcaContext.get_session_kind() == "connect"
        stop_orca_context()
        assert not users.is_stopped and users.range(3).count() == 3
    finally:
        users.stop()


@pytest.mark.parametrize("kwargs, message", [
    (dict(cluster_mode="spark-connect", remote="http://127.0.0.1:15002"),
     r"remote='http://127\.0\.0\.1:15002' is not a Spark Connect URL; use 'sc://host:port'"),
    (dict(cluster_mode="spark-connect"),
     r"remote=None: cluster_mode='spark-connect' needs the Connect server's URL, as remote='sc://host:port' or in the "
     r"environment variable SPARK_REMOTE"),
    (dict(cluster_mode="local", remote="sc://127.0.0.1:15002"),
     r"remote='sc://127\.0\.0\.1:15002' names a Spark Connect server, which cluster_mode='local' does not use; pass "
     r"cluster_mode='spark-connect' with it"),
    (dict(cluster_mode="spark-connect", remote="sc://127.0.0.1:15002", num_nodes=4),
     r"num_nodes=4 cannot be chosen by a Spark Connect client: the Connect server's own start decides the cluster"),
    (dict(cluster_mode="spark-connect", remote="sc://127.0.0.1:15002", penv_archive="auto"),
     r"penv_archive='auto' cannot be chosen by a Spark Connect client"),
])
def test_bad_connect_arguments_are_refused_before_anything_starts(kwargs, message, no_context):
    with pytest.raises(InvalidArgumentError, match=message):
        init_orca_context(**kwargs)
    assert not OrcaContext.is_active()


def test_a_url_where_no_server_listens_fails_at_once_with_the_url(no_context):
    from zoo_lite.learn.base.ports import free_port

    url = f"sc://127.0.0.1:{free_port('127.0.0.1')}"
    started = time.monotonic()
    with pytest.raises(ClusterStartError, match=rf"no Spark Connect server answers at {url} \(ConnectionRefusedError"):
        init_orca_context(cluster_mode="spark-connect", remote=url)
    assert time.monotonic() - started < 30, "pyspark's client retried instead of failing"
    assert not OrcaContext.is_active()
    with pytest.raises(ClusterStartError) as caught:
        init_orca_context(cluster_mode="spark-connect", remote=f"{url}/;token=s3cret;use_ssl=false")
    assert f"{url}/;..." in str(caught.value) and "s3cret" not in str(caught.value), "the message shows the token"


def test_ray_on_spark_is_refused_on_connect(connect_server: ConnectServer, no_context):
    with pytest.raises(SparkConnectUnsupportedError, match=r"init_ray_on_spark=True \(Ray on Spark\) " + _ADVICE):
        init_orca_context(cluster_mode="spark-connect", remote=connect_server.url, init_ray_on_spark=True)
    assert not OrcaContext.is_active()


def _linear(config: dict) -> torch.nn.Module:
    return torch.nn.Linear(1, 1)


def _sgd(model: torch.nn.Module, config: dict) -> torch.optim.Optimizer:
    return torch.optim.SGD(model.parameters(), lr=0.01)


def _refusals(spark, csv_path: str) -> dict:
    """Each call that needs a classic SparkContext, as a user makes it, and the name its refusal gives."""
    from zoo_lite.data import SparkXShards, XShards
    from zoo_lite.data.pandas import read_csv
    from zoo_lite.learn.pytorch import Estimator

    frame = spark.createDataFrame(pd.DataFrame({"x": np.arange(8, dtype=np.float32), "y": np.ones(8, np.float32)}))

    def estimator(backend: str):
        return Estimator.from_torch(model=_linear, optimizer=_sgd, loss=torch.nn.MSELoss(), backend=backend)

    return {
        "XShards": lambda: XShards.partition({"x": np.zeros((4, 1))}),
        r"Reading files into XShards \(zoo_lite\.data\.pandas\)": lambda: read_csv(csv_path),
        "Turning a Spark DataFrame into XShards": lambda: SparkXShards.from_spark_df(frame),
        r"TorchEstimator\.fit": lambda: estimator("spark").fit(frame, epochs=1, batch_size=4, feature_cols=["x"],
                                                             label_cols=["y"]),
        r"TorchEstimator\.evaluate": lambda: estimator("ray").evaluate(frame, batch_size=4, feature_cols=["x"],
                                                                     label_cols=["y"]),
    }


def test_what_needs_a_classic_spark_context_is_refused_by_name_before_any_job_runs(connect_server: ConnectServer,
                                                                                   no_context, tmp_path):
    pd.DataFrame({"x": [1.0, 2.0]}).to_csv(tmp_path / "a.csv", index=False)
    spark = init_orca_context(cluster_mode="spark-connect", remote=connect_server.url)
    spark.range(1).collect()   # the server's first job, so that the count below starts from a settled one
    jobs_before = connect_server.jobs_run()
    for name, call in _refusals(spark, str(tmp_path / "a.csv")).items():
        with warnings.catch_warnings():
            warnings.simplefilter("error")   # no half-done work that warns first
            with pytest.raises(SparkConnectUnsupportedError, match=rf"^{name} " + _ADVICE):
                call()
    assert connect_server.jobs_run() == jobs_before, "a refused call ran a Spark job first"


def test_the_executors_python_is_checked_through_the_connect_session(connect_server: ConnectServer, no_context):
    from zoo_lite.errors import ExecutorEnvironmentError
    from zoo_lite.executor_python import check_executor_pythons, probe_executor_pythons

    spark = init_orca_context(cluster_mode="spark-connect", remote=connect_server.url)
    [python] = probe_executor_pythons(spark, ["numpy", "no_such_module"])
    assert python.executable == sys.executable   # the server's PYSPARK_PYTHON
    assert python.missing == (("no_such_module", "No module named 'no_such_module'"),)
    with pytest.raises(ExecutorEnvironmentError, match=r"this test needs no_such_module on the executors, but on host "
                                                       r".* cannot find 'no_such_module'; ship this environment"):
        check_executor_pythons(spark, ["no_such_module"], same_version=False, purpose="this test")


def test_a_model_udf_runs_on_a_server_in_local_mode(local_mode_connect_server: ConnectServer, no_context):
    """In local mode the tasks run in the server's own JVM, which finds a session's file artifacts
    another way than executors of their own do (test_connect_inference runs every way on those)."""
    from zoo_lite.learn.pytorch import Estimator

    spark = init_orca_context(cluster_mode="spark-connect", remote=local_mode_connect_server.url)
    torch.manual_seed(0)
    net = torch.nn.Linear(3, 2)
    rows = np.random.default_rng(1).normal(size=(20, 3)).astype(np.float32)
    udf = Estimator.from_torch(model=net, loss=torch.nn.MSELoss()).spark_udf(input_shapes=(3,))
    frame = spark.createDataFrame(pd.DataFrame({"id": np.arange(20), "f": list(rows.astype(np.float64))}))
    got = frame.select("id", udf("f").alias("p")).toPandas().sort_values("id")
    np.testing.assert_allclose(np.stack(got["p"].to_numpy()), net(torch.from_numpy(rows)).detach().numpy(), rtol=1e-5,
                               atol=1e-6)
