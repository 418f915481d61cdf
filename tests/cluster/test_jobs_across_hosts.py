"""The quickstart runs as a spark-submit job against the simulated cluster's master, from the
driver host, and leaves nothing behind on any host."""

from __future__ import annotations

import time

import pytest

from tests.cluster.simulated import ROOT
from tests.quickstart import check_quickstart_output

pytestmark = [pytest.mark.timeout(600), pytest.mark.usefixtures("free_worker_cores")]

_JOB_TIMEOUT_S = 420


def spark_submit(cluster, script: str, *args: str) -> str:
    done = cluster.run("driver", [str(ROOT / "scripts" / "spark-submit"), "--master", cluster.master_url,
                                  "--executor-cores", "1", "--total-executor-cores", "2", "--executor-memory", "1g",
                                  str(ROOT / "examples" / script), "--cluster-mode", "spark-submit", *args],
                       timeout_s=_JOB_TIMEOUT_S)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-5000:]
    return done.stdout


def assert_hosts_clean(cluster) -> None:
    deadline = time.monotonic() + 60
    for host in cluster.hosts:
        while (left := cluster.leftovers(host)) and time.monotonic() < deadline:
            time.sleep(0.5)
        assert left == [], f"left on {host} after the job"


def test_the_quickstart_as_a_spark_submit_job_on_hosts_whose_names_do_not_resolve(simulated_cluster) -> None:
    """The hardest /etc/hosts style for a job's start (Spark's executors and Ray's nodes meet by
    address only). Training under the other styles: test_learn_across_hosts; the training
    pipeline job (2 workers, its accuracy) under spark-submit: tests/test_examples.py."""
    simulated_cluster.set_hosts_style("none")
    try:
        out = spark_submit(simulated_cluster, "quickstart.py", "--epochs", "4", "--files", "2", "--output", str(simulated_cluster.shared / "quickstart"))
    finally:
        simulated_cluster.set_hosts_style(simulated_cluster.hosts_style)
    check_quickstart_output(out, simulated_cluster.shared / "quickstart", workers=2)
    assert_hosts_clean(simulated_cluster)
