"""zoo_lite on bare worker hosts (Java, a Spark of their own, the system's Python; no checkout, no
venv): with nothing shipped, a clear error at once; with ``penv_archive="auto"``, the environment
is packed once, shipped, and every job runs from the unpacked archive as it runs on one host;
spark-submit ``--archives`` runs the quickstart; nothing of the environments is left behind."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tests.bare_hosts import bare_jobs
from tests.bare_hosts.conftest import start_driver
from tests.cluster import bare, jobs
from tests.cluster.simulated import ROOT
from tests.cluster.test_learn_across_hosts import assert_same_weights
from tests.quickstart import check_quickstart_output
from zoo_lite.errors import ExecutorEnvironmentError
from zoo_lite.executor_python import PROBE_TIMEOUT_S
from zoo_lite.host_unpack import HOST_ENVS_FOLDER

pytestmark = pytest.mark.timeout(1800)

WORKER_HOSTS = ("host1", "host2")


def assert_hosts_clean(cluster) -> None:
    for host in cluster.hosts:
        assert cluster.leftovers_after(host) == [], f"left on {host} after the job"


def test_a_bare_host_runs_java_its_own_spark_and_a_python_without_numpy_or_zoo_lite(bare_cluster) -> None:
    for host in WORKER_HOSTS:
        python = bare_cluster.run(host, [bare.SYSTEM_PYTHON, "-c", "import platform; print(platform.python_version())"])
        assert python.returncode == 0 and python.stdout.startswith("3."), python.stderr
        for module in ("numpy", "zoo_lite", "pyspark"):
            missing = bare_cluster.run(host, [bare.SYSTEM_PYTHON, "-c", f"import {module}"])
            assert missing.returncode == 1 and f"No module named '{module}'" in missing.stderr, (host, module, missing.stderr)
        for hidden in bare.hidden_on_bare_hosts():
            assert list(bare_cluster.hosts[host].path(hidden).iterdir()) == [], f"{hidden} is visible on {host}"
        assert bare_cluster.run(host, ["java", "-version"]).returncode == 0
        assert bare_cluster.environment(host)["SPARK_HOME"] == str(bare.spark_installation())
    assert bare_cluster.run("driver", [bare_cluster.python("driver"), "-c", "import zoo_lite, numpy"]).returncode == 0


def _fails_at_once(agent, function, *args) -> ExecutorEnvironmentError:
    started = time.monotonic()
    with pytest.raises(ExecutorEnvironmentError) as raised:
        agent.call(function, *args)
    assert time.monotonic() - started < PROBE_TIMEOUT_S, "the error came from a timeout, not from the failure itself"
    return raised.value


def test_with_nothing_shipped_a_job_and_a_fit_fail_at_once_naming_the_host_the_python_and_the_fix(
        bare_cluster, free_worker_cores) -> None:
    driver = start_driver(bare_cluster, "unshipped-driver")
    driver_python = bare_cluster.python("driver")
    driver.call(bare_jobs.start_standalone_context, bare_cluster.master_url)
    job_error = _fails_at_once(driver, bare_jobs.executors_pythons)
    driver.call(jobs.stop_context)
    fit_error = _fails_at_once(driver, bare_jobs.start_standalone_context, bare_cluster.master_url, True)
    for error in (job_error, fit_error):
        text = str(error)
        assert any(f"host {bare_cluster.hosts[host].address}" in text or f"host {host}" in text for host in WORKER_HOSTS), text
        assert repr(driver_python) in text and "penv_archive='auto'" in text and "--archives env.tar.gz#env" in text, text


def _packing_log(agent) -> str:
    return "\n".join(line for line in agent.log.read_text(errors="replace").splitlines() if line.startswith("LOG "))


def test_the_executors_and_their_ray_processes_run_the_unpacked_environment(shipped_driver, bare_cluster) -> None:
    agent, started = shipped_driver
    assert started["ray_hostnames"] == list(WORKER_HOSTS)
    driver = bare_cluster.run("driver", [bare_cluster.python("driver"), "-c", "import platform; print(platform.python_version())"])
    pythons = agent.call(bare_jobs.executors_pythons)
    assert sorted({python["host"] for python in pythons}) == list(WORKER_HOSTS)
    for python in pythons:
        work = bare_cluster.work_dir(python["host"])
        assert python["prefix"].startswith(work + "/"), python
        assert python["numpy"].startswith(python["prefix"]), python
        assert python["version"] == driver.stdout.strip()
    for host in WORKER_HOSTS:
        ray_processes = [line for line in bare_cluster.processes(host) if "ray" in line]
        assert any("raylet" in line for line in ray_processes), bare_cluster.processes(host)
        for line in ray_processes:
            assert bare_cluster.work_dir(host) in line or "/usr/bin/python3" not in line, line
            assert str(ROOT) not in line and str(bare.ENVIRONMENTS / "drivers") not in line, line


def test_an_xshards_pipeline_on_bare_hosts_equals_pandas(shipped_driver, bare_cluster) -> None:
    agent, _ = shipped_driver
    folder = str(bare_cluster.shared / "trips")
    jobs.write_trips(folder, files=4, rows_per_file=100)
    result = agent.call(jobs.trips_pipeline, folder)
    expected = jobs.add_speed(pd.concat(pd.read_csv(path) for path in sorted(Path(folder).glob("*.csv"))))
    expected = expected.sort_values("trip").reset_index(drop=True)
    pd.testing.assert_frame_equal(result["frame"], expected, check_exact=True)
    pd.testing.assert_frame_equal(result["spark_frame"], expected, check_exact=True, check_dtype=False)
    assert result["city_counts"] == expected["city"].value_counts().to_dict()


#: the driver host's own folder for the model files: no worker host sees it
FILES = "/tmp/model-files"


@pytest.fixture(scope="module")
def torch_runs(shipped_driver, one_host) -> tuple[dict, dict]:
    agent, _ = shipped_driver
    on_one_host = one_host.submit(jobs.torch_job, "", with_files=False)
    return agent.call(jobs.torch_job, FILES), on_one_host.result()


def test_torch_trains_with_one_worker_per_bare_host_over_the_network_as_on_one_host(torch_runs) -> None:
    on_cluster, on_one_host = torch_runs
    assert on_cluster["worker_hosts"] == list(WORKER_HOSTS) and on_cluster["exchange"] == ["gloo", "gloo"]
    assert on_one_host["exchange"] == ["none"]   # local mode: one worker; the global batches are the same
    assert_same_weights(on_cluster["weights"], on_one_host["weights"])
    np.testing.assert_allclose(on_cluster["predictions"], on_one_host["predictions"], rtol=0, atol=1e-5)
    for key in ("loss", "accuracy"):
        assert on_cluster["evaluation"].get(key) == pytest.approx(on_one_host["evaluation"].get(key), abs=1e-6)
    assert [h["train_loss"] for h in on_cluster["history"]] == pytest.approx([h["train_loss"] for h in on_one_host["history"]],
                                                                             abs=1e-6)


def test_torch_model_files_land_on_the_driver_host_and_its_udf_in_sql_equals_predict(torch_runs, bare_cluster) -> None:
    on_cluster, _ = torch_runs
    files = bare_cluster.driver.path(FILES)
    assert sorted(p.name for p in (files / "checkpoints").iterdir()) == ["epoch=1.ckpt", "epoch=2.ckpt"]
    events = list((files / "tensorboard").glob("events.out.tfevents.*"))
    assert events and all(event.stat().st_size > 0 for event in events)
    assert (files / "model.pt").is_file()
    assert_same_weights(on_cluster["loaded_weights"], on_cluster["weights"])
    np.testing.assert_allclose(on_cluster["sql_logits"], on_cluster["predictions"], rtol=0, atol=1e-5)
    for host in WORKER_HOSTS:
        assert not bare_cluster.files(host, "/tmp", "zoo_lite-relay-*"), f"staging folders left on {host}"
        assert not bare_cluster.files(host, "/tmp", "model-files"), f"model files written on {host}"


def test_a_saved_model_scores_a_stream_on_the_bare_hosts(shipped_driver, torch_runs, bare_cluster) -> None:
    agent, _ = shipped_driver
    on_cluster, _ = torch_runs
    scored = agent.call(jobs.stream_scores, FILES + "/model.pt", str(bare_cluster.shared / "stream"))
    assert scored["ids"] == list(range(len(on_cluster["predictions"])))
    np.testing.assert_allclose(scored["logits"], on_cluster["predictions"], rtol=0, atol=1e-5)


def test_keras_trains_with_one_worker_per_bare_host_as_on_one_host(shipped_driver, one_host, bare_cluster) -> None:
    agent, _ = shipped_driver
    pending = one_host.submit(jobs.keras_job, "", with_files=False)
    on_cluster = agent.call(jobs.keras_job, FILES + "/keras")
    on_one_host = pending.result()
    assert on_cluster["worker_hosts"] == list(WORKER_HOSTS) and on_cluster["exchange"] == ["collective", "collective"]
    assert_same_weights(on_cluster["weights"], on_one_host["weights"])
    np.testing.assert_allclose(on_cluster["predictions"], on_one_host["predictions"], rtol=0, atol=1e-5)
    assert on_cluster["evaluation"]["accuracy"] == pytest.approx(on_one_host["evaluation"]["accuracy"], abs=1e-6)
    assert_same_weights(on_cluster["loaded_weights"], on_cluster["weights"])
    files = bare_cluster.driver.path(FILES + "/keras")
    assert sorted(p.name for p in (files / "checkpoints").iterdir()) == ["epoch=1.ckpt", "epoch=2.ckpt"]
    assert (files / "log.csv").read_text().splitlines()[0].startswith("epoch")
    assert len((files / "log.csv").read_text().splitlines()) == 3
    assert list((files / "tensorboard").rglob("events.out.tfevents.*"))
    for host in WORKER_HOSTS:
        assert not bare_cluster.files(host, "/tmp", "zoo_lite-relay-*"), f"staging folders left on {host}"


def test_the_spark_backend_trains_in_a_task_per_bare_host_as_ray_on_one_host(shipped_driver, one_host) -> None:
    """backend="spark": the barrier tasks run the unpacked environment's Python, as Ray's workers do."""
    agent, _ = shipped_driver
    on_one_host = one_host.submit(jobs.small_torch_fit)
    assert_same_weights(agent.call(jobs.small_torch_fit, backend="spark"), on_one_host.result())


def unpacked_environments(cluster, host: str) -> list[Path]:
    """The environments unpacked once for ``host`` (zoo_lite.host_unpack), in its Spark work folder."""
    folder = cluster.hosts[host].path(cluster.work_dir(host)) / HOST_ENVS_FOLDER
    return sorted(path for path in folder.iterdir() if path.is_dir()) if folder.is_dir() else []


def unpacked_in_application_folders(cluster, host: str) -> list[str]:
    """Environments unpacked in ``host``'s applications' folders, where Spark untars a shipped file
    named ``*.tar.gz`` (``penv_archive`` goes once per host, into :data:`HOST_ENVS_FOLDER`)."""
    work = cluster.hosts[host].path(cluster.work_dir(host))
    return sorted(str(path.relative_to(work)) for path in work.glob("app-*/*/pyvenv.cfg"))


def test_a_second_application_with_auto_neither_packs_nor_unpacks_again_and_leaves_nothing_behind(
        bare_cluster, free_worker_cores) -> None:
    assert_hosts_clean(bare_cluster)
    unpacked = {host: unpacked_environments(bare_cluster, host) for host in WORKER_HOSTS}
    assert all(len(folders) == 1 for folders in unpacked.values()), unpacked
    unpacked_at = {host: (folders[0] / ".zoo_lite-unpacked").stat().st_mtime_ns for host, folders in unpacked.items()}
    driver = start_driver(bare_cluster, "second-auto-driver")
    driver.call(bare_jobs.log_environment_packing)
    driver.call(bare_jobs.start_standalone_context, bare_cluster.master_url, penv_archive="auto")
    pythons = driver.call(bare_jobs.executors_pythons)
    log = _packing_log(driver)
    assert "LOG zoo_lite.env_packing reused" in log and "LOG zoo_lite.env_packing packed" not in log, log
    for python in pythons:
        [folder] = unpacked[python["host"]]
        assert Path(python["prefix"]).name == folder.name and HOST_ENVS_FOLDER in python["prefix"], python
    driver.close()
    assert_hosts_clean(bare_cluster)
    for host in WORKER_HOSTS:
        assert unpacked_environments(bare_cluster, host) == unpacked[host]
        assert (unpacked[host][0] / ".zoo_lite-unpacked").stat().st_mtime_ns == unpacked_at[host], "unpacked again"
        tmp = bare_cluster.hosts[host].path("/tmp")
        assert not [path for path in tmp.rglob("python*") if path.parent.name == "bin"], f"an environment in {host}'s /tmp"
        assert unpacked_in_application_folders(bare_cluster, host) == [], f"unpacked in {host}'s applications' folders"


def test_spark_submit_with_archives_runs_the_quickstart_on_bare_hosts_whose_names_do_not_resolve(
        bare_cluster, free_worker_cores) -> None:
    """As a Spark user writes it (``--archives``, ``spark.pyspark.python``; the driver's own Python
    named by ``spark.pyspark.driver.python``), under the hardest ``/etc/hosts`` style for a job's
    start: Spark's executors and Ray's nodes meet by address only. (Spark refuses cluster deploy
    mode for Python applications on standalone masters.)"""
    driver_env = bare.driver_environment()
    archive = max(bare.ARCHIVES.glob(f"{driver_env.name}-*.tar.gz"), key=lambda path: path.stat().st_mtime)
    output = bare_cluster.shared / "quickstart"
    bare_cluster.set_hosts_style("none")
    try:
        done = bare_cluster.run("driver", [
            str(ROOT / "scripts" / "spark-submit"), "--master", bare_cluster.master_url, "--executor-cores", "1",
            "--total-executor-cores", "2", "--executor-memory", "1g", "--archives", f"{archive}#env",
            "--conf", "spark.pyspark.python=./env/bin/python", "--conf", f"spark.pyspark.driver.python={driver_env}/bin/python",
            str(ROOT / "examples" / "quickstart.py"), "--cluster-mode", "spark-submit", "--epochs", "4", "--files", "2",
            "--output", str(output)], timeout_s=900)
    finally:
        bare_cluster.set_hosts_style(bare_cluster.hosts_style)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-5000:]
    check_quickstart_output(done.stdout, output, workers=2)
    assert_hosts_clean(bare_cluster)
