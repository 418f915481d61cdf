"""stop_orca_context() on the driver host ends everything zoo_lite, Spark's application and Ray
started on every host, and leaves no socket or shared-memory file behind."""

from __future__ import annotations

import pytest

from tests.cluster import jobs

pytestmark = pytest.mark.timeout(300)


def test_stop_orca_context_leaves_nothing_on_any_host(cluster_driver, laptop, simulated_cluster) -> None:
    for agent in (cluster_driver, laptop):
        agent.call(jobs.stop_context)
    agents = [cluster_driver.process.pid, laptop.process.pid]   # pyspark's gateway JVM is theirs until they exit
    for host in ("host1", "host2"):
        assert simulated_cluster.leftovers_after(host) == [], f"left on {host} after stop_orca_context()"
    assert simulated_cluster.leftovers_after("driver", agents) == [], "left on the driver host after stop_orca_context()"
    for agent in (cluster_driver, laptop):
        agent.close()
    assert simulated_cluster.leftovers_after("driver") == [], "left on the driver host after the driver exited"
