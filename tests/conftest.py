"""Shared fixtures: a real local Spark context for most tests, real clusters for the few that
need separate executor processes. No Spark, Ray or ML framework is ever mocked."""

from __future__ import annotations

import glob
import json
import os
import subprocess
from pathlib import Path
from typing import Any, Iterator, Optional

import psutil
import pytest

from zoo_lite import OrcaContext, init_orca_context, stop_orca_context


# -- contexts shared by the modules --------------------------------------------------------------------
# Starting Spark with Ray on two executors takes 30-40 s on 2 cores, and a dozen modules need it.
# So the contexts below are shared: a module's fixture takes the running context when it is of the
# kind the module needs (Ray is started on it if needed), and only otherwise stops it (checking that
# its Ray left nothing behind) and starts its own. Modules run grouped by the kind they need
# (pytest_collection_modifyitems below), so each kind starts once or twice per run.

#: the Spark side of each kind of shared context
_SPARK_KINDS = {
    "local": dict(cluster_mode="local", cores=2, memory="2g"),
    "local-cluster": dict(cluster_mode="local-cluster", num_nodes=2, cores=1, memory="1g"),
}


class _Shared:
    """The shared context now running: its SparkContext and its kind (None: none, or not ours)."""

    context = None
    spark_kind: Optional[str] = None


def _stop_shared() -> None:
    """Stop the running context; a Ray on it must leave no process behind, nor the Spark backend
    a child process (the idle ones end with their Python workers)."""
    from tests.ray_on_spark.helpers import stop_and_check_clean

    children = spark_backend_children()
    ray_context = OrcaContext.get_ray_context() if OrcaContext.is_active() else None
    if ray_context is not None:
        stop_and_check_clean(ray_context)
    else:
        stop_orca_context()
    _Shared.context = _Shared.spark_kind = None
    _, alive = psutil.wait_procs(children, timeout=30)
    assert not alive, f"Spark-backend child processes left after stop_orca_context(): {[p.pid for p in alive]}"


def shared_context(spark_kind: str, with_ray: bool):
    """The shared context of ``spark_kind`` ("local": ``local[2]``; "local-cluster": two executor
    JVMs of one core), with Ray on it if ``with_ray`` and without Ray if not; the running one when
    it fits, else a new one."""
    from zoo_lite.context import ray_context_started_on_demand

    fits = (OrcaContext.is_active() and OrcaContext.get_spark_context() is _Shared.context and _Shared.spark_kind == spark_kind
            and (with_ray or OrcaContext.get_ray_context() is None))
    if not fits:
        _stop_shared()
        _Shared.context = init_orca_context(**_SPARK_KINDS[spark_kind])
        _Shared.spark_kind = spark_kind
    if with_ray:
        ray_context_started_on_demand()
    return _Shared.context


@pytest.fixture
def sc():
    """The running context, whatever its kind; the shared ``local[2]`` one if none runs."""
    return OrcaContext.get_spark_context() if OrcaContext.is_active() else shared_context("local", with_ray=False)


@pytest.fixture
def spark(sc):
    return OrcaContext.get_spark_session()


@pytest.fixture(scope="module")
def local_ray_spark():
    """``local[2]`` with a local Ray node, for a module whose tests train (shared)."""
    shared_context("local", with_ray=True)
    return OrcaContext.get_spark_session()


@pytest.fixture(scope="module")
def local_cluster():
    """Two executor JVMs (``local-cluster[2,1,1024]``) and no Ray, for the distribution cases of a module (shared)."""
    return shared_context("local-cluster", with_ray=False)


@pytest.fixture(scope="module")
def ray_local_cluster():
    """Two executors (``local-cluster[2,1,1024]``), each with its Ray node (shared); yields the
    RayContext. Whoever stops it checks that Ray left no process (the next kind's fixture, or
    the session's end)."""
    shared_context("local-cluster", with_ray=True)
    return OrcaContext.get_ray_context()


#: the order of the groups of modules: by the shared context they need (the fixtures above), then
#: the modules that start clusters of their own, then the multi-host tests
_GROUP_OF_FIXTURE = (("ray_local_cluster", 4), ("two_workers", 4), ("digits_frames", 4), ("local_cluster", 3),
                     ("local_ray_spark", 2), ("sc", 1), ("spark", 1))


