"""The pipelines in ``examples/`` run as users run them, at a small size: with ``python``, and the
training job through ``scripts/spark-submit`` with a local master, from a shell without the venv;
the quickstart as the README's commands run it (``scripts/demo.sh`` form), with its own defaults.

Each example is a program with its own Spark and Ray: the selected tests' programs run two at a
time from the module's start (tests/at_once.py), and each test checks its program's output."""

from __future__ import annotations

import re
import subprocess
import sys
from functools import partial
from pathlib import Path
from typing import Callable, Iterator, NamedTuple

import pytest

from tests.at_once import selected_tests, started_at_once
from tests.quickstart import check_quickstart_output, shell_without_the_venv
from tests.test_quiet import ABSL_PRE_INIT, TF_CPU_GUARD

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(600)]   # the first test may wait for every program


# a line of log4j's layout at WARN or above: a successful example must not show the user any
SPARK_WARNING = re.compile(r"^\d\d/\d\d/\d\d \d\d:\d\d:\d\d (WARN|ERROR|FATAL) .*$", re.M)


PROGRAM_TIMEOUT_S = 360


class ExampleRun(NamedTuple):
    """What a test checks of its example's run."""

    stdout: str
    stderr: str
    folder: Path   # the run's own folder: its working directory, and its outputs where the test put them


def run_example(command: list[str], folder: Path) -> ExampleRun:
    """The example's run from ``folder``, after checking that it succeeded with no Spark warning on stderr."""
    done = subprocess.run(command, capture_output=True, text=True, timeout=PROGRAM_TIMEOUT_S, cwd=folder,
                          env=shell_without_the_venv())
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-5000:]
    assert not SPARK_WARNING.search(done.stderr), [line.group(0) for line in SPARK_WARNING.finditer(done.stderr)]
    return ExampleRun(done.stdout, done.stderr, folder)


def example_arguments(folder: Path) -> dict[str, list[str]]:
    """Each test's example and its arguments, with its files under ``folder``; the longest-running
    first (as measured), so that the last two end close together."""
    return {
        "test_transfer_learning_from_local_pretrained_weights_featurises_each_row_once_in_torch_and_keras": [
            "transfer_learning_pretrained.py", "--output", str(folder / "out"), "--epochs", "10"],
        "test_the_quickstart_job_trains_predicts_and_plots": ["quickstart.py", "--output", str(folder)],
        "test_the_training_job_runs_under_spark_submit_on_two_workers": [
            "train_pipeline_job.py", "--cluster-mode", "spark-submit", "--output", str(folder), "--rows", "3000", "--epochs", "5"],
        "test_image_pipeline_trains_on_decoded_images_and_scores_them_in_sql": [
            "image_pipeline.py", "--output", str(folder / "out"), "--per-class", "100", "--epochs", "15"],
        "test_tfds_keras_runs_the_guides_code_on_a_dataset_tfds_built_offline": [
            "tfds_keras.py", "--data-dir", str(folder / "tensorflow_datasets"), "--epochs", "5"],
        "test_streaming_inference_scores_every_file_of_the_stream": [
            "streaming_inference.py", "--output", str(folder / "out"), "--epochs", "10", "--files", "3"],
        "test_transfer_learning_runs_the_featuriser_once_per_row": ["transfer_learning.py", "--epochs", "10", "--shards", "2"],
        "test_csv_pipeline_agrees_with_pandas": [
            "csv_pipeline.py", "--output", str(folder), "--files", "6", "--rows-per-file", "500"],
    }


def example_command(arguments: list[str]) -> list[str]:
    """The example run with ``python``, but the training job, which runs under spark-submit."""
    if arguments[0] == "train_pipeline_job.py":
        return [str(ROOT / "scripts" / "spark-submit"), "--master", "local[2]", str(EXAMPLES / arguments[0]), *arguments[1:]]
    return [sys.executable, str(EXAMPLES / arguments[0]), *arguments[1:]]


