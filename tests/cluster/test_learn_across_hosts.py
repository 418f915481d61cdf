"""Training on three hosts under every ``/etc/hosts`` style, on the Ray and the Spark backends: one
worker per worker host, gradients summed over the network, the same weights as on one host. The
whole torch and Keras jobs (evaluation, prediction, model files on the driver's host, a UDF in
SQL and on a stream) run on bare hosts: ``tests/bare_hosts/test_bare_hosts.py``."""

from __future__ import annotations

import numpy as np
import pytest

from tests.cluster import jobs

pytestmark = pytest.mark.timeout(600)

def assert_same_weights(got: list, expected: list) -> None:
    assert len(got) == len(expected)
    for mine, theirs in zip(got, expected):
        np.testing.assert_allclose(mine, theirs, rtol=0, atol=1e-5)


@pytest.fixture(scope="module")
def small_fit_on_one_host(laptop) -> list:
    return laptop.call(jobs.small_torch_fit)


@pytest.mark.parametrize("style", ["cluster", "none"])
def test_torch_trains_across_hosts_whatever_etc_hosts_says(cluster_driver, small_fit_on_one_host, simulated_cluster,
                                                           style) -> None:
    """The third style, Debian's default (a host's own name on 127.0.1.1, which gloo used to bind,
    so that peers were refused), is the cluster's own: every other test here runs under it."""
    simulated_cluster.set_hosts_style(style)
    try:
        assert_same_weights(cluster_driver.call(jobs.small_torch_fit), small_fit_on_one_host)
    finally:
        simulated_cluster.set_hosts_style(simulated_cluster.hosts_style)


def test_the_spark_backend_trains_in_a_task_per_host_over_the_network_as_ray_on_one_host(cluster_driver,
                                                                                         small_fit_on_one_host) -> None:
    """backend="spark": two barrier tasks, one per worker host (one core each), meet through
    Spark's allGather and sum their gradients over the network; the weights are the Ray backend's."""
    assert_same_weights(cluster_driver.call(jobs.small_torch_fit, backend="spark"), small_fit_on_one_host)
