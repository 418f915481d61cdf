"""Training, evaluation, prediction and model files on three hosts: one worker per worker host,
gradients summed over the network, the same weights as on one host; every file where the user
reads it, on the driver's host."""

from __future__ import annotations

import numpy as np
import pytest

from tests.cluster import jobs

pytestmark = pytest.mark.timeout(600)

#: the driver host's own folder for the model files: no worker host sees it
FILES = "/tmp/model-files"


def assert_same_weights(got: list, expected: list) -> None:
    assert len(got) == len(expected)
    for mine, theirs in zip(got, expected):
        np.testing.assert_allclose(mine, theirs, rtol=0, atol=1e-5)


@pytest.fixture(scope="module")
def torch_runs(cluster_driver, laptop) -> tuple[dict, dict]:
    on_one_host = laptop.submit(jobs.torch_job, "", with_files=False)
    return cluster_driver.call(jobs.torch_job, FILES), on_one_host.result()


def test_torch_trains_with_one_worker_per_host_over_the_network_as_on_one_host(torch_runs) -> None:
    on_cluster, on_one_host = torch_runs
    assert on_cluster["worker_hosts"] == ["host1", "host2"] and on_cluster["exchange"] == ["gloo", "gloo"]
    assert on_one_host["exchange"] == ["none"]   # local mode: one worker; the global batches are the same
    assert_same_weights(on_cluster["weights"], on_one_host["weights"])
    np.testing.assert_allclose(on_cluster["predictions"], on_one_host["predictions"], rtol=0, atol=1e-5)
    for key in ("loss", "accuracy"):
        assert on_cluster["evaluation"].get(key) == pytest.approx(on_one_host["evaluation"].get(key), abs=1e-6)
    assert [h["train_loss"] for h in on_cluster["history"]] == pytest.approx([h["train_loss"] for h in on_one_host["history"]],
                                                                             abs=1e-6)


def test_torch_model_files_land_on_the_driver_host(torch_runs, simulated_cluster) -> None:
    on_cluster, _ = torch_runs
    files = simulated_cluster.driver.path(FILES)
    assert sorted(p.name for p in (files / "checkpoints").iterdir()) == ["epoch=1.ckpt", "epoch=2.ckpt"]
    events = list((files / "tensorboard").glob("events.out.tfevents.*"))
    assert events and all(event.stat().st_size > 0 for event in events)
    assert (files / "model.pt").is_file()
    assert_same_weights(on_cluster["loaded_weights"], on_cluster["weights"])
    np.testing.assert_allclose(on_cluster["sql_logits"], on_cluster["predictions"], rtol=0, atol=1e-5)
    for host in ("host1", "host2"):
        assert not simulated_cluster.files(host, "/tmp", "zoo_lite-relay-*"), f"staging folders left on {host}"
        assert not simulated_cluster.files(host, "/tmp", "model-files"), f"model files written on {host}"


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


def test_keras_trains_with_one_worker_per_host_as_on_one_host(cluster_driver, laptop, simulated_cluster) -> None:
    pending = laptop.submit(jobs.keras_job, "", with_files=False)
    on_cluster = cluster_driver.call(jobs.keras_job, FILES + "/keras")
    on_one_host = pending.result()
    assert on_cluster["worker_hosts"] == ["host1", "host2"] and on_cluster["exchange"] == ["collective", "collective"]
    assert_same_weights(on_cluster["weights"], on_one_host["weights"])
    np.testing.assert_allclose(on_cluster["predictions"], on_one_host["predictions"], rtol=0, atol=1e-5)
    assert on_cluster["evaluation"]["accuracy"] == pytest.approx(on_one_host["evaluation"]["accuracy"], abs=1e-6)
    assert_same_weights(on_cluster["loaded_weights"], on_cluster["weights"])
    files = simulated_cluster.driver.path(FILES + "/keras")
    assert sorted(p.name for p in (files / "checkpoints").iterdir()) == ["epoch=1.ckpt", "epoch=2.ckpt"]
    assert (files / "log.csv").read_text().splitlines()[0].startswith("epoch")
    assert len((files / "log.csv").read_text().splitlines()) == 3
    assert list((files / "tensorboard").rglob("events.out.tfevents.*"))
    for host in ("host1", "host2"):
        assert not simulated_cluster.files(host, "/tmp", "zoo_lite-relay-*"), f"staging folders left on {host}"


def test_a_saved_model_scores_a_stream_on_the_worker_hosts(cluster_driver, torch_runs, simulated_cluster) -> None:
    on_cluster, _ = torch_runs
    scored = cluster_driver.call(jobs.stream_scores, FILES + "/model.pt", str(simulated_cluster.shared / "stream"))
    assert scored["ids"] == list(range(len(on_cluster["predictions"])))
    np.testing.assert_allclose(scored["logits"], on_cluster["predictions"], rtol=0, atol=1e-5)
