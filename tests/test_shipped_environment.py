"""``penv_archive``: the executors unpack the archive of a Python environment and run its Python,
on every master that ships archives (here local-cluster; standalone and YARN take the same
settings), and Ray on Spark's processes on the executors run from it too.

The archive is a venv of the driver's own interpreter whose packages are this environment's
(found through ``.pth`` files), so it is a few kilobytes: what is tested is the shipping, not the
packing (the executors share this machine's folders)."""

from __future__ import annotations

import os
import sys
import tarfile
from pathlib import Path

import numpy as np
import psutil
import pytest
from pyspark import SparkFiles

from tests.environments import venv_seeing_this_environment
from zoo_lite import OrcaContext, init_orca_context, stop_orca_context
from zoo_lite.data import XShards
from zoo_lite.env_packing import CACHE_DIR_VARIABLE
from zoo_lite.errors import InvalidArgumentError
from zoo_lite.host_unpack import ARCHIVE_LINK_PREFIX, HOST_ENVS_FOLDER, LAUNCHERS_FOLDER, environment_key
from zoo_lite.spark_settings import SparkSettings, spark_master_and_conf

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(400)]

def environment_archive(folder: Path) -> Path:
    """A venv of this interpreter that sees this environment's packages, packed."""
    venv = venv_seeing_this_environment(sys.base_prefix + "/bin/python3", folder / "env")
    archive = folder / "env.tar.gz"
    with tarfile.open(archive, "w:gz") as packed:
        packed.add(venv, arcname=".")
    return archive


def test_the_executors_and_their_ray_processes_run_the_unpacked_environments_python(tmp_path) -> None:
    stop_orca_context()
    archive = environment_archive(tmp_path)
    init_orca_context(cluster_mode="local-cluster", num_nodes=1, cores=1, memory="1g", init_ray_on_spark=True,
                      penv_archive=str(archive))
    try:
        sc = OrcaContext.get_spark_context()
        [(executor_python, executor_folder)] = sc.parallelize([0], 1).map(
            lambda _: (__import__("sys").executable, sorted(__import__("os").listdir()))).collect()
        driver_folder = sorted(os.listdir(SparkFiles.getRootDirectory()))
        shards = XShards.partition({"x": np.arange(4)}, num_shards=2).transform_shard(lambda shard: {"x": shard["x"] * 2})
        doubled = np.concatenate([shard["x"] for shard in shards.collect()])
        [node] = OrcaContext.get_ray_context().nodes
        watchdog = psutil.Process(node["watchdog_pid"])
        pythons = [process.cmdline()[0] for process in [watchdog, *watchdog.children(recursive=True)]
                   if process.cmdline() and "python" in Path(process.cmdline()[0]).name]
    finally:
        stop_orca_context()
    # unpacked once for the host, in the Spark worker's work folder (zoo_lite.host_unpack)
    assert executor_python.startswith("/") and executor_python.endswith("/bin/python"), executor_python
    assert Path(executor_python).parent.parent.parent.name == HOST_ENVS_FOLDER, executor_python
    np.testing.assert_array_equal(doubled, [0, 2, 4, 6])
    assert pythons and set(pythons) == {executor_python}, pythons   # the watchdog and the node's Python processes
    # the archive travels packed: Spark untars a file of spark.files named *.tar.gz where it fetches it
    key = environment_key(str(archive))
    shipped = [f"{ARCHIVE_LINK_PREFIX}{key}", f"zoo_lite-python-{key}"]
    assert [name for name in executor_folder if name not in ("stderr", "stdout")] == shipped, executor_folder   # its logs
    assert driver_folder == shipped, driver_folder


@pytest.mark.parametrize("mode, master", [("local-cluster", None), ("standalone", "spark://h:7077")])
def test_on_a_spark_worker_penv_archive_travels_as_a_file_with_the_launcher_that_unpacks_it_once_per_host(
        tmp_path, monkeypatch, mode, master) -> None:
    monkeypatch.setenv(CACHE_DIR_VARIABLE, str(tmp_path / "cache"))
    archive = tmp_path / "env.tar.gz"
    archive.write_bytes(b"")
    _, conf = spark_master_and_conf(SparkSettings(cluster_mode=mode, master=master, penv_archive=str(archive),
                                                  conf={"spark.files": "/data/lookup.csv"}))
    folder, key = tmp_path / "cache" / LAUNCHERS_FOLDER, environment_key(str(archive))
    link, launcher = folder / f"{ARCHIVE_LINK_PREFIX}{key}", folder / f"zoo_lite-python-{key}"
    assert conf["spark.files"] == f"{link},{launcher},/data/lookup.csv" and launcher.is_file()
    assert link.samefile(archive)
    assert conf["spark.pyspark.python"] == f"./{launcher.name}" and "spark.archives" not in conf
    assert "spark.python.daemon.module" not in conf   # zoo_lite's quiet daemon is for the driver's own Python


@pytest.mark.parametrize("settings", [{"cluster_mode": "k8s-client", "master": "k8s://https://h:6443", "container_image": "spark:4"},
                                      {"cluster_mode": "standalone", "master": "spark://h:7077",
                                       "python_location": "./python_env/bin/python3"},
                                      {"cluster_mode": "standalone", "master": "spark://h:7077",
                                       "penv_archive": "hdfs:///envs/env.tar.gz"}], ids=["k8s", "python_location", "uri"])
def test_elsewhere_penv_archive_is_unpacked_as_python_env_whose_python_the_executors_run(tmp_path, settings) -> None:
    archive = tmp_path / "env.tar.gz"
    archive.write_bytes(b"")
    settings = {"penv_archive": str(archive), **settings}
    _, conf = spark_master_and_conf(SparkSettings(**settings))
    assert conf["spark.archives"] == f"{settings['penv_archive']}#python_env" and "spark.files" not in conf
    assert conf["spark.pyspark.python"] == settings.get("python_location", "./python_env/bin/python")
    _, local = spark_master_and_conf(SparkSettings(cluster_mode="local", penv_archive=str(archive)))
    assert "spark.archives" not in local and local["spark.pyspark.python"] == sys.executable   # local tasks run this Python


@pytest.mark.parametrize("archive, complaint", [
    ("env.tar.gz", r"no such file on the driver's host .*/env\.tar\.gz\); pack the environment first"),
    ("env.whl", r"must name an archive of a Python environment \(\.tar\.gz, \.tgz, \.tar, \.zip, \.jar\)"),
])
def test_a_penv_archive_that_is_not_an_archive_file_is_refused_naming_it(archive, complaint) -> None:
    with pytest.raises(InvalidArgumentError, match=rf"penv_archive='{archive}'.*{complaint}"):
        SparkSettings(cluster_mode="local-cluster", penv_archive=archive)
    SparkSettings(cluster_mode="standalone", master="spark://h:7077", penv_archive="hdfs:///envs/env.tar.gz")   # fetched by Spark
