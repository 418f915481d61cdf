"""Fixtures of the bare-host tests: a simulated cluster whose two worker hosts have Java, a Spark of
their own and the system's bare Python, and see neither the checkout nor its environment
(:mod:`tests.cluster.bare`); the driver host runs a venv of that same Python.

The cluster is built once for these tests and taken down after the last of them, also when one
fails or the run is killed (a reaper). Its applications come one at a time (each worker host has
one core): a test that starts its own driver closes the shared one first (``free_worker_cores``).
Where namespaces or a bare system Python are missing, every test here is skipped with the reason.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterator

import pytest

from tests.cluster import bare, jobs
from tests.cluster.agent import Agent
from tests.cluster.conftest import CLUSTER_FOLDERS
from tests.cluster.namespaces import why_unavailable
from tests.cluster.reaper import reaped_cluster
from tests.cluster.simulated import SimulatedCluster

#: what every driver of these tests is given: zoo_lite packs its environment into the tests' own
#: archive folder, kept between runs outside the checkout
DRIVER_ENV = {"ZOO_LITE_CACHE_DIR": str(bare.ARCHIVES)}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        if here in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.hosts)


@pytest.fixture(scope="package")
def bare_cluster() -> Iterator[SimulatedCluster]:
    """A driver host and two bare worker hosts, each with one Spark worker of one core."""
    why = why_unavailable() or bare.why_no_bare_hosts()
    if why is not None:
        pytest.skip(f"the bare-host tests need simulated bare hosts, which cannot be made here: {why}")
    with reaped_cluster("zoo_lite-bare-", CLUSTER_FOLDERS, worker_hosts=2, hosts_style="cluster", worker_memory="3g",
                        bare=True) as cluster:
        try:
            yield cluster
        finally:
            close_drivers()   # a driver left by a failed test would hold the hosts' cores and processes


#: the drivers started by the fixtures below and not closed yet
_running: dict[str, Agent] = {}


def start_driver(cluster: SimulatedCluster, name: str) -> Agent:
    """A new driver process on the driver host (the bare driver's Python), closed by ``free_worker_cores``
    or at the end of the package."""
    agent = Agent(cluster, "driver", name, env=DRIVER_ENV)
    _running[name] = agent
    return agent


def close_drivers() -> None:
    while _running:
        _running.popitem()[1].close()


@pytest.fixture
def free_worker_cores() -> None:
    """Every worker core free for a new application: the drivers started so far are closed (their
    contexts stop as they exit)."""
    close_drivers()


@pytest.fixture(scope="package")
def shipped_driver(bare_cluster: SimulatedCluster) -> Iterator[tuple[Agent, dict]]:
    """A driver whose context ships its environment (``penv_archive="auto"``) to the bare hosts,
    with Ray on their executors; and what starting it returned."""
    close_drivers()
    agent = start_driver(bare_cluster, "shipped-driver")
    try:
        started = agent.call(jobs.start_cluster_context, bare_cluster.master_url, timeout_s=1500, penv_archive="auto")
        yield agent, started
    finally:
        close_drivers()


@pytest.fixture(scope="package")
def one_host(bare_cluster: SimulatedCluster) -> Iterator[Agent]:
    """The same driver code in local mode on the driver host: the single-host reference (closed,
    with the other drivers, by ``free_worker_cores``)."""
    agent = start_driver(bare_cluster, "one-host")
    try:
        agent.call(jobs.start_local_context, timeout_s=180)
        yield agent
    finally:
        agent.close()
