"""zoo_lite is quiet by default (issue 16): a successful run shows the program's own output, not
Spark's start-up INFO lines, Spark's FileStreamSink stack trace for a glob, or TensorFlow's C++
start-up lines; ``spark_log_level="INFO"`` brings the INFO lines back. Real programs run in
subprocesses (with the venv's Python, and under ``scripts/spark-submit``), as a user runs them,
two at a time (tests/at_once.py)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from functools import partial
from pathlib import Path
from typing import Callable, Iterator

import pytest

from tests.at_once import selected_tests, started_at_once
from tests.jvm_settings import suite_jvm_environment

ROOT = Path(__file__).resolve().parents[1]
MARKER = "QUIET-PROGRAM-DONE"
PROGRAM_TIMEOUT_S = 170

# one program for every case: read a glob of files (FileStreamSink warns about globs), build a
# DataFrame with to_spark_df (its JVM helper is loaded into the running JVM, under spark-submit
# too), import TensorFlow in a Spark Python worker and in the driver ("both"), in the driver only,
# or not at all ("none"), then print a marker
PROGRAM = f'''
import sys
import pandas as pd
from zoo_lite import OrcaContext, init_orca_context, stop_orca_context
from zoo_lite.data import XShards
from zoo_lite.data.jvm import arrow_frames

cluster_mode, level, folder, tensorflow_in = sys.argv[1:5]
init_orca_context(cluster_mode=cluster_mode, cores=2, spark_log_level=level)
spark = OrcaContext.get_spark_session()
print("files read:", spark.read.format("binaryFile").load(folder + "/*.bin").count())
print("to_spark_df rows:", XShards.partition(pd.DataFrame({{"a": range(10)}}), 2).to_spark_df().count(),
      "with the JVM helper:", arrow_frames(spark.sparkContext) is not None)
if tensorflow_in == "both":
    print("worker tf:", spark.sparkContext.parallelize([1], 1)
          .map(lambda _: __import__("tensorflow").constant(1).numpy().item()).collect())
if tensorflow_in in ("both", "driver"):
    import tensorflow as tf
    print("driver tf:", tf.constant(2).numpy().item())
stop_orca_context()
print("{MARKER}")
'''

SPARK_INFO_LINE = re.compile(r"^\d\d/\d\d/\d\d \d\d:\d\d:\d\d INFO ", re.M)  # log4j's layout, zoo_lite's and Spark's
FILE_STREAM_SINK = "FileStreamSink"
TF_CPU_GUARD = re.compile(r"cpu_feature_guard|This TensorFlow binary is optimized")
ABSL_PRE_INIT = re.compile(r"absl::InitializeLog\(\) is called|oneDNN custom operations are on")


def clean_environment() -> dict[str, str]:
    """This environment without the variables the behaviour under test depends on, so that a
    developer's own Spark, PySpark or TensorFlow settings cannot make the tests pass; the suite's
    JVM settings stay (they only change how fast the JVMs compile)."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PYSPARK_", "SPARK_")) and k not in ("TF_CPP_MIN_LOG_LEVEL", "PYTHONPATH")}
    return {**env, **suite_jvm_environment()}


def run_program(tmp_path: Path, launcher: list[str], cluster_mode: str, level: str, tensorflow_in: str) -> str:
    """Run PROGRAM with ``launcher``; return its stdout and stderr together, after checking that it succeeded."""
    for name in ("a.bin", "b.bin"):
        (tmp_path / name).write_bytes(b"x")
    program = tmp_path / "program.py"
    program.write_text(PROGRAM)
    done = subprocess.run([*launcher, str(program), cluster_mode, level, str(tmp_path), tensorflow_in],
                          capture_output=True, text=True, timeout=PROGRAM_TIMEOUT_S, cwd=tmp_path, env=clean_environment())
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-5000:]
    assert MARKER in done.stdout and "files read: 2" in done.stdout, output[-5000:]
    assert "to_spark_df rows: 10 with the JVM helper: True" in done.stdout, output[-5000:]
    return output


#: each test's program run: launcher, cluster mode, Spark log level, where TensorFlow is imported
PROGRAM_RUNS = {
    "test_a_default_run_shows_no_filestreamsink_trace_nor_tensorflow_cpp_lines": ([sys.executable], "local", "WARN", "both"),
    "test_spark_log_level_info_brings_back_spark_and_tensorflow_info_lines": ([sys.executable], "local", "INFO", "driver"),
    "test_spark_submit_prints_no_start_up_info_lines": (
        [str(ROOT / "scripts" / "spark-submit"), "--master", "local[2]"], "spark-submit", "WARN", "none"),
}


