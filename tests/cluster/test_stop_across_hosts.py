"""stop_orca_context() on the driver host ends everything zoo_lite, Spark's application and Ray
started on every host, and leaves no socket or shared-memory file behind."""

from __future__ import annotations

import time

import pytest

from tests.cluster import jobs

pytestmark = pytest.mark.timeout(300)

#: how long the Spark workers get to end an application's executors after the driver stopped
_EXECUTORS_END_S = 60.0


def wait_for_clean(cluster, host: str, allowed=()) -> list[str]:
    deadline = time.monotonic() + _EXECUTORS_END_S
    while (left := cluster.leftovers(host, allowed)) and time.monotonic() < deadline:
        time.sleep(0.5)
    return left


def test_stop_orca_context_leaves_nothing_on_any_host(cluster_driver, laptop, simulated_cluster) -> None:
    for agent in (cluster_driver, laptop):
        agent.call(jobs.stop_context)
    agents = [cluster_driver.process.pid, laptop.process.pid]   # pyspark's gateway JVM is theirs until they exit
    for host in ("host1", "host2"):
        assert wait_for_clean(simulated_cluster, host) == [], f"left on {host} after stop_orca_context()"
    assert wait_for_clean(simulated_cluster, "driver", agents) == [], "left on the driver host after stop_orca_context()"
    for agent in (cluster_driver, laptop):
        agent.close()
    assert wait_for_clean(simulated_cluster, "driver") == [], "left on the driver host after the driver exited"
