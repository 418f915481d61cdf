"""Shared fixtures: a real local Spark context for most tests, real clusters for the few that
need separate executor processes. No Spark, Ray or ML framework is ever mocked."""

from __future__ import annotations

import glob
import os
from typing import Iterator

import psutil
import pytest

from zoo_lite import OrcaContext, init_orca_context, stop_orca_context


@pytest.fixture
def sc():
    """The shared ``local[2]`` context; started on first use (and again after a test stopped it)."""
    if not OrcaContext.is_active():
        init_orca_context(cluster_mode="local", cores=2, memory="2g")
    return OrcaContext.get_spark_context()


@pytest.fixture
def spark(sc):
    return OrcaContext.get_spark_session()


@pytest.fixture(scope="module")
def local_ray_spark() -> Iterator:
    """``local[2]`` with a local Ray node, for a module whose tests train; stopped at its end."""
    stop_orca_context()
    init_orca_context(cluster_mode="local", cores=2, init_ray_on_spark=True)
    yield OrcaContext.get_spark_session()
    stop_orca_context()


@pytest.fixture(scope="module")
def local_cluster() -> Iterator:
    """Two executor JVMs (``local-cluster[2,1,1024]``) for the distribution cases of a module."""
    stop_orca_context()
    context = init_orca_context(cluster_mode="local-cluster", num_nodes=2, cores=1, memory="1g")
    yield context
    stop_orca_context()


@pytest.fixture(scope="module")
def ray_local_cluster() -> Iterator:
    """Two executors (``local-cluster[2,1,1024]``), each with its Ray node; yields the RayContext
    and checks at the end that stopping leaves no Ray process."""
    from tests.ray_on_spark.helpers import stop_and_check_clean

    stop_orca_context()
    init_orca_context(cluster_mode="local-cluster", num_nodes=2, cores=1, memory="1g", init_ray_on_spark=True)
    ray_context = OrcaContext.get_ray_context()
    yield ray_context
    stop_and_check_clean(ray_context)


def java_descendants() -> list[psutil.Process]:
    """JVMs started below this test process (the py4j gateway JVM and anything Spark started)."""
    found = []
    for child in psutil.Process().children(recursive=True):
        try:
            if child.name() == "java" or "java" in (child.exe() or ""):
                found.append(child)
        except psutil.Error:
            continue
    return found


def gateway_pids() -> set[int]:
    """The py4j gateway JVM pyspark keeps for the whole process (not started by zoo_lite)."""
    from pyspark import SparkContext

    process = getattr(SparkContext._gateway, "proc", None) if SparkContext._gateway is not None else None
    return {process.pid} if process is not None else set()


# every process this session starts inherits it (Spark's JVMs and Python workers, Ray's
# watchdogs), so that another test session on the machine cannot fail this one's checks
SESSION_MARK = "ZOO_LITE_TEST_SESSION"
os.environ[SESSION_MARK] = str(os.getpid())


def _of_this_session(process: psutil.Process) -> bool:
    try:
        return process.environ().get(SESSION_MARK) == os.environ[SESSION_MARK]
    except (psutil.AccessDenied, psutil.NoSuchProcess, psutil.ZombieProcess):
        return False


def ray_watchdogs_since(started: float) -> list[psutil.Process]:
    """zoo_lite's Ray node watchdogs started after ``started`` by this test session (they leave
    the process tree when Spark's Python worker exits, so they are found by their module name and
    this session's mark)."""
    found = []
    for process in psutil.process_iter(["cmdline", "create_time"]):
        cmdline = process.info["cmdline"] or []
        if ("zoo_lite.ray_on_spark.watchdog" in cmdline and (process.info["create_time"] or 0) >= started
                and _of_this_session(process)):
            found.append(process)
    return found


@pytest.fixture(scope="session", autouse=True)
def no_process_left_at_end() -> Iterator[None]:
    """After the last test, stopping the context must leave no JVM but pyspark's own gateway, and
    no Ray node watchdog (each one ends its node's processes before it exits)."""
    import time

    session_started = time.time()
    yield
    stop_orca_context()
    _, alive = psutil.wait_procs([p for p in java_descendants() if p.pid not in gateway_pids()], timeout=30)
    assert not alive, f"processes left after stop_orca_context(): {[(p.pid, p.cmdline()[-1:]) for p in alive]}"
    _, watchdogs = psutil.wait_procs(ray_watchdogs_since(session_started), timeout=30)
    assert not watchdogs, f"Ray node watchdogs left after the session: {[p.pid for p in watchdogs]}"
    shared_files = glob.glob("/dev/shm/zoo_lite-*")
    assert not shared_files, f"gradient exchange files left in /dev/shm: {shared_files}"
