"""Fixtures of the multi-host tests: one simulated cluster for all of them (a driver host and two
worker hosts, Spark standalone), and agents that run the tests' driver code on the driver host.

The cluster is built once and taken down after the last of these tests (the fixtures belong to
this package, whose tests run together), also when a test fails or the run is interrupted (a
reaper process takes it down if the session itself is killed). Where namespaces cannot be made
(not root, no ``ip``), every test here is skipped with the reason.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterator

import pytest

from tests.cluster import jobs
from tests.cluster.agent import Agent
from tests.cluster.namespaces import why_unavailable
from tests.cluster.reaper import reaped_cluster
from tests.cluster.simulated import SimulatedCluster

#: where cluster folders go: not /tmp, which every simulated host has its own of
CLUSTER_FOLDERS = "/var/tmp"
#: the /etc/hosts style the cluster starts with (the other two are tested per test)
SESSION_HOSTS_STYLE = "debian"


#: the modules in the order they run: the ones on the cluster's driver agent, then its stop (the
#: spark-submit jobs run on the bare-host cluster: tests/bare_hosts)
MODULE_ORDER = ("test_data_across_hosts", "test_learn_across_hosts", "test_failures_across_hosts", "test_stop_across_hosts")


def _module_rank(item: pytest.Item) -> int:
    name = Path(str(item.fspath)).stem
    return MODULE_ORDER.index(name) if name in MODULE_ORDER else -1


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    ours = [item for item in items if here in Path(str(item.fspath)).parents]
    for item in ours:
        item.add_marker(pytest.mark.hosts)
    if ours:   # keep them together, where the first of them was, in MODULE_ORDER (a stable sort)
        start = items.index(ours[0])
        rest = [item for item in items if item not in ours]
        items[:] = rest[:start] + sorted(ours, key=_module_rank) + rest[start:]


@pytest.fixture(scope="package")
def simulated_cluster() -> Iterator[SimulatedCluster]:
    """A driver host and two worker hosts, each with one Spark worker of one core."""
    why = why_unavailable()
    if why is not None:
        pytest.skip(f"the multi-host tests need simulated hosts, which cannot be made here: {why}")
    with reaped_cluster("zoo_lite-hosts-", CLUSTER_FOLDERS, worker_hosts=2, hosts_style=SESSION_HOSTS_STYLE,
                        worker_memory="3g") as cluster:
        yield cluster


@pytest.fixture(scope="package")
def _agents(simulated_cluster: SimulatedCluster) -> Iterator[dict[str, Agent]]:
    """The cluster's driver and the single-host driver, started side by side (their start-ups
    wait on different things)."""
    agents = {"cluster": Agent(simulated_cluster, "driver", "cluster-driver"), "laptop": Agent(simulated_cluster, "driver", "laptop")}
    _running_agents.extend(agents.values())
    try:
        laptop_started = agents["laptop"].submit(jobs.start_local_context)
        # a silent host is found in 10 s rather than the default 30 s (the link-cut test's wait)
        agents["cluster"].call(jobs.start_cluster_context, simulated_cluster.master_url, timeout_s=240, heartbeat_timeout_s=10)
        laptop_started.result(timeout_s=180)
        yield agents
    finally:
        _close_running_agents()


#: the agents of ``_agents`` not closed yet
_running_agents: list[Agent] = []


def _close_running_agents() -> None:
    while _running_agents:
        _running_agents.pop().close()


@pytest.fixture(scope="package")
def cluster_driver(_agents: dict[str, Agent]) -> Agent:
    """The driver process on the driver host, with a zoo_lite context on the cluster (Ray included)."""
    return _agents["cluster"]


@pytest.fixture(scope="package")
def laptop(_agents: dict[str, Agent]) -> Agent:
    """The same driver code in local mode (local Spark and Ray) on the driver host: the single-host
    run that the cluster's results are compared with."""
    return _agents["laptop"]