@pytest.fixture(scope="module")
def program_runs(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Callable[[str], str]]:
    """``program_runs(test name)``: the output of that test's run of PROGRAM. The module's selected
    runs start here, two at a time (tests/at_once.py)."""
    selected = selected_tests(request)
    calls = {name: partial(run_program, tmp_path_factory.mktemp("quiet"), *arguments)
             for name, arguments in PROGRAM_RUNS.items() if name in selected}
    with started_at_once(calls, PROGRAM_TIMEOUT_S) as finished:
        yield finished


@pytest.fixture
def output(program_runs: Callable[[str], str], request: pytest.FixtureRequest) -> str:
    """The output of the calling test's run of PROGRAM."""
    return program_runs(request.node.originalname)


@pytest.mark.timeout(400)
def test_a_default_run_shows_no_filestreamsink_trace_nor_tensorflow_cpp_lines(output: str) -> None:
    assert "worker tf: [1]" in output and "driver tf: 2" in output, output[-5000:]
    assert FILE_STREAM_SINK not in output, output[-5000:]
    assert not TF_CPU_GUARD.search(output), output[-5000:]
    assert not SPARK_INFO_LINE.search(output), output[-5000:]


# TensorFlow imported through zoo_lite.learn.tf2 prints none of its start-up lines in the driver,
# the Spark Python workers or the Ray workers: checked on the quickstart's output
# (tests/test_examples.py), whose Keras part runs in all three


@pytest.mark.timeout(400)
def test_spark_log_level_info_brings_back_spark_and_tensorflow_info_lines(output: str) -> None:
    assert SPARK_INFO_LINE.search(output), output[-5000:]
    assert TF_CPU_GUARD.search(output), output[-5000:]


@pytest.mark.timeout(400)
def test_spark_submit_prints_no_start_up_info_lines(output: str) -> None:
    assert not SPARK_INFO_LINE.search(output), output[-5000:]
    assert FILE_STREAM_SINK not in output, output[-5000:]


@pytest.mark.parametrize("level, expected", [("WARN", "2"), ("ERROR", "2"), ("INFO", None), ("DEBUG", None)])
def test_spark_python_workers_get_the_quiet_tensorflow_level_below_info(monkeypatch: pytest.MonkeyPatch, level: str,
                                                                        expected: str | None) -> None:
    from zoo_lite.spark_settings import SparkSettings, spark_master_and_conf

    monkeypatch.delenv("TF_CPP_MIN_LOG_LEVEL", raising=False)
    _, conf = spark_master_and_conf(SparkSettings(cluster_mode="local", cores=1, spark_log_level=level))
    assert conf.get("spark.executorEnv.TF_CPP_MIN_LOG_LEVEL") == expected


def test_the_users_tensorflow_level_wins_in_the_environment_and_in_conf(monkeypatch: pytest.MonkeyPatch) -> None:
    from zoo_lite.spark_settings import SparkSettings, spark_master_and_conf

    monkeypatch.setenv("TF_CPP_MIN_LOG_LEVEL", "1")
    _, conf = spark_master_and_conf(SparkSettings(cluster_mode="local", cores=1))
    assert conf["spark.executorEnv.TF_CPP_MIN_LOG_LEVEL"] == "1"
    _, conf = spark_master_and_conf(SparkSettings(cluster_mode="local", cores=1,
                                                  conf={"spark.executorEnv.TF_CPP_MIN_LOG_LEVEL": "0"}))
    assert conf["spark.executorEnv.TF_CPP_MIN_LOG_LEVEL"] == "0"


@pytest.mark.parametrize("log_output, user_env, expected", [
    (False, {}, "2"), (True, {}, "0"), (False, {"TF_CPP_MIN_LOG_LEVEL": "1"}, "1"), (True, {"TF_CPP_MIN_LOG_LEVEL": "3"}, "3"),
])
def test_ray_processes_hide_tensorflow_lines_unless_log_output(log_output: bool, user_env: dict[str, str],
                                                               expected: str) -> None:
    from zoo_lite.ray_on_spark.node_launch import NodePlan, ray_environment

    plan = NodePlan("127.0.0.1", 1, "secret", "token", 1, 1.0, include_log_monitor=log_output, env=user_env)
    assert ray_environment(plan)["TF_CPP_MIN_LOG_LEVEL"] == expected
