"""What a new user sees on a successful first run (issue 31): no traceback under a ``LIMIT`` over a
Python UDF, and nothing zoo_lite made left empty in the temp dir. Real programs run in
subprocesses, as a user runs them, with their output captured, two at a time (tests/at_once.py)."""

from __future__ import annotations

import ast
import getpass
import os
import re
import subprocess
import sys
from functools import partial
from pathlib import Path
from typing import Callable, Iterator, Optional

import pytest

from tests.at_once import selected_tests, started_at_once
from tests.test_quiet import clean_environment

MARKER = "FIRST-RUN-DONE"
#: printed to stderr before the query that must fail: what comes after it is that failure's report
FAILING_QUERY = "FIRST-RUN-FAILING-QUERY"
PROGRAM_TIMEOUT_S = 270

# a pandas UDF over 8 partitions of 200 000 rows, cut short by LIMIT three ways (SQL, the
# DataFrame API, take), then a UDF that raises: its error must still reach the driver
LIMIT_PROGRAM = f'''
import sys
import pandas as pd
from pyspark.sql.functions import pandas_udf
from zoo_lite import OrcaContext, init_orca_context, stop_orca_context

init_orca_context(cluster_mode="local", cores=2)
spark = OrcaContext.get_spark_session()

@pandas_udf("double")
def plus_one(x: pd.Series) -> pd.Series:
    return x + 1.0

@pandas_udf("double")
def refuses(x: pd.Series) -> pd.Series:
    raise ValueError("refused by the user's UDF")

spark.udf.register("plus_one", plus_one)
frame = spark.range(0, 200_000, numPartitions=8).selectExpr("CAST(id AS DOUBLE) AS x")
frame.createOrReplaceTempView("t")
for attempt in range(2):
    rows = spark.sql("SELECT x, plus_one(x) AS y FROM t LIMIT 10").collect()
    print("sql rows:", len(rows), all(row.y == row.x + 1 for row in rows))
    rows = frame.select("x", plus_one("x").alias("y")).limit(10).collect()
    print("limit rows:", len(rows), all(row.y == row.x + 1 for row in rows))
    rows = frame.select("x", plus_one("x").alias("y")).take(5)
    print("take rows:", len(rows), all(row.y == row.x + 1 for row in rows))
print("{FAILING_QUERY}", file=sys.stderr, flush=True)
try:
    frame.select(refuses("x")).limit(10).collect()
except Exception as error:
    print("the UDF's error reached the driver:", "refused by the user's UDF" in str(error))
stop_orca_context()
print("{MARKER}")
'''


def run_program(folder: Path, text: str, temp_dir: Optional[Path]) -> subprocess.CompletedProcess:
    """Run the program ``text`` from ``folder``, with ``temp_dir`` (made here) as its TMPDIR if given."""
    program = folder / "program.py"
    program.write_text(text)
    env = clean_environment()
    if temp_dir is not None:
        temp_dir.mkdir()
        env["TMPDIR"] = str(temp_dir)
    return subprocess.run([sys.executable, str(program)], capture_output=True, text=True, timeout=PROGRAM_TIMEOUT_S,
                          cwd=folder, env=env)


@pytest.fixture(scope="module")
def program_runs(request: pytest.FixtureRequest,
                 tmp_path_factory: pytest.TempPathFactory) -> Iterator[Callable[[str], tuple[subprocess.CompletedProcess, Path]]]:
    """``program_runs(test name)``: that test's program's run and its folder. The module's selected
    programs start here, two at a time (tests/at_once.py)."""
    selected = selected_tests(request)
    folders = {name: tmp_path_factory.mktemp("first-run") for name in PROGRAMS if name in selected}
    calls = {name: partial(run_program, folder, PROGRAMS[name], folder / "tmp" if name == TEMP_DIR_TEST else None)
             for name, folder in folders.items()}
    with started_at_once(calls, PROGRAM_TIMEOUT_S) as finished:
        yield lambda name: (finished(name), folders[name])


@pytest.fixture
def program_run(program_runs: Callable[[str], tuple[subprocess.CompletedProcess, Path]],
                request: pytest.FixtureRequest) -> tuple[subprocess.CompletedProcess, Path]:
    """The calling test's program's run and folder."""
    return program_runs(request.node.originalname)