@pytest.fixture(scope="module")
def example_runs(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Callable[[str], ExampleRun]]:
    """``example_runs(test name)``: that test's example's run. The module's selected examples start
    here, two at a time (tests/at_once.py)."""
    selected = selected_tests(request)
    folders = {name: tmp_path_factory.mktemp("example") for name in example_arguments(Path()) if name in selected}
    calls = {name: partial(run_example, example_command(example_arguments(folder)[name]), folder) for name, folder in folders.items()}
    with started_at_once(calls, PROGRAM_TIMEOUT_S) as finished:
        yield finished


@pytest.fixture
def example(example_runs: Callable[[str], ExampleRun], request: pytest.FixtureRequest) -> ExampleRun:
    """The calling test's example's run."""
    return example_runs(request.node.originalname)


def number(pattern: str, text: str) -> float:
    found = re.search(pattern, text)
    assert found, f"{pattern!r} not in the output:\n{text[-3000:]}"
    return float(found.group(1))


def test_csv_pipeline_agrees_with_pandas(example: ExampleRun) -> None:
    out = example.stdout
    assert "trips aggregated: 3000 in 6 files; equal to pandas: yes" in out


def test_streaming_inference_scores_every_file_of_the_stream(example: ExampleRun) -> None:
    out, folder = example.stdout, example.folder
    assert "rows scored by the stream: 450 of 450" in out
    assert number(r"stream accuracy: ([0-9.]+)", out) >= 0.9
    assert (folder / "out" / "checkpoint" / "commits").is_dir()


def test_transfer_learning_runs_the_featuriser_once_per_row(example: ExampleRun) -> None:
    out = example.stdout
    assert "featuriser rows: 1797 of 1797" in out
    assert number(r"head test accuracy: ([0-9.]+)", out) >= 0.85


def test_transfer_learning_from_local_pretrained_weights_featurises_each_row_once_in_torch_and_keras(example: ExampleRun) -> None:
    out = example.stdout
    assert "resnet18 featuriser rows: 1797 of 1797, features per image: 512" in out
    assert "mobilenet featuriser rows: 1797 of 1797, features per image: 576" in out
    # ten classes: chance is 0.1; 0.924 (resnet18) and 0.958 (mobilenet) when measured
    assert number(r"resnet18 head test accuracy: ([0-9.]+)", out) >= 0.8
    assert number(r"mobilenet head test accuracy: ([0-9.]+)", out) >= 0.8


def test_tfds_keras_runs_the_guides_code_on_a_dataset_tfds_built_offline(example: ExampleRun) -> None:
    out, folder = example.stdout, example.folder
    assert "train rows: 1437, test rows: 360" in out
    assert "predicted rows: 360 of 360" in out
    # ten classes: chance is 0.1; 0.964 when measured. The predictions come back in tfds' order,
    # so scored against its labels they give the evaluated accuracy
    accuracy = number(r"test accuracy: ([0-9.]+)", out)
    assert accuracy >= 0.85
    assert number(r"accuracy of the predictions: ([0-9.]+)", out) == accuracy
    assert (folder / "tensorflow_datasets" / "digits_mnist" / "1.0.0" / "dataset_info.json").is_file()


def test_image_pipeline_trains_on_decoded_images_and_scores_them_in_sql(example: ExampleRun) -> None:
    out = example.stdout
    assert "classes: ['circle', 'square', 'triangle'], images read: 300" in out
    assert number(r"SQL test accuracy: ([0-9.]+)", out) >= 0.65   # three classes: chance is 0.33


def test_the_training_job_runs_under_spark_submit_on_two_workers(example: ExampleRun) -> None:
    out = example.stdout
    assert "trained on 2 worker(s)" in out
    assert number(r"test accuracy: ([0-9.]+)", out) >= 0.8


def test_the_quickstart_job_trains_predicts_and_plots(example: ExampleRun) -> None:
    check_quickstart_output(example.stdout, example.folder, workers=1)
    # its Keras part imports TensorFlow through zoo_lite.learn.tf2 in the driver, the Ray workers
    # (fit) and the Spark Python workers (predict): none prints TensorFlow's start-up lines
    output = example.stdout + example.stderr
    assert not ABSL_PRE_INIT.search(output) and not TF_CPU_GUARD.search(output), output[-5000:]
