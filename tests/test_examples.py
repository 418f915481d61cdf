"""The pipelines in ``examples/`` run as users run them, at a small size: with ``python``, and the
training job through ``scripts/spark-submit`` with a local master, from a shell without the venv."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.test_quickstart import shell_without_the_venv

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(400)]


# a line of log4j's layout at WARN or above: a successful example must not show the user any
SPARK_WARNING = re.compile(r"^\d\d/\d\d/\d\d \d\d:\d\d:\d\d (WARN|ERROR|FATAL) .*$", re.M)


def run_example(command: list[str], cwd: Path) -> str:
    """The example's stdout, after checking that it succeeded with no Spark warning on stderr."""
    done = subprocess.run(command, capture_output=True, text=True, timeout=360, cwd=cwd, env=shell_without_the_venv())
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-5000:]
    assert not SPARK_WARNING.search(done.stderr), [line.group(0) for line in SPARK_WARNING.finditer(done.stderr)]
    return done.stdout


def number(pattern: str, text: str) -> float:
    found = re.search(pattern, text)
    assert found, f"{pattern!r} not in the output:\n{text[-3000:]}"
    return float(found.group(1))


def test_csv_pipeline_agrees_with_pandas(tmp_path: Path) -> None:
    out = run_example([sys.executable, str(EXAMPLES / "csv_pipeline.py"), "--output", str(tmp_path), "--files", "6",
                       "--rows-per-file", "500"], tmp_path)
    assert "trips aggregated: 3000 in 6 files; equal to pandas: yes" in out


def test_streaming_inference_scores_every_file_of_the_stream(tmp_path: Path) -> None:
    out = run_example([sys.executable, str(EXAMPLES / "streaming_inference.py"), "--output", str(tmp_path / "out"), "--epochs", "10",
                       "--files", "3"], tmp_path)
    assert "rows scored by the stream: 450 of 450" in out
    assert number(r"stream accuracy: ([0-9.]+)", out) >= 0.9
    assert (tmp_path / "out" / "checkpoint" / "commits").is_dir()


def test_transfer_learning_runs_the_featuriser_once_per_row(tmp_path: Path) -> None:
    out = run_example([sys.executable, str(EXAMPLES / "transfer_learning.py"), "--epochs", "10", "--shards", "2"], tmp_path)
    assert "featuriser rows: 1797 of 1797" in out
    assert number(r"head test accuracy: ([0-9.]+)", out) >= 0.85


def test_transfer_learning_from_local_pretrained_weights_featurises_each_row_once_in_torch_and_keras(tmp_path: Path) -> None:
    out = run_example([sys.executable, str(EXAMPLES / "transfer_learning_pretrained.py"), "--output", str(tmp_path / "out"),
                       "--epochs", "10"], tmp_path)
    assert "resnet18 featuriser rows: 1797 of 1797, features per image: 512" in out
    assert "mobilenet featuriser rows: 1797 of 1797, features per image: 576" in out
    # ten classes: chance is 0.1; 0.924 (resnet18) and 0.958 (mobilenet) when measured
    assert number(r"resnet18 head test accuracy: ([0-9.]+)", out) >= 0.8
    assert number(r"mobilenet head test accuracy: ([0-9.]+)", out) >= 0.8


def test_tfds_keras_runs_the_guides_code_on_a_dataset_tfds_built_offline(tmp_path: Path) -> None:
    out = run_example([sys.executable, str(EXAMPLES / "tfds_keras.py"), "--data-dir", str(tmp_path / "tensorflow_datasets"),
                       "--epochs", "5"], tmp_path)
    assert "train rows: 1437, test rows: 360" in out
    assert "predicted rows: 360 of 360" in out
    # ten classes: chance is 0.1; 0.964 when measured. The predictions come back in tfds' order,
    # so scored against its labels they give the evaluated accuracy
    accuracy = number(r"test accuracy: ([0-9.]+)", out)
    assert accuracy >= 0.85
    assert number(r"accuracy of the predictions: ([0-9.]+)", out) == accuracy
    assert (tmp_path / "tensorflow_datasets" / "digits_mnist" / "1.0.0" / "dataset_info.json").is_file()


def test_image_pipeline_trains_on_decoded_images_and_scores_them_in_sql(tmp_path: Path) -> None:
    out = run_example([sys.executable, str(EXAMPLES / "image_pipeline.py"), "--output", str(tmp_path / "out"),
                       "--per-class", "100", "--epochs", "15"], tmp_path)
    assert "classes: ['circle', 'square', 'triangle'], images read: 300" in out
    assert number(r"SQL test accuracy: ([0-9.]+)", out) >= 0.65   # three classes: chance is 0.33


def test_the_training_job_runs_under_spark_submit_on_two_workers(tmp_path: Path) -> None:
    out = run_example([str(ROOT / "scripts" / "spark-submit"), "--master", "local[2]", str(EXAMPLES / "train_pipeline_job.py"),
                       "--cluster-mode", "spark-submit", "--output", str(tmp_path), "--rows", "3000", "--epochs", "5"], tmp_path)
    assert "trained on 2 worker(s)" in out
    assert number(r"test accuracy: ([0-9.]+)", out) >= 0.8
