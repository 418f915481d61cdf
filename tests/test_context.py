"""init_orca_context / stop_orca_context on real Spark: every mode that can run on one machine,
the loopback standalone cluster's processes, and what happens to them when the driver dies."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import psutil
import pytest

from tests.conftest import gateway_pids, java_descendants, printed_result
from zoo_lite import OrcaContext, init_orca_context, stop_orca_context
from zoo_lite.errors import ClusterStartError, ContextError, ContextStoppedError, InvalidArgumentError
from zoo_lite.spark_settings import RaySettings, drop_executors, registered_executor_hosts, registered_executors
from zoo_lite.standalone import LoopbackStandaloneCluster, spark_home

REPO = Path(__file__).resolve().parents[1]


def _executor_pids(sc, tasks: int = 8) -> set[int]:
    return set(sc.parallelize(range(tasks), tasks).map(lambda _: os.getpid()).collect())


def _wait_gone(pids: list[int], timeout_s: float = 30.0) -> list[int]:
    deadline = time.monotonic() + timeout_s
    alive = [pid for pid in pids if psutil.pid_exists(pid)]
    while alive and time.monotonic() < deadline:
        time.sleep(0.5)
        alive = [pid for pid in alive if psutil.pid_exists(pid) and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE]
    return alive


@pytest.fixture
def no_context():
    stop_orca_context()
    yield
    stop_orca_context()


def test_local_mode_returns_a_working_spark_context(no_context):
    sc = init_orca_context(cluster_mode="local", cores=2, memory="1g")
    assert sc.master == "local[2]"
    assert sc.parallelize(range(100), 4).sum() == 4950
    assert OrcaContext.get_spark_context() is sc
    assert OrcaContext.get_spark_session().sparkContext is sc
    assert OrcaContext.get_ray_context() is None
    assert sc.uiWebUrl is None  # Spark UI off by default
    assert sc.getConf().get("spark.log.level") == "WARN"


def _socket_files(folder: str) -> set[str]:
    return {str(path) for path in Path(folder).glob(".*.sock")}


def test_local_mode_python_workers_use_unix_sockets_that_stop_removes(no_context):
    folder = "/tmp"  # the JVM's java.io.tmpdir on Linux, checked below
    before = _socket_files(folder)
    sc = init_orca_context(cluster_mode="local", cores=2, memory="1g")
    assert sc._jvm.java.lang.System.getProperty("java.io.tmpdir").rstrip("/") == folder
    assert sc.getConf().get("spark.python.unix.domain.socket.enabled") == "true"
    assert len(_executor_pids(sc, tasks=4)) >= 1
    created = _socket_files(folder) - before
    assert created, "the Python workers' Unix socket files"
    stop_orca_context()
    deadline = time.monotonic() + 30
    while created & _socket_files(folder) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert created & _socket_files(folder) == set()


def test_spark_ui_and_log_level_are_configurable(no_context):
    sc = init_orca_context(cores=1, spark_ui=True, spark_log_level="ERROR", conf={"spark.ui.port": "0"})
    assert sc.uiWebUrl is not None
    assert sc.getConf().get("spark.log.level") == "ERROR"


def test_second_init_warns_and_returns_the_active_context(no_context):
    first = init_orca_context(cores=1)
    with pytest.warns(UserWarning, match="returning the active context"):
        second = init_orca_context(cluster_mode="local", cores=2)
    assert second is first
    assert second.master == "local[1]"


def test_stop_is_idempotent_and_getters_fail_clearly_afterwards(no_context):
    init_orca_context(cores=1)
    stop_orca_context()
    stop_orca_context()
    assert not OrcaContext.is_active()
    for getter in (OrcaContext.get_spark_context, OrcaContext.get_spark_session, OrcaContext.get_ray_context):
        with pytest.raises(ContextStoppedError, match=r"call init_orca_context\(\) first"):
            getter()


def test_unknown_keyword_argument_is_named(no_context):
    with pytest.raises(InvalidArgumentError, match=r"unknown keyword argument\(s\) \['executor_cores'\]"):
        init_orca_context(executor_cores=2)
    assert not OrcaContext.is_active()


def test_spark_submit_mode_outside_spark_submit_is_an_error(no_context):
    with pytest.raises(ContextError, match="not launched by spark-submit"):
        init_orca_context(cluster_mode="spark-submit")


def test_running_spark_context_is_adopted_with_a_warning_and_left_running(no_context):
    from pyspark import SparkConf, SparkContext

    own = SparkContext(conf=SparkConf().setMaster("local[1]").setAppName("users-own").set("spark.ui.enabled", "false"))
    try:
        with pytest.warns(UserWarning, match="already running"):
            sc = init_orca_context(cores=2)
        assert sc is own
        stop_orca_context()
        assert own._jsc is not None  # not ours to stop
    finally:
        own.stop()


def test_orca_settings_are_validated():
    with pytest.raises(InvalidArgumentError, match="pandas_read_backend='dask'"):
        OrcaContext.pandas_read_backend = "dask"
    with pytest.raises(InvalidArgumentError, match="_shard_size=0"):
        OrcaContext._shard_size = 0
    OrcaContext.pandas_read_backend = "spark"
    assert OrcaContext.pandas_read_backend == "spark"
    OrcaContext.pandas_read_backend = "pandas"   # the default, for the tests after this one


def test_ray_settings_take_orca_switches_as_booleans_only():
    assert RaySettings(log_output=True, barrier_mode=False).log_output is True
    with pytest.raises(InvalidArgumentError, match=r"log_output='yes' must be True or False \(OrcaContext.log_output\)"):
        RaySettings(log_output="yes")
    with pytest.raises(InvalidArgumentError, match=r"barrier_mode=None must be True or False"):
        RaySettings(barrier_mode=None)


def test_orca_switches_travel_to_ray_on_spark_in_its_settings(no_context):
    OrcaContext.log_output = True
    try:
        init_orca_context(cores=1, init_ray_on_spark=True)
        settings = OrcaContext.get_ray_context().settings
    finally:
        OrcaContext.log_output = False
    # the running cluster keeps what the driver said when Ray started, not the global as it is now
    assert settings.log_output is True and settings.barrier_mode is True
    assert OrcaContext.get_ray_context().settings.log_output is True


@pytest.mark.cluster
def test_local_cluster_mode_runs_tasks_in_separate_executor_jvms_and_a_dropped_one_is_replaced(no_context):
    sc = init_orca_context(cluster_mode="local-cluster", num_nodes=2, cores=1, memory="1g")
    assert sc.master == "local-cluster[2,1,1024]"
    assert sc._jsc.sc().getExecutorMemoryStatus().size() == 3  # two executors and the driver
    assert len(_executor_pids(sc)) >= 2
    spark = OrcaContext.get_spark_session()
    # counted at once without the dropped one (Spark forgets its block manager a moment later),
    # which a launch job's barrier stage of one task per executor relies on
    assert drop_executors(spark, {"1", "7"}, "a test drops it") == ["1"]
    assert registered_executors(spark) == 1 and len(registered_executor_hosts(spark)) == 1
    deadline = time.monotonic() + 60
    while registered_executors(spark) < 2 and time.monotonic() < deadline:
        time.sleep(0.2)
    assert registered_executors(spark) == 2, "Spark did not replace the dropped executor within 60 s"


@pytest.mark.cluster
def test_standalone_without_master_starts_and_stops_a_loopback_cluster(no_context):
    before = {process.pid for process in java_descendants()}
    sc = init_orca_context(cluster_mode="standalone", num_nodes=2, cores=1, memory="1g")
    assert sc.master.startswith("spark://127.0.0.1:")
    assert len(_executor_pids(sc)) >= 2
    daemon_pids = list(_active_cluster().pids)
    assert len(daemon_pids) == 3  # master and two workers
    spawned = {process.pid for process in java_descendants()} - before
    stop_orca_context()
    assert _wait_gone(sorted((spawned | set(daemon_pids)) - gateway_pids())) == []


@pytest.mark.cluster
def test_standalone_clusters_started_in_parallel_get_ports_of_their_own_and_a_context_on_one_leaves_it_running(no_context):
    # the master binds port 0 itself; picking ports by binding and closing could give two the same
    with ThreadPoolExecutor(3) as pool:
        started = [pool.submit(LoopbackStandaloneCluster.start, num_workers=1, cores=1, memory_mb=512) for _ in range(3)]
        clusters = [future.result(timeout=300) for future in started]
    daemon_pids = [pid for cluster in clusters for pid in cluster.pids]
    try:
        urls = [cluster.master_url for cluster in clusters] + [cluster.webui_url for cluster in clusters]
        assert len(set(urls)) == 6, urls
        assert [cluster._alive_workers() for cluster in clusters] == [1, 1, 1]
        # standalone with a master: the context connects to it, and its stop leaves the cluster running
        sc = init_orca_context(cluster_mode="standalone", master=clusters[0].master_url, num_nodes=1, cores=1, memory="512m")
        assert sc.master == clusters[0].master_url
        assert sc.parallelize(range(10), 2).count() == 10
        stop_orca_context()
        assert all(psutil.pid_exists(pid) for pid in daemon_pids)
    finally:
        for cluster in clusters:
            cluster.stop()
    assert len(daemon_pids) == 6 and _wait_gone(daemon_pids) == []


@pytest.mark.cluster
def test_standalone_start_timeout_cleans_up_and_shows_the_log():
    before = {process.pid for process in psutil.Process().children(recursive=True)}
    with pytest.raises(ClusterStartError, match=r"standalone Spark master did not start; last lines of .*master\.log"):
        LoopbackStandaloneCluster.start(num_workers=1, cores=1, memory_mb=512, timeout_s=0.5)
    started = [p.pid for p in psutil.Process().children(recursive=True) if p.pid not in before]
    assert _wait_gone(started, timeout_s=20) == []


def _cmdline(process: psutil.Process) -> list[str]:
    try:
        return process.cmdline()
    except psutil.Error:
        return []


def _active_cluster() -> LoopbackStandaloneCluster:
    from zoo_lite import context

    assert context._active is not None and context._active.standalone is not None
    return context._active.standalone


_DRIVER_SCRIPT = textwrap.dedent(
    """
    import sys, time
    from zoo_lite import init_orca_context
    from zoo_lite import context
    init_orca_context(cluster_mode="standalone", num_nodes=1, cores=1, memory="1g")
    print("PIDS", *context._active.standalone.pids, flush=True)
    if sys.argv[1] == "exit":
        sys.exit(0)  # no stop_orca_context(): atexit must clean up
    time.sleep(600)
    """
)


def _start_driver(mode: str) -> tuple[subprocess.Popen, list[int]]:
    process = subprocess.Popen([sys.executable, "-c", _DRIVER_SCRIPT, mode], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                               cwd=REPO, text=True)
    deadline = time.monotonic() + 180
    for line in process.stdout:
        if line.startswith("PIDS"):
            return process, [int(pid) for pid in line.split()[1:]]
        if time.monotonic() > deadline:
            break
    process.kill()
    raise AssertionError("the driver subprocess did not start its standalone cluster")


@pytest.mark.cluster
def test_driver_exit_without_stop_cleans_up_at_exit():
    process, pids = _start_driver("exit")
    assert process.wait(timeout=120) == 0
    assert _wait_gone(pids) == []


@pytest.mark.cluster
def test_driver_killed_with_sigkill_leaves_no_daemon_behind():
    process, pids = _start_driver("sleep")
    assert all(psutil.pid_exists(pid) for pid in pids)
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=30)
    assert _wait_gone(pids, timeout_s=30) == []


@pytest.mark.cluster
def test_spark_submit_mode_takes_master_and_conf_from_spark_submit(tmp_path):
    script = tmp_path / "job.py"
    script.write_text(textwrap.dedent(
        """
        from zoo_lite import init_orca_context, stop_orca_context
        sc = init_orca_context(cluster_mode="spark-submit")
        print("RESULT", sc.master, sc.getConf().get("spark.zoo.marker"), sc.parallelize(range(10)).sum(), sc.appName)
        stop_orca_context()
        """
    ))
    submit = Path(spark_home()) / "bin" / "spark-submit"
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable, PYTHONPATH=str(REPO))
    result = subprocess.run([str(submit), "--master", "local[2]", "--conf", "spark.zoo.marker=yes", "--name", "nightly-etl",
                             str(script)], capture_output=True, text=True, env=env, timeout=240)
    # spark-submit's --name wins over zoo_lite's default app name (it was overridden before)
    assert "RESULT local[2] yes 45 nightly-etl" in result.stdout, result.stderr[-3000:]


def test_a_second_context_in_a_process_gets_its_own_settings_not_the_first_ones(tmp_path):
    """pyspark launches the JVM once per process, through spark-submit, with the first context's
    conf: those settings become JVM system properties that every later context would load."""
    script = tmp_path / "two_contexts.py"
    script.write_text(textwrap.dedent(
        """
        import json
        from zoo_lite import init_orca_context, stop_orca_context
        seen = []
        for conf in ({"spark.zoo.first": "yes"}, {"spark.pyspark.python": "/usr/bin/python3"}, {}):
            sc = init_orca_context(cores=1, conf=conf)
            seen.append({key: sc.getConf().get(key, None)
                         for key in ("spark.zoo.first", "spark.python.daemon.module", "spark.pyspark.python")})
            stop_orca_context()
        print("RESULT", json.dumps(seen))
        """
    ))
    result = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=240,
                            env=dict(os.environ, PYTHONPATH=str(REPO)))
    first, second, third = printed_result(result)
    assert first["spark.zoo.first"] == "yes" and first["spark.python.daemon.module"] == "zoo_lite.spark_daemon", first
    # the second context's workers run another Python, without zoo_lite: no quiet daemon, nothing of the first conf
    assert second == {"spark.zoo.first": None, "spark.python.daemon.module": None,
                      "spark.pyspark.python": "/usr/bin/python3"}, second
    assert third["spark.zoo.first"] is None and third["spark.python.daemon.module"] == "zoo_lite.spark_daemon", third
    assert third["spark.pyspark.python"] != "/usr/bin/python3", third