def _module_group(items: list[pytest.Item]) -> int:
    if any(item.get_closest_marker("hosts") for item in items):
        return 6
    module_marks = getattr(items[0].module, "pytestmark", []) if hasattr(items[0], "module") else []
    if any(mark.name == "cluster" for mark in (module_marks if isinstance(module_marks, list) else [module_marks])):
        return 5
    used = {name for item in items for name in getattr(item, "fixturenames", ())}
    return next((group for name, group in _GROUP_OF_FIXTURE if name in used), 0)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Run the modules of tests/ grouped by the context they share (a stable sort: modules keep
    their order within a group, tests theirs within a module); the docstring examples stay after.

    In scripts/test.sh's xdist workers the groups go in reverse order: the longest units (the
    multi-host packages, the modules with clusters of their own) start first, and the short ones
    fill the end (see :func:`pytest_xdist_make_scheduler`)."""
    here = Path(__file__).parent
    ours = [item for item in items if here in Path(str(item.fspath)).parents]
    if not ours:
        return
    by_module: dict[str, list[pytest.Item]] = {}
    for item in ours:
        by_module.setdefault(str(item.fspath), []).append(item)
    group = {path: _module_group(module_items) for path, module_items in by_module.items()}
    ordered = sorted(ours, key=lambda item: group[str(item.fspath)], reverse=hasattr(config, "workerinput"))
    start = items.index(ours[0])
    rest = [item for item in items if here not in Path(str(item.fspath)).parents]
    items[:] = rest[:start] + ordered + rest[start:]


#: the packages whose modules share one cluster of their own, so that they are one unit of work for
#: xdist (xdist's controller schedules by node id: it does not see the marks these packages'
#: conftests add): the multi-host packages (one simulated cluster each) and the Spark Connect
#: tests (one Connect server)
SHARED_CLUSTER_PACKAGES = ("tests/cluster/", "tests/bare_hosts/", "tests/connect/")


def unit_of_work(nodeid: str) -> str:
    """The unit of work of a test for scripts/test.sh's xdist workers: its module (which shares
    its module-scoped fixtures and context), or its package of :data:`SHARED_CLUSTER_PACKAGES`.

    >>> unit_of_work("tests/learn/test_steps.py::test_one[a]"), unit_of_work("tests/cluster/test_x.py::test_y")
    ('tests/learn/test_steps.py', 'tests/cluster/')
    """
    return next((package for package in SHARED_CLUSTER_PACKAGES if nodeid.startswith(package)), nodeid.split("::", 1)[0])


@pytest.hookimpl(optionalhook=True)   # called only where pytest-xdist runs the suite
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """Give xdist's workers whole units of work (:func:`unit_of_work`), in the workers' collection
    order. (xdist's own ``--dist loadgroup`` renames node ids, which pytest 9.2's ids no longer
    allow: its groups are silently lost, and a module's tests are spread over both workers.)"""
    from xdist.scheduler import LoadScopeScheduling

    class UnitScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return unit_of_work(nodeid)

    config.option.loadscopereorder = False   # the collection's order: the longest units first
    return UnitScheduling(config, log)


def printed_result(done: "subprocess.CompletedProcess[str]") -> Any:
    """The JSON value a child Python printed after ``RESULT `` (its one result line); a failure
    that shows the child's exit status and the end of its stderr where it printed none."""
    lines = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
    assert len(lines) == 1, f"the child printed {len(lines)} RESULT lines (exit status {done.returncode}):\n{done.stderr[-3000:]}"
    return json.loads(lines[0].split(" ", 1)[1])


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


def spark_backend_children() -> list[psutil.Process]:
    """The Spark backend's child processes (``zoo_lite.learn.base.spark_children``) of this session."""
    found = []
    for process in psutil.process_iter(["cmdline"]):
        if "child_main" in " ".join(process.info["cmdline"] or []) and _of_this_session(process):
            found.append(process)
    return found


@pytest.fixture(scope="session", autouse=True)
def no_process_left_at_end() -> Iterator[None]:
    """After the last test, stopping the context must leave no JVM but pyspark's own gateway, no
    Ray node watchdog (each one ends its node's processes before it exits), and no child process
    of the Spark backend (the idle ones end with their Python workers)."""
    import time

    session_started = time.time()
    yield
    _stop_shared()
    _, alive = psutil.wait_procs([p for p in java_descendants() if p.pid not in gateway_pids()], timeout=30)
    assert not alive, f"processes left after stop_orca_context(): {[(p.pid, p.cmdline()[-1:]) for p in alive]}"
    _, watchdogs = psutil.wait_procs(ray_watchdogs_since(session_started), timeout=30)
    assert not watchdogs, f"Ray node watchdogs left after the session: {[p.pid for p in watchdogs]}"
    shared_files = glob.glob("/dev/shm/zoo_lite-*")
    assert not shared_files, f"gradient exchange files left in /dev/shm: {shared_files}"
