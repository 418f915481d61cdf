"""Executors whose Python cannot run zoo_lite's jobs fail at once with an error that names the
host, the executors' Python, what failed and the fix (zoo_lite.executor_python).

The executors here run the machine's own bare system Python (``/usr/bin/python3``: no zoo_lite,
no NumPy), a path that does not exist, or a Python of another patch version that finds this
environment's packages, as on hosts that the user's environment did not reach."""

from __future__ import annotations

import platform
import socket
import subprocess
import time
from pathlib import Path
from typing import Iterator

import numpy as np
import pytest
import torch
from torch import nn

from tests.conftest import ray_watchdogs_since
from tests.environments import venv_seeing_this_environment
from zoo_lite import OrcaContext, init_orca_context, stop_orca_context
from zoo_lite.data import XShards
from zoo_lite.errors import ExecutorEnvironmentError
from zoo_lite.learn.pytorch import Estimator

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(300)]

BARE_PYTHON = "/usr/bin/python3"


def bare_python_version() -> str:
    done = subprocess.run([BARE_PYTHON, "-c", "import platform; print(platform.python_version())"], capture_output=True,
                          text=True, timeout=30)
    return done.stdout.strip()


@pytest.fixture(scope="module", autouse=True)
def own_contexts() -> None:
    """Each test starts its own context with its own executors' Python: none may be running."""
    stop_orca_context()
    if not Path(BARE_PYTHON).exists() or bare_python_version() == platform.python_version():
        pytest.fail(f"these tests need a system Python at {BARE_PYTHON} other than the driver's "
                    f"{platform.python_version()} (Debian's python3 is {bare_python_version() or 'missing'})")


def tiny_spark_backend_estimator() -> Estimator:
    model = nn.Linear(2, 1)
    return Estimator.from_torch(model=model, optimizer=torch.optim.SGD(model.parameters(), lr=0.1), loss=nn.MSELoss(),
                                backend="spark")


@pytest.fixture(scope="class")
def bare_executors() -> Iterator[None]:
    """A local context whose Python workers run the bare system Python, for a class's tests."""
    init_orca_context(cluster_mode="local", cores=1, conf={"spark.pyspark.python": BARE_PYTHON})
    yield
    stop_orca_context()


@pytest.mark.usefixtures("bare_executors")
class TestOnABarePython:
    """Jobs of one context whose executors run the bare system Python."""

    def test_an_xshards_job_on_a_bare_python_names_the_host_the_python_the_modules_and_the_fix(self) -> None:
        shards = XShards.partition({"x": np.arange(4)}, num_shards=2)
        with pytest.raises(ExecutorEnvironmentError) as raised:
            shards.transform_shard(lambda shard: shard).collect()
        message = str(raised.value)
        # zoo_lite itself may be found: local mode's Python workers see the driver's PYTHONPATH
        assert message.startswith(f"the executors cannot run this job: on host {socket.gethostname()}, {BARE_PYTHON} "
                                  f"(Python {bare_python_version()}) cannot find "), message
        assert message.split("cannot find ", 1)[1].split(";")[0].endswith("'numpy', 'pandas', 'pyarrow'"), message
        assert "spark.archives" in message and "--archives env.tar.gz#env" in message, message
        assert "Py4J" not in message and "at org.apache" not in message, message


    def test_a_model_udf_is_refused_when_it_is_made_naming_the_framework(self) -> None:
        est = tiny_spark_backend_estimator()
        with pytest.raises(ExecutorEnvironmentError, match=rf"^spark_udf needs zoo_lite, numpy, pandas, pyarrow, torch on the "
                                                           rf"executors, but on host {socket.gethostname()}, {BARE_PYTHON} .*'torch'; "
                                                           r"ship this environment"):
            est.spark_udf(input_shapes=(2,))


    def test_a_fit_on_the_spark_backend_fails_at_once_with_the_same_error(self) -> None:
        est = tiny_spark_backend_estimator()
        data = XShards.partition({"x": np.zeros((8, 2), np.float32), "y": np.zeros((8, 1), np.float32)}, num_shards=1)
        with pytest.raises(ExecutorEnvironmentError, match=rf"^the executors cannot run this job: on host {socket.gethostname()}, "
                                                           rf"{BARE_PYTHON} .*cannot find .*'numpy'"):
            est.fit(data, epochs=1, batch_size=4)
        with pytest.raises(ExecutorEnvironmentError, match=r"cannot find .*'numpy'"):
            est.fit(lambda config, batch_size: torch.utils.data.DataLoader([(torch.zeros(2), torch.zeros(1))] * 8,
                                                                           batch_size=batch_size), epochs=1, batch_size=4)


def test_a_python_that_does_not_exist_is_named_with_its_path() -> None:
    missing = "/nowhere/env/bin/python"
    stop_orca_context()
    init_orca_context(cluster_mode="local", cores=1, conf={"spark.pyspark.python": missing})
    try:
        with pytest.raises(ExecutorEnvironmentError, match=rf"Spark could not start their Python '{missing}' "
                                                          r"\(spark\.pyspark\.python\), which must exist on every host; "
                                                          r"to fix it, ship this environment"):
            XShards.partition({"x": np.arange(4)}, num_shards=1).transform_shard(lambda shard: shard).collect()
    finally:
        stop_orca_context()


def test_ray_on_spark_on_executors_without_zoo_lite_fails_before_any_node_starts() -> None:
    started = time.time()
    with pytest.raises(ExecutorEnvironmentError) as raised:
        init_orca_context(cluster_mode="local-cluster", num_nodes=1, cores=1, memory="1g", init_ray_on_spark=True,
                          conf={"spark.pyspark.python": BARE_PYTHON})
    assert not OrcaContext.is_active()
    message = str(raised.value)
    assert message.startswith("Ray on Spark needs zoo_lite, numpy, pandas, pyarrow, ray, psutil on the executors, but on host "), message
    assert f"{BARE_PYTHON} (Python {bare_python_version()}) cannot find 'zoo_lite', 'numpy', 'pandas', 'pyarrow', 'ray', 'psutil'" \
        in message, message
    assert "spark.archives" in message, message
    assert not ray_watchdogs_since(started), "a Ray node was started"


def test_ray_on_spark_refuses_executors_on_another_python_patch_version_naming_both(tmp_path) -> None:
    """A venv of the system's Python (another patch version) that sees this environment's
    packages: every module is found, only the version differs."""
    other = str(venv_seeing_this_environment(BARE_PYTHON, tmp_path / "other-python") / "bin" / "python")
    with pytest.raises(ExecutorEnvironmentError) as raised:
        init_orca_context(cluster_mode="local-cluster", num_nodes=1, cores=1, memory="1g", init_ray_on_spark=True,
                          conf={"spark.pyspark.python": other})
    assert not OrcaContext.is_active()
    assert (f"Ray on Spark needs the driver's Python version on the executors, to the patch level, but the driver runs "
            f"Python {platform.python_version()} and host ") in str(raised.value), str(raised.value)
    assert f"{other} is Python {bare_python_version()}" in str(raised.value), str(raised.value)