@pytest.mark.timeout(400)
def test_a_limit_over_a_pandas_udf_prints_no_traceback_and_udf_errors_still_reach_the_driver(
        program_run: tuple[subprocess.CompletedProcess, Path]) -> None:
    """Spark stops a Python worker whose rows a LIMIT no longer needs by closing its Unix socket;
    pyspark's daemon printed the worker's ``BrokenPipeError`` traceback under the result."""
    done, _ = program_run
    output = done.stdout + done.stderr
    assert done.returncode == 0 and MARKER in done.stdout, output[-5000:]
    assert done.stdout.count("rows: 10 True") == 4 and done.stdout.count("take rows: 5 True") == 2, output[-5000:]
    assert "the UDF's error reached the driver: True" in done.stdout, output[-5000:]
    successful_part = done.stderr.split(FAILING_QUERY)[0]
    assert "Traceback" not in successful_part and "BrokenPipeError" not in successful_part, successful_part[-5000:]


# a Ray-on-Spark fit of a torch model, in a temp dir of its own; the program lists that dir after
# fit and after stop_orca_context, then starts and stops a context once more beside a PyTorch
# cache folder that was there before (it must stay)
TEMP_DIR_PROGRAM = f'''
import os, tempfile
import numpy as np
import torch
from torch import nn
from zoo_lite import init_orca_context, stop_orca_context
from zoo_lite.data import XShards
from zoo_lite.learn.pytorch import Estimator

def model_creator(config):
    return nn.Linear(2, 1)

def optimizer_creator(model, config):
    return torch.optim.SGD(model.parameters(), lr=0.1)

init_orca_context(cluster_mode="local", cores=2, init_ray_on_spark=True)
estimator = Estimator.from_torch(model=model_creator, optimizer=optimizer_creator, loss=nn.MSELoss())
x = np.ones((8, 2), "float32")
estimator.fit(XShards.partition({{"x": x, "y": x.sum(axis=1)}}, num_shards=2), epochs=1, batch_size=4)
print("after fit:", sorted(os.listdir(tempfile.gettempdir())))
estimator.shutdown()
stop_orca_context()
print("after stop:", sorted(os.listdir(tempfile.gettempdir())))

users_own = os.path.join(tempfile.gettempdir(), "torchinductor_{getpass.getuser()}")
os.makedirs(users_own, exist_ok=True)
init_orca_context(cluster_mode="local", cores=2)
stop_orca_context()
print("kept:", os.path.isdir(users_own))
os.rmdir(users_own)
print("{MARKER}")
'''


TEMP_DIR_TEST = "test_a_run_leaves_nothing_empty_in_the_temp_dir_and_keeps_what_was_there"
PROGRAMS = {TEMP_DIR_TEST: TEMP_DIR_PROGRAM,
            "test_a_limit_over_a_pandas_udf_prints_no_traceback_and_udf_errors_still_reach_the_driver": LIMIT_PROGRAM}


@pytest.mark.timeout(400)
def test_a_run_leaves_nothing_empty_in_the_temp_dir_and_keeps_what_was_there(
        program_run: tuple[subprocess.CompletedProcess, Path]) -> None:
    """The Ray nodes' log folder (empty once the logs of cleanly stopped nodes are deleted) and
    PyTorch's inductor cache folder (made by every process that builds an optimizer) stayed."""
    done, folder = program_run
    temp_dir = folder / "tmp"
    output = done.stdout + done.stderr
    # while it runs: zoo_lite's log folder, and PyTorch's cache folder where this torch makes it
    # (torch decides; in CI's full suite it did not), nothing else
    made = re.search(r"^after fit: (\[.*\])$", done.stdout, re.M)
    assert made and "'zoo_lite_ray_logs'" in made[1], output[-5000:]
    assert set(ast.literal_eval(made[1])) <= {f"torchinductor_{getpass.getuser()}", "zoo_lite_ray_logs"}, made[1]
    assert "after stop: []" in done.stdout, output[-5000:]
    assert done.returncode == 0 and MARKER in done.stdout, output[-5000:]
    assert "kept: True" in done.stdout, output[-5000:]
    assert os.listdir(temp_dir) == [], os.listdir(temp_dir)   # nothing made at exit either
