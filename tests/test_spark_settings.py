"""What init_orca_context's arguments mean for Spark: pure rules, no Spark started."""

from __future__ import annotations

import sys

import pytest

from zoo_lite.errors import ContextError, InvalidArgumentError
from zoo_lite.spark_settings import RaySettings, SparkSettings, memory_to_mb, spark_master_and_conf


@pytest.mark.parametrize("text, megabytes", [("512m", 512), ("2g", 2048), ("2G", 2048), ("1t", 1024 * 1024), ("1024k", 1), ("3gb", 3072)])
def test_memory_to_mb_parses_jvm_sizes(text, megabytes):
    assert memory_to_mb(text) == megabytes


@pytest.mark.parametrize("text", ["lots", "2x", "", "-1g", "10"])
def test_memory_to_mb_rejects_non_sizes(text):
    with pytest.raises(InvalidArgumentError, match=r"memory=.* (is not a memory size|is less than one megabyte)"):
        memory_to_mb(text)


def test_local_mode_defaults_to_all_cores_and_driver_memory():
    master, conf = spark_master_and_conf(SparkSettings())
    assert master == "local[*]"
    assert conf["spark.driver.memory"] == "2g"
    assert conf["spark.ui.enabled"] == "false"
    assert conf["spark.log.level"] == "WARN"
    assert conf["spark.pyspark.python"] == sys.executable


def test_local_cluster_mode_sizes_executors():
    master, conf = spark_master_and_conf(SparkSettings(cluster_mode="local-cluster", num_nodes=2, cores=1, memory="1g"))
    assert master == "local-cluster[2,1,1024]"
    assert conf["spark.executor.memory"] == "1024m"
    assert conf["spark.executor.cores"] == "1"
    assert conf["spark.cores.max"] == "2"


def test_standalone_with_master_keeps_it_and_sets_resources():
    settings = SparkSettings(cluster_mode="standalone", master="spark://10.0.0.1:7077", num_nodes=3, cores=4, memory="8g")
    master, conf = spark_master_and_conf(settings)
    assert master == "spark://10.0.0.1:7077"
    assert conf["spark.cores.max"] == "12"
    assert conf["spark.executor.memory"] == "8g"


def test_standalone_without_master_uses_the_started_cluster():
    master, _ = spark_master_and_conf(SparkSettings(cluster_mode="standalone"), standalone_master="spark://127.0.0.1:4444")
    assert master == "spark://127.0.0.1:4444"


def test_user_conf_wins_over_every_default():
    _, conf = spark_master_and_conf(SparkSettings(conf={"spark.ui.enabled": "true", "spark.driver.memory": "5g"}))
    assert conf["spark.ui.enabled"] == "true"
    assert conf["spark.driver.memory"] == "5g"


UNIX_SOCKET = "spark.python.unix.domain.socket.enabled"


@pytest.mark.parametrize("settings", [SparkSettings(), SparkSettings(cluster_mode="local-cluster", num_nodes=2, cores=1),
                                      SparkSettings(cluster_mode="standalone", master="spark://10.0.0.1:7077")],
                         ids=["local", "local-cluster", "standalone"])
def test_python_workers_use_a_unix_socket_where_zoo_lite_knows_the_machines(settings):
    _, conf = spark_master_and_conf(settings)
    assert conf[UNIX_SOCKET] == "true"


def test_yarn_k8s_and_spark_submit_keep_sparks_tcp_socket(monkeypatch):
    monkeypatch.setenv("HADOOP_CONF_DIR", "/etc/hadoop/conf")
    for settings in (SparkSettings(cluster_mode="yarn-client"), SparkSettings(cluster_mode="spark-submit"),
                     SparkSettings(cluster_mode="k8s-client", master="k8s://https://api:6443", container_image="me/zoo:1")):
        _, conf = spark_master_and_conf(settings)
        assert UNIX_SOCKET not in conf, settings.cluster_mode


def test_the_users_conf_can_turn_the_unix_socket_off():
    _, conf = spark_master_and_conf(SparkSettings(conf={UNIX_SOCKET: "false"}))
    assert conf[UNIX_SOCKET] == "false"


def test_no_unix_socket_where_the_os_has_none(monkeypatch):
    import socket

    monkeypatch.delattr(socket, "AF_UNIX")
    _, conf = spark_master_and_conf(SparkSettings())
    assert UNIX_SOCKET not in conf


