"""XShards, readers and Spark hand-offs on three hosts give exactly what one process gives; a
path only the driver's host has gets an error that names it and the hosts."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tests.cluster import jobs
from zoo_lite.errors import DataReadError, InvalidArgumentError

pytestmark = pytest.mark.timeout(600)


@pytest.fixture(scope="module")
def trips_folder(simulated_cluster) -> str:
    """CSV files in the folder every host sees."""
    folder = str(simulated_cluster.shared / "trips")
    jobs.write_trips(folder)
    return folder


@pytest.fixture(scope="module")
def driver_only_trips(simulated_cluster, trips_folder) -> str:
    """The same files in the driver host's own /tmp, which no executor sees."""
    import shutil

    shutil.copytree(trips_folder, simulated_cluster.driver.path("/tmp/trips"))
    return "/tmp/trips"


def test_executors_run_on_the_worker_hosts_each_with_a_ray_node_and_the_driver_has_its_own(cluster_driver) -> None:
    assert cluster_driver.call(jobs.executor_hostnames) == ["host1", "host2"]
    layout = cluster_driver.call(jobs.ray_layout)
    assert layout == {"nodes": [("host1", 1), ("host2", 1)], "driver_node": ("driver", 0)}


def test_a_function_of_a_module_only_the_driver_host_has_runs_on_the_executors(cluster_driver, simulated_cluster) -> None:
    project = simulated_cluster.driver.path("/tmp/project")
    project.mkdir()
    (project / "mnist_like.py").write_text("def scaled(shard):\n    return {'x': shard['x'] * 10}\n")
    assert cluster_driver.call(jobs.transform_with_module_of, "/tmp/project", "mnist_like") == list(range(0, 80, 10))


def test_the_pandas_pipeline_equals_pandas_in_one_process(cluster_driver, trips_folder) -> None:
    result = cluster_driver.call(jobs.trips_pipeline, trips_folder)
    expected = jobs.add_speed(pd.concat(pd.read_csv(path) for path in sorted(Path(trips_folder).glob("*.csv"))))
    expected = expected.sort_values("trip").reset_index(drop=True)
    assert result["rows"] == len(expected)
    pd.testing.assert_frame_equal(result["frame"], expected, check_exact=True)
    cities = [city for partition in result["cities_per_partition"] for city in partition]
    assert sorted(cities) == sorted(set(cities)) == result["unique_cities"] == sorted(expected["city"].unique())
    assert result["sum_distance"] == expected["distance"].sum()
    assert result["max_speed"] == expected["speed"].max() and result["min_minutes"] == expected["minutes"].min()
    assert result["spark_rows"] == len(expected)
    pd.testing.assert_frame_equal(result["spark_frame"], expected, check_exact=True, check_dtype=False)
    assert result["city_counts"] == expected["city"].value_counts().to_dict()


@pytest.mark.parametrize("backend", ["pandas", "spark"])
def test_a_folder_only_the_driver_host_has_is_an_error_naming_it_and_the_hosts(cluster_driver, driver_only_trips,
                                                                             backend) -> None:
    with pytest.raises(DataReadError, match=r"'/tmp/trips/trips-\d\.csv' is on the driver's host 'driver', but an executor "
                                            r"(on host '(host[12]|10\.213\.0\.1[12])' )?did not find it.*; every host of "
                                            r"a cluster must see it"):
        cluster_driver.call(jobs.read_driver_only_with, driver_only_trips, backend)


def test_partitions_go_through_ray_on_their_hosts_and_back(cluster_driver, trips_folder) -> None:
    result = cluster_driver.call(jobs.through_ray, trips_folder)
    expected = pd.concat(pd.read_csv(path) for path in sorted(Path(trips_folder).glob("*.csv")))
    assert sum(result["partition_rows"]) == len(expected)
    assert len(set(result["partition_nodes"])) == 2   # put on both worker hosts' Ray nodes
    pd.testing.assert_frame_equal(result["frame"], expected.sort_values("trip").reset_index(drop=True), check_exact=True)


def test_images_decode_on_the_worker_hosts_as_on_one_host(cluster_driver, laptop, simulated_cluster) -> None:
    folder = str(simulated_cluster.shared / "images")
    jobs.write_images(folder)
    pending = laptop.submit(jobs.images, folder, (8, 9))
    on_cluster, on_one_host = cluster_driver.call(jobs.images, folder, (8, 9)), pending.result()
    assert on_cluster["classes"] == on_one_host["classes"] == ["cat", "dog"]
    np.testing.assert_array_equal(on_cluster["x"], on_one_host["x"])
    np.testing.assert_array_equal(on_cluster["y"], [0, 0, 0, 1, 1, 1])
    table = str(simulated_cluster.shared / "images.parquet")
    through_parquet = cluster_driver.call(jobs.images_to_parquet_and_back, folder, table, (8, 9))
    np.testing.assert_array_equal(through_parquet["x"], on_one_host["x"])


def test_images_only_the_driver_host_has_are_an_error_naming_them(cluster_driver, simulated_cluster) -> None:
    jobs.write_images(str(simulated_cluster.driver.path("/tmp/images")))
    with pytest.raises(DataReadError, match=r"'/tmp/images/(cat|dog)/\d\.png' is on the driver's host 'driver', but an executor on host "
                                            r"'host[12]' did not find it"):
        cluster_driver.call(jobs.images, "/tmp/images", (8, 9))


def test_save_pickle_to_a_shared_folder_loads_back_whole(cluster_driver, simulated_cluster) -> None:
    assert cluster_driver.call(jobs.save_and_load_pickle, str(simulated_cluster.shared / "saved")) == list(range(10))


def test_save_pickle_to_a_folder_of_the_driver_host_only_is_refused_before_writing(cluster_driver, simulated_cluster) -> None:
    with pytest.raises(InvalidArgumentError, match=r"path='/tmp/saved' is on the driver's host 'driver', which the "
                                                   r"executors on \['host1', 'host2'\] do not see"):
        cluster_driver.call(jobs.save_and_load_pickle, "/tmp/saved")
    for host in ("driver", "host1", "host2"):
        assert "saved" not in simulated_cluster.files(host, "/tmp")