def test_orca_spark_kwargs_become_spark_conf():
    settings = SparkSettings(
        cluster_mode="local-cluster", num_nodes=2, cores=1, memory="1g", driver_cores=2, driver_memory="3g",
        extra_executor_memory_for_ray="500m", jars="a.jar", extra_python_lib="lib.zip", spark_ui=True, spark_log_level="error",
    )
    _, conf = spark_master_and_conf(settings)
    assert conf["spark.driver.cores"] == "2"
    assert conf["spark.driver.memory"] == "3g"
    assert conf["spark.executor.memoryOverhead"] == "500m"
    assert conf["spark.jars"] == "a.jar"
    assert conf["spark.submit.pyFiles"] == "lib.zip"
    assert conf["spark.ui.enabled"] == "true"
    assert conf["spark.log.level"] == "ERROR"


def test_yarn_client_passes_master_conf_and_packed_env(monkeypatch):
    monkeypatch.setenv("HADOOP_CONF_DIR", "/etc/hadoop/conf")
    settings = SparkSettings(cluster_mode="yarn-client", num_nodes=4, cores=2, memory="4g", penv_archive="hdfs:///envs/env.tar.gz",
                             conf={"spark.yarn.queue": "ml"})
    master, conf = spark_master_and_conf(settings)
    assert master == "yarn"
    assert conf["spark.submit.deployMode"] == "client"
    assert conf["spark.executor.instances"] == "4"
    assert conf["spark.archives"] == "hdfs:///envs/env.tar.gz#python_env"
    assert conf["spark.pyspark.python"] == "./python_env/bin/python"
    assert conf["spark.yarn.queue"] == "ml"


def test_yarn_client_needs_hadoop_conf_dir(monkeypatch):
    monkeypatch.delenv("HADOOP_CONF_DIR", raising=False)
    monkeypatch.delenv("YARN_CONF_DIR", raising=False)
    with pytest.raises(ContextError, match="HADOOP_CONF_DIR"):
        SparkSettings(cluster_mode="yarn-client")


def test_k8s_client_passes_master_and_image():
    settings = SparkSettings(cluster_mode="k8s-client", master="k8s://https://api:6443", container_image="me/zoo:1")
    master, conf = spark_master_and_conf(settings)
    assert master == "k8s://https://api:6443"
    assert conf["spark.kubernetes.container.image"] == "me/zoo:1"
    assert "spark.pyspark.python" not in conf  # the image's interpreter, not this machine's path


def test_k8s_client_needs_master_and_image():
    with pytest.raises(InvalidArgumentError, match=r"master=None: cluster_mode='k8s-client' needs master"):
        SparkSettings(cluster_mode="k8s-client", container_image="img")
    with pytest.raises(InvalidArgumentError, match="container_image=None"):
        SparkSettings(cluster_mode="k8s-client", master="k8s://https://api:6443")


def test_spark_submit_mode_leaves_master_to_spark_submit():
    master, conf = spark_master_and_conf(SparkSettings(cluster_mode="spark-submit"))
    assert master is None
    assert "spark.pyspark.python" not in conf


@pytest.mark.parametrize("mode", ["yarn-cluster", "k8s-cluster"])
def test_cluster_deploy_modes_point_to_spark_submit(mode):
    with pytest.raises(ContextError, match=rf"cluster_mode='{mode}'.*spark-submit"):
        SparkSettings(cluster_mode=mode)


@pytest.mark.parametrize(
    "kwargs, pattern",
    [
        ({"cluster_mode": "mesos"}, r"cluster_mode='mesos' is not supported"),
        ({"cores": 0}, r"cores=0 must be a positive integer"),
        ({"cores": "*", "cluster_mode": "local-cluster"}, r"cores='\*' only means"),
        ({"num_nodes": -1}, r"num_nodes=-1 must be a positive integer"),
        ({"memory": "big"}, r"memory='big' is not a memory size"),
        ({"spark_log_level": "LOUD"}, r"spark_log_level='LOUD' is not a log4j level"),
        ({"cluster_mode": "standalone", "master": "yarn"}, r"master='yarn' is not a standalone master URL"),
        ({"conf": ["a"]}, r"conf=\['a'\] must be a dict"),
    ],
)
def test_bad_settings_name_argument_and_value(kwargs, pattern):
    with pytest.raises(InvalidArgumentError, match=pattern):
        SparkSettings(**kwargs)


def test_ray_settings_are_validated():
    assert RaySettings(object_store_memory="1g", num_ray_nodes=2).num_ray_nodes == 2
    with pytest.raises(InvalidArgumentError, match="num_ray_nodes=0"):
        RaySettings(num_ray_nodes=0)
    with pytest.raises(InvalidArgumentError, match="object_store_memory='lots'"):
        RaySettings(object_store_memory="lots")
